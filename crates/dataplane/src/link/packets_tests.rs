//! Tests of the packet port, driven alone as the testbed's router drives it.

use super::*;
use crate::color::Color;
use crate::queue::DropTail;
use rand::SeedableRng;

type Pool = crate::link::Pool<Color>;

fn packet(store: &mut Pool, size: u32) -> QueuedPacket {
    let id = store.insert(Color::Green);
    QueuedPacket {
        id,
        size,
        group: 0,
        flow: 0,
        color: Color::Green,
        ecn: crate::ecn::Ecn::NotEct,
    }
}

fn ms(m: u64) -> Time {
    Time::ZERO + Duration::from_millis(m)
}

/// A 1 Mbit/s link (8 ms per 1000 bytes) with 10 ms of delay and a drop-tail of `limit`.
fn test_link(limit: usize) -> Link<Color> {
    Link::new(
        Rate::from_mbps(1),
        Duration::from_millis(10),
        Box::new(DropTail::new(limit)),
        None,
        ChaCha8Rng::seed_from_u64(1),
        ChaCha8Rng::seed_from_u64(2),
    )
}

/// Drives the port alone, the way a real-time forwarder would: sleep until the next offer or
/// `poll_timeout`, handle it, collect what is due, logging (instant, what, packet).
#[test]
fn the_port_alone_serialises_propagates_and_names_every_next_instant() {
    let mut store = Pool::default();
    let mut link = test_link(2);
    assert_eq!(link.poll_timeout(), None);
    // 1000 bytes at 1 Mbit/s take 8 ms; 500 bytes 4 ms. Offers: three at 0 (one goes on the
    // wire, two wait), one at 1 ms (refused: the queue holds two), one of 500 bytes at 30 ms
    // (the link is idle again).
    let mut offers = vec![
        (ms(0), 1000, Offered::Transmitting),
        (ms(0), 1000, Offered::Queued),
        (ms(0), 1000, Offered::Queued),
        (ms(1), 1000, Offered::Dropped(DropKind::Overflow)),
        (ms(30), 500, Offered::Transmitting),
    ];
    offers.reverse();
    let mut ids = Vec::new();
    let mut log = Vec::new();
    let mut now = Time::ZERO;
    loop {
        // The next thing to happen: an offer, or what the link names.
        let next_offer = offers.last().map(|o| o.0);
        let timeout = link.poll_timeout();
        let Some(next) = [next_offer, timeout].into_iter().flatten().min() else {
            break;
        };
        assert!(next >= now, "time runs forwards");
        now = next;
        if next_offer == Some(now) {
            let (_, size, expected) = offers.pop().unwrap();
            let p = packet(&mut store, size);
            ids.push(p.id);
            assert_eq!(link.offer(now, p, &mut store), expected, "offer at {now:?}");
        }
        link.handle_timeout(now, &mut store);
        // Woken exactly at each instant: had `poll_timeout` named one too late, the log
        // below would show it late.
        while let Some(d) = link.poll_transmit(now) {
            assert_eq!(d.ended, now, "a departure is collected when it is due");
            assert_eq!(d.arrival, Some(d.ended + link.delay));
            log.push((now, "departed", d.packet));
        }
        while let Some(p) = link.poll_arrival(now) {
            log.push((now, "arrived", p));
            store.discard(p);
        }
    }
    let (a, b, c, e) = (ids[0], ids[1], ids[2], ids[4]);
    assert_eq!(
        log,
        vec![
            (ms(8), "departed", a),
            (ms(16), "departed", b),
            (ms(18), "arrived", a),
            (ms(24), "departed", c),
            (ms(26), "arrived", b),
            (ms(34), "departed", e),
            (ms(34), "arrived", c),
            (ms(44), "arrived", e),
        ]
    );
    assert_eq!(link.stats.packets_sent, 4);
    assert_eq!(link.stats.packets_delivered, 4);
    assert_eq!(link.stats.overflow_drops, 1);
    assert_eq!(store.live(), 0);
}

#[test]
fn poll_timeout_names_the_next_departure_or_arrival() {
    let mut store = Pool::default();
    let mut link = test_link(10);
    let p = packet(&mut store, 1000);
    link.offer(ms(0), p, &mut store);
    assert_eq!(link.poll_timeout(), Some(ms(8)), "end of serialisation");
    let q = packet(&mut store, 1000);
    link.offer(ms(2), q, &mut store);
    assert_eq!(
        (link.next_ready(), link.next_arrival()),
        (Some(ms(8)), Some(ms(18)))
    );
    assert_eq!(link.poll_arrival(ms(17)), None, "not before its time");
    assert_eq!(link.poll_transmit(ms(7)), None);
    link.handle_timeout(ms(8), &mut store);
    assert_eq!(link.poll_transmit(ms(8)).map(|d| d.packet), Some(p.id));
    assert_eq!(
        link.poll_timeout(),
        Some(ms(16)),
        "end of the second serialisation"
    );
    assert_eq!(
        link.poll_transmit(ms(16)).map(|d| (d.packet, d.started)),
        Some((q.id, ms(8)))
    );
    assert_eq!(link.poll_timeout(), Some(ms(18)), "the first arrival");
    assert_eq!(link.poll_arrival(ms(18)), Some(p.id));
    assert_eq!(link.poll_timeout(), Some(ms(26)));
    assert_eq!(
        link.poll_arrival(ms(30)),
        Some(q.id),
        "late polls still deliver"
    );
    assert_eq!(link.poll_timeout(), None);
}

/// One observed event: `(time, event, packet, queue length, colour)`.
type Seen = (Time, QueueEvent, PacketId, usize, Color);

/// Logs what it sees.
struct Log(std::sync::Arc<std::sync::Mutex<Vec<Seen>>>);

impl QueueObserver<Color> for Log {
    fn observe(&mut self, now: Time, event: QueueEvent, id: PacketId, p: &Color, len: usize) {
        self.0.lock().unwrap().push((now, event, id, len, *p));
    }
}

#[test]
fn an_observer_sees_every_enqueue_dequeue_and_drop() {
    let mut store = Pool::default();
    let mut link = test_link(2);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    assert!(link.add_observer(Box::new(Log(seen.clone()))).is_ok());
    // Four 1000-byte packets at 0 (8 ms each at 1 Mbit/s): the first goes on the wire at
    // once, two wait, the fourth overflows the two-packet queue.
    let ids: Vec<PacketId> = (0..4)
        .map(|_| {
            let p = packet(&mut store, 1000);
            link.offer(ms(0), p, &mut store);
            p.id
        })
        .collect();
    for at in [8, 16] {
        link.handle_timeout(ms(at), &mut store);
    }
    use QueueEvent::*;
    let green = Color::Green;
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            (ms(0), Enqueued, ids[0], 1, green),
            (ms(0), Dequeued, ids[0], 0, green),
            (ms(0), Enqueued, ids[1], 1, green),
            (ms(0), Enqueued, ids[2], 2, green),
            (ms(0), Dropped(DropKind::Overflow), ids[3], 2, green),
            (ms(8), Dequeued, ids[1], 1, green),
            (ms(16), Dequeued, ids[2], 0, green),
        ]
    );
    // The observer saw the dropped packet before the link discarded it.
    assert_eq!(store.live(), 3);
    // A link holds a bounded number of observers.
    for _ in 1..MAX_OBSERVERS {
        assert!(link.add_observer(Box::new(Log(Default::default()))).is_ok());
    }
    assert!(link.add_observer(Box::new(Log(seen.clone()))).is_err());
    // Without observers nothing more is logged.
    assert_eq!(link.take_observers().len(), MAX_OBSERVERS);
    let p = packet(&mut store, 1000);
    link.offer(ms(30), p, &mut store);
    assert_eq!(seen.lock().unwrap().len(), 7);
}

/// A driver that wakes late (a coarse real-time timer) still gets the link's rate: each
/// waiting packet starts at the instant it was due, and arrives one delay after it ends.
#[test]
fn a_late_driver_catches_up_on_the_schedule() {
    let mut store = Pool::default();
    let mut link = test_link(10);
    let ids: Vec<PacketId> = (0..4)
        .map(|_| {
            let p = packet(&mut store, 1000);
            link.offer(ms(0), p, &mut store);
            p.id
        })
        .collect();
    // 8 ms per packet: due at 8, 16 and 24 ms. Woken only at 20 ms: the second and third
    // start at 8 and 16, the fourth (due at 24) waits for its own timeout.
    link.handle_timeout(ms(20), &mut store);
    assert_eq!(link.next_ready(), Some(ms(24)));
    let mut starts = Vec::new();
    while let Some(d) = link.poll_transmit(ms(24)) {
        starts.push((d.packet, d.started));
    }
    assert_eq!(
        starts,
        [(ids[1], ms(8)), (ids[2], ms(16))],
        "the last two kept"
    );
    let mut arrivals = Vec::new();
    while let Some(p) = link.poll_arrival(ms(40)) {
        arrivals.push(p);
    }
    assert_eq!(arrivals, ids[..3], "18, 26 and 34 ms");
    assert_eq!(link.poll_timeout(), Some(ms(24)));
}

/// A pool whose packets remember whether they were marked CE.
#[derive(Default)]
struct MarkPool(crate::link::Pool<bool>);

impl PacketPool for MarkPool {
    type Packet = bool;
    fn packet(&self, id: PacketId) -> &bool {
        self.0.packet(id)
    }
    fn discard(&mut self, id: PacketId) {
        self.0.discard(id)
    }
    fn mark_ce(&mut self, id: PacketId) {
        if let Some(p) = self.0.remove(id) {
            let _ = p;
            let again = self.0.insert(true);
            assert_eq!(again, id, "the slot just freed is reused");
        }
    }
}

/// 400 ECT (or Not-ECT) packets of 1000 bytes offered at once to a 1 Mbit/s CoDel link (3.2 s
/// of queue), run until idle: what arrived marked, and the link's counters.
fn codel_link_run(ecn: bool, ect: bool) -> (usize, usize, LinkStats, usize) {
    use crate::queue::{CoDel, CoDelParams};
    let params = CoDelParams {
        ecn,
        ..CoDelParams::default()
    };
    let mut link: Link<bool> = Link::new(
        Rate::from_mbps(1),
        Duration::from_millis(10),
        Box::new(CoDel::new(1000, params)),
        None,
        ChaCha8Rng::seed_from_u64(1),
        ChaCha8Rng::seed_from_u64(2),
    );
    let mut pool = MarkPool::default();
    for _ in 0..400 {
        let id = pool.0.insert(false);
        let ecn = if ect {
            crate::ecn::Ecn::Ect0
        } else {
            crate::ecn::Ecn::NotEct
        };
        let p = QueuedPacket {
            id,
            size: 1000,
            group: 0,
            flow: 0,
            color: Color::Green,
            ecn,
        };
        link.offer(Time::ZERO, p, &mut pool);
    }
    let (mut arrived, mut marked) = (0, 0);
    while let Some(now) = link.poll_timeout() {
        link.handle_timeout(now, &mut pool);
        while link.poll_transmit(now).is_some() {}
        while let Some(id) = link.poll_arrival(now) {
            arrived += 1;
            marked += usize::from(*pool.packet(id));
            pool.discard(id);
        }
    }
    (arrived, marked, link.stats, pool.0.live())
}

#[test]
fn codel_drops_at_dequeue_are_discarded_from_the_pool_and_marks_reach_the_packet() {
    // Without ECN, CoDel drops at dequeue: the link counts them early drops and frees their
    // slots (nothing is left in the pool once all is delivered).
    let (arrived, marked, stats, live) = codel_link_run(false, true);
    assert!(stats.early_drops > 10, "{stats:?}");
    assert_eq!(arrived as u64 + stats.early_drops, 400);
    assert_eq!((marked, live), (0, 0));
    // With ECN, the same packets are marked instead: all arrive, the marks on the packets.
    let (arrived, marked, stats, live) = codel_link_run(true, true);
    assert_eq!((arrived, stats.early_drops, live), (400, 0, 0));
    assert!(marked > 10, "{marked}");
    // Not-ECT packets are dropped even with ECN on.
    let (_, marked, stats, _) = codel_link_run(true, false);
    assert!(stats.early_drops > 10 && marked == 0, "{stats:?}");
}

#[test]
fn a_link_counts_each_packets_time_from_offer_to_serialisation() {
    let mut store = Pool::default();
    let mut link = test_link(10);
    assert!(link.sojourn().is_none(), "off unless asked");
    link.measure_sojourn();
    // Three 1000-byte packets at 0: they start at 0, 8 and 16 ms; one more at 30 ms finds the
    // link idle and waits nothing.
    for _ in 0..3 {
        let p = packet(&mut store, 1000);
        link.offer(ms(0), p, &mut store);
    }
    link.handle_timeout(ms(8), &mut store);
    link.handle_timeout(ms(16), &mut store);
    let p = packet(&mut store, 1000);
    link.offer(ms(30), p, &mut store);
    let s = link.sojourn().unwrap().stats().unwrap();
    assert_eq!(s.samples, 4);
    assert!(
        (s.mean_ns - 6e6).abs() < 1.0,
        "(0 + 8 + 16 + 0) / 4 ms: {}",
        s.mean_ns
    );
    assert!(s.p50_ns < 1.0, "two of four waited nothing: {}", s.p50_ns);
    assert!((s.p99_ns - 16e6).abs() <= 16e6 / 128.0, "{}", s.p99_ns);
    link.sojourn_mut().unwrap().restart();
    assert!(link.sojourn().unwrap().stats().is_none());
}
