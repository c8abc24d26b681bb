//! QSTP against competing TFRC/SACK flows through one bottleneck of the relay.

// Tests and benchmarks of real transfers measure wall-clock time: the determinism bans of
// clippy.toml do not apply here.
#![allow(clippy::disallowed_types)]

mod support;

use qstp_net::{Config, Preset, Rate};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::relay::{Impairment, Relay};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Bytes of the QSTP flow; the competitors send until it is done.
const QSTP_BYTES: usize = 6 << 20;
/// Competing plain TFRC/SACK connections.
const COMPETITORS: usize = 2;

/// QSTP paper §4: gTFRC never sends below its target g, so against two plain TFRC/SACK flows in
/// a 40 Mbit/s bottleneck a 20 Mbit/s flow keeps its controller at g instead of the fair third
/// plain TFRC would get, and the competitors take the rest.
///
/// Asserted on what the protocol controls and on shares of what was delivered over the same
/// interval, never on wall-clock rates (a busy machine slows every flow alike): the median allowed
/// rate X after slow start is at least g; the QSTP flow delivers more than 1.25 times what each
/// competitor delivers; the competitors together still deliver at least 40% of what it does.
/// The goodput in Mbit/s (18.5 to 19.3 measured on an idle machine) is a benchmark:
/// `cargo bench -p qstp-net --bench target_goodput`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_target_holds_against_competing_tfrc_flows() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let impairment = Impairment::bottleneck(40_000_000);
        let relay = Relay::start(server.local_addr(), impairment).await.unwrap();
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
        // Measure after the first fifth of the QSTP bytes, until all of them arrived; sample the
        // QSTP flow's allowed rate meanwhile.
        let poll = Duration::from_millis(5);
        while qstp_bytes.load(Ordering::Relaxed) < (QSTP_BYTES / 5) as u64 {
            tokio::time::sleep(poll).await;
        }
        let (q0, t0) = (
            qstp_bytes.load(Ordering::Relaxed),
            tfrc_bytes.load(Ordering::Relaxed),
        );
        let mut rates = Vec::new();
        while qstp_bytes.load(Ordering::Relaxed) < QSTP_BYTES as u64 {
            let stats = watch.stats().unwrap();
            if !stats.slow_start {
                rates.push(stats.rate.bps());
            }
            tokio::time::sleep(poll).await;
        }
        let qstp = (qstp_bytes.load(Ordering::Relaxed) - q0) as f64;
        let tfrc = (tfrc_bytes.load(Ordering::Relaxed) - t0) as f64;
        for competitor in &competitors {
            competitor.abort();
        }
        drop(sender);
        drop(acceptor);
        rates.sort_unstable();
        assert!(rates.len() >= 10, "too few samples: {rates:?}");
        let median = rates[rates.len() / 2];
        let shown = format!(
            "qstp delivered {qstp:.0} B, the {COMPETITORS} competitors {tfrc:.0} B; median X {median} bit/s"
        );
        assert!(median >= 20_000_000, "the controller fell below g: {shown}");
        assert!(
            qstp > 1.25 * tfrc / COMPETITORS as f64,
            "no more than a fair share: {shown}"
        );
        assert!(tfrc >= 0.4 * qstp, "the competitors did not take the rest: {shown}");
    })
    .await;
}
