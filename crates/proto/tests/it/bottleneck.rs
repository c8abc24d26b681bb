//! Stories of a rate-limited bottleneck with a small drop-tail queue: the queue overflows and
//! drops packets, yet a stream still arrives complete, and TFRC keeps most of the link busy.

use crate::support::{pattern, Pair, PathModel};
use qstp_proto::{Config, Duration, Rate, ReadError, WriteError};

/// The bottleneck rate.
const LINK: Rate = Rate::from_mbps(2);

/// 20 ms each way; client to server through a 2 Mbit/s link with room for 8 datagrams.
fn bottleneck_pair(seed: u64) -> Pair {
    let mut pair = Pair::new(
        Config::default(),
        PathModel::with_delay(Duration::from_millis(20)),
        seed,
    );
    pair.to_server.rate = Some(LINK);
    pair.to_server.queue_limit = 8;
    pair
}

/// Write what the client takes, read what the server has; returns true at the end of the stream.
fn pump(pair: &mut Pair, data: &[u8], written: &mut usize, received: &mut Vec<u8>) -> bool {
    let client = pair.client.conn_mut();
    while *written < data.len() {
        match client.write(&data[*written..]) {
            Ok(n) => *written += n,
            Err(WriteError::Blocked) => break,
            Err(e) => panic!("write failed: {e}"),
        }
    }
    if *written == data.len() {
        let _ = client.finish();
    }
    let mut buf = [0u8; 16 * 1024];
    loop {
        match pair.server.conn_mut().read(&mut buf) {
            Ok(0) => return true,
            Ok(n) => received.extend_from_slice(&buf[..n]),
            Err(ReadError::Blocked) => return false,
            Err(e) => panic!("read failed: {e:?}"),
        }
    }
}

#[test]
fn a_stream_arrives_complete_through_an_overflowing_bottleneck() {
    let mut pair = bottleneck_pair(61);
    pair.connect_and_establish(Config::default());
    let data = pattern(1_000_000, 7);
    let (mut written, mut received) = (0, Vec::new());
    let done = pair.drive_until(Duration::from_secs(60), |p| {
        pump(p, &data, &mut written, &mut received)
    });
    assert!(
        done,
        "stream incomplete: {} of {} bytes",
        received.len(),
        data.len()
    );
    assert!(received == data, "the stream arrived altered");
    assert!(
        pair.to_server_stats.queue_drops > 0,
        "the queue never overflowed: the story tests nothing"
    );
    assert_eq!(pair.stalls, 0);
}

/// Measured (seed 62, 2 Mbit/s, 8-datagram queue, R = 40 ms + queueing, 20 s after a 5 s
/// warm-up): 99.5% of the link, with 60 queue drops. The floor of 85% leaves room for seeds and
/// small changes while failing for a rate controller that backs off far below the link.
#[test]
fn tfrc_fills_most_of_a_bottleneck_link() {
    let mut pair = bottleneck_pair(62);
    pair.connect_and_establish(Config::default());
    let chunk = vec![0xA5u8; 64 * 1024];
    let mut sink = vec![0u8; 64 * 1024];
    let warmup = Duration::from_secs(5);
    let start = pair.time;
    let mut at_warmup = None;
    pair.drive_until(Duration::from_secs(25), |p| {
        while p.client.conn_mut().write(&chunk).is_ok() {}
        while matches!(p.server.conn_mut().read(&mut sink), Ok(n) if n > 0) {}
        if at_warmup.is_none() && p.time >= start + warmup {
            at_warmup = Some((p.time, p.server.conn().stats().bytes_received));
        }
        false
    });
    let (from, bytes_then) = at_warmup.expect("ran past the warm-up");
    let bytes = pair.server.conn().stats().bytes_received - bytes_then;
    let through = Rate::from_bytes_over(bytes, pair.time - from);
    let utilisation = through.bps() as f64 / LINK.bps() as f64;
    let drops = pair.to_server_stats.queue_drops;
    assert!(drops > 0, "the queue never overflowed");
    assert!(
        utilisation >= 0.85,
        "TFRC used {:.1}% of the link ({drops} queue drops, p = {})",
        100.0 * utilisation,
        pair.client.conn().stats().loss_event_rate
    );
    assert!(
        utilisation <= 1.0 + 1e-6,
        "more than the link carries: {utilisation}"
    );
    eprintln!(
        "bottleneck utilisation {:.1}%, {drops} queue drops",
        100.0 * utilisation
    );
}
