//! Stories of the handshake: the stateless cookie exchange, lost hellos, a server that never
//! answers, and a server that refuses.

use crate::support::{Direction, Pair, PathModel};
use qstp_proto::{
    CloseReason, Config, Duration, Endpoint, EndpointConfig, Event, Rate, RateControl, ServerPolicy,
};

fn path() -> PathModel {
    PathModel::with_delay(Duration::from_millis(20))
}

#[test]
fn handshake_goes_through_a_cookie_challenge() {
    let mut pair = Pair::new(Config::default(), path(), 1);
    pair.capture = Some(Vec::new());
    pair.connect_and_establish(Config::qstp(Rate::from_kbps(500)));

    // The first hello carried no cookie: the server answered statelessly, then accepted the
    // second hello that echoed the cookie.
    let server_stats = pair.server.endpoint.stats();
    assert_eq!(server_stats.cookie_challenges, 1);
    assert_eq!(server_stats.accepted, 1);
    assert_eq!(server_stats.refused, 0);
    let hellos = pair
        .capture
        .as_ref()
        .unwrap()
        .iter()
        .filter(|(_, d, b)| {
            *d == Direction::ToServer
                && qstp_proto::wire::peek_type(b) == Ok(qstp_proto::wire::PacketType::Hello)
        })
        .count();
    assert_eq!(hellos, 2, "hello, then hello with cookie");

    assert!(pair.client.saw(&Event::Connected));
    assert!(pair.server.saw(&Event::Connected));
    // The server runs the composition the client asked for, with the server's limits.
    assert_eq!(
        pair.server.conn().config().congestion,
        Config::qstp(Rate::from_kbps(500)).congestion
    );
    assert_eq!(pair.server.conn().remote(), pair.client.addr);
    assert_eq!(pair.server.endpoint.connection_count(), 1);
}

#[test]
fn lost_hellos_and_accepts_are_sent_again() {
    let mut pair = Pair::new(
        Config::default(),
        PathModel {
            loss: 0.3,
            ..path()
        },
        7,
    );
    pair.connect_and_establish(Config::default());
    // Every hello that got through with a valid cookie either created the connection or was
    // answered by the existing one: never a second connection.
    assert_eq!(pair.server.endpoint.stats().accepted, 1);
    assert_eq!(pair.server.endpoint.connection_count(), 1);
}

#[test]
fn a_server_that_never_answers_times_the_handshake_out() {
    let mut pair = Pair::new(
        Config::default(),
        PathModel {
            loss: 1.0,
            ..path()
        },
        3,
    );
    let config = Config {
        handshake_timeout: Duration::from_secs(3),
        ..Config::default()
    };
    let started = pair.time;
    pair.connect(config);
    let closed = pair.drive_until(Duration::from_secs(20), |p| p.client.conn().is_closed());
    assert!(closed);
    assert!(pair
        .client
        .saw(&Event::Closed(CloseReason::HandshakeTimeout)));
    let took = pair.time - started;
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(4),
        "closed after {took}"
    );
    // The hello was retransmitted with backoff, not in a tight loop.
    let hellos = pair.to_server_stats.sent;
    assert!((3..=8).contains(&hellos), "{hellos} hellos in 3 s");
    assert_eq!(pair.stalls, 0);
}

#[test]
fn a_full_server_refuses_and_the_client_learns_it() {
    let mut server_config = EndpointConfig::server([9; 32], Config::default());
    server_config.max_connections = 0;
    let client = Endpoint::new(EndpointConfig::client([8; 32]), 1);
    let server = Endpoint::new(server_config, 2);
    let mut pair = Pair::with_endpoints(client, server, path(), 5);
    pair.connect(Config::default());
    assert!(pair.drive_until(Duration::from_secs(5), |p| p.client.conn().is_closed()));
    assert!(pair.client.saw(&Event::Closed(CloseReason::Refused)));
    assert_eq!(pair.server.endpoint.connection_count(), 0);
    assert_eq!(pair.server.endpoint.stats().refused, 1);
}

#[test]
fn a_client_only_endpoint_accepts_nothing() {
    let client = Endpoint::new(EndpointConfig::client([8; 32]), 1);
    let not_a_server = Endpoint::new(EndpointConfig::client([9; 32]), 2);
    let mut pair = Pair::with_endpoints(client, not_a_server, path(), 5);
    let config = Config {
        handshake_timeout: Duration::from_secs(2),
        ..Config::default()
    };
    pair.connect(config);
    assert!(pair.drive_until(Duration::from_secs(5), |p| p.client.conn().is_closed()));
    assert!(pair
        .client
        .saw(&Event::Closed(CloseReason::HandshakeTimeout)));
    assert!(pair.server.endpoint.stats().refused >= 1);
    assert_eq!(pair.server.endpoint.connection_count(), 0);
}

#[test]
fn the_negotiated_config_is_the_clients_composition_within_the_servers_limits() {
    let limits = Config {
        max_datagram: 1200,
        recv_buffer: 256 * 1024,
        ..Config::default()
    };
    let mut pair = Pair::new(limits, path(), 6);
    let asked = Config {
        congestion: qstp_proto::RateControl::Tfrc.into(),
        ..Config::default()
    };
    pair.connect_and_establish(asked);
    let server = pair.server.conn().config();
    assert_eq!(
        server.congestion,
        qstp_proto::RateControl::Tfrc.into(),
        "the client's composition"
    );
    assert_eq!(server.recv_buffer, 256 * 1024, "the server's limits");
    assert_eq!(server.max_datagram, 1200, "the smaller datagram");
    assert_eq!(
        pair.client.conn().config().max_datagram,
        1200,
        "the client learned it from the accept"
    );
    assert!(
        pair.client.conn().stats().rtt > Duration::ZERO,
        "the accept gave the first RTT sample"
    );
}

/// The client's composition under a server's policy: whether it was accepted.
fn accepted(policy: ServerPolicy, congestion: RateControl) -> bool {
    let server_config = EndpointConfig {
        policy,
        ..EndpointConfig::server([9; 32], Config::default())
    };
    let client = Endpoint::new(EndpointConfig::client([8; 32]), 1);
    let server = Endpoint::new(server_config, 2);
    let mut pair = Pair::with_endpoints(client, server, path(), 7);
    pair.connect(Config {
        congestion: congestion.into(),
        ..Config::default()
    });
    assert!(pair.drive_until(Duration::from_secs(5), |p| {
        p.client.conn().is_closed() || p.client.conn().is_established()
    }));
    let refused = pair.client.saw(&Event::Closed(CloseReason::Refused));
    assert_eq!(refused, pair.server.endpoint.stats().refused == 1);
    !refused
}

#[test]
fn the_server_policy_refuses_the_fixed_rate_controller_and_targets_above_its_limit() {
    let fixed = RateControl::Fixed {
        rate: Rate::from_mbps(10_000),
    };
    let huge = RateControl::Gtfrc {
        target: Rate::from_mbps(50_000),
    };
    let modest = RateControl::Gtfrc {
        target: Rate::from_mbps(20),
    };
    // By default: no fixed rate on the wire; any target.
    assert!(!accepted(ServerPolicy::default(), fixed));
    assert!(accepted(ServerPolicy::default(), huge));
    let capped = ServerPolicy {
        max_target: Some(Rate::from_mbps(100)),
        ..ServerPolicy::default()
    };
    assert!(!accepted(capped, huge));
    assert!(accepted(capped, modest));
    assert!(accepted(capped, RateControl::Tfrc));
    assert!(accepted(ServerPolicy::permissive(), fixed));
}

/// Everything `endpoint` wants to send at `now`.
fn drain(endpoint: &mut Endpoint, now: qstp_proto::Time) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while let Some(t) = endpoint.poll_transmit(now, &mut buf) {
        out.push(buf[..t.size].to_vec());
    }
    out
}

#[test]
fn a_replayed_hello_keeps_no_half_open_connection_alive_and_gets_a_retry_once_its_cookie_expired() {
    use qstp_proto::Time;
    let client_addr = "10.0.0.1:5000".parse().unwrap();
    let server_addr = "10.0.0.2:4433".parse().unwrap();
    let mut client = Endpoint::new(EndpointConfig::client([1; 32]), 1);
    let mut server = Endpoint::new(EndpointConfig::server([2; 32], Config::default()), 2);
    let at = |secs: u64| Time::ZERO + Duration::from_secs(secs);
    client
        .connect(at(0), server_addr, Config::default())
        .unwrap();
    // Hello, retry, hello with its cookie: the server accepts.
    for hello in drain(&mut client, at(0)) {
        server.handle_datagram(at(0), client_addr, &hello);
    }
    for retry in drain(&mut server, at(0)) {
        client.handle_datagram(at(0), server_addr, &retry);
    }
    let hello = drain(&mut client, at(0)).remove(0);
    server.handle_datagram(at(0), client_addr, &hello);
    assert_eq!(server.stats().accepted, 1);
    let accept = drain(&mut server, at(0));
    assert_eq!(accept.len(), 1, "one accept");
    // The client goes no further; someone replays its hello every 5 s. Within the cookie's
    // lifetime (10 s) the lost accept is answered again; after it, a retry is the only answer.
    let mut answers_after_expiry = Vec::new();
    for secs in (5..=60).step_by(5) {
        server.handle_timeout(at(secs));
        server.handle_datagram(at(secs), client_addr, &hello);
        let replies = drain(&mut server, at(secs));
        if secs > 10 {
            answers_after_expiry.extend(replies);
        }
    }
    assert!(
        answers_after_expiry.iter().all(|d| matches!(
            qstp_proto::wire::Packet::decode(d),
            Ok(qstp_proto::wire::Packet::Retry(_))
        )),
        "an expired cookie was answered with more than a retry"
    );
    // The replays refreshed nothing: the connection, never proven by a packet under the keys,
    // went at the handshake timeout (10 s), unannounced.
    let mut closed = false;
    while let Some((_, event)) = server.poll_event() {
        assert_ne!(
            event,
            Event::Connected,
            "a half-open connection was announced"
        );
        closed |= matches!(event, Event::Closed(CloseReason::HandshakeTimeout));
    }
    assert!(closed, "the replayed hello kept the connection alive");
}

#[test]
fn one_address_holds_at_most_max_per_address_connections() {
    use qstp_proto::Time;
    let server_addr = "10.0.0.2:4433".parse().unwrap();
    let mut config = EndpointConfig::server([2; 32], Config::default());
    config.max_per_address = 2;
    let mut server = Endpoint::new(config, 2);
    // A client at `addr` shakes hands; whether the server accepted it.
    let mut shake =
        |addr: &str, seed: u64| shake_and_stop(&mut server, server_addr, addr, seed, Time::ZERO);
    assert!(shake("10.0.0.7:1000", 11));
    assert!(shake("10.0.0.7:1001", 12));
    assert!(!shake("10.0.0.7:1002", 13), "a third from one address");
    assert!(
        shake("10.0.0.8:1000", 14),
        "another address is not held back"
    );
}

/// Shake hands from `addr` as far as the server's accept and go no further: the client never
/// sends a packet under the keys (the slot attack). Returns whether the server accepted.
fn shake_and_stop(
    server: &mut Endpoint,
    server_addr: std::net::SocketAddr,
    addr: &str,
    seed: u64,
    now: qstp_proto::Time,
) -> bool {
    let addr = addr.parse().unwrap();
    let mut client = Endpoint::new(EndpointConfig::client([1; 32]), seed);
    client.connect(now, server_addr, Config::default()).unwrap();
    let before = server.stats().accepted;
    for _ in 0..2 {
        for hello in drain(&mut client, now) {
            server.handle_datagram(now, addr, &hello);
        }
        for reply in drain(server, now) {
            client.handle_datagram(now, server_addr, &reply);
        }
    }
    server.stats().accepted > before
}

#[test]
fn clients_that_never_prove_their_keys_hold_no_slot() {
    use qstp_proto::Time;
    let server_addr: std::net::SocketAddr = "10.0.0.2:4433".parse().unwrap();
    let mut config = EndpointConfig::server([2; 32], Config::default());
    config.max_connections = 2;
    let mut server = Endpoint::new(config, 2);
    // Eight attackers at eight addresses complete the cookie exchange and stop.
    for i in 0..8 {
        let addr = format!("10.0.1.{i}:1000");
        assert!(shake_and_stop(
            &mut server,
            server_addr,
            &addr,
            100 + i,
            Time::ZERO
        ));
    }
    // None of them is announced, and none holds one of the two slots.
    assert_eq!(server.poll_event(), None);
    // A legitimate client still gets through and is announced once its first packet opens.
    let mut pair = Pair::with_endpoints(
        Endpoint::new(EndpointConfig::client([1; 32]), 9),
        server,
        path(),
        9,
    );
    pair.connect_and_establish(Config::default());
    assert!(pair.server.saw(&Event::Connected));
    // The half-open ones went at the handshake timeout (10 s), never announced.
    pair.drive(Duration::from_secs(11));
    let half_open_closed = pair
        .server
        .events
        .iter()
        .filter(|(_, h, e)| {
            Some(*h) != pair.server.handle && *e == Event::Closed(CloseReason::HandshakeTimeout)
        })
        .count();
    assert_eq!(half_open_closed, 8);
    assert!(pair
        .server
        .events
        .iter()
        .all(|(_, h, e)| Some(*h) == pair.server.handle || *e != Event::Connected));
    assert!(pair.server.conn().is_established());
}

#[test]
fn one_address_holds_at_most_max_half_open_per_address_unfinished_handshakes() {
    use qstp_proto::Time;
    let server_addr = "10.0.0.2:4433".parse().unwrap();
    let mut config = EndpointConfig::server([2; 32], Config::default());
    config.max_half_open_per_address = 3;
    config.max_half_open = 5;
    let mut server = Endpoint::new(config, 2);
    for port in 0..3 {
        let addr = format!("10.0.0.7:{}", 1000 + port);
        assert!(shake_and_stop(
            &mut server,
            server_addr,
            &addr,
            10 + port,
            Time::ZERO
        ));
    }
    assert!(
        !shake_and_stop(&mut server, server_addr, "10.0.0.7:1003", 13, Time::ZERO),
        "a fourth unfinished handshake from one address"
    );
    assert!(shake_and_stop(
        &mut server,
        server_addr,
        "10.0.0.8:1000",
        14,
        Time::ZERO
    ));
    assert!(shake_and_stop(
        &mut server,
        server_addr,
        "10.0.0.9:1000",
        15,
        Time::ZERO
    ));
    assert!(
        !shake_and_stop(&mut server, server_addr, "10.0.0.10:1000", 16, Time::ZERO),
        "a sixth unfinished handshake in all"
    );
    // Once the handshake timeout took them, the address may try again.
    let later = Time::ZERO + Duration::from_secs(11);
    server.handle_timeout(later);
    assert!(shake_and_stop(
        &mut server,
        server_addr,
        "10.0.0.7:1004",
        17,
        later
    ));
}
