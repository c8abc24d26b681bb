//! A soft guarantee on a best-effort path (Free & Stunts paper, inside QSTP): one application
//! sends a live stream that should get 4 Mbit/s beside a bulk transfer of three connections, all
//! from one endpoint. The stream is the group's Free, the bulk connections its Stunts: they take
//! the stream's loss events in its place, so the stream follows its target and the bulk transfer
//! pays for it, not the path's other users.
//!
//! Run with `cargo run --release -p qstp-net --example soft_guarantee [SERVER:PORT [SECONDS]]`.
//! Without an address it starts its own server on loopback behind the crate's impairing relay (a
//! 12 Mbit/s bottleneck with a 50-packet drop-tail queue, 5 ms each way): loopback alone loses
//! nothing, so nothing would be delegated. With an address it sends to that QSTP server, which
//! must accept the four connections and read what they carry: `qstp recv` does (each connection
//! opens with the filler magic of `qstp send --soft-target`'s Stunts, so the receiver counts and
//! discards its bytes), and a `qstp relay --to` such a server puts a bottleneck in front of it;
//! on the testbed it runs between two namespaces as a `protocol = "command"` group
//! (`validation/testbed/soft-target-example.toml`). It runs 10 s unless SECONDS (1 to 3600) says
//! otherwise. Every second it prints the stream's throughput, the bulk connections' and what the
//! group did.

// A program in real time: it reads the clock (the determinism bans are for the core).
#![allow(clippy::disallowed_types)]

use qstp_net::relay::{Impairment, Relay};
use qstp_net::transfer::FILLER_MAGIC;
use qstp_net::{Config, Endpoint, GroupOptions, Preset, Rate};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Seconds to run, unless the command line gives others.
const SECONDS: u64 = 10;
/// The largest UDP payload of a 1500-byte Ethernet MTU over IPv4.
const ETHERNET_DATAGRAM: usize = 1472;
/// Bulk connections (the Stunts).
const BULK: usize = 3;
/// The bottleneck of the example's own relay, bit/s: the stream's fair share of four is 3
/// Mbit/s, below its target.
const BOTTLENECK: u64 = 12_000_000;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds = match std::env::args().nth(2) {
        None => SECONDS,
        Some(text) => match text.parse::<u64>() {
            Ok(s) if (1..=3600).contains(&s) => s,
            _ => return Err(format!("'{text}' is not a number of seconds in 1..=3600").into()),
        },
    };
    let mut relay = None;
    let server_addr: SocketAddr = match std::env::args().nth(1) {
        Some(addr) => addr.parse()?,
        None => {
            let server = Endpoint::server("127.0.0.1:0".parse()?, Config::default())?;
            let addr = server.local_addr();
            tokio::spawn(async move {
                while let Some(mut conn) = server.accept().await {
                    tokio::spawn(async move {
                        let mut buf = vec![0u8; 64 << 10];
                        while matches!(conn.read(&mut buf).await, Ok(n) if n > 0) {}
                    });
                }
            });
            let through = Relay::start(addr, Impairment::bottleneck(BOTTLENECK)).await?;
            let front = through.addr;
            println!(
                "through a relay at {front}: {} bottleneck, 50-packet drop-tail queue, 5 ms each way",
                Rate::from_bps(BOTTLENECK)
            );
            relay = Some(through);
            front
        }
    };
    let client = Endpoint::bind("0.0.0.0:0".parse()?)?;
    // Best effort: TFRC + SACK byte streams with no target of the network's, in datagrams of
    // 1472 bytes: an Ethernet MTU of 1500 less the IPv4 (20, RFC 791) and UDP (8, RFC 768)
    // headers. The default 1500 is the papers' simulated packet; as a UDP payload it does not
    // fit a 1500-byte link, whose host refuses it (EMSGSIZE), and nothing but the handshake
    // would pass.
    let stream = || {
        let mut config = Config::preset(Preset::TfrcSack, Rate::ZERO);
        config.max_datagram = ETHERNET_DATAGRAM;
        config
    };
    let live = client.connect(server_addr, stream()).await?;
    let mut bulk = Vec::new();
    for _ in 0..BULK {
        bulk.push(client.connect(server_addr, stream()).await?);
    }
    let stunts: Vec<&qstp_net::Connection> = bulk.iter().collect();
    let target = Rate::from_mbps(4);
    let group = client.group(&live, &stunts, target, GroupOptions::default())?;

    let mut writers = Vec::new();
    for mut conn in std::iter::once(live.clone()).chain(bulk.iter().cloned()) {
        writers.push(tokio::spawn(async move {
            // The filler magic first: a `qstp recv` then counts and discards what follows.
            if conn.write_all(&FILLER_MAGIC).await.is_err() {
                return;
            }
            let block = vec![0x5au8; 64 << 10];
            while conn.write_all(&block).await.is_ok() {}
        }));
    }
    let acked = |c: &qstp_net::Connection| c.stats().map_or(0, |s| s.bytes_acked);
    let started = Instant::now();
    let first = (acked(&live), bulk.iter().map(acked).sum::<u64>());
    let mut last = first;
    for second in 1..=seconds {
        tokio::time::sleep_until((started + Duration::from_secs(second)).into()).await;
        let now = (acked(&live), bulk.iter().map(acked).sum::<u64>());
        let mbps = |bytes: u64| bytes as f64 * 8.0 / 1e6;
        let stats = group.stats();
        println!(
            "{second:>3} s  stream {:6.2} Mbit/s (target {target})  bulk {:7.2} Mbit/s  {}",
            mbps(now.0 - last.0),
            mbps(now.1 - last.1),
            stats.map_or("group ended".into(), |s| format!(
                "delegated {} reacted {} ({} with the bulk short) taken back {} (fraction {:.2})",
                s.delegated, s.reacted, s.kept_stunts_short, s.taken_by_free, s.fraction
            )),
        );
        last = now;
    }
    let mean = |bytes: u64| Rate::from_bps(bytes * 8 / seconds);
    let stats = group.stats();
    println!(
        "over {seconds} s: stream {} (target {target}), bulk {}; loss events delegated {}, reacted {} ({} with the bulk short)",
        mean(last.0 - first.0),
        mean(last.1 - first.1),
        stats.map_or(0, |s| s.delegated),
        stats.map_or(0, |s| s.reacted),
        stats.map_or(0, |s| s.kept_stunts_short),
    );
    drop(group);
    for w in writers {
        w.abort();
    }
    for c in std::iter::once(&live).chain(&bulk) {
        c.close(0, b"done");
    }
    // Let the closes reach the server before the process ends.
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        for c in std::iter::once(&live).chain(&bulk) {
            let _ = c.closed().await;
        }
    })
    .await;
    if let Some(relay) = relay {
        let up = relay.stats.to_server.get();
        println!(
            "the relay forwarded {} datagrams to the server and dropped {} at its queue",
            up.forwarded, up.queue_drops
        );
    }
    Ok(())
}
