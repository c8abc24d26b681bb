//! Stories of the retransmission timer: while nothing comes back it backs off (RFC 6298 §5.5)
//! instead of declaring every packet lost once per RTO, and an acknowledgement of new data
//! brings it back to one RTO (RFC 6298 §5.7).

use crate::support::{Pair, PathModel};
use qstp_proto::{Config, Duration, Rate, RateControl, Time};

/// Drive for `span` keeping the client's stream busy; returns the instants at which the client
/// declared packets lost.
fn loss_declarations(pair: &mut Pair, span: Duration) -> Vec<Time> {
    let chunk = vec![0x3Cu8; 16 * 1024];
    let mut sink = vec![0u8; 16 * 1024];
    let mut lost = pair.client.conn().stats().packets_lost;
    let mut instants = Vec::new();
    pair.drive_until(span, |p| {
        while p.client.conn_mut().write(&chunk).is_ok() {}
        while matches!(p.server.conn_mut().read(&mut sink), Ok(n) if n > 0) {}
        let now = p.client.conn().stats().packets_lost;
        if now != lost {
            instants.push(p.time);
            lost = now;
        }
        false
    });
    instants
}

#[test]
fn the_retransmission_timer_backs_off_while_no_feedback_comes() {
    // One packet every 50 ms on a path with R = 20 ms and the RTO's floor set to 80 ms (SRTT +
    // 4 RTTVAR is smaller on this steady path): at this low rate each packet outlives the RTO
    // long before the next feedback could come.
    let mut pair = Pair::new(
        Config::default(),
        PathModel::with_delay(Duration::from_millis(10)),
        71,
    );
    let config = Config {
        congestion: RateControl::Fixed {
            rate: Rate::from_kbps(240),
        }
        .into(),
        min_rto: Duration::from_millis(80),
        // Blackouts here outlast the dead-peer check, which would end the connection.
        peer_silence_ptos: 0,
        ..Config::default()
    };
    pair.connect_and_establish(config);
    // The fixed-rate controller carries no RTT before its first feedback, so the receiver's
    // first feedback after the client's (empty) proof of its keys waits the default interval,
    // longer than this RTO floor: one spurious timeout at the start, before the path is measured.
    loss_declarations(&mut pair, Duration::from_millis(300));
    assert!(
        loss_declarations(&mut pair, Duration::from_secs(2)).is_empty(),
        "no loss on a clean path"
    );

    // Every feedback is lost for 5 s: 100 packets go out, none is acknowledged.
    pair.to_client.loss = 1.0;
    let blackout = loss_declarations(&mut pair, Duration::from_secs(5));
    // Without back-off the timer would fire once per packet (about 100 times); doubling from
    // 80 ms, 5 s hold about log2(5 s / 80 ms + 1) = 6 expiries.
    assert!(!blackout.is_empty(), "the timer fired");
    assert!(
        blackout.len() <= 8,
        "the timer fired {} times in 5 s without feedback",
        blackout.len()
    );
    let gaps: Vec<Duration> = blackout.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.windows(2).all(|g| g[1] >= g[0]),
        "the waits between expiries grow: {gaps:?}"
    );

    // Feedback returns and acknowledges new data: the back-off is forgotten, so in the next
    // blackout the timer first fires within a few base RTOs, not after the backed-off timeout.
    pair.to_client.loss = 0.0;
    loss_declarations(&mut pair, Duration::from_secs(2));
    pair.to_client.loss = 1.0;
    let start = pair.time;
    let again = loss_declarations(&mut pair, Duration::from_secs(2));
    let first = *again
        .first()
        .expect("the timer fired in the second blackout");
    assert!(
        first - start <= Duration::from_millis(200),
        "first expiry {:?} after the blackout began",
        first - start
    );
}

#[test]
fn by_default_the_timer_waits_at_least_rfc_6298s_second() {
    // R = 20 ms, one packet every 50 ms, every feedback lost: the first expiry comes no sooner
    // than 1 s after the blackout began (RFC 6298 §2.4), where 4R used to give 80 ms.
    let mut pair = Pair::new(
        Config::default(),
        PathModel::with_delay(Duration::from_millis(10)),
        72,
    );
    let config = Config {
        congestion: RateControl::Fixed {
            rate: Rate::from_kbps(240),
        }
        .into(),
        // Blackouts here outlast the dead-peer check, which would end the connection.
        peer_silence_ptos: 0,
        ..Config::default()
    };
    pair.connect_and_establish(config);
    loss_declarations(&mut pair, Duration::from_secs(1));
    pair.to_client.loss = 1.0;
    let start = pair.time;
    let blackout = loss_declarations(&mut pair, Duration::from_secs(3));
    let first = *blackout.first().expect("the timer fired");
    assert!(
        first - start >= Duration::from_millis(950),
        "first expiry {:?} after the blackout began",
        first - start
    );
}
