//! QSTP against competing TFRC/SACK flows through one bottleneck of the relay.

// Tests and benchmarks of real transfers measure wall-clock time: the determinism bans of
// clippy.toml do not apply here.
#![allow(clippy::disallowed_types)]

mod support;

use qstp_net::{Config, Connection, Preset, Rate};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::relay::{Impairment, Relay};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Bytes of the QSTP flow; the competitors send until it is done.
const QSTP_BYTES: usize = 6 << 20;
/// Competing plain TFRC/SACK connections.
const COMPETITORS: usize = 2;

/// Read `conn` to its end, counting bytes into `counter`; returns when the stream ends.
async fn count(mut conn: Connection, counter: Arc<AtomicU64>) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = conn.read(&mut buf).await {
        if n == 0 {
            break;
        }
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// QSTP paper §4: gTFRC never sends below its target g, so against two plain TFRC/SACK flows in
/// a 40 Mbit/s bottleneck a 20 Mbit/s flow keeps about g instead of the fair third (13.3 Mbit/s)
/// plain TFRC would get, and the competitors take the rest.
///
/// The floor is on the sending rate; in this best-effort drop-tail queue (no DiffServ protection of
/// in-profile packets) the flow loses its share of packets like the others, so its goodput is
/// g × (1 − p) less headers: measured 18.5 to 19.3 Mbit/s. The test asks for 0.85 g, well above
/// the fair share.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_target_holds_against_competing_tfrc_flows() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let impairment = Impairment::bottleneck(40_000_000);
        let relay = Relay::start(server.local_addr(), impairment).await;
        // Every stream starts with a tag byte: 'q' for the QSTP flow, 't' for a competitor.
        let qstp_bytes = Arc::new(AtomicU64::new(0));
        let tfrc_bytes = Arc::new(AtomicU64::new(0));
        let (q, t) = (qstp_bytes.clone(), tfrc_bytes.clone());
        let acceptor = tokio::spawn(async move {
            let mut readers = Vec::new();
            for _ in 0..=COMPETITORS {
                let mut conn = server.accept().await.unwrap();
                let mut tag = [0u8];
                conn.read_exact(&mut tag).await.unwrap();
                let counter = if tag[0] == b'q' { q.clone() } else { t.clone() };
                readers.push(tokio::spawn(count(conn, counter)));
            }
            (server, readers)
        });
        let client = client();
        let mut competitors = Vec::new();
        for _ in 0..COMPETITORS {
            let mut conn = client.connect(relay.addr, Config::preset(Preset::TfrcSack, Rate::ZERO)).await.unwrap();
            competitors.push(tokio::spawn(async move {
                conn.write_all(b"t").await.unwrap();
                let block = pattern(256 << 10);
                while conn.write_all(&block).await.is_ok() {}
            }));
        }
        let mut conn = client.connect(relay.addr, Config::qstp(Rate::from_mbps(20))).await.unwrap();
        conn.write_all(b"q").await.unwrap();
        let watch = conn.clone();
        let sender = tokio::spawn(async move {
            conn.write_all(&pattern(QSTP_BYTES)).await.unwrap();
            conn.finish().unwrap();
            conn
        });
        // Measure after the first fifth of the QSTP bytes, until all of them arrived.
        let poll = Duration::from_millis(5);
        while qstp_bytes.load(Ordering::Relaxed) < (QSTP_BYTES / 5) as u64 {
            tokio::time::sleep(poll).await;
        }
        let (start, q0, t0) = (Instant::now(), qstp_bytes.load(Ordering::Relaxed), tfrc_bytes.load(Ordering::Relaxed));
        let sent0 = watch.stats().unwrap().bytes_sent;
        while qstp_bytes.load(Ordering::Relaxed) < QSTP_BYTES as u64 {
            tokio::time::sleep(poll).await;
        }
        let secs = start.elapsed().as_secs_f64();
        let sending_rate = (watch.stats().unwrap().bytes_sent - sent0) as f64 * 8.0 / secs;
        let qstp_rate = (qstp_bytes.load(Ordering::Relaxed) - q0) as f64 * 8.0 / secs;
        let tfrc_rate = (tfrc_bytes.load(Ordering::Relaxed) - t0) as f64 * 8.0 / secs;
        for competitor in &competitors {
            competitor.abort();
        }
        drop(sender);
        drop(acceptor);
        let shown = format!(
            "qstp goodput {:.1} Mbit/s (sending {:.1}), competitors {:.1} Mbit/s together, over {secs:.2} s",
            qstp_rate / 1e6,
            sending_rate / 1e6,
            tfrc_rate / 1e6
        );
        let fair_share = 40e6 / (COMPETITORS + 1) as f64;
        assert!(qstp_rate >= 0.85 * 20e6, "the target did not hold: {shown}");
        assert!(qstp_rate > 1.25 * fair_share && qstp_rate > 1.25 * tfrc_rate / COMPETITORS as f64, "no more than a fair share: {shown}");
        assert!(tfrc_rate >= 10e6 && qstp_rate + tfrc_rate >= 30e6, "the competitors did not take the rest: {shown}");
    })
    .await;
}
