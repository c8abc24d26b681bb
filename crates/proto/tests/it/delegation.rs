//! Free & Stunts delegation between QSTP connections of one endpoint (Free & Stunts paper §II-B;
//! the connection's `delegation` module): a Free whose loss events a Stunt takes in its place
//! runs faster than its twin, the Stunt slower, and every event is counted once in the pair.

use crate::support::{Pair, PathModel};
use qstp_proto::delegation::Delegator;
use qstp_proto::{Config, ConnectionHandle, DelegationError, Duration, Event, Rate};
use qstp_proto::{Congestion, Order};

/// Connections of the client in a group: the first is the Free, the others its Stunts.
const GROUP: usize = 4;

/// Four stream connections from the client, all backlogged, through a 4 Mbit/s bottleneck with
/// room for 20 datagrams (20 ms each way) for 60 s; with `delegate`, the first (the Free)
/// delegates every loss event it may to the other three (its Stunts), through the delegator.
/// Returns each one's bytes acknowledged after the first 10 s, each one's loss event rate at the
/// end, and the delegator.
fn race(delegate: bool, seed: u64) -> ([u64; GROUP], [f64; GROUP], Delegator) {
    let mut pair = Pair::new(
        Config::default(),
        PathModel::with_delay(Duration::from_millis(20)),
        seed,
    );
    pair.to_server.rate = Some(Rate::from_mbps(4));
    pair.to_server.queue_limit = 20;
    let handles: [ConnectionHandle; GROUP] =
        std::array::from_fn(|_| pair.connect(Config::default()));
    let both_up = pair.drive_until(Duration::from_secs(10), |p| {
        handles.iter().all(|&h| {
            p.client
                .endpoint
                .connection(h)
                .is_some_and(|c| c.is_established())
        })
    });
    assert!(both_up, "handshakes did not complete");
    let accepted = |p: &Pair| -> Vec<ConnectionHandle> {
        let mut v: Vec<_> = p
            .server
            .events
            .iter()
            .filter(|e| e.2 == Event::Connected)
            .map(|e| e.1)
            .collect();
        v.dedup();
        v
    };
    assert!(pair.drive_until(Duration::from_secs(10), |p| accepted(p).len() == GROUP));
    let servers = accepted(&pair);
    if delegate {
        for &h in &handles {
            let now = pair.time;
            let conn = pair.client.endpoint.connection_mut(h).unwrap();
            conn.defer_loss_events(now, true)
                .expect("a stream may delegate");
        }
    }
    let mut delegator = Delegator::new();
    let chunk = vec![0u8; 64 * 1024];
    let mut buf = vec![0u8; 64 * 1024];
    let start = pair.time;
    let mut at_warmup = None;
    while pair.time < start + Duration::from_secs(60) {
        let now = pair.time;
        for &h in &handles {
            let conn = pair.client.endpoint.connection_mut(h).unwrap();
            while conn.write(&chunk).is_ok() {}
        }
        // The group's decisions: the Free delegates whenever the Stunts may take it.
        let mut conns = pair.client.endpoint.connections_mut(&handles).unwrap();
        let (free, stunts) = conns.split_first_mut().unwrap();
        delegator.settle(now, free, stunts, || true, false, false);
        assert!(conns.iter().all(|c| c.deferred_loss_events() == 0));
        pair.server.events.clear();
        for &h in &servers {
            if let Some(conn) = pair.server.endpoint.connection_mut(h) {
                while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
            }
        }
        if at_warmup.is_none() && pair.time >= start + Duration::from_secs(10) {
            at_warmup = Some(handles.map(|h| {
                pair.client
                    .endpoint
                    .connection(h)
                    .unwrap()
                    .stats()
                    .bytes_acked
            }));
        }
        assert!(pair.step());
    }
    let stats = handles.map(|h| pair.client.endpoint.connection(h).unwrap().stats());
    let warm = at_warmup.unwrap();
    (
        std::array::from_fn(|i| stats[i].bytes_acked - warm[i]),
        stats.map(|s| s.loss_event_rate),
        delegator,
    )
}

#[test]
fn a_free_whose_loss_events_its_stunts_take_outruns_them() {
    let (plain, plain_p, _) = race(false, 7);
    let (group, group_p, delegator) = race(true, 7);
    // The Free's share against the mean of the others.
    let ratio = |b: [u64; GROUP]| b[0] as f64 / (b[1..].iter().sum::<u64>() as f64 / 3.0);
    // Plain connections share the bottleneck about evenly.
    assert!(
        (0.6..1.7).contains(&ratio(plain)),
        "plain: {plain:?} (p {plain_p:?})"
    );
    // With its loss events taken by the Stunts, the Free runs well ahead of them and sees a
    // lower loss event rate than any.
    assert!(
        ratio(group) > 1.8,
        "Free and Stunts: {group:?} (p {group_p:?})"
    );
    assert!(
        group_p[1..].iter().all(|&p| group_p[0] < p),
        "p of Free and Stunts: {group_p:?}"
    );
    assert!(delegator.delegated > 0, "{delegator:?}");
    // Together they still fill the link about as plain connections do.
    let (a, b) = (plain.iter().sum::<u64>(), group.iter().sum::<u64>());
    assert!(
        (b as f64 / a as f64 - 1.0).abs() < 0.15,
        "together: {a} bytes plain, {b} as a group"
    );
}

#[test]
fn only_a_byte_stream_may_join_a_group() {
    let mut pair = Pair::new(Config::default(), PathModel::default(), 3);
    let messages = Config {
        order: Order::Unordered,
        ..Config::default()
    };
    let h = pair.connect(messages.clone());
    let now = pair.time;
    let conn = pair.client.endpoint.connection_mut(h).unwrap();
    assert_eq!(
        conn.defer_loss_events(now, true),
        Err(DelegationError::NotAStream)
    );
    // Without `check_receiver` the connection keeps its own loss history for the group.
    let no_check = Config {
        check_receiver: false,
        congestion: Congestion::TFRC,
        ..Config::default()
    };
    let h = pair.connect(no_check);
    let conn = pair.client.endpoint.connection_mut(h).unwrap();
    assert_eq!(conn.defer_loss_events(now, true), Ok(()));
    // A connection that holds nothing has nothing to count, forgive or take.
    assert_eq!(conn.deferred_loss_events(), 0);
    assert!(!conn.forgive_loss_event());
    assert!(!conn.count_loss_event(now));
}
