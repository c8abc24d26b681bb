//! Stories of the ordered byte stream: a clean transfer with a graceful close, a transfer through
//! 10% loss, and a slow reader that makes the sender wait instead of buffering without bound.

use crate::support::{pattern, Pair, PathModel};
use qstp_proto::{CloseReason, Config, Duration, Event, Rate, ReadError, WriteError};

/// Write as much of `data[*written..]` as the connection takes.
fn write_some(pair: &mut Pair, data: &[u8], written: &mut usize, finish: bool) {
    let conn = pair.client.conn_mut();
    while *written < data.len() {
        match conn.write(&data[*written..]) {
            Ok(n) => *written += n,
            Err(WriteError::Blocked) => break,
            Err(e) => panic!("write failed: {e}"),
        }
    }
    if finish && *written == data.len() {
        // A second finish (or one after the close) is refused; that is fine here.
        let _ = conn.finish();
    }
}

/// Read everything the server has; returns true at the end of the stream.
fn read_all(pair: &mut Pair, out: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match pair.server.conn_mut().read(&mut buf) {
            Ok(0) => return true,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(ReadError::Blocked) => return false,
            Err(e) => panic!("read failed: {e:?}"),
        }
    }
}

/// Send `data` client to server, both sides finish, drive to the graceful close.
fn transfer(pair: &mut Pair, data: &[u8], limit: Duration) -> Vec<u8> {
    pair.connect_and_establish(Config::default());
    let mut written = 0;
    let mut received = Vec::new();
    let mut server_finished = false;
    let done = pair.drive_until(limit, |p| {
        write_some(p, data, &mut written, true);
        let at_end = read_all(p, &mut received);
        if at_end && !server_finished {
            p.server.conn_mut().finish().unwrap();
            server_finished = true;
        }
        p.client.conn().is_closed() && p.server.conn().is_closed()
    });
    assert!(
        done,
        "transfer did not finish: {} of {} bytes",
        received.len(),
        data.len()
    );
    received
}

#[test]
fn a_stream_arrives_byte_exact_and_closes_gracefully() {
    let mut pair = Pair::new(
        Config::default(),
        PathModel::with_delay(Duration::from_millis(20)),
        11,
    );
    let data = pattern(300_000, 1);
    let received = transfer(&mut pair, &data, Duration::from_secs(60));
    assert_eq!(received.len(), data.len());
    assert!(received == data, "stream corrupted");

    for side in [&pair.client, &pair.server] {
        assert_eq!(side.conn().close_reason(), Some(&CloseReason::Graceful));
        assert!(side.saw(&Event::Closed(CloseReason::Graceful)));
    }
    assert!(pair.client.saw(&Event::AllAcknowledged));
    assert!(pair.server.saw(&Event::Finished));
    let client = pair.client.conn().stats();
    let server = pair.server.conn().stats();
    assert_eq!(client.bytes_acked, data.len() as u64);
    assert_eq!(server.bytes_delivered, data.len() as u64);
    assert_eq!(client.packets_retransmitted, 0, "nothing was lost");
    assert_eq!(client.bogus_acks + server.bogus_acks, 0);
    assert_eq!(pair.stalls, 0);
}

#[test]
fn a_stream_is_delivered_complete_through_ten_percent_loss() {
    let path = PathModel {
        loss: 0.10,
        ..PathModel::with_delay(Duration::from_millis(15))
    };
    let mut pair = Pair::new(Config::default(), path, 12);
    let data = pattern(200_000, 2);
    let received = transfer(&mut pair, &data, Duration::from_secs(300));
    assert!(received == data, "stream corrupted or incomplete");
    let client = pair.client.conn().stats();
    assert!(
        client.packets_retransmitted > 0,
        "losses were repaired by retransmission"
    );
    assert!(client.packets_lost > 0);
    assert!(client.loss_event_rate > 0.0, "the receiver measured losses");
    assert_eq!(
        pair.client.conn().close_reason(),
        Some(&CloseReason::Graceful)
    );
}

#[test]
fn a_slow_reader_makes_the_sender_wait() {
    let limits = Config {
        recv_buffer: 64 * 1024,
        ..Config::default()
    };
    let mut pair = Pair::new(limits, PathModel::with_delay(Duration::from_millis(10)), 13);
    let mut config = Config::qstp(Rate::from_mbps(50));
    config.send_buffer = 128 * 1024;
    pair.connect_and_establish(config);

    // The application offers far more than both buffers hold; the server reads nothing.
    let data = pattern(2_000_000, 3);
    let mut written = 0;
    pair.drive_until(Duration::from_secs(10), |p| {
        write_some(p, &data, &mut written, false);
        false
    });
    let server = pair.server.conn().stats();
    let client = pair.client.conn().stats();
    // The receiver holds at most its window; the sender at most its buffer.
    assert!(pair.server.conn().readable() <= 64 * 1024);
    assert!(
        written <= 64 * 1024 + 128 * 1024,
        "{written} bytes accepted"
    );
    assert!(
        server.bytes_received < 64 * 1024 + 16 * 1500,
        "the sender respected the window: {}",
        server.bytes_received
    );
    assert_eq!(pair.client.conn().send_capacity(), 0);
    assert!(matches!(
        pair.client.conn_mut().write(b"more"),
        Err(WriteError::Blocked)
    ));
    let sent_while_blocked = client.packets_sent;

    // Now the reader drains: the window opens, the writer is told, and the transfer completes.
    let mut received = Vec::new();
    let done = pair.drive_until(Duration::from_secs(60), |p| {
        write_some(p, &data, &mut written, true);
        read_all(p, &mut received)
    });
    assert!(done);
    assert!(received == data);
    assert!(pair.client.saw(&Event::Writable));
    assert!(pair.client.conn().stats().packets_sent > sent_while_blocked);
    assert_eq!(pair.stalls, 0);
}

#[test]
fn a_lost_window_update_does_not_stall_the_transfer() {
    let limits = Config {
        recv_buffer: 16 * 1024,
        ..Config::default()
    };
    let mut pair = Pair::new(limits, PathModel::with_delay(Duration::from_millis(10)), 14);
    pair.connect_and_establish(Config::default());
    let data = pattern(200_000, 4);
    let mut written = 0;
    // The window fills while nobody reads.
    pair.drive_until(Duration::from_secs(1), |p| {
        write_some(p, &data, &mut written, true);
        false
    });
    // Every window update the reader's reads trigger is lost for a while.
    pair.to_client.loss = 1.0;
    let mut received = Vec::new();
    pair.drive_until(Duration::from_millis(300), |p| {
        read_all(p, &mut received);
        false
    });
    pair.to_client.loss = 0.0;
    let done = pair.drive_until(Duration::from_secs(60), |p| {
        write_some(p, &data, &mut written, true);
        read_all(p, &mut received)
    });
    assert!(
        done,
        "stalled at {} of {} bytes",
        received.len(),
        data.len()
    );
    assert!(received == data);
}

#[test]
fn every_congestion_control_carries_the_stream_through_loss() {
    use qstp_proto::RateControl;
    let controllers = [
        RateControl::Fixed {
            rate: Rate::from_kbps(2_000),
        },
        RateControl::Tfrc,
        RateControl::Gtfrc {
            target: Rate::from_kbps(500),
        },
        RateControl::Aimd,
    ];
    for (i, congestion) in controllers.into_iter().enumerate() {
        let path = PathModel {
            loss: 0.05,
            ..PathModel::with_delay(Duration::from_millis(20))
        };
        let mut pair = Pair::new(Config::default(), path, 60 + i as u64);
        pair.connect_and_establish(Config {
            congestion: congestion.into(),
            ..Config::default()
        });
        let data = pattern(100_000, i as u8);
        let mut written = 0;
        let mut received = Vec::new();
        let done = pair.drive_until(Duration::from_secs(120), |p| {
            write_some(p, &data, &mut written, true);
            read_all(p, &mut received)
        });
        assert!(
            done && received == data,
            "{congestion:?}: {} of {} bytes",
            received.len(),
            data.len()
        );
        assert_eq!(pair.stalls, 0, "{congestion:?}");
    }
}

/// At a rate where packets leave further apart than the RTT, the receiver's feedback still comes
/// once per RTT from the first packets on, so nothing is taken for lost on a lossless path.
#[test]
fn a_slow_lossless_transfer_retransmits_nothing() {
    use qstp_proto::RateControl;
    let mut pair = Pair::new(
        Config::default(),
        PathModel::with_delay(Duration::from_millis(10)),
        15,
    );
    pair.connect_and_establish(Config {
        congestion: RateControl::Fixed {
            rate: Rate::from_kbps(100),
        }
        .into(),
        ..Config::default()
    });
    let data = pattern(20_000, 5);
    let mut written = 0;
    let mut received = Vec::new();
    let done = pair.drive_until(Duration::from_secs(30), |p| {
        write_some(p, &data, &mut written, true);
        read_all(p, &mut received)
    });
    assert!(done && received == data);
    assert_eq!(pair.client.conn().stats().packets_retransmitted, 0);
}
