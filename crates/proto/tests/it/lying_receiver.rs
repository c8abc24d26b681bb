//! Stories of a receiver that lies about what it saw (RFC 5348 §9): it reports no loss and a
//! huge receive rate while its SACK ranges stay honest, to make the sender outrun the path.

use crate::support::{cleartext, pattern, Pair, PathModel};
use qstp_proto::wire::Packet;
use qstp_proto::{CloseReason, Config, Duration, Rate};

/// A 10 Mbit/s bottleneck with a 50-packet queue towards the receiver.
fn bottleneck() -> PathModel {
    PathModel {
        rate: Some(Rate::from_mbps(10)),
        queue_limit: 50,
        ..PathModel::with_delay(Duration::from_millis(10))
    }
}

/// Every feedback reports p = 0 and X_recv = 10 Gbit/s; its SACK ranges are left as they are.
fn lie(datagram: &mut Vec<u8>) {
    if let Ok(Packet::Feedback(mut feedback)) = Packet::decode(datagram) {
        feedback.loss_event_rate_ppb = 0;
        feedback.x_recv = 10_000_000_000;
        let mut out = Vec::new();
        Packet::Feedback(feedback).encode(&mut out);
        *datagram = out;
    }
}

/// Send a bulk stream for `span` with `config` (cleartext, so the liar can rewrite); returns the
/// share of the sender's datagrams the path dropped and the pair.
fn bulk(config: Config, liar: bool, span: Duration) -> (f64, Pair) {
    let back = PathModel {
        rewrite: liar.then_some(lie as fn(&mut Vec<u8>)),
        ..PathModel::with_delay(Duration::from_millis(10))
    };
    let mut pair = Pair::new(cleartext(), bottleneck(), 17);
    pair.to_client = back;
    pair.connect_and_establish(config);
    let chunk = pattern(64 * 1024, 3);
    let mut sink = vec![0u8; 64 * 1024];
    pair.drive_until(span, |p| {
        if p.client.conn().is_closed() {
            return true;
        }
        while p.client.conn_mut().write(&chunk).is_ok() {}
        while matches!(p.server.conn_mut().read(&mut sink), Ok(n) if n > 0) {}
        false
    });
    let stats = &pair.to_server_stats;
    let dropped = (stats.lost + stats.queue_drops) as f64 / stats.sent.max(1) as f64;
    (dropped, pair)
}

#[test]
fn a_receiver_hiding_its_losses_is_caught_and_never_floods_the_path() {
    let span = Duration::from_secs(20);
    let (honest, pair) = bulk(cleartext(), false, span);
    assert!(
        !pair.client.conn().is_closed(),
        "the honest receiver was taken for a liar"
    );
    assert!(
        honest < 0.05,
        "honest receiver: {honest:.3} of packets dropped"
    );

    // Believed, the same lie floods the bottleneck (the check has teeth).
    let trusting = Config {
        check_receiver: false,
        ..cleartext()
    };
    let (flooded, _) = bulk(trusting, true, span);
    assert!(flooded > 0.3, "a believed liar dropped only {flooded:.3}");

    // Checked, the liar is caught within two seconds: its lie moved the rate only until then
    // (its X_recv capped meanwhile).
    let (checked, pair) = bulk(cleartext(), true, span);
    match pair.client.conn().close_reason() {
        Some(CloseReason::ProtocolViolation(why)) => {
            assert!(
                why.contains("reports a loss event rate of 0.000000"),
                "{why}"
            )
        }
        other => panic!("the liar was not caught: {other:?}"),
    }
    let lived = pair.time - qstp_proto::Time::ZERO - Duration::from_secs(1);
    let (honest_then, _) = bulk(cleartext(), false, lived);
    // The figures of the README's threat model (`-- --nocapture` shows them).
    eprintln!(
        "lying receiver: believed {flooded:.3} dropped; checked, caught after {lived} with \
         {checked:.3} dropped against an honest receiver's {honest_then:.3}"
    );
    assert!(lived < Duration::from_secs(2), "caught only after {lived}");
    assert!(checked < flooded, "checked liar: {checked:.3} dropped");
}
