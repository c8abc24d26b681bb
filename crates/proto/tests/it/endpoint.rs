//! Stories of one endpoint holding several connections: routing by connection id and a fair,
//! round-robin share of the socket.

use crate::support::direct::hand_over;
use qstp_proto::{Config, Endpoint, EndpointConfig, Event, Rate, RateControl, ServerPolicy, Time};
use std::net::SocketAddr;

/// Shuttle datagrams between the two endpoints at `now` until neither has anything to send.
fn exchange(
    client: &mut Endpoint,
    server: &mut Endpoint,
    now: Time,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
) {
    let mut buf = Vec::new();
    while hand_over(client, server, now, client_addr, server_addr, &mut buf) {}
}

#[test]
fn connections_share_the_endpoint_in_turn() {
    let client_addr: SocketAddr = "10.0.0.1:5000".parse().unwrap();
    let server_addr: SocketAddr = "10.0.0.2:4433".parse().unwrap();
    let mut client = Endpoint::new(EndpointConfig::client([1; 32]), 1);
    let server_config = EndpointConfig {
        policy: ServerPolicy::permissive(),
        ..EndpointConfig::server([2; 32], Config::default())
    };
    let mut server = Endpoint::new(server_config, 2);
    let now = Time::from_nanos(1_000_000);
    // A fixed rate high enough that pacing lets a burst out at one instant.
    let config = Config {
        congestion: RateControl::Fixed {
            rate: Rate::from_mbps(1_000),
        }
        .into(),
        max_burst: 64,
        ..Config::default()
    };
    let handles = [
        client.connect(now, server_addr, config.clone()).unwrap(),
        client.connect(now, server_addr, config).unwrap(),
    ];
    exchange(&mut client, &mut server, now, client_addr, server_addr);
    assert_eq!(server.stats().accepted, 2);
    // Not announced yet: neither client has sent a packet under the keys.
    assert_eq!(server.poll_event(), None);
    for h in handles {
        assert!(client.connection(h).unwrap().is_established());
        client
            .connection_mut(h)
            .unwrap()
            .write(&[h.0 as u8; 100_000])
            .unwrap();
    }

    let later = now + qstp_proto::Duration::from_millis(10);
    let mut buf = Vec::new();
    let mut order = Vec::new();
    for _ in 0..20 {
        let t = client
            .poll_transmit(later, &mut buf)
            .expect("both have data and credit");
        order.push(t.connection.expect("a connection's datagram"));
        server.handle_datagram(later, client_addr, &buf[..t.size]);
    }
    for pair in order.windows(2) {
        assert_ne!(pair[0], pair[1], "turns alternate: {order:?}");
    }
    // Each client's first data packet proved its keys: now both are announced.
    let mut accepted = Vec::new();
    while let Some((h, e)) = server.poll_event() {
        if e == Event::Connected {
            accepted.push(h);
        }
    }
    assert_eq!(accepted.len(), 2, "both handshakes completed");

    // Each connection's bytes reached its own server connection (routing by connection id).
    let mut sink = [0u8; 4096];
    for h in accepted {
        let conn = server.connection_mut(h).unwrap();
        let n = conn.read(&mut sink).unwrap();
        assert!(n > 0);
        assert!(
            sink[..n].iter().all(|b| *b == sink[0]),
            "one connection's bytes only"
        );
    }
}

/// The encoded hello of client `i` (connection id `i + 1`), without a cookie: a server answers
/// it with a retry.
fn cookieless_hello(i: u64) -> Vec<u8> {
    use qstp_proto::wire::{Composition, ConnectionId, Hello, Packet};
    use qstp_proto::{ErrorControl, Order};
    let hello = Hello {
        source: ConnectionId(i + 1),
        composition: Composition {
            congestion: RateControl::Tfrc,
            error: ErrorControl::SackFull,
            order: Order::Ordered,
        },
        max_datagram: 1500,
        recv_window: 1 << 20,
        timestamp: 0,
        cookie: None,
        key_share: None,
        binder: None,
    };
    let mut datagram = Vec::new();
    Packet::Hello(hello).encode(&mut datagram);
    datagram
}

/// Hellos beyond what the stateless reply queue holds are answered by nobody, and counted.
#[test]
fn stateless_replies_beyond_the_bound_are_counted_as_dropped() {
    use qstp_proto::endpoint::MAX_STATELESS_REPLIES;
    let mut server = Endpoint::new(EndpointConfig::server([3; 32], Config::default()), 9);
    let now = Time::from_nanos(1_000_000_000);
    let extra = 10;
    for i in 0..(MAX_STATELESS_REPLIES + extra) as u64 {
        let from: SocketAddr = format!("10.{}.{}.1:{}", i / 250, i % 250, 2000 + i)
            .parse()
            .unwrap();
        server.handle_datagram(now, from, &cookieless_hello(i));
    }
    let stats = server.stats();
    assert_eq!(
        stats.cookie_challenges,
        (MAX_STATELESS_REPLIES + extra) as u64
    );
    assert_eq!(stats.stateless_dropped, extra as u64);
    let mut buf = Vec::new();
    let mut sent = 0;
    while server.poll_transmit(now, &mut buf).is_some() {
        sent += 1;
    }
    assert_eq!(sent, MAX_STATELESS_REPLIES);
}

#[test]
fn one_network_gets_a_bounded_share_of_the_stateless_replies() {
    use qstp_proto::endpoint::{REPLIES_PER_SECOND, REPLY_BURST};
    let mut server = Endpoint::new(EndpointConfig::server([3; 32], Config::default()), 9);
    let hello = cookieless_hello;
    // Hellos "from" one /24 (spoofed towards a victim's network), as fast as they come.
    let replies = |server: &mut Endpoint, now: Time, first: u64| {
        for i in first..first + 40 {
            let from: SocketAddr = format!("192.0.2.{}:4000", i % 250 + 1).parse().unwrap();
            server.handle_datagram(now, from, &hello(i));
        }
        let mut buf = Vec::new();
        std::iter::from_fn(|| server.poll_transmit(now, &mut buf)).count()
    };
    let start = Time::from_nanos(1_000_000_000);
    assert_eq!(replies(&mut server, start, 0), REPLY_BURST as usize);
    assert_eq!(server.stats().replies_limited, 40 - u64::from(REPLY_BURST));
    let later = start + qstp_proto::Duration::from_secs(1);
    assert_eq!(replies(&mut server, later, 40), REPLIES_PER_SECOND as usize);
    // Another network is answered in full meanwhile.
    let other: SocketAddr = "198.51.100.7:4000".parse().unwrap();
    server.handle_datagram(later, other, &hello(1000));
    let mut buf = Vec::new();
    assert!(server.poll_transmit(later, &mut buf).is_some());
}

/// A datagram costs the same beside a thousand idle connections as beside none: each endpoint
/// call visits only the connections it concerns (their deadlines are kept in time order, and
/// which may send or have an event is remembered), where it used to ask every connection.
#[test]
fn a_busy_connection_beside_a_thousand_idle_ones_visits_only_itself() {
    // Loopback: the per-network bound on stateless replies does not apply.
    let client_addr: SocketAddr = "127.0.0.1:5000".parse().unwrap();
    let server_addr: SocketAddr = "127.0.0.1:4433".parse().unwrap();
    let server_config = EndpointConfig {
        policy: ServerPolicy::permissive(),
        max_per_address: 2000,
        max_connections: 2000,
        ..EndpointConfig::server([2; 32], Config::default())
    };
    let mut server = Endpoint::new(server_config, 2);
    let mut client = Endpoint::new(EndpointConfig::client([1; 32]), 1);
    let config = Config {
        protection: qstp_proto::Protection::Null,
        ..Config::default()
    };
    let mut now = Time::from_nanos(1_000_000);
    let mut handles = Vec::new();
    // In batches, so the server's queue of stateless replies (64) never overflows.
    for _ in 0..1001 / 50 + 1 {
        for _ in 0..50.min(1001 - handles.len()) {
            handles.push(client.connect(now, server_addr, config.clone()).unwrap());
        }
        exchange(&mut client, &mut server, now, client_addr, server_addr);
    }
    while server.poll_event().is_some() {}
    assert_eq!(server.connection_count(), 1001);
    let busy = handles[500];
    client
        .connection_mut(busy)
        .unwrap()
        .write(&[7u8; 200_000])
        .unwrap();
    // Run the busy connection for a while, counting the server's visits per datagram it
    // handles; the idle ones' timers (30 s idle timeout) are far away.
    let visits = server.connection_visits();
    let mut datagrams = 0u64;
    let mut buf = Vec::new();
    for _ in 0..200 {
        now += qstp_proto::Duration::from_millis(1);
        for endpoint in [&mut client, &mut server] {
            if endpoint.poll_timeout().is_some_and(|t| t <= now) {
                endpoint.handle_timeout(now);
            }
        }
        while let Some(t) = client.poll_transmit(now, &mut buf) {
            server.handle_datagram(now, client_addr, &buf[..t.size]);
            datagrams += 1;
        }
        while let Some(t) = server.poll_transmit(now, &mut buf) {
            client.handle_datagram(now, server_addr, &buf[..t.size]);
        }
        while server.poll_event().is_some() {}
        while client.poll_event().is_some() {}
    }
    let per_datagram = (server.connection_visits() - visits) as f64 / datagrams as f64;
    assert!(datagrams > 50, "{datagrams} datagrams");
    assert!(
        per_datagram < 10.0,
        "{per_datagram:.1} connection visits per datagram with 1000 idle connections"
    );
}
