//! Transfers across an impairing relay: loss, reordering, duplication, a bottleneck.

// Tests and benchmarks of real transfers measure wall-clock time: the determinism bans of
// clippy.toml do not apply here.
#![allow(clippy::disallowed_types)]

mod support;

use qstp_net::{Config, Rate};
use std::time::Duration;
use support::relay::{Impairment, Relay};
use support::*;
use tokio::io::AsyncWriteExt;

/// The relay itself, with plain UDP: it loses about the share asked and duplicates some.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_loses_and_duplicates_as_configured() {
    bounded(async {
        let sink = support::relay::big_socket();
        let impairment = Impairment {
            loss: 0.05,
            duplicate: 0.02,
            reorder: 0.05,
            ..Impairment::default()
        };
        let relay = Relay::start(sink.local_addr().unwrap(), impairment)
            .await
            .unwrap();
        let source = support::relay::big_socket();
        let sent = 2000u64;
        for i in 0..sent {
            source.send_to(&i.to_be_bytes(), relay.addr).await.unwrap();
            if i % 50 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        let mut got = 0u64;
        let mut buf = [0u8; 64];
        let mut relay_back = None;
        while let Ok(Ok((_, from))) =
            tokio::time::timeout(Duration::from_millis(300), sink.recv_from(&mut buf)).await
        {
            got += 1;
            relay_back = Some(from);
        }
        let lost = relay.stats.total().lost;
        let duplicated = relay.stats.total().duplicated;
        assert!((40..=170).contains(&lost), "lost {lost} of {sent}");
        assert!(duplicated > 0 && relay.stats.total().reordered > 0);
        // Nothing else is lost: the kernel buffers are far larger than this burst.
        assert_eq!(got, sent - lost + duplicated);
        // And replies find their way back to the client.
        for _ in 0..20 {
            sink.send_to(b"back", relay_back.unwrap()).await.unwrap();
        }
        let (n, _) = tokio::time::timeout(Duration::from_secs(5), source.recv_from(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&buf[..n], b"back");
    })
    .await;
}

/// The relay's bottleneck never lets more through than its rate allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relay_bottleneck_drops_what_its_queue_cannot_hold() {
    bounded(async {
        let sink = support::relay::big_socket();
        let impairment = Impairment {
            rate_bps: Some(8_000_000),
            queue_bytes: 20_000,
            ..Impairment::default()
        };
        let relay = Relay::start(sink.local_addr().unwrap(), impairment)
            .await
            .unwrap();
        let source = support::relay::big_socket();
        // 200 datagrams of 1000 bytes at once: 20 fit the queue, a few more drain meanwhile.
        for _ in 0..200 {
            source.send_to(&[0u8; 1000], relay.addr).await.unwrap();
        }
        let mut got = 0u64;
        let mut buf = [0u8; 2048];
        while let Ok(Ok(_)) =
            tokio::time::timeout(Duration::from_millis(300), sink.recv_from(&mut buf)).await
        {
            got += 1;
        }
        let drops = relay.stats.total().queue_drops;
        assert_eq!(got + drops, 200);
        assert!(drops >= 100, "only {drops} dropped");
    })
    .await;
}

/// A file crosses a path with 5 % loss, reordering and duplication, intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_completes_across_a_lossy_reordering_duplicating_path() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let impairment = Impairment {
            loss: 0.05,
            duplicate: 0.02,
            reorder: 0.05,
            delay: Duration::from_millis(2),
            seed: 7,
            ..Impairment::default()
        };
        let relay = Relay::start(server.local_addr(), impairment).await.unwrap();
        let receiver = tokio::spawn(accept_and_drain(server));
        let client = client();
        let data = pattern(1 << 20);
        let mut conn = client
            .connect(relay.addr, Config::qstp(Rate::from_mbps(10)))
            .await
            .unwrap();
        let hash = write_and_confirm(&mut conn, &data).await.unwrap();
        let received = receiver.await.unwrap().unwrap();
        assert_eq!(received.len(), data.len());
        assert!(received == data, "the bytes differ");
        assert_eq!(hash, *blake3::hash(&data).as_bytes());
        let stats = conn.stats().unwrap();
        assert!(relay.stats.total().lost > 0);
        assert!(
            stats.packets_retransmitted > 0,
            "losses must have been repaired: {stats:?}"
        );
    })
    .await;
}

/// QSTP paper eq. (2): once out of slow start, gTFRC's allowed rate X does not fall below the
/// target g. Behind a 40 Mbit/s bottleneck a 20 Mbit/s flow's controller is sampled every 5 ms
/// while the stream crosses: the median X after slow start is at least g, and the stream arrives
/// whole. The test asserts what the protocol controls, not a wall-clock goodput (which depends on
/// how busy the machine is); `cargo bench -p qstp-net --bench target_goodput` measures that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_holds_the_target_behind_a_wider_bottleneck() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let impairment = Impairment::bottleneck(40_000_000);
        let relay = Relay::start(server.local_addr(), impairment).await.unwrap();
        const TOTAL: usize = 6 << 20;
        let receiver = tokio::spawn(accept_and_drain(server));
        let client = client();
        let target = Rate::from_mbps(20);
        let mut conn = client
            .connect(relay.addr, Config::qstp(target))
            .await
            .unwrap();
        let watch = conn.clone();
        let data = pattern(TOTAL);
        let sender = tokio::spawn(async move {
            conn.write_all(&data).await.unwrap();
            conn.finish().unwrap();
        });
        let mut samples = Vec::new();
        while !sender.is_finished() {
            let stats = watch.stats().unwrap();
            if !stats.slow_start {
                samples.push(stats.rate.bps());
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        sender.await.unwrap();
        let received = receiver.await.unwrap().unwrap();
        assert!(
            received == pattern(TOTAL),
            "the stream did not arrive whole"
        );
        assert!(
            samples.len() >= 10,
            "too few samples after slow start: {samples:?}"
        );
        samples.sort_unstable();
        let median = samples[samples.len() / 2];
        assert!(
            median >= target.bps(),
            "median allowed rate {median} bit/s below the target {target} (samples {samples:?})"
        );
    })
    .await;
}
