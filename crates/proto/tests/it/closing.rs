//! Stories of endings: a peer that vanishes, an abort with a reason, and an abort before the
//! handshake completed.

use crate::support::{Pair, PathModel};
use qstp_proto::{CloseReason, Config, Duration, Event, Rate, RateControl, WriteError};

#[test]
fn a_vanished_peer_is_declared_gone_on_both_sides_after_the_idle_timeout() {
    let limits = Config {
        idle_timeout: Duration::from_secs(5),
        ..Config::default()
    };
    let mut pair = Pair::new(limits, PathModel::with_delay(Duration::from_millis(10)), 41);
    let config = Config {
        idle_timeout: Duration::from_secs(5),
        ..Config::default()
    };
    pair.connect_and_establish(config);
    pair.client.conn_mut().write(&[7u8; 10_000]).unwrap();
    pair.drive(Duration::from_millis(500));

    // The network between them disappears.
    pair.to_server.loss = 1.0;
    pair.to_client.loss = 1.0;
    let cut = pair.time;
    let both = pair.drive_until(Duration::from_secs(30), |p| {
        p.client.conn().is_closed() && p.server.conn().is_closed()
    });
    assert!(both);
    for side in [&pair.client, &pair.server] {
        assert_eq!(side.conn().close_reason(), Some(&CloseReason::IdleTimeout));
        let (at, _, _) = side
            .events
            .iter()
            .find(|(_, _, e)| matches!(e, Event::Closed(_)))
            .unwrap();
        assert!(
            *at - cut <= Duration::from_secs(5) && *at - cut > Duration::from_secs(4),
            "closed {} after the cut",
            *at - cut
        );
    }
    assert_eq!(pair.stalls, 0);
}

#[test]
fn an_abort_reaches_the_peer_with_its_code_and_reason() {
    let mut pair = Pair::new(
        Config::default(),
        PathModel::with_delay(Duration::from_millis(10)),
        42,
    );
    pair.connect_and_establish(Config::default());
    let now = pair.time;
    pair.client.conn_mut().close(now, 7, b"shutting down");
    assert!(pair.client.conn().is_closed());
    assert!(matches!(
        pair.client.conn_mut().write(b"late"),
        Err(WriteError::Closed(CloseReason::LocallyClosed))
    ));
    assert!(pair.drive_until(Duration::from_secs(2), |p| p.server.conn().is_closed()));
    let expected = CloseReason::PeerClosed {
        code: 7,
        reason: "shutting down".into(),
    };
    assert_eq!(pair.server.conn().close_reason(), Some(&expected));
    assert!(pair.server.saw(&Event::Closed(expected)));
    assert!(pair.client.saw(&Event::Closed(CloseReason::LocallyClosed)));
}

#[test]
fn a_lost_close_is_repeated_when_the_peer_keeps_talking() {
    let mut pair = Pair::new(
        Config::default(),
        PathModel::with_delay(Duration::from_millis(10)),
        43,
    );
    pair.connect_and_establish(Config::default());
    // The server aborts while the only way back to the client drops everything.
    pair.to_client.loss = 1.0;
    let now = pair.time;
    pair.server.conn_mut().close(now, 3, b"bye");
    pair.drive(Duration::from_millis(50));
    pair.to_client.loss = 0.0;
    // The client still sends; the closed server answers with its close again.
    pair.client.conn_mut().write(&[1u8; 5_000]).unwrap();
    assert!(pair.drive_until(Duration::from_secs(2), |p| p.client.conn().is_closed()));
    assert_eq!(
        pair.client.conn().close_reason(),
        Some(&CloseReason::PeerClosed {
            code: 3,
            reason: "bye".into()
        })
    );
}

/// A connection crawling at one packet per 40 s, slower than its 30 s idle timeout, stays open
/// for as long as packets keep coming; once the network between the peers is gone, both sides
/// still declare it dead, within three of those spacings.
#[test]
fn a_crawling_connection_survives_the_idle_timeout_and_a_vanished_peer_still_does_not() {
    let congestion = RateControl::Fixed {
        rate: Rate::from_bps(300),
    };
    let config = Config {
        congestion: congestion.into(),
        ..Config::default()
    };
    let mut pair = Pair::new(
        Config::default(),
        PathModel::with_delay(Duration::from_millis(10)),
        44,
    );
    pair.connect_and_establish(config);
    let spacing = Rate::from_bps(300).transmit_time(pair.client.conn().config().segment_size());
    assert!(
        spacing > Config::default().idle_timeout,
        "packets are further apart than the idle timeout"
    );
    pair.client.conn_mut().write(&[5u8; 30_000]).unwrap();
    pair.drive(Duration::from_secs(400));
    assert!(
        !pair.client.conn().is_closed() && !pair.server.conn().is_closed(),
        "a live connection idled out"
    );
    let received = pair.server.conn().stats().bytes_received;
    assert!(received > 8 * 1_000, "data kept flowing: {received} bytes");

    pair.to_server.loss = 1.0;
    pair.to_client.loss = 1.0;
    let cut = pair.time;
    let both = pair.drive_until(Duration::from_secs(600), |p| {
        p.client.conn().is_closed() && p.server.conn().is_closed()
    });
    assert!(both, "a vanished peer must still be detected");
    for side in [&pair.client, &pair.server] {
        assert_eq!(side.conn().close_reason(), Some(&CloseReason::IdleTimeout));
        let (at, _, _) = side
            .events
            .iter()
            .find(|(_, _, e)| matches!(e, Event::Closed(_)))
            .unwrap();
        assert!(
            *at - cut <= spacing * 4,
            "closed {} after the cut",
            *at - cut
        );
    }
}
