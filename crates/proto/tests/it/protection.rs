//! Stories of packet protection (the default): what an attacker on the path reads, forges,
//! replays or flips, and what a pre-shared key keeps out.

use crate::support::{cleartext, pattern, read_stream, Direction, Pair, PathModel};
use proptest::prelude::*;
use qstp_proto::endpoint::ServerPolicy;
use qstp_proto::wire::{Chunk, ConnectionId, Data, Feedback, Packet, PacketType};
use qstp_proto::{
    CloseReason, Config, Duration, Endpoint, EndpointConfig, Event, PreSharedKey, Protection,
};

/// A marker the application writes; it must never be seen on the wire.
const MARKER: &[u8] = b"QSTP-PLAINTEXT-MARKER-7f3a";

/// The stream written in these stories: a pattern with the marker every 4 kB.
fn stream(len: usize) -> Vec<u8> {
    let mut data = pattern(len, 5);
    for at in (0..len.saturating_sub(MARKER.len())).step_by(4096) {
        data[at..at + MARKER.len()].copy_from_slice(MARKER);
    }
    data
}

fn path() -> PathModel {
    PathModel::with_delay(Duration::from_millis(10))
}

#[test]
fn the_application_bytes_never_appear_on_the_wire() {
    let data = stream(200_000);
    let mut pair = Pair::new(Config::default(), path(), 1);
    pair.capture = Some(Vec::new());
    pair.connect_and_establish(Config::default());
    pair.client.conn_mut().write(&data).unwrap();
    pair.client.conn_mut().finish().unwrap();
    assert_eq!(
        read_stream(&mut pair, data.len(), Duration::from_secs(20)),
        Some(data)
    );
    let log = pair.capture.as_ref().unwrap();
    assert!(log.len() > 100);
    assert!(
        !log.iter()
            .any(|(_, _, b)| b.windows(MARKER.len()).any(|w| w == MARKER)),
        "the marker was readable on the wire"
    );
    // The same story without protection shows the marker: the check has teeth.
    let data = stream(20_000);
    let mut open = Pair::new(cleartext(), path(), 1);
    open.capture = Some(Vec::new());
    open.connect_and_establish(cleartext());
    open.client.conn_mut().write(&data).unwrap();
    assert!(read_stream(&mut open, data.len(), Duration::from_secs(20)).is_some());
    assert!(open
        .capture
        .unwrap()
        .iter()
        .any(|(_, _, b)| b.windows(MARKER.len()).any(|w| w == MARKER)));
}

#[test]
fn flipped_bits_are_dropped_and_the_stream_arrives_intact() {
    // A relay that flips one bit in 2% of datagrams, both ways.
    let rough = PathModel {
        corrupt: 0.02,
        ..path()
    };
    let data = stream(1_000_000);
    let mut pair = Pair::new(Config::default(), rough, 2);
    pair.connect_and_establish(Config::default());
    pair.client.conn_mut().write(&data).unwrap();
    let got = read_stream(&mut pair, data.len(), Duration::from_secs(60));
    assert!(got == Some(data), "the stream was cut or corrupted");
    let flipped = pair.to_server_stats.corrupted + pair.to_client_stats.corrupted;
    assert!(flipped > 5, "{flipped} datagrams flipped");
    let failures =
        pair.client.conn().stats().auth_failures + pair.server.conn().stats().auth_failures;
    // A flip in a cleartext header byte may misroute instead (unknown connection): every other
    // flip fails authentication.
    assert!(
        failures > 0 && failures <= flipped,
        "{failures} of {flipped}"
    );
}

/// The probes, on a protected connection: a forged data packet, a forged acknowledgement
/// of everything, a forged close and a feedback numbered u64::MAX, each with the right 4-tuple
/// and the connection id read off the wire. None is acted on; the transfer completes.
#[test]
fn forged_packets_with_the_right_ids_are_dropped() {
    let data = stream(300_000);
    let mut pair = Pair::new(
        Config::default(),
        PathModel {
            loss: 0.02,
            ..path()
        },
        3,
    );
    pair.capture = Some(Vec::new());
    pair.connect_and_establish(Config::default());
    pair.client.conn_mut().write(&data).unwrap();
    pair.drive(Duration::from_millis(100));
    let id = |pair: &Pair, direction: Direction| -> ConnectionId {
        pair.capture
            .as_ref()
            .unwrap()
            .iter()
            .find(|(_, d, b)| {
                *d == direction && qstp_proto::wire::peek_type(b) == Ok(PacketType::Data)
            })
            .and_then(|(_, _, b)| qstp_proto::wire::destination_of(b))
            .expect("a data packet")
    };
    let server_id = id(&pair, Direction::ToServer);
    let encode = |p: Packet<'_>| {
        let mut b = Vec::new();
        p.encode(&mut b);
        b
    };
    let forged_data = encode(Packet::Data(Data {
        destination: server_id,
        packet_number: 3,
        timestamp: 0,
        rtt: 0,
        skip_to: None,
        previous_skipped: false,
        chunk: Chunk::Stream {
            offset: 0,
            fin: false,
        },
        payload: &[0xee; 1000],
    }));
    pair.inject(Direction::ToServer, forged_data);
    // Feedback to the client claiming everything, numbered u64::MAX.
    let client_id = pair
        .capture
        .as_ref()
        .unwrap()
        .iter()
        .find(|(_, d, b)| {
            *d == Direction::ToClient && qstp_proto::wire::peek_type(b) == Ok(PacketType::Feedback)
        })
        .and_then(|(_, _, b)| qstp_proto::wire::destination_of(b))
        .expect("a feedback packet");
    let forged_ack = encode(Packet::Feedback(Feedback {
        destination: client_id,
        sequence: u64::MAX,
        timestamp_echo: 0,
        t_delay: 0,
        x_recv: 1,
        loss_event_rate_ppb: 0,
        max_data: u64::MAX,
        ack_ranges: vec![(0, 1_000_000)],
    }));
    pair.inject(Direction::ToClient, forged_ack);
    let forged_close = encode(Packet::Close(qstp_proto::wire::Close {
        destination: client_id,
        graceful: true,
        code: 0,
        reason: b"",
    }));
    pair.inject(Direction::ToClient, forged_close);
    let got = read_stream(&mut pair, data.len(), Duration::from_secs(60));
    assert!(
        got == Some(data),
        "the forged packets cut or corrupted the stream"
    );
    assert!(!pair.client.conn().is_closed());
    assert!(pair.server.conn().stats().auth_failures >= 1);
    assert!(pair.client.conn().stats().auth_failures >= 2);
}

#[test]
fn a_replayed_sealed_packet_is_dropped_once_seen() {
    let data = stream(50_000);
    let mut pair = Pair::new(Config::default(), path(), 4);
    pair.capture = Some(Vec::new());
    pair.connect_and_establish(Config::default());
    pair.client.conn_mut().write(&data).unwrap();
    assert!(read_stream(&mut pair, data.len(), Duration::from_secs(20)).is_some());
    let sealed: Vec<Vec<u8>> = pair
        .capture
        .as_ref()
        .unwrap()
        .iter()
        .filter(|(_, d, b)| {
            *d == Direction::ToServer && qstp_proto::wire::peek_type(b) == Ok(PacketType::Data)
        })
        .map(|(_, _, b)| b.clone())
        .take(5)
        .collect();
    let before = pair.server.conn().stats();
    for datagram in &sealed {
        pair.inject(Direction::ToServer, datagram.clone());
    }
    pair.drive(Duration::from_millis(100));
    let after = pair.server.conn().stats();
    assert_eq!(
        after.auth_failures - before.auth_failures,
        sealed.len() as u64
    );
    assert_eq!(after.packets_received, before.packets_received);
}

fn psk_endpoints(client_key: Option<&[u8]>, server_key: Option<&[u8]>) -> (Endpoint, Endpoint) {
    let mut client = EndpointConfig::client([1; 32]);
    client.psk = client_key.map(PreSharedKey::from_secret);
    let mut server = EndpointConfig::server([2; 32], Config::default());
    server.psk = server_key.map(PreSharedKey::from_secret);
    (
        Endpoint::with_entropy(client, [3; 32]),
        Endpoint::with_entropy(server, [4; 32]),
    )
}

#[test]
fn the_same_pre_shared_key_connects_and_another_does_not() {
    let (client, server) = psk_endpoints(Some(b"shared secret"), Some(b"shared secret"));
    let mut pair = Pair::with_endpoints(client, server, path(), 5);
    pair.connect_and_establish(Config::default());
    let data = stream(30_000);
    pair.client.conn_mut().write(&data).unwrap();
    assert_eq!(
        read_stream(&mut pair, data.len(), Duration::from_secs(20)),
        Some(data)
    );

    for (client_key, server_key) in [
        (Some(&b"one secret"[..]), Some(&b"another"[..])),
        (None, Some(&b"server only"[..])),
        (Some(&b"client only"[..]), None),
    ] {
        let (client, server) = psk_endpoints(client_key, server_key);
        let mut pair = Pair::with_endpoints(client, server, path(), 6);
        pair.connect(Config {
            handshake_timeout: Duration::from_secs(2),
            ..Config::default()
        });
        assert!(pair.drive_until(Duration::from_secs(5), |p| p.client.conn().is_closed()));
        assert!(!pair.client.saw(&Event::Connected));
        let stats = pair.server.endpoint.stats();
        assert_eq!(stats.accepted, 0);
        // The server held nothing for this client.
        assert_eq!(pair.server.endpoint.connection_count(), 0);
        if server_key.is_some() {
            // A server with a key says nothing to a hello without its binder, not even a
            // retry: the client learns only that nobody answered.
            assert!(
                pair.client
                    .saw(&Event::Closed(CloseReason::HandshakeTimeout)),
                "{client_key:?} {server_key:?}"
            );
            assert_eq!(pair.client.conn().stats().packets_received, 0);
            assert!(stats.key_mismatches >= 1);
            assert_eq!(stats.cookie_challenges, 0);
        } else {
            // A server without one refuses a client holding one at once, after the cookie.
            assert!(
                pair.client.saw(&Event::Closed(CloseReason::KeyMismatch)),
                "{client_key:?} {server_key:?}"
            );
            assert_eq!(stats.key_mismatches, 1);
        }
    }
}

#[test]
fn a_server_refuses_unprotected_hellos_unless_its_policy_allows_them() {
    let client = Endpoint::new(EndpointConfig::client([1; 32]), 1);
    let server = Endpoint::new(EndpointConfig::server([2; 32], Config::default()), 2);
    let mut pair = Pair::with_endpoints(client, server, path(), 7);
    pair.connect(cleartext());
    assert!(pair.drive_until(Duration::from_secs(5), |p| p.client.conn().is_closed()));
    assert!(pair.client.saw(&Event::Closed(CloseReason::Refused)));
    assert_eq!(pair.server.endpoint.connection_count(), 0);

    let client = Endpoint::new(EndpointConfig::client([1; 32]), 1);
    let server = Endpoint::new(
        EndpointConfig {
            policy: ServerPolicy {
                allow_unprotected: true,
                ..ServerPolicy::default()
            },
            ..EndpointConfig::server([2; 32], Config::default())
        },
        2,
    );
    let mut pair = Pair::with_endpoints(client, server, path(), 7);
    pair.connect_and_establish(cleartext());
    assert_eq!(pair.server.conn().config().protection, Protection::Null);
}

#[test]
fn a_pre_shared_key_refuses_an_unprotected_connect() {
    let (mut client, _) = psk_endpoints(Some(b"k"), None);
    let err = client
        .connect(
            qstp_proto::Time::from_nanos(0),
            "10.0.0.2:4433".parse().unwrap(),
            cleartext(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("pre-shared key"), "{err}");
}

/// An accept whose key share a middlebox replaced, or whose keys it stripped (a downgrade), never
/// completes a handshake: the client drops it and completes with the real one.
#[test]
fn a_tampered_accept_is_dropped_and_the_real_one_still_counts() {
    // The first accept (the server's answer before 1.1 s) is lost, so the tampered copies
    // arrive first.
    fn lose_first_accept(now: qstp_proto::Time, datagram: &[u8]) -> bool {
        qstp_proto::wire::peek_type(datagram) == Ok(PacketType::Accept)
            && now < qstp_proto::Time::from_nanos(1_100_000_000)
    }
    let lossy = PathModel {
        drop_if: Some(lose_first_accept),
        ..path()
    };
    let mut pair = Pair::new(Config::default(), lossy, 8);
    pair.capture = Some(Vec::new());
    pair.connect(Config::default());
    let is_accept = |(_, d, b): &&(qstp_proto::Time, Direction, Vec<u8>)| {
        *d == Direction::ToClient && qstp_proto::wire::peek_type(b) == Ok(PacketType::Accept)
    };
    assert!(pair.drive_until(Duration::from_millis(90), |p| p
        .capture
        .as_ref()
        .unwrap()
        .iter()
        .any(|e| is_accept(&e))));
    let accept = pair
        .capture
        .as_ref()
        .unwrap()
        .iter()
        .find(is_accept)
        .unwrap()
        .2
        .clone();
    assert_eq!(accept.len(), qstp_proto::wire::PROTECTED_ACCEPT_LEN);
    let mut flipped_share = accept.clone();
    flipped_share[40] ^= 1;
    let mut flipped_tag = accept.clone();
    *flipped_tag.last_mut().unwrap() ^= 1;
    let stripped = accept[..qstp_proto::wire::ACCEPT_LEN].to_vec();
    // Straight to the client, before the hello goes again.
    let (now, server) = (pair.time, pair.server.addr);
    for tampered in [flipped_share, flipped_tag, stripped] {
        pair.client.endpoint.handle_datagram(now, server, &tampered);
    }
    assert!(!pair.client.conn().is_established());
    assert_eq!(pair.client.conn().stats().auth_failures, 3);
    // The hello goes again; the server's second accept is genuine.
    assert!(
        pair.drive_until(Duration::from_secs(3), |p| p.client.conn().is_established()
            && p.server.handle.is_some())
    );
    let data = stream(20_000);
    pair.client.conn_mut().write(&data).unwrap();
    assert_eq!(
        read_stream(&mut pair, data.len(), Duration::from_secs(20)),
        Some(data)
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// No sequence of forged, replayed or bit-flipped copies of real datagrams makes a fully
    /// reliable stream deliver a wrong byte or report completion early.
    #[test]
    fn forgeries_never_corrupt_or_end_a_stream_early(
        seed in 0u64..1000,
        attacks in proptest::collection::vec((0usize..400, 0usize..2000, any::<u8>(), 0u8..3), 1..40),
    ) {
        let data = stream(60_000);
        let mut pair = Pair::new(Config::default(), path(), seed);
        pair.capture = Some(Vec::new());
        pair.connect_and_establish(Config::default());
        pair.client.conn_mut().write(&data).unwrap();
        pair.client.conn_mut().finish().unwrap();
        let mut got = Vec::new();
        let mut buf = vec![0u8; 8192];
        for (pick, at, byte, kind) in attacks {
            pair.drive(Duration::from_millis(5));
            while let Ok(n) = pair.server.conn_mut().read(&mut buf) {
                if n == 0 { break; }
                got.extend_from_slice(&buf[..n]);
            }
            let log = pair.capture.as_ref().unwrap();
            let Some((_, direction, original)) = log.get(pick % log.len()).cloned() else { continue };
            let mut datagram = original;
            if datagram.is_empty() { continue; }
            match kind {
                0 => {} // replay
                1 => { let i = at % datagram.len(); datagram[i] ^= byte | 1; } // flip
                _ => { datagram.truncate(at % datagram.len()); } // cut
            }
            pair.inject(direction, datagram);
            prop_assert!(data.starts_with(&got), "wrong bytes delivered");
            prop_assert!(!pair.server.saw(&Event::Closed(CloseReason::Graceful)) || got.len() == data.len());
        }
        let rest = read_stream(&mut pair, data.len() - got.len(), Duration::from_secs(30));
        prop_assert!(rest.is_some(), "the stream stalled");
        got.extend_from_slice(&rest.unwrap());
        prop_assert!(got == data);
    }
}
