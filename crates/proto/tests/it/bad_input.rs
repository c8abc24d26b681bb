//! Stories of hostile and broken input: every bad datagram is dropped and counted, nothing panics,
//! and nothing makes the endpoint keep state or memory it did not budget for.

use crate::support::{pattern, Direction, Pair, PathModel};
use qstp_proto::endpoint::MAX_STATELESS_REPLIES;
use qstp_proto::wire::{
    Chunk, Composition, ConnectionId, Cookie, Data, Feedback, Hello, Packet, COOKIE_LEN,
};
use qstp_proto::{Config, Duration, Event, Protection, ReadError};

/// Unprotected connections: these stories forge and replay readable packets, to test the core's
/// own defences, which also hold against a peer that is authenticated but misbehaves. Protection's
/// defences (forged, flipped and replayed sealed packets) are in `tests/protection.rs`.
fn cleartext() -> Config {
    Config {
        protection: Protection::Null,
        ..Config::default()
    }
}

/// A pair with an established connection that moved `bytes` client to server, every datagram
/// captured.
fn established_with_traffic(bytes: usize) -> Pair {
    let mut pair = Pair::new(
        cleartext(),
        PathModel::with_delay(Duration::from_millis(10)),
        31,
    );
    pair.capture = Some(Vec::new());
    pair.connect_and_establish(cleartext());
    let data = pattern(bytes, 9);
    pair.client.conn_mut().write(&data).unwrap();
    let mut buf = vec![0u8; bytes];
    let mut read = 0;
    assert!(pair.drive_until(Duration::from_secs(10), |p| {
        if let Ok(n) = p.server.conn_mut().read(&mut buf[read..]) {
            read += n;
        }
        read == bytes
    }));
    pair.drive(Duration::from_millis(200));
    pair
}

/// The first captured datagram going `direction` that decodes as a data packet.
fn captured_data(pair: &Pair, direction: Direction) -> Vec<u8> {
    let log = pair.capture.as_ref().unwrap();
    log.iter()
        .find(|(_, d, bytes)| {
            *d == direction && matches!(Packet::decode(bytes), Ok(Packet::Data(_)))
        })
        .map(|(_, _, bytes)| bytes.clone())
        .expect("a captured data packet")
}

fn destination_of(datagram: &[u8]) -> ConnectionId {
    Packet::decode(datagram).unwrap().destination().unwrap()
}

fn encode(packet: &Packet<'_>) -> Vec<u8> {
    let mut buf = Vec::new();
    packet.encode(&mut buf);
    buf
}

#[test]
fn malformed_truncated_and_oversize_datagrams_are_counted_and_dropped() {
    let mut pair = established_with_traffic(20_000);
    let (now, from) = (pair.time, pair.client.addr);
    let good = captured_data(&pair, Direction::ToServer);
    let before = pair.server.endpoint.stats().malformed;
    let dropped_before = pair.server.conn().stats().packets_dropped;
    let mut fed = 0;
    for len in 0..good.len() {
        pair.server
            .endpoint
            .handle_datagram(now, from, &good[..len]);
        fed += 1;
    }
    pair.server
        .endpoint
        .handle_datagram(now, from, &vec![0xAB; 70_000]);
    pair.server.endpoint.handle_datagram(now, from, &[0xFF; 40]);
    fed += 2;
    let mut garbage = good.clone();
    garbage[0] = 99; // an unknown version
    pair.server.endpoint.handle_datagram(now, from, &garbage);
    fed += 1;
    // Cut inside the header, a datagram does not decode; cut inside the payload it decodes as a
    // shorter data packet, but its packet number was already received: a replay. Both count.
    let malformed = pair.server.endpoint.stats().malformed - before;
    let replays = pair.server.conn().stats().packets_dropped - dropped_before;
    assert!(malformed >= 4, "{malformed}");
    assert_eq!(malformed + replays, fed);
    assert_eq!(
        pair.server.conn().stats().bytes_delivered,
        20_000,
        "nothing extra delivered"
    );
}

#[test]
fn replayed_and_out_of_window_data_is_dropped_and_counted() {
    let mut pair = established_with_traffic(20_000);
    let now = pair.time;
    let from = pair.client.addr;
    let replay = captured_data(&pair, Direction::ToServer);
    let dropped_before = pair.server.conn().stats().packets_dropped;
    pair.server.endpoint.handle_datagram(now, from, &replay);
    assert_eq!(
        pair.server.conn().stats().packets_dropped,
        dropped_before + 1,
        "replay dropped"
    );

    let destination = destination_of(&replay);
    let far = Data {
        destination,
        packet_number: 1 << 40,
        timestamp: 0,
        rtt: 0,
        chunk: Chunk::Stream {
            offset: 20_000,
            fin: false,
        },
        skip_to: None,
        previous_skipped: false,
        payload: b"from the far future",
    };
    pair.server
        .endpoint
        .handle_datagram(now, from, &encode(&Packet::Data(far)));
    assert_eq!(
        pair.server.conn().stats().packets_dropped,
        dropped_before + 2,
        "out of window dropped"
    );

    // The right connection id from the wrong address is not the peer.
    pair.server
        .endpoint
        .handle_datagram(now, "10.9.9.9:1".parse().unwrap(), &replay);
    assert_eq!(
        pair.server.conn().stats().packets_dropped,
        dropped_before + 3,
        "spoofed source dropped"
    );

    // An unknown connection id is counted by the endpoint.
    let mut stray = replay.clone();
    let unknown_before = pair.server.endpoint.stats().unknown_connection;
    if let Ok(Packet::Data(mut d)) = Packet::decode(&replay) {
        d.destination = ConnectionId(destination.0 ^ 1);
        stray = encode(&Packet::Data(d));
    }
    pair.server.endpoint.handle_datagram(now, from, &stray);
    assert_eq!(
        pair.server.endpoint.stats().unknown_connection,
        unknown_before + 1
    );

    // None of it reached the application.
    assert_eq!(pair.server.conn().stats().bytes_delivered, 20_000);
    assert_eq!(
        pair.server.conn_mut().read(&mut [0u8; 16]),
        Err(ReadError::Blocked)
    );
}

#[test]
fn feedback_acknowledging_never_sent_packets_is_ignored_and_counted() {
    let mut pair = established_with_traffic(20_000);
    let to_client = captured_data(&pair, Direction::ToServer);
    let server_id = destination_of(&to_client);
    // The client's id is the destination of anything the server sent.
    let client_id = pair
        .capture
        .as_ref()
        .unwrap()
        .iter()
        .find(|(_, d, b)| {
            *d == Direction::ToClient
                && matches!(
                    Packet::decode(b),
                    Ok(Packet::Feedback(_)) | Ok(Packet::Data(_))
                )
        })
        .map(|(_, _, b)| destination_of(b))
        .unwrap_or(ConnectionId(0));
    assert_ne!(client_id, server_id);
    let rate_before = pair.client.conn().stats().rate;
    let acked_before = pair.client.conn().stats().bytes_acked;
    let optimistic = Feedback {
        destination: client_id,
        sequence: 1 << 40,
        timestamp_echo: pair.time.wire_micros(),
        t_delay: 0,
        x_recv: 1_000_000_000,
        loss_event_rate_ppb: 0,
        max_data: 1 << 40,
        ack_ranges: vec![(0, 1_000_000)],
    };
    let (now, from) = (pair.time, pair.server.addr);
    pair.client
        .endpoint
        .handle_datagram(now, from, &encode(&Packet::Feedback(optimistic)));
    let stats = pair.client.conn().stats();
    assert_eq!(stats.bogus_acks, 1);
    assert_eq!(stats.rate, rate_before, "the rate did not jump on a lie");
    assert_eq!(stats.bytes_acked, acked_before);
}

#[test]
fn spoofed_hellos_cost_the_server_no_state() {
    let mut pair = Pair::new(Config::default(), PathModel::default(), 32);
    let composition = Composition {
        congestion: Config::default().congestion.negotiated(),
        error: Config::default().error,
        order: Config::default().order,
    };
    let now = pair.time;
    for i in 0..1_000u32 {
        let hello = Hello {
            source: ConnectionId(u64::from(i) + 1),
            composition,
            max_datagram: 1500,
            recv_window: 1 << 20,
            timestamp: i,
            // Every tenth hello carries a forged cookie.
            cookie: (i % 10 == 0).then_some(Cookie([i as u8; COOKIE_LEN])),
            key_share: None,
            binder: None,
        };
        // Each from a network of its own: the per-network bound on replies is tested apart.
        let from = format!("10.{}.{}.1:{}", i / 250, i % 250, 1000 + i)
            .parse()
            .unwrap();
        pair.server
            .endpoint
            .handle_datagram(now, from, &encode(&Packet::Hello(hello)));
    }
    let stats = pair.server.endpoint.stats();
    assert_eq!(stats.cookie_challenges, 900);
    assert_eq!(stats.refused, 100, "forged cookies refused");
    assert_eq!(stats.accepted, 0);
    assert_eq!(pair.server.endpoint.connection_count(), 0);
    // The answers wait in a bounded queue; the rest were never queued.
    let mut buf = Vec::new();
    let mut replies = 0;
    while let Some(t) = pair.server.endpoint.poll_transmit(now, &mut buf) {
        assert!(t.connection.is_none());
        assert!(
            t.size < 1200 / 3,
            "a reply is much smaller than the padded hello"
        );
        replies += 1;
    }
    assert_eq!(replies, MAX_STATELESS_REPLIES);
    assert_eq!(
        pair.server.endpoint.poll_timeout(),
        None,
        "no timer, no state"
    );
}

#[test]
fn a_cookie_replayed_from_another_address_is_refused() {
    let mut pair = Pair::new(
        Config::default(),
        PathModel::with_delay(Duration::from_millis(5)),
        33,
    );
    pair.capture = Some(Vec::new());
    pair.connect_and_establish(Config::default());
    let hello_with_cookie = pair
        .capture
        .as_ref()
        .unwrap()
        .iter()
        .filter_map(|(_, d, b)| (*d == Direction::ToServer).then_some(b))
        .find(|b| matches!(Packet::decode(b), Ok(Packet::Hello(h)) if h.cookie.is_some()))
        .unwrap()
        .clone();
    let refused = pair.server.endpoint.stats().refused;
    pair.server.endpoint.handle_datagram(
        pair.time,
        "198.51.100.7:9".parse().unwrap(),
        &hello_with_cookie,
    );
    assert_eq!(pair.server.endpoint.stats().refused, refused + 1);
    assert_eq!(pair.server.endpoint.connection_count(), 1);
    // Replayed from the right address it is a repeat of the existing connection's hello.
    pair.server
        .endpoint
        .handle_datagram(pair.time, pair.client.addr, &hello_with_cookie);
    assert_eq!(pair.server.endpoint.connection_count(), 1);
    // The cookie does not cover another client id from the same address.
    if let Ok(Packet::Hello(mut h)) = Packet::decode(&hello_with_cookie) {
        h.source = ConnectionId(h.source.0 ^ 0xFF);
        pair.server.endpoint.handle_datagram(
            pair.time,
            pair.client.addr,
            &encode(&Packet::Hello(h)),
        );
    }
    assert_eq!(pair.server.endpoint.stats().refused, refused + 2);
    assert_eq!(pair.server.endpoint.connection_count(), 1);
    assert!(!pair
        .server
        .saw(&Event::Closed(qstp_proto::CloseReason::Refused)));
}

/// Thousands of random datagrams, some shaped like real packets for this connection, thrown at
/// both endpoints during a transfer: nothing panics, no connection appears, and the transfer still
/// completes byte-exact.
#[test]
fn random_garbage_during_a_transfer_changes_nothing() {
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};
    let mut pair = Pair::new(
        Config::default(),
        PathModel {
            loss: 0.02,
            ..PathModel::with_delay(Duration::from_millis(10))
        },
        34,
    );
    pair.capture = Some(Vec::new());
    pair.connect_and_establish(Config::default());
    let data = pattern(150_000, 5);
    let mut written = 0;
    let mut received = Vec::new();
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let mut garbage = vec![0u8; 1600];
    let mut thrown = 0u64;
    let mut buf = [0u8; 4096];
    let done = pair.drive_until(Duration::from_secs(60), |p| {
        if written < data.len() {
            written += p.client.conn_mut().write(&data[written..]).unwrap_or(0);
        }
        while let Ok(n) = p.server.conn_mut().read(&mut buf) {
            if n == 0 {
                break;
            }
            received.extend_from_slice(&buf[..n]);
        }
        // A real datagram of this connection, to borrow its header shape.
        let template = p
            .capture
            .as_ref()
            .and_then(|log| {
                log.iter()
                    .rev()
                    .find(|(_, d, b)| *d == Direction::ToServer && b.len() > 40)
            })
            .map(|(_, _, b)| b.clone());
        for _ in 0..8 {
            let len = (rng.next_u32() % 1600) as usize;
            rng.fill_bytes(&mut garbage[..len]);
            if let (Some(t), true) = (&template, rng.next_u32() % 2 == 0) {
                // Keep version, type and connection id; randomise the rest.
                let keep = 10.min(t.len()).min(len);
                garbage[..keep].copy_from_slice(&t[..keep]);
            }
            let (now, from) = (p.time, p.client.addr);
            p.server
                .endpoint
                .handle_datagram(now, from, &garbage[..len]);
            let (now, from) = (p.time, p.server.addr);
            p.client
                .endpoint
                .handle_datagram(now, from, &garbage[..len]);
            thrown += 2;
        }
        received.len() == data.len()
    });
    assert!(done, "{} of {} bytes", received.len(), data.len());
    assert!(received == data, "garbage reached the stream");
    assert_eq!(pair.server.endpoint.connection_count(), 1);
    assert_eq!(pair.server.endpoint.stats().accepted, 1);
    let dropped = pair.server.endpoint.stats().malformed
        + pair.server.endpoint.stats().unknown_connection
        + pair.client.endpoint.stats().malformed
        + pair.client.endpoint.stats().unknown_connection
        + pair.server.conn().stats().packets_dropped
        + pair.client.conn().stats().packets_dropped;
    assert!(
        dropped >= thrown * 9 / 10,
        "{dropped} of {thrown} counted as dropped"
    );
}
