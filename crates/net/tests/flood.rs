//! A listener under a flood of random, mutated and replayed datagrams keeps serving a transfer,
//! keeps no state for sources that never returned a valid cookie, and stays within bounded memory.

mod support;

use qstp_net::{Config, Rate};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::relay::{big_socket, Impairment, Relay};
use support::*;

/// Send junk at `target` until told to stop: random bytes, mutated copies of real datagrams and
/// verbatim replays of the client's first datagrams, from several source ports.
async fn flood(
    target: SocketAddr,
    samples: Vec<Vec<u8>>,
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
) {
    let mut rng = StdRng::seed_from_u64(42);
    let sockets: Vec<_> = (0..8).map(|_| big_socket()).collect();
    let mut buf = Vec::with_capacity(2048);
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) && n < 60_000 {
        buf.clear();
        match n % 4 {
            0 | 1 => {
                let len = rng.gen_range(0..1500);
                buf.extend((0..len).map(|_| rng.gen::<u8>()));
            }
            2 if !samples.is_empty() => {
                // A real datagram with a few bytes changed, maybe truncated.
                buf.extend_from_slice(&samples[rng.gen_range(0..samples.len())]);
                for _ in 0..rng.gen_range(1..4) {
                    if !buf.is_empty() {
                        let at = rng.gen_range(0..buf.len());
                        buf[at] ^= rng.gen_range(1..=255u8);
                    }
                }
                if rng.gen_bool(0.3) {
                    let keep = rng.gen_range(0..=buf.len());
                    buf.truncate(keep);
                }
            }
            _ if !samples.is_empty() => {
                // A verbatim replay of the client's handshake datagrams from a stranger's port.
                buf.extend_from_slice(&samples[(n as usize / 4) % samples.len().min(2)]);
            }
            _ => buf.push(0),
        }
        let socket = &sockets[(n % sockets.len() as u64) as usize];
        let _ = socket.send_to(&buf, target).await;
        n += 1;
        sent.fetch_add(1, Ordering::Relaxed);
        if n & 255 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooded_listener_keeps_serving_and_keeps_no_state_for_strangers() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let server_addr = server.local_addr();
        let watcher = server.clone();
        // The client goes through a plain relay that records its first datagrams for the flood.
        let relay = Relay::start(server_addr, Impairment::default())
            .await
            .unwrap();
        let receiver = tokio::spawn(accept_and_drain(server));
        let client = client();
        let mut conn = client
            .connect(relay.addr, Config::qstp(Rate::from_mbps(20)))
            .await
            .unwrap();
        let baseline = resident_bytes();
        let samples = relay.captured.lock().unwrap().clone();
        assert!(!samples.is_empty());

        let stop = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicU64::new(0));
        let flooder = tokio::spawn(flood(server_addr, samples, stop.clone(), sent.clone()));
        // The transfer starts with the flood already under way.
        while sent.load(Ordering::Relaxed) < 5_000 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let data = pattern(3 << 20);
        let mut most_connections = 0;
        let transfer = write_and_confirm(&mut conn, &data);
        tokio::pin!(transfer);
        let hash = loop {
            tokio::select! {
                hash = &mut transfer => break hash.unwrap(),
                () = tokio::time::sleep(Duration::from_millis(10)) => {
                    most_connections = most_connections.max(watcher.stats().connections);
                }
            }
        };
        // Keep flooding a little after the transfer, while the listener is otherwise idle.
        while sent.load(Ordering::Relaxed) < 20_000 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            most_connections = most_connections.max(watcher.stats().connections);
        }
        stop.store(true, Ordering::Relaxed);
        flooder.await.unwrap();

        assert_eq!(hash, *blake3::hash(&data).as_bytes());
        assert!(receiver.await.unwrap().unwrap() == data);
        let stats = watcher.stats();
        assert_eq!(
            stats.protocol.accepted, 1,
            "only the real client got a connection: {stats:?}"
        );
        assert!(
            most_connections <= 1,
            "the listener held {most_connections} connections"
        );
        assert!(
            stats.protocol.malformed > 0,
            "random datagrams are counted as malformed: {stats:?}"
        );
        assert!(
            stats.protocol.cookie_challenges > 0,
            "replayed hellos were answered statelessly: {stats:?}"
        );
        if let (Some(before), Some(after)) = (baseline, resident_bytes()) {
            let growth = after.saturating_sub(before);
            assert!(
                growth < 64 << 20,
                "memory grew by {} MiB under the flood",
                growth >> 20
            );
        }
    })
    .await;
}
