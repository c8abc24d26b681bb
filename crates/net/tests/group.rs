//! Free & Stunts delegation groups of one endpoint's connections over real sockets: the Free
//! outruns its Stunts through a shared bottleneck, and a group that cannot be formed is refused
//! with the reason.

// Tests of real transfers measure wall-clock time: the determinism bans of clippy.toml do not
// apply here.
#![allow(clippy::disallowed_types)]

mod support;

use qstp_net::{Config, Error, GroupOptions, Preset, Rate};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::relay::{Impairment, Relay};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Connections in the group: a Free and three Stunts.
const MEMBERS: usize = 4;

/// Through a 20 Mbit/s bottleneck, a Free asking 10 Mbit/s (twice its fair share of four)
/// delegates loss events to three Stunts and delivers well above the mean Stunt over the same
/// interval. Asserted on shares of what was delivered, never on wall-clock rates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_free_outruns_its_stunts_through_a_bottleneck() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let relay = Relay::start(server.local_addr(), Impairment::bottleneck(20_000_000))
            .await
            .unwrap();
        // Each stream starts with its member's index.
        let delivered: Arc<Vec<AtomicU64>> =
            Arc::new((0..MEMBERS).map(|_| AtomicU64::new(0)).collect());
        let counters = delivered.clone();
        let acceptor = tokio::spawn(async move {
            let mut readers = Vec::new();
            for _ in 0..MEMBERS {
                let mut conn = server.accept().await.unwrap();
                let mut tag = [0u8];
                conn.read_exact(&mut tag).await.unwrap();
                let counters = counters.clone();
                readers.push(tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 << 10];
                    while let Ok(n) = conn.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        counters[tag[0] as usize].fetch_add(n as u64, Ordering::Relaxed);
                    }
                }));
            }
            (server, readers)
        });
        let client = client();
        let mut conns = Vec::new();
        for i in 0..MEMBERS {
            let mut conn = client
                .connect(relay.addr, Config::preset(Preset::TfrcSack, Rate::ZERO))
                .await
                .unwrap();
            conn.write_all(&[i as u8]).await.unwrap();
            conns.push(conn);
        }
        let stunts: Vec<&qstp_net::Connection> = conns[1..].iter().collect();
        let group = client
            .group(
                &conns[0],
                &stunts,
                Rate::from_mbps(10),
                GroupOptions::default(),
            )
            .expect("a group of byte streams of one endpoint");
        let mut writers = Vec::new();
        for mut conn in conns.clone() {
            writers.push(tokio::spawn(async move {
                let block = pattern(256 << 10);
                while conn.write_all(&block).await.is_ok() {}
            }));
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        let start: Vec<u64> = delivered
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        tokio::time::sleep(Duration::from_secs(5)).await;
        let got: Vec<u64> = delivered
            .iter()
            .zip(&start)
            .map(|(c, s)| c.load(Ordering::Relaxed) - s)
            .collect();
        let stats = group.stats().expect("the group runs");
        let stunt_mean = got[1..].iter().sum::<u64>() as f64 / (MEMBERS - 1) as f64;
        eprintln!("delivered over 5 s per member: {got:?}; {stats:?}");
        assert!(stats.delegated > 0, "{stats:?}");
        assert!(
            got[0] as f64 > 1.3 * stunt_mean,
            "Free {} bytes against a mean Stunt's {stunt_mean:.0} ({stats:?})",
            got[0]
        );
        drop(group);
        for w in writers {
            w.abort();
        }
        for c in &conns {
            c.close(0, b"done");
        }
        let (_server, readers) = acceptor.await.unwrap();
        for r in readers {
            r.abort();
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_that_cannot_be_formed_is_refused_with_the_reason() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let addr = server.local_addr();
        let acceptor = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Some(conn) = server.accept().await {
                held.push(conn);
            }
        });
        let client = client();
        let other = qstp_net::Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let stream = || Config::preset(Preset::TfrcSack, Rate::ZERO);
        let free = client.connect(addr, stream()).await.unwrap();
        let stunt = client.connect(addr, stream()).await.unwrap();
        let foreign = other.connect(addr, stream()).await.unwrap();
        let messages = client
            .connect(addr, Config::preset(Preset::Tfrc, Rate::ZERO))
            .await
            .unwrap();
        let refused = |r: Result<qstp_net::Group, Error>| match r {
            Err(Error::Group(why)) => why,
            Err(e) => panic!("another error: {e}"),
            Ok(_) => panic!("formed"),
        };
        let target = Rate::from_mbps(1);
        let options = GroupOptions::default();
        let why = refused(client.group(&free, &[], target, options));
        assert!(why.contains("at least one Stunt"), "{why}");
        let why = refused(client.group(&free, &[&foreign], target, options));
        assert!(why.contains("Free's endpoint"), "{why}");
        let why = refused(client.group(&free, &[&messages], target, options));
        assert!(why.contains("byte-stream"), "{why}");
        // A member closed mid-run leaves the group; a closed Free ends it.
        let group = client.group(&free, &[&stunt], target, options).unwrap();
        let why = refused(client.group(&stunt, &[&free], target, options));
        assert!(why.contains("one group only"), "{why}");
        assert!(group.stats().is_some());
        free.close(0, b"bye");
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The driver's next turn ends the group.
        stunt.set_target_rate(Rate::ZERO).unwrap();
        let mut ended = false;
        for _ in 0..100 {
            if group.stats().is_none() {
                ended = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(ended, "the group outlived its Free");
        acceptor.abort();
    })
    .await;
}
