//! No single forged packet stops a connection: each probe of issue 10 that froze or killed a
//! transfer before is replayed here, and the transfer must still complete.

use crate::support::{pattern, read_stream, Direction, Pair, PathModel};
use qstp_proto::wire::{Chunk, ConnectionId, Data, Feedback, Packet};
use qstp_proto::{Config, Duration, Protection};

const BYTES: usize = 300_000;

/// A connection moving `BYTES` client to server through a lossy path, 100 ms into the transfer,
/// with the client's and the server's connection ids read off the wire.
fn transfer_under_way(seed: u64) -> (Pair, Vec<u8>, ConnectionId, ConnectionId) {
    let path = PathModel {
        loss: 0.02,
        ..PathModel::with_delay(Duration::from_millis(10))
    };
    // Unprotected: the probes forge readable packets to test the core's own defences, which
    // also hold against an authenticated peer that lies. With protection (the default) the same
    // forgeries fail authentication: `tests/protection.rs`.
    let cleartext = Config {
        protection: Protection::Null,
        ..Config::default()
    };
    let mut pair = Pair::new(cleartext.clone(), path, seed);
    pair.capture = Some(Vec::new());
    pair.connect_and_establish(cleartext);
    let data = pattern(BYTES, 3);
    pair.client.conn_mut().write(&data).unwrap();
    pair.drive(Duration::from_millis(100));
    let id = |direction: Direction| {
        pair.capture
            .as_ref()
            .unwrap()
            .iter()
            .filter(|(_, d, _)| *d == direction)
            .find_map(|(_, _, b)| match Packet::decode(b) {
                Ok(Packet::Data(_)) | Ok(Packet::Feedback(_)) => {
                    Packet::decode(b).unwrap().destination()
                }
                _ => None,
            })
            .expect("a packet of the connection")
    };
    let (server_id, client_id) = (id(Direction::ToServer), id(Direction::ToClient));
    (pair, data, client_id, server_id)
}

/// Drive until the server read everything; the bytes read, or None after `limit`.
fn finish(pair: &mut Pair, limit: Duration) -> Option<Vec<u8>> {
    read_stream(pair, BYTES, limit)
}

fn encode(packet: &Packet<'_>) -> Vec<u8> {
    let mut buf = Vec::new();
    packet.encode(&mut buf);
    buf
}

#[test]
fn feedback_numbered_u64_max_does_not_freeze_the_sender() {
    let (mut pair, data, client_id, _) = transfer_under_way(41);
    let forged = Feedback {
        destination: client_id,
        sequence: u64::MAX,
        timestamp_echo: pair.time.wire_micros(),
        t_delay: 0,
        x_recv: 1_000_000,
        loss_event_rate_ppb: 0,
        max_data: 0,
        ack_ranges: vec![],
    };
    let (now, from) = (pair.time, pair.server.addr);
    pair.client
        .endpoint
        .handle_datagram(now, from, &encode(&Packet::Feedback(forged)));
    assert_eq!(pair.client.conn().stats().bogus_acks, 1);
    // Well inside the 30 s idle timeout the honest feedback keeps the transfer going.
    let got = finish(&mut pair, Duration::from_secs(10)).expect("transfer completes");
    assert_eq!(got, data);
}

#[test]
fn a_spoofed_data_packet_far_ahead_does_not_poison_honest_feedback() {
    let (mut pair, data, _, server_id) = transfer_under_way(42);
    let spoofed = Data {
        destination: server_id,
        packet_number: 500_000,
        timestamp: pair.time.wire_micros(),
        rtt: 20_000,
        chunk: Chunk::Empty,
        skip_to: None,
        previous_skipped: false,
        payload: &[],
    };
    let (now, from) = (pair.time, pair.client.addr);
    pair.server
        .endpoint
        .handle_datagram(now, from, &encode(&Packet::Data(spoofed)));
    // The honest receiver now acknowledges packet 500000; the sender clips that range away and
    // keeps the rest of every feedback.
    let got = finish(&mut pair, Duration::from_secs(10)).expect("transfer completes");
    assert_eq!(got, data);
    assert!(pair.client.conn().stats().bogus_acks >= 1);
}

/// RFC 9000 §21.4: the sender leaves a packet number unused now and then, unannounced (its own
/// loss history knows the gap is no loss); an honest receiver never acknowledges it, while a
/// receiver that acknowledges it, optimistically, ahead of what it received, has the connection
/// closed.
#[test]
fn acknowledging_a_skipped_packet_number_closes_the_connection() {
    let cleartext = Config {
        protection: Protection::Null,
        ..Config::default()
    };
    let mut pair = Pair::new(
        cleartext.clone(),
        PathModel::with_delay(Duration::from_millis(10)),
        43,
    );
    pair.capture = Some(Vec::new());
    pair.connect_and_establish(cleartext);
    let data = pattern(6 << 20, 4);
    pair.client.conn_mut().write(&data).unwrap();
    // On this lossless path the client's data packets are numbered without a gap but at a skip;
    // no packet says so.
    let skipped_seen = |p: &Pair| {
        let numbers: Vec<u64> = p
            .capture
            .as_ref()
            .unwrap()
            .iter()
            .filter_map(|(_, _, b)| match Packet::decode(b) {
                Ok(Packet::Data(d)) => {
                    assert!(!d.previous_skipped, "a skip was announced");
                    Some(d.packet_number)
                }
                _ => None,
            })
            .collect();
        numbers
            .windows(2)
            .find(|w| w[1] == w[0] + 2)
            .map(|w| w[0] + 1)
    };
    assert!(pair.drive_until(Duration::from_secs(30), |p| skipped_seen(p).is_some()));
    let skipped = skipped_seen(&pair).unwrap();
    pair.drive(Duration::from_millis(100));
    // The honest receiver's feedback so far never covered the skipped number, and the sender's
    // loss history, which knows the gap, saw no loss on this lossless path.
    let feedbacks: Vec<Feedback> = pair
        .capture
        .as_ref()
        .unwrap()
        .iter()
        .filter_map(|(_, _, b)| match Packet::decode(b) {
            Ok(Packet::Feedback(f)) => Some(f),
            _ => None,
        })
        .collect();
    let last = feedbacks.last().expect("feedback").clone();
    assert!(last.ack_ranges.iter().any(|&(_, hi)| hi > skipped));
    assert!(feedbacks.iter().all(|f| f
        .ack_ranges
        .iter()
        .all(|&(lo, hi)| !(lo..=hi).contains(&skipped))));
    assert_eq!(pair.client.conn().stats().loss_event_rate, 0.0);
    assert!(!pair.client.conn().is_closed());
    // An optimistic receiver acknowledges everything up to the newest number.
    let optimistic = Feedback {
        sequence: last.sequence + 1,
        ack_ranges: vec![(0, last.ack_ranges[0].1)],
        ..last
    };
    let (now, from) = (pair.time, pair.server.addr);
    pair.client
        .endpoint
        .handle_datagram(now, from, &encode(&Packet::Feedback(optimistic)));
    assert!(pair.client.conn().is_closed());
    match pair.client.conn().close_reason() {
        Some(qstp_proto::CloseReason::ProtocolViolation(why)) => {
            assert!(why.contains(&skipped.to_string()), "{why}")
        }
        other => panic!("closed for {other:?}"),
    }
}
