//! Stories of a peer that vanishes mid-transfer: with data in flight, the sender notices within a
//! few round trips of silence (RFC 9002 §6.2), long before the idle timeout, and says so.

use crate::support::{pattern, Pair, PathModel};
use qstp_proto::{CloseReason, Config, Duration, Rate, WriteError};

fn config() -> Config {
    Config::qstp(Rate::from_mbps(2))
}

/// Write what the connection takes and read what arrived, until `limit` passes or `done` holds.
fn run(
    pair: &mut Pair,
    data: &[u8],
    written: &mut usize,
    limit: Duration,
    done: fn(&Pair) -> bool,
) {
    let mut buf = vec![0u8; 65_536];
    pair.drive_until(limit, |p| {
        if !p.client.conn().is_closed() {
            let conn = p.client.conn_mut();
            while *written < data.len() {
                match conn.write(&data[*written..]) {
                    Ok(n) => *written += n,
                    Err(WriteError::Blocked | WriteError::Closed(_)) => break,
                    Err(e) => panic!("write failed: {e}"),
                }
            }
        }
        while let Ok(n) = p.server.conn_mut().read(&mut buf) {
            if n == 0 {
                break;
            }
        }
        done(p)
    });
}

#[test]
fn a_receiver_that_vanishes_is_reported_within_seconds_on_a_50ms_path() {
    let path = PathModel {
        rate: Some(Rate::from_mbps(10)),
        queue_limit: 100,
        ..PathModel::with_delay(Duration::from_millis(25))
    };
    let mut pair = Pair::new(config(), path, 11);
    pair.connect_and_establish(config());
    let data = pattern(20_000_000, 3);
    let mut written = 0;
    run(
        &mut pair,
        &data,
        &mut written,
        Duration::from_secs(3),
        |_| false,
    );
    assert!(
        !pair.client.conn().is_closed(),
        "alive while the peer answers"
    );
    // The receiver dies: nothing reaches it any more, so nothing comes back.
    pair.to_server.loss = 1.0;
    let died = pair.time;
    run(
        &mut pair,
        &data,
        &mut written,
        Duration::from_secs(30),
        |p| p.client.conn().is_closed(),
    );
    let noticed = pair.time.saturating_since(died);
    println!("dead peer noticed after {noticed:?}");
    match pair.client.conn().close_reason() {
        Some(CloseReason::PeerUnresponsive { silent_for }) => {
            assert!(*silent_for >= Duration::from_secs(1), "{silent_for:?}");
        }
        other => panic!("closed for {other:?}"),
    }
    // Well within 5 s on a 50 ms path, and not at the first late feedback either.
    assert!(
        noticed < Duration::from_secs(4),
        "noticed after {noticed:?}"
    );
    assert!(
        noticed >= Duration::from_secs(1),
        "noticed after {noticed:?}"
    );
}

#[test]
fn a_lossy_but_live_path_is_not_declared_dead() {
    let path = PathModel {
        loss: 0.2,
        ..PathModel::with_delay(Duration::from_millis(25))
    };
    let mut pair = Pair::new(config(), path, 12);
    pair.connect_and_establish(config());
    let data = pattern(2_000_000, 4);
    let mut written = 0;
    run(
        &mut pair,
        &data,
        &mut written,
        Duration::from_secs(60),
        |_| false,
    );
    assert!(
        !matches!(
            pair.client.conn().close_reason(),
            Some(CloseReason::PeerUnresponsive { .. })
        ),
        "{:?}",
        pair.client.conn().close_reason()
    );
}

#[test]
fn the_check_can_be_turned_off() {
    let quiet = Config {
        peer_silence_ptos: 0,
        idle_timeout: Duration::from_secs(20),
        ..config()
    };
    let mut pair = Pair::new(
        quiet.clone(),
        PathModel::with_delay(Duration::from_millis(25)),
        13,
    );
    pair.connect_and_establish(quiet);
    let data = pattern(5_000_000, 5);
    let mut written = 0;
    run(
        &mut pair,
        &data,
        &mut written,
        Duration::from_secs(2),
        |_| false,
    );
    pair.to_server.loss = 1.0;
    run(
        &mut pair,
        &data,
        &mut written,
        Duration::from_secs(10),
        |p| p.client.conn().is_closed(),
    );
    assert!(!pair.client.conn().is_closed());
}
