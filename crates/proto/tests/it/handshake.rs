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
        .filter(|(_, d, _)| *d == Direction::ToServer)
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
