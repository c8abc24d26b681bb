//! Goodput of a 20 Mbit/s QSTP target behind the tests' 40 Mbit/s relay bottleneck, on loopback:
//! alone, and against two plain TFRC/SACK flows. These are the wall-clock figures the integration
//! tests no longer assert (they depend on how busy the machine is); the tests assert what the
//! protocol controls instead.
//!
//! Run with `cargo bench -p qstp-net --bench target_goodput` (add `-- --rounds N`, default 3).

// A benchmark measures wall-clock time: the determinism bans of clippy.toml do not apply.
#![allow(clippy::disallowed_types)]

#[path = "../tests/support/mod.rs"]
mod support;

use qstp_net::{Config, Preset, Rate};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::relay::{Impairment, Relay};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Bytes of the QSTP flow in each round.
const BYTES: usize = 8 << 20;
/// The bottleneck of the relay, bit/s.
const BOTTLENECK: u64 = 40_000_000;
/// The QSTP flow's target, Mbit/s.
const TARGET_MBPS: u64 = 20;

/// One round with `competitors` TFRC/SACK flows: the QSTP flow's goodput and the competitors'
/// together, bit/s, measured after the first fifth of the QSTP bytes.
async fn round(competitors: usize) -> (f64, f64) {
    let server = server(Duration::from_secs(10));
    let relay = Relay::start(server.local_addr(), Impairment::bottleneck(BOTTLENECK))
        .await
        .unwrap();
    let qstp_bytes = Arc::new(AtomicU64::new(0));
    let tfrc_bytes = Arc::new(AtomicU64::new(0));
    let (q, t) = (qstp_bytes.clone(), tfrc_bytes.clone());
    let acceptor = tokio::spawn(async move {
        let mut readers = Vec::new();
        for _ in 0..=competitors {
            let mut conn = server.accept().await.expect("a connection");
            let mut tag = [0u8];
            conn.read_exact(&mut tag).await.expect("a tag byte");
            let counter = if tag[0] == b'q' { q.clone() } else { t.clone() };
            readers.push(tokio::spawn(count(conn, counter)));
        }
        (server, readers)
    });
    let client = client();
    let mut others = Vec::new();
    for _ in 0..competitors {
        let mut conn = client
            .connect(relay.addr, Config::preset(Preset::TfrcSack, Rate::ZERO))
            .await
            .expect("connect");
        others.push(tokio::spawn(async move {
            conn.write_all(b"t").await.expect("tag");
            let block = pattern(256 << 10);
            while conn.write_all(&block).await.is_ok() {}
        }));
    }
    let mut conn = client
        .connect(relay.addr, Config::qstp(Rate::from_mbps(TARGET_MBPS)))
        .await
        .expect("connect");
    conn.write_all(b"q").await.expect("tag");
    let sender = tokio::spawn(async move {
        conn.write_all(&pattern(BYTES)).await.expect("write");
        conn.finish().expect("finish");
        conn
    });
    let poll = Duration::from_millis(2);
    while qstp_bytes.load(Ordering::Relaxed) < (BYTES / 5) as u64 {
        tokio::time::sleep(poll).await;
    }
    let (start, q0, t0) = (
        Instant::now(),
        qstp_bytes.load(Ordering::Relaxed),
        tfrc_bytes.load(Ordering::Relaxed),
    );
    while qstp_bytes.load(Ordering::Relaxed) < BYTES as u64 {
        tokio::time::sleep(poll).await;
    }
    let secs = start.elapsed().as_secs_f64();
    for other in &others {
        other.abort();
    }
    drop(sender);
    drop(acceptor);
    let rate = |now: u64, then: u64| (now - then) as f64 * 8.0 / secs;
    (
        rate(qstp_bytes.load(Ordering::Relaxed), q0),
        rate(tfrc_bytes.load(Ordering::Relaxed), t0),
    )
}

fn main() {
    let mut rounds = 3usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--rounds" {
            rounds = args
                .next()
                .and_then(|n| n.parse().ok())
                .expect("--rounds N");
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    println!(
        "QSTP, target {TARGET_MBPS} Mbit/s, behind a {} Mbit/s relay bottleneck ({} MiB per round)",
        BOTTLENECK / 1_000_000,
        BYTES >> 20
    );
    println!(
        "{:<28} {:>16} {:>22}",
        "setting", "qstp goodput", "competitors together"
    );
    for competitors in [0usize, 2] {
        for r in 0..rounds {
            let (qstp, others) = runtime.block_on(bounded(round(competitors)));
            println!(
                "{:<28} {:>11.1} Mbit/s {:>15.1} Mbit/s",
                if competitors == 0 {
                    format!("alone, round {}", r + 1)
                } else {
                    format!("against {competitors} TFRC/SACK, round {}", r + 1)
                },
                qstp / 1e6,
                others / 1e6
            );
        }
    }
}
