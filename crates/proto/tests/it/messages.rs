//! Stories of messages: unordered delivery, the DCCP-like service without repair, and partial
//! reliability that gives up on a message once its deadline passed.

use crate::support::{cleartext, Direction, Pair, PathModel};
use qstp_proto::wire::{Chunk, Packet};
use qstp_proto::{Config, Duration, ErrorControl, Order, Preset, Rate, RateControl, Time};
use std::collections::BTreeSet;

/// A message of `len` bytes that carries its id and write time in its first 16 bytes.
fn message(id: u64, written: Time, len: usize) -> Vec<u8> {
    let mut m = vec![(id % 251) as u8; len.max(16)];
    m[..8].copy_from_slice(&id.to_be_bytes());
    m[8..16].copy_from_slice(&written.as_nanos().to_be_bytes());
    m
}

/// The id and write time a message carries, after checking its filler is intact.
fn parse(m: &[u8]) -> (u64, Time) {
    let id = u64::from_be_bytes(m[..8].try_into().unwrap());
    let written = Time::from_nanos(u64::from_be_bytes(m[8..16].try_into().unwrap()));
    assert!(
        m[16..].iter().all(|b| *b == (id % 251) as u8),
        "message {id} corrupted"
    );
    (id, written)
}

/// These stories run on 10-30 ms paths and time deadlines in tens of milliseconds, so the
/// retransmission timer's floor is lowered from RFC 6298's 1 s to what such a deployment would pick.
fn composition(error: ErrorControl, order: Order) -> Config {
    Config {
        congestion: RateControl::Tfrc.into(),
        error,
        order,
        min_rto: Duration::from_millis(20),
        ..cleartext()
    }
}

/// Send `count` messages of `len` bytes, one every `interval`; collect (id, write, delivery).
fn exchange(
    pair: &mut Pair,
    config: Config,
    count: u64,
    len: usize,
    interval: Duration,
    limit: Duration,
) -> Vec<(u64, Time, Time)> {
    pair.connect_and_establish(config);
    let mut next_id = 0;
    let mut next_write = pair.time;
    let mut delivered = Vec::new();
    pair.drive_until(limit, |p| {
        while next_id < count && p.time >= next_write {
            let m = message(next_id, p.time, len);
            p.client
                .conn_mut()
                .send_message(p.time, &m)
                .expect("send_message");
            next_id += 1;
            next_write += interval;
        }
        while let Some(m) = p.server.conn_mut().recv_message() {
            let (id, written) = parse(&m);
            delivered.push((id, written, p.time));
        }
        false
    });
    assert_eq!(next_id, count, "the writer kept up");
    delivered
}

#[test]
fn unordered_messages_all_arrive_as_each_completes() {
    let path = PathModel {
        reorder: 0.2,
        reorder_delay: Duration::from_millis(15),
        ..PathModel::with_delay(Duration::from_millis(10))
    };
    let mut pair = Pair::new(cleartext(), path, 21);
    let config = composition(ErrorControl::SackFull, Order::Unordered);
    let delivered = exchange(
        &mut pair,
        config,
        300,
        600,
        Duration::from_millis(5),
        Duration::from_secs(20),
    );
    let mut ids: Vec<u64> = delivered.iter().map(|d| d.0).collect();
    let in_write_order = ids.windows(2).all(|w| w[0] < w[1]);
    ids.sort_unstable();
    assert_eq!(
        ids,
        (0..300).collect::<Vec<_>>(),
        "every message exactly once"
    );
    assert!(
        !in_write_order,
        "reordered packets let later messages overtake earlier ones"
    );
}

#[test]
fn messages_larger_than_a_datagram_are_fragmented_and_rebuilt() {
    let mut pair = Pair::new(
        cleartext(),
        PathModel {
            loss: 0.05,
            ..PathModel::default()
        },
        22,
    );
    let config = composition(ErrorControl::SackFull, Order::Unordered);
    let delivered = exchange(
        &mut pair,
        config,
        40,
        5_000,
        Duration::from_millis(20),
        Duration::from_secs(30),
    );
    let mut ids: Vec<u64> = delivered.iter().map(|d| d.0).collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        (0..40).collect::<Vec<_>>(),
        "complete, each rebuilt from its fragments"
    );
}

#[test]
fn without_error_control_losses_stay_lost() {
    let path = PathModel {
        loss: 0.1,
        ..PathModel::with_delay(Duration::from_millis(10))
    };
    let mut pair = Pair::new(cleartext(), path, 23);
    let delivered = exchange(
        &mut pair,
        Config::preset(Preset::Tfrc, Rate::ZERO),
        400,
        500,
        Duration::from_millis(5),
        Duration::from_secs(10),
    );
    let client = pair.client.conn().stats();
    assert_eq!(
        client.packets_retransmitted, 0,
        "the DCCP-like service never repairs"
    );
    assert!(
        delivered.len() < 400 && delivered.len() > 300,
        "{} of 400 delivered",
        delivered.len()
    );
    let mut ids: Vec<u64> = delivered.iter().map(|d| d.0).collect();
    ids.dedup();
    assert_eq!(ids.len(), delivered.len(), "no message twice");
}

/// Partial reliability, the guarantee as strong as it can be made: the sender never transmits a
/// fragment of a message after `write time + deadline`, so with unordered delivery a message is
/// handed to the application no later than `write time + deadline + the path's one-way delay`
/// (here the harness clock is both endpoints' clock).
#[test]
fn partial_reliability_never_delivers_a_message_past_its_deadline() {
    let deadline = Duration::from_millis(120); // RFC 6298 repair is quick on this path: a deadline of two RTTs leaves some losses unrepaired.
    let path = PathModel {
        loss: 0.1,
        reorder: 0.1,
        reorder_delay: Duration::from_millis(10),
        ..PathModel::with_delay(Duration::from_millis(30))
    };
    let max_one_way = path.delay + path.reorder_delay;
    let mut pair = Pair::new(cleartext(), path, 24);
    let config = composition(
        ErrorControl::SackPartial {
            deadline: Some(deadline),
            max_retransmissions: None,
        },
        Order::Unordered,
    );
    // 80 kbit/s offered, well below what TFRC allows at this loss rate: only repair can miss.
    let delivered = exchange(
        &mut pair,
        config,
        400,
        200,
        Duration::from_millis(20),
        Duration::from_secs(15),
    );
    for (id, written, at) in &delivered {
        assert!(
            *at <= *written + deadline + max_one_way,
            "message {id} written {written} delivered {at}"
        );
    }
    // Repair happened within the deadline, and what could not be repaired in time was dropped.
    assert!(pair.client.conn().stats().packets_retransmitted > 0);
    assert!(
        delivered.len() > 380,
        "{} of 400 delivered",
        delivered.len()
    );
    assert!(
        delivered.len() < 400,
        "some losses could not be repaired in time"
    );
}

/// In order, partial reliability skips what was abandoned and keeps going.
#[test]
fn ordered_partial_reliability_skips_abandoned_messages_and_keeps_order() {
    let path = PathModel {
        loss: 0.2,
        ..PathModel::with_delay(Duration::from_millis(30))
    };
    let mut pair = Pair::new(cleartext(), path, 25);
    let error = ErrorControl::SackPartial {
        deadline: Some(Duration::from_millis(100)),
        max_retransmissions: Some(1),
    };
    let delivered = exchange(
        &mut pair,
        composition(error, Order::Ordered),
        400,
        400,
        Duration::from_millis(10),
        Duration::from_secs(15),
    );
    let ids: Vec<u64> = delivered.iter().map(|d| d.0).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in order, never twice");
    assert!(ids.len() < 400, "something was abandoned");
    assert!(
        ids.last().copied().unwrap_or(0) >= 390,
        "delivery did not stall behind a lost message"
    );
}

/// After a burst, with no more data to carry it, the sender still tells the receiver to skip what
/// it abandoned (an empty packet with the new skip point), so every message that reached the
/// receiver is delivered, in order, and none waits forever behind an abandoned one.
#[test]
fn abandoned_messages_do_not_hold_back_the_rest_of_a_burst() {
    let path = PathModel {
        loss: 0.3,
        ..PathModel::with_delay(Duration::from_millis(30))
    };
    let mut pair = Pair::new(cleartext(), path, 26);
    pair.arrivals = Some(Vec::new());
    let error = ErrorControl::SackPartial {
        deadline: Some(Duration::from_millis(80)),
        max_retransmissions: None,
    };
    pair.connect_and_establish(composition(error, Order::Ordered));
    let now = pair.time;
    for id in 0..30 {
        pair.client
            .conn_mut()
            .send_message(now, &message(id, now, 300))
            .unwrap();
    }
    let mut delivered = Vec::new();
    pair.drive_until(Duration::from_secs(3), |p| {
        while let Some(m) = p.server.conn_mut().recv_message() {
            delivered.push(parse(&m).0);
        }
        false
    });
    let arrived: BTreeSet<u64> = pair
        .arrivals
        .as_ref()
        .unwrap()
        .iter()
        .filter(|(_, d, _)| *d == Direction::ToServer)
        .filter_map(|(_, _, b)| match Packet::decode(b) {
            Ok(Packet::Data(data)) => match data.chunk {
                Chunk::Message { id, .. } => Some(id),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(
        delivered.windows(2).all(|w| w[0] < w[1]),
        "in order: {delivered:?}"
    );
    assert_eq!(
        delivered.iter().copied().collect::<BTreeSet<_>>(),
        arrived,
        "everything that arrived was delivered"
    );
    assert!(arrived.len() < 30, "some messages were abandoned");
}

/// In order, with a deadline far off: the lowest undelivered message is larger than any before
/// it, every transmission of it is lost for a while, and later messages fill the receiver's buffer
/// meanwhile. Once the path lets it through it is still taken in (not refused until abandoned), and
/// everything is delivered in order.
#[test]
fn a_large_lost_message_is_not_starved_by_the_messages_after_it() {
    const BIG: u64 = 3;
    /// Every fragment of the big message is lost during the first two seconds.
    fn drop_big_early(now: Time, datagram: &[u8]) -> bool {
        let early = now < Time::from_nanos(3_000_000_000);
        early
            && matches!(Packet::decode(datagram), Ok(Packet::Data(d)) if matches!(d.chunk, Chunk::Message { id: BIG, .. }))
    }
    let limits = Config {
        recv_buffer: 24 * 1024,
        ..cleartext()
    };
    let path = PathModel {
        drop_if: Some(drop_big_early),
        ..PathModel::with_delay(Duration::from_millis(10))
    };
    let mut pair = Pair::new(limits, path, 27);
    let error = ErrorControl::SackPartial {
        deadline: Some(Duration::from_secs(10)),
        max_retransmissions: None,
    };
    // A fixed rate: the losses must not slow the sender before the buffer is full.
    let congestion = RateControl::Fixed {
        rate: Rate::from_mbps(5),
    };
    pair.connect_and_establish(Config {
        congestion: congestion.into(),
        ..composition(error, Order::Ordered)
    });
    let sizes: Vec<usize> = (0..30u64)
        .map(|id| match id {
            0..=2 => 500,
            BIG => 12_000,
            _ => 2_000,
        })
        .collect();
    let mut next = 0;
    let mut delivered = Vec::new();
    let done = pair.drive_until(Duration::from_secs(20), |p| {
        while next < sizes.len() {
            let now = p.time;
            if p.client
                .conn_mut()
                .send_message(now, &message(next as u64, now, sizes[next]))
                .is_err()
            {
                break;
            }
            next += 1;
        }
        while let Some(m) = p.server.conn_mut().recv_message() {
            delivered.push(parse(&m).0);
        }
        delivered.len() == sizes.len()
    });
    assert!(
        pair.to_server_stats.lost >= 9,
        "the big message's first transmissions were lost"
    );
    assert!(done, "stalled after {delivered:?}");
    assert_eq!(delivered, (0..30).collect::<Vec<_>>());
}

/// A message the peer could never hold whole is refused at once instead of being sent forever.
#[test]
fn a_message_larger_than_the_peers_buffer_is_refused() {
    let limits = Config {
        recv_buffer: 16 * 1024,
        ..cleartext()
    };
    let mut pair = Pair::new(limits, PathModel::default(), 28);
    pair.connect_and_establish(composition(ErrorControl::SackFull, Order::Unordered));
    let now = pair.time;
    let conn = pair.client.conn_mut();
    assert_eq!(
        conn.send_message(now, &[1; 16 * 1024 + 1]),
        Err(qstp_proto::WriteError::TooLarge(16 * 1024 + 1))
    );
    conn.send_message(now, &[2; 16 * 1024]).unwrap();
    let mut got = None;
    pair.drive_until(Duration::from_secs(5), |p| {
        got = got.take().or_else(|| p.server.conn_mut().recv_message());
        got.is_some()
    });
    assert_eq!(got.map(|m| m.len()), Some(16 * 1024));
}

/// Without error control nothing is repaired, but nothing that arrives is thrown away either: a
/// message is given up only once a fragment is known lost, so a reordered fragment still in flight
/// is not overtaken by a packet telling the receiver to skip its message.
#[test]
fn without_error_control_reordering_alone_loses_nothing() {
    for order in [Order::Unordered, Order::Ordered] {
        let path = PathModel {
            reorder: 0.3,
            reorder_delay: Duration::from_millis(5),
            ..PathModel::with_delay(Duration::from_millis(10))
        };
        let mut pair = Pair::new(cleartext(), path, 29);
        let config = composition(ErrorControl::None, order);
        let delivered = exchange(
            &mut pair,
            config,
            200,
            3_000,
            Duration::from_millis(10),
            Duration::from_secs(10),
        );
        let mut ids: Vec<u64> = delivered.iter().map(|d| d.0).collect();
        ids.sort_unstable();
        assert_eq!(
            ids,
            (0..200).collect::<Vec<_>>(),
            "{order:?}: every message, each once"
        );
        assert_eq!(pair.client.conn().stats().packets_retransmitted, 0);
    }
}

/// Partial reliability, in order, and nothing else to send: the first message never gets through
/// and is abandoned at its deadline; the sender must still tell the receiver to skip it (an empty
/// packet, sent again when that one is lost too), or the second message waits forever.
#[test]
fn a_skip_notice_goes_out_alone_and_again_when_lost() {
    /// Every fragment of message 0 is lost.
    fn drop_first_message(_now: Time, datagram: &[u8]) -> bool {
        matches!(Packet::decode(datagram), Ok(Packet::Data(d)) if matches!(d.chunk, Chunk::Message { id: 0, .. }))
    }
    let path = PathModel {
        drop_if: Some(drop_first_message),
        ..PathModel::with_delay(Duration::from_millis(10))
    };
    let mut pair = Pair::new(cleartext(), path, 30);
    pair.capture = Some(Vec::new());
    let error = ErrorControl::SackPartial {
        deadline: Some(Duration::from_millis(200)),
        max_retransmissions: None,
    };
    pair.connect_and_establish(composition(error, Order::Ordered));
    let now = pair.time;
    pair.client
        .conn_mut()
        .send_message(now, &message(0, now, 2_000))
        .unwrap();
    pair.client
        .conn_mut()
        .send_message(now, &message(1, now, 300))
        .unwrap();
    // Message 1 arrives but waits for message 0; the way to the server then fails for a while,
    // taking the first skip notice with it.
    pair.drive(Duration::from_millis(150));
    assert_eq!(
        pair.server.conn_mut().recv_message(),
        None,
        "message 1 waits in order"
    );
    pair.to_server.loss = 1.0;
    pair.drive(Duration::from_millis(300));
    pair.to_server.loss = 0.0;
    let mut got = None;
    assert!(
        pair.drive_until(Duration::from_secs(5), |p| {
            got = got.take().or_else(|| p.server.conn_mut().recv_message());
            got.is_some()
        }),
        "message 1 was never released"
    );
    assert_eq!(parse(&got.unwrap()).0, 1);
    let notices = pair.capture.as_ref().unwrap().iter().filter(|(_, d, b)| {
        *d == Direction::ToServer && matches!(Packet::decode(b), Ok(Packet::Data(data)) if data.chunk == Chunk::Empty && data.skip_to == Some(2))
    });
    assert!(notices.count() >= 2, "the lost skip notice was sent again");
    // Once the skip is acknowledged the sender falls silent: no notice is repeated for nothing.
    pair.drive(Duration::from_millis(500));
    let sent = pair.to_server_stats.sent;
    pair.drive(Duration::from_secs(3));
    assert_eq!(pair.to_server_stats.sent, sent, "nothing more to say");
}

/// A skip point counts even when the packet carrying it brings a fragment the receiver cannot
/// take yet: message 0 never arrives, messages 1 to 3 wait behind it, and message 4 does not fit
/// beside them. Once the sender gives up on message 0, the next copy of message 4 carries the
/// skip, which makes message 4 the lowest one (always taken in) instead of leaving it to expire.
#[test]
fn a_skip_point_counts_even_on_a_refused_fragment() {
    fn drop_first_message(_now: Time, datagram: &[u8]) -> bool {
        matches!(Packet::decode(datagram), Ok(Packet::Data(d)) if matches!(d.chunk, Chunk::Message { id: 0, .. }))
    }
    let limits = Config {
        recv_buffer: 8 * 1024,
        ..cleartext()
    };
    let path = PathModel {
        drop_if: Some(drop_first_message),
        ..PathModel::with_delay(Duration::from_millis(10))
    };
    let mut pair = Pair::new(limits, path, 31);
    let error = ErrorControl::SackPartial {
        deadline: Some(Duration::from_millis(300)),
        max_retransmissions: None,
    };
    pair.connect_and_establish(composition(error, Order::Ordered));
    let start = pair.time;
    for id in 0..4 {
        pair.client
            .conn_mut()
            .send_message(start, &message(id, start, 2_000))
            .unwrap();
    }
    let mut delivered = Vec::new();
    let mut written = 4;
    pair.drive_until(Duration::from_secs(3), |p| {
        if written == 4 && p.time >= start + Duration::from_millis(250) {
            let now = p.time;
            p.client
                .conn_mut()
                .send_message(now, &message(4, now, 3_000))
                .unwrap();
            written += 1;
        }
        while let Some(m) = p.server.conn_mut().recv_message() {
            delivered.push(parse(&m).0);
        }
        false
    });
    assert_eq!(
        delivered,
        vec![1, 2, 3, 4],
        "only the message the path lost is missing"
    );
}

/// Messages sent within the window the receiver advertised are taken in even though the window
/// computed from its free buffer shrank meanwhile (message 0 never arrives, so nothing is
/// delivered and the buffer only fills): nothing but the lost message is missing.
#[test]
fn a_granted_message_window_is_honoured() {
    fn drop_first_message(_now: Time, datagram: &[u8]) -> bool {
        matches!(Packet::decode(datagram), Ok(Packet::Data(d)) if matches!(d.chunk, Chunk::Message { id: 0, .. }))
    }
    let limits = Config {
        recv_buffer: 8 * 1024,
        ..cleartext()
    };
    let path = PathModel {
        drop_if: Some(drop_first_message),
        ..PathModel::with_delay(Duration::from_millis(10))
    };
    let mut pair = Pair::new(limits, path, 32);
    let error = ErrorControl::SackPartial {
        deadline: Some(Duration::from_millis(300)),
        max_retransmissions: None,
    };
    pair.connect_and_establish(composition(error, Order::Ordered));
    let start = pair.time;
    for id in 0..5 {
        pair.client
            .conn_mut()
            .send_message(start, &message(id, start, 1_400))
            .unwrap();
    }
    let mut delivered = Vec::new();
    pair.drive_until(Duration::from_secs(3), |p| {
        while let Some(m) = p.server.conn_mut().recv_message() {
            delivered.push(parse(&m).0);
        }
        false
    });
    assert_eq!(delivered, vec![1, 2, 3, 4]);
}

/// `Readable` means a whole message can be taken: not when its first fragment arrives.
#[test]
fn readable_is_announced_for_whole_messages_only() {
    let mut pair = Pair::new(
        cleartext(),
        PathModel::with_delay(Duration::from_millis(10)),
        33,
    );
    pair.arrivals = Some(Vec::new());
    // 100 kbit/s: the fragments of a 5000-byte message arrive about 120 ms apart.
    let congestion = RateControl::Fixed {
        rate: Rate::from_kbps(100),
    };
    pair.connect_and_establish(Config {
        congestion: congestion.into(),
        ..composition(ErrorControl::SackFull, Order::Unordered)
    });
    let sent_at = pair.time;
    pair.client
        .conn_mut()
        .send_message(sent_at, &message(0, sent_at, 5_000))
        .unwrap();
    pair.drive(Duration::from_secs(2));
    let fragments: Vec<Time> = pair
        .arrivals
        .as_ref()
        .unwrap()
        .iter()
        .filter(|(_, d, b)| *d == Direction::ToServer && matches!(Packet::decode(b), Ok(Packet::Data(data)) if matches!(data.chunk, Chunk::Message { .. })))
        .map(|(t, _, _)| *t)
        .collect();
    assert!(
        fragments.len() >= 4,
        "the message came in several fragments"
    );
    let readable: Vec<Time> = pair
        .server
        .events
        .iter()
        .filter(|(_, _, e)| *e == qstp_proto::Event::Readable)
        .map(|(t, _, _)| *t)
        .collect();
    assert_eq!(
        readable,
        vec![*fragments.last().unwrap()],
        "one announcement, when the last fragment arrived"
    );
    assert_eq!(
        pair.server.conn_mut().recv_message().map(|m| parse(&m).0),
        Some(0)
    );
}

/// A message the path keeps losing is given up exactly at its deadline, not whenever another
/// timer (here the retransmission timeout) next wakes the sender.
#[test]
fn a_message_is_abandoned_exactly_at_its_deadline() {
    fn drop_message_1(_now: Time, datagram: &[u8]) -> bool {
        matches!(Packet::decode(datagram), Ok(Packet::Data(d)) if matches!(d.chunk, Chunk::Message { id: 1, .. }))
    }
    let path = PathModel {
        drop_if: Some(drop_message_1),
        ..PathModel::with_delay(Duration::from_millis(10))
    };
    let mut pair = Pair::new(cleartext(), path, 34);
    let deadline = Duration::from_millis(700);
    let error = ErrorControl::SackPartial {
        deadline: Some(deadline),
        max_retransmissions: None,
    };
    pair.connect_and_establish(composition(error, Order::Ordered));
    let start = pair.time;
    pair.client
        .conn_mut()
        .send_message(start, &message(0, start, 500))
        .unwrap();
    pair.drive(Duration::from_millis(100));
    let capacity = pair.client.conn().send_capacity();
    let written = pair.time;
    pair.client
        .conn_mut()
        .send_message(written, &message(1, written, 500))
        .unwrap();
    let mut freed_at = None;
    pair.drive_until(Duration::from_secs(5), |p| {
        if p.client.conn().send_capacity() == capacity {
            freed_at = Some(p.time);
        }
        freed_at.is_some()
    });
    assert!(
        pair.to_server_stats.lost > 3,
        "message 1 was sent again and again"
    );
    assert_eq!(
        freed_at,
        Some(written + deadline),
        "abandoned (and its buffer freed) at the deadline"
    );
}

/// A slow reader fills the receive buffer: messages of several packets take more room than the id
/// window accounts for, so the receiver refuses fragments for space. Those packets crossed the
/// path all the same, so the lossless path must still show a loss event rate of zero.
#[test]
fn a_slow_reader_with_a_full_buffer_is_not_network_loss() {
    let server = Config {
        recv_buffer: 16_000,
        ..cleartext()
    };
    let mut pair = Pair::new(server, PathModel::with_delay(Duration::from_millis(10)), 41);
    let error = ErrorControl::SackPartial {
        deadline: Some(Duration::from_secs(60)),
        max_retransmissions: None,
    };
    pair.connect_and_establish(composition(error, Order::Ordered));
    let (mut next_id, mut next_read, mut delivered) = (0u64, pair.time, 0u64);
    pair.drive_until(Duration::from_secs(8), |p| {
        while p.client.conn().send_capacity() >= 6_000 {
            let m = message(next_id, p.time, 6_000);
            p.client
                .conn_mut()
                .send_message(p.time, &m)
                .expect("send_message");
            next_id += 1;
        }
        // The application takes one message every 100 ms.
        if p.time >= next_read {
            if let Some(m) = p.server.conn_mut().recv_message() {
                assert_eq!(parse(&m).0, delivered, "in order, none missing");
                delivered += 1;
            }
            next_read = p.time + Duration::from_millis(100);
        }
        false
    });
    assert_eq!(
        pair.to_server_stats.lost + pair.to_server_stats.queue_drops,
        0,
        "the path is lossless"
    );
    let refused = pair.server.conn().stats().packets_dropped;
    assert!(
        refused > 0,
        "the receiver refused fragments for space (else this test shows nothing)"
    );
    let stats = pair.client.conn().stats();
    assert_eq!(
        stats.loss_event_rate, 0.0,
        "{refused} refusals taken for network loss: {stats:?}"
    );
    // Taken for loss, the refusals used to drive the rate down to a few messages in 8 s.
    assert!(
        delivered >= 60,
        "the reader kept taking messages: {delivered}"
    );
}

/// Each message may carry its own deadline: the path loses every message, and each is given up
/// (its buffer freed) exactly at its own deadline, the one without a deadline of its own at the
/// connection's.
#[test]
fn messages_are_abandoned_at_their_own_deadlines() {
    fn drop_messages(_now: Time, datagram: &[u8]) -> bool {
        matches!(Packet::decode(datagram), Ok(Packet::Data(d)) if matches!(d.chunk, Chunk::Message { .. }))
    }
    let path = PathModel {
        drop_if: Some(drop_messages),
        ..PathModel::with_delay(Duration::from_millis(10))
    };
    let mut pair = Pair::new(cleartext(), path, 35);
    let default_deadline = Duration::from_millis(1_500);
    let error = ErrorControl::SackPartial {
        deadline: Some(default_deadline),
        max_retransmissions: None,
    };
    // Every message is lost, so the peer never answers: the dead-peer check would (rightly) end
    // the connection before the last deadline.
    pair.connect_and_establish(Config {
        peer_silence_ptos: 0,
        ..composition(error, Order::Ordered)
    });
    let capacity = pair.client.conn().send_capacity();
    let start = pair.time;
    let conn = pair.client.conn_mut();
    conn.send_message_with(
        start,
        &message(0, start, 500),
        Some(Duration::from_millis(200)),
    )
    .unwrap();
    conn.send_message_with(
        start,
        &message(1, start, 500),
        Some(Duration::from_millis(650)),
    )
    .unwrap();
    conn.send_message_with(start, &message(2, start, 500), None)
        .unwrap();
    let mut freed = Vec::new();
    let mut last = pair.client.conn().send_capacity();
    pair.drive_until(Duration::from_secs(5), |p| {
        let now = p.client.conn().send_capacity();
        if now != last {
            freed.push((p.time - start, now - last));
            last = now;
        }
        now == capacity
    });
    let expected = vec![
        (Duration::from_millis(200), 500),
        (Duration::from_millis(650), 500),
        (default_deadline, 500),
    ];
    assert_eq!(freed, expected, "each message given up at its own deadline");
}

#[test]
fn a_message_deadline_needs_partial_reliability() {
    let mut pair = Pair::new(cleartext(), PathModel::default(), 36);
    pair.connect_and_establish(composition(ErrorControl::SackFull, Order::Unordered));
    let now = pair.time;
    let result =
        pair.client
            .conn_mut()
            .send_message_with(now, b"x", Some(Duration::from_millis(10)));
    assert!(
        matches!(result, Err(qstp_proto::WriteError::Unsupported(_))),
        "{result:?}"
    );
    assert!(pair
        .client
        .conn_mut()
        .send_message_with(now, b"x", None)
        .is_ok());
}
