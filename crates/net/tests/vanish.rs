//! A peer that vanishes mid-transfer: both sides end with a clear timeout error; the sender, with
//! data in flight, says the peer stopped answering.

// Wall-clock time: this test measures how soon a real endpoint notices.
#![allow(clippy::disallowed_types)]

mod support;

use qstp_net::proto::Duration as ProtoDuration;
use qstp_net::{Config, Error};
use std::sync::atomic::Ordering;
use std::time::Duration;
use support::relay::{Impairment, Relay};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_peer_ends_the_transfer_with_a_timeout_on_both_sides() {
    bounded(async {
        let server = server(Duration::from_secs(1));
        let relay = Relay::start(server.local_addr(), Impairment::default())
            .await
            .unwrap();
        let (accepted, is_accepted) = tokio::sync::oneshot::channel();
        let receiver = tokio::spawn(async move {
            let mut conn = server.accept().await.unwrap();
            let _ = accepted.send(());
            let mut sink = Vec::new();
            let err = conn.read_to_end(&mut sink).await.unwrap_err();
            (sink.len(), to_net_error(&err))
        });
        let client = client();
        let config = Config {
            idle_timeout: ProtoDuration::from_secs(1),
            send_buffer: 1 << 20,
            ..Config::default()
        };
        let mut conn = client.connect(relay.addr, config).await.unwrap();
        // Some data flows, then the path dies while the sender still has plenty to write.
        conn.write_all(&pattern(256 * 1024)).await.unwrap();
        // The server announces the connection once a packet of ours opened there.
        is_accepted.await.unwrap();
        relay.blackhole.store(true, Ordering::Relaxed);
        let data = pattern(64 << 20);
        let sent = conn.write_all(&data).await;
        let err = match sent {
            Err(e) => to_net_error(&e),
            Ok(()) => conn.acknowledged().await.unwrap_err(),
        };
        // Silence with data in flight (at least 1 s) or the 1 s idle timeout, whichever first.
        assert!(
            matches!(err, Error::IdleTimeout | Error::PeerUnresponsive(_)),
            "sender: {err}"
        );
        let (received, err) = receiver.await.unwrap();
        assert!(matches!(err, Error::IdleTimeout), "receiver: {err}");
        assert!(received < data.len());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_notices_a_silent_receiver_long_before_the_idle_timeout() {
    bounded(async {
        let server = server(Duration::from_secs(30));
        let relay = Relay::start(server.local_addr(), Impairment::default())
            .await
            .unwrap();
        let _receiver = tokio::spawn(async move {
            let mut conn = server.accept().await.unwrap();
            let mut sink = Vec::new();
            let _ = conn.read_to_end(&mut sink).await;
        });
        let client = client();
        let config = Config {
            send_buffer: 1 << 20,
            ..Config::default()
        };
        let mut conn = client.connect(relay.addr, config).await.unwrap();
        conn.write_all(&pattern(256 * 1024)).await.unwrap();
        relay.blackhole.store(true, Ordering::Relaxed);
        let cut = std::time::Instant::now();
        let sent = conn.write_all(&pattern(64 << 20)).await;
        let err = match sent {
            Err(e) => to_net_error(&e),
            Ok(()) => conn.acknowledged().await.unwrap_err(),
        };
        let noticed = cut.elapsed();
        assert!(matches!(err, Error::PeerUnresponsive(_)), "sender: {err}");
        assert!(err.to_string().contains("stopped answering"), "{err}");
        // The idle timeout is 30 s; a silent peer is noticed in a few seconds at most.
        assert!(noticed < Duration::from_secs(10), "after {noticed:?}");
    })
    .await;
}
