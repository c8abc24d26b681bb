//! Stories of messages: unordered delivery, the DCCP-like service without repair, and partial
//! reliability that gives up on a message once its deadline passed.

mod support;

use qstp_proto::wire::{Chunk, Packet};
use qstp_proto::{Config, CongestionControl, Duration, ErrorControl, Order, Preset, Rate, Time};
use std::collections::BTreeSet;
use support::{Direction, Pair, PathModel};

/// A message of `len` bytes that carries its id and write time in its first 16 bytes.
fn message(id: u64, written: Time, len: usize) -> Vec<u8> {
    let mut m = vec![(id % 251) as u8; len.max(16)];
    m[..8].copy_from_slice(&id.to_be_bytes());
    m[8..16].copy_from_slice(&written.as_nanos().to_be_bytes());
    m
}

/// The id and write time a message carries, after checking its filler is intact.
fn parse(m: &[u8]) -> (u64, Time) {
    let id = u64::from_be_bytes(m[..8].try_into().unwrap());
    let written = Time::from_nanos(u64::from_be_bytes(m[8..16].try_into().unwrap()));
    assert!(m[16..].iter().all(|b| *b == (id % 251) as u8), "message {id} corrupted");
    (id, written)
}

fn composition(error: ErrorControl, order: Order) -> Config {
    Config { congestion: CongestionControl::Tfrc, error, order, ..Config::default() }
}

/// Send `count` messages of `len` bytes, one every `interval`; collect (id, write, delivery).
fn exchange(pair: &mut Pair, config: Config, count: u64, len: usize, interval: Duration, limit: Duration) -> Vec<(u64, Time, Time)> {
    pair.connect_and_establish(config);
    let mut next_id = 0;
    let mut next_write = pair.time;
    let mut delivered = Vec::new();
    pair.drive_until(limit, |p| {
        while next_id < count && p.time >= next_write {
            let m = message(next_id, p.time, len);
            p.client.conn_mut().send_message(p.time, &m).expect("send_message");
            next_id += 1;
            next_write += interval;
        }
        while let Some(m) = p.server.conn_mut().recv_message() {
            let (id, written) = parse(&m);
            delivered.push((id, written, p.time));
        }
        false
    });
    assert_eq!(next_id, count, "the writer kept up");
    delivered
}

#[test]
fn unordered_messages_all_arrive_as_each_completes() {
    let path = PathModel { reorder: 0.2, reorder_delay: Duration::from_millis(15), ..PathModel::with_delay(Duration::from_millis(10)) };
    let mut pair = Pair::new(Config::default(), path, 21);
    let config = composition(ErrorControl::SackFull, Order::Unordered);
    let delivered = exchange(&mut pair, config, 300, 600, Duration::from_millis(5), Duration::from_secs(20));
    let mut ids: Vec<u64> = delivered.iter().map(|d| d.0).collect();
    let in_write_order = ids.windows(2).all(|w| w[0] < w[1]);
    ids.sort_unstable();
    assert_eq!(ids, (0..300).collect::<Vec<_>>(), "every message exactly once");
    assert!(!in_write_order, "reordered packets let later messages overtake earlier ones");
}

#[test]
fn messages_larger_than_a_datagram_are_fragmented_and_rebuilt() {
    let mut pair = Pair::new(Config::default(), PathModel { loss: 0.05, ..PathModel::default() }, 22);
    let config = composition(ErrorControl::SackFull, Order::Unordered);
    let delivered = exchange(&mut pair, config, 40, 5_000, Duration::from_millis(20), Duration::from_secs(30));
    let mut ids: Vec<u64> = delivered.iter().map(|d| d.0).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..40).collect::<Vec<_>>(), "complete, each rebuilt from its fragments");
}

#[test]
fn without_error_control_losses_stay_lost() {
    let path = PathModel { loss: 0.1, ..PathModel::with_delay(Duration::from_millis(10)) };
    let mut pair = Pair::new(Config::default(), path, 23);
    let delivered = exchange(&mut pair, Config::preset(Preset::Tfrc, Rate::ZERO), 400, 500, Duration::from_millis(5), Duration::from_secs(10));
    let client = pair.client.conn().stats();
    assert_eq!(client.packets_retransmitted, 0, "the DCCP-like service never repairs");
    assert!(delivered.len() < 400 && delivered.len() > 300, "{} of 400 delivered", delivered.len());
    let mut ids: Vec<u64> = delivered.iter().map(|d| d.0).collect();
    ids.dedup();
    assert_eq!(ids.len(), delivered.len(), "no message twice");
}

/// Partial reliability, the guarantee as strong as it can be made: the sender never transmits a
/// fragment of a message after `write time + deadline`, so with unordered delivery a message is
/// handed to the application no later than `write time + deadline + the path's one-way delay`
/// (here the harness clock is both endpoints' clock).
#[test]
fn partial_reliability_never_delivers_a_message_past_its_deadline() {
    let deadline = Duration::from_millis(300);
    let path = PathModel { loss: 0.1, reorder: 0.1, reorder_delay: Duration::from_millis(10), ..PathModel::with_delay(Duration::from_millis(30)) };
    let max_one_way = path.delay + path.reorder_delay;
    let mut pair = Pair::new(Config::default(), path, 24);
    let config = composition(ErrorControl::SackPartial { deadline: Some(deadline), max_retransmissions: None }, Order::Unordered);
    // 80 kbit/s offered, well below what TFRC allows at this loss rate: only repair can miss.
    let delivered = exchange(&mut pair, config, 400, 200, Duration::from_millis(20), Duration::from_secs(15));
    for (id, written, at) in &delivered {
        assert!(*at <= *written + deadline + max_one_way, "message {id} written {written} delivered {at}");
    }
    // Repair happened within the deadline, and what could not be repaired in time was dropped.
    assert!(pair.client.conn().stats().packets_retransmitted > 0);
    assert!(delivered.len() > 380, "{} of 400 delivered", delivered.len());
    assert!(delivered.len() < 400, "some losses could not be repaired in time");
}

/// In order, partial reliability skips what was abandoned and keeps going.
#[test]
fn ordered_partial_reliability_skips_abandoned_messages_and_keeps_order() {
    let path = PathModel { loss: 0.2, ..PathModel::with_delay(Duration::from_millis(30)) };
    let mut pair = Pair::new(Config::default(), path, 25);
    let error = ErrorControl::SackPartial { deadline: Some(Duration::from_millis(100)), max_retransmissions: Some(1) };
    let delivered = exchange(&mut pair, composition(error, Order::Ordered), 400, 400, Duration::from_millis(10), Duration::from_secs(15));
    let ids: Vec<u64> = delivered.iter().map(|d| d.0).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in order, never twice");
    assert!(ids.len() < 400, "something was abandoned");
    assert!(ids.last().copied().unwrap_or(0) >= 390, "delivery did not stall behind a lost message");
}

/// After a burst, with no more data to carry it, the sender still tells the receiver to skip what
/// it abandoned (an empty packet with the new skip point), so every message that reached the
/// receiver is delivered, in order, and none waits forever behind an abandoned one.
#[test]
fn abandoned_messages_do_not_hold_back_the_rest_of_a_burst() {
    let path = PathModel { loss: 0.3, ..PathModel::with_delay(Duration::from_millis(30)) };
    let mut pair = Pair::new(Config::default(), path, 26);
    pair.arrivals = Some(Vec::new());
    let error = ErrorControl::SackPartial { deadline: Some(Duration::from_millis(80)), max_retransmissions: None };
    pair.connect_and_establish(composition(error, Order::Ordered));
    let now = pair.time;
    for id in 0..30 {
        pair.client.conn_mut().send_message(now, &message(id, now, 300)).unwrap();
    }
    let mut delivered = Vec::new();
    pair.drive_until(Duration::from_secs(3), |p| {
        while let Some(m) = p.server.conn_mut().recv_message() {
            delivered.push(parse(&m).0);
        }
        false
    });
    let arrived: BTreeSet<u64> = pair
        .arrivals
        .as_ref()
        .unwrap()
        .iter()
        .filter(|(_, d, _)| *d == Direction::ToServer)
        .filter_map(|(_, _, b)| match Packet::decode(b) {
            Ok(Packet::Data(data)) => match data.chunk {
                Chunk::Message { id, .. } => Some(id),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(delivered.windows(2).all(|w| w[0] < w[1]), "in order: {delivered:?}");
    assert_eq!(delivered.iter().copied().collect::<BTreeSet<_>>(), arrived, "everything that arrived was delivered");
    assert!(arrived.len() < 30, "some messages were abandoned");
}
