//! A unidirectional link as a sans-IO port: a queue at its input, serialisation at its rate, a
//! propagation delay, and optional random losses after the queue.
//!
//! The link never sees a clock or a scheduler. Whoever drives it (the simulator's event loop, or
//! a real-time forwarder on a wall clock) offers packets with [`Link::offer`], asks
//! [`Link::poll_timeout`] when it next has something to do, and at that instant calls
//! [`Link::handle_timeout`] (the next queued packet starts serialising), then collects
//! [`Link::poll_transmit`] (packets whose serialisation ended) and [`Link::poll_arrival`] (packets
//! whose propagation delay elapsed). A driver that must order the two kinds of work against other
//! work at equal instants (the simulator does) can ask for each on its own:
//! [`Link::next_ready`] and [`Link::next_arrival`].
//!
//! The [`QueueObserver`]s added with [`Link::add_observer`] (at most [`MAX_OBSERVERS`]) see every
//! event at the link's queue (a packet queued, taken for transmission, or dropped and why), and
//! the queue as it stands just before each change: the packet capture ([`crate::capture::Tap`])
//! is one, the queue-length series ([`super::QueueMeter`]) another. Without one the link pays one
//! empty loop per event.

use super::packet::{Packet, PacketStore, QueuedPacket};
use crate::atm::CellPort;
use crate::ids::{LinkId, NodeId, PacketId};
use qstp_dataplane::loss::LossModel;
use qstp_dataplane::queue::{Dequeue, DropKind, QueueDiscipline};
use qstp_proto::{Duration, Rate, Time};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// What a link counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets that finished serialisation (lost ones included).
    pub packets_sent: u64,
    /// Bytes of those packets.
    pub bytes_sent: u64,
    /// Packets that reached the far end.
    pub packets_delivered: u64,
    /// Packets the queue refused because it was full.
    pub overflow_drops: u64,
    /// Packets the queue dropped early (RED/RIO).
    pub early_drops: u64,
    /// Packets the loss model took.
    pub random_losses: u64,
}

/// What became of an offered packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    /// It waits in the queue (or the queue let another packet go first).
    Queued,
    /// The queue refused it, and it was discarded from the store.
    Dropped(DropKind),
    /// The link was idle: a packet (this one, unless the queue reorders) started serialising.
    Transmitting,
}

/// What happened at a link's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueEvent {
    /// The queue accepted the packet.
    Enqueued,
    /// The queue let the packet go: its serialisation starts.
    Dequeued,
    /// The queue refused the packet, for this reason; it is discarded after the observer saw it.
    Dropped(DropKind),
}

/// Most observers one link holds.
pub const MAX_OBSERVERS: usize = 4;

/// Sees every event at a link's queue, as it happens.
pub trait QueueObserver: Send {
    /// The queue may change at `now` (a packet is offered, or the link asks it for one): until
    /// now it held what `queue` holds. Called only once `now` reaches [`QueueObserver::due`].
    fn before_change(&mut self, _now: Time, _queue: &dyn QueueDiscipline<QueuedPacket>) {}

    /// From when on it wants [`QueueObserver::before_change`] (`Time::MAX`, the default:
    /// never). The link asks again after each call.
    fn due(&self) -> Time {
        Time::MAX
    }

    /// Whether it wants [`QueueObserver::observe`] at all (the default); an observer that says
    /// no costs the link nothing per event.
    fn sees_events(&self) -> bool {
        true
    }

    /// At `now`, `event` happened to the packet `id` (`packet`); the queue then holds
    /// `queue_len` packets.
    fn observe(
        &mut self,
        now: Time,
        event: QueueEvent,
        id: PacketId,
        packet: &Packet,
        queue_len: usize,
    );

    /// This observer as `Any`, for a driver that reads back what it gathered while it is still
    /// in place (the packet capture does, after every event); `None` by default.
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }
}

/// A packet whose serialisation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Departure {
    /// The packet (already discarded from the store if lost).
    pub packet: PacketId,
    /// Its size in bytes.
    pub size: u32,
    /// When its serialisation started.
    pub started: Time,
    /// When its serialisation ended.
    pub ended: Time,
    /// When it reaches the far end; `None` if the loss model took it.
    pub arrival: Option<Time>,
}

/// A unidirectional link.
pub struct Link {
    /// Its id.
    pub id: LinkId,
    /// The node at its input.
    pub from: NodeId,
    /// The node at its far end.
    pub to: NodeId,
    /// Serialisation rate.
    pub rate: Rate,
    /// Propagation delay.
    pub delay: Duration,
    /// The queue at its input.
    pub queue: Box<dyn QueueDiscipline<QueuedPacket>>,
    loss: Option<Box<dyn LossModel>>,
    /// The queue's random stream (RED/RIO early-drop coins).
    rng: ChaCha8Rng,
    /// The loss model's own stream, so that a change of queue does not move the loss pattern.
    loss_rng: ChaCha8Rng,
    /// When the packet being serialised will be out.
    busy_until: Time,
    /// When the link next asks the queue for a packet (the end of the current serialisation
    /// with packets waiting, or the end of a queue's wait); `None` while it waits for an offer.
    ready_at: Option<Time>,
    /// Packets serialising or serialised and not yet collected by [`Link::poll_transmit`]: the
    /// one on the wire, and at most the one before it if the driver polls only when it offers.
    /// Kept in two slots (older first) rather than a deque: this is on the simulator's hot path.
    departures: [Option<Departure>; 2],
    /// Whether departures are recorded at all; a driver that never polls them (the simulator's
    /// network) turns this off and keeps the record off its per-packet path.
    track_departures: bool,
    /// Packets propagating, with their arrival times. One rate and one delay keep arrivals in
    /// sending order, so this FIFO holds at most delay / (shortest serialisation time) + 1
    /// packets.
    in_flight: VecDeque<(Time, PacketId)>,
    /// The serialisation time of the last packet size seen (most packets share a size).
    last_transmit: (u32, Duration),
    /// Counters.
    pub stats: LinkStats,
    /// Who watches the queue's events (at most [`MAX_OBSERVERS`]).
    observers: Vec<Box<dyn QueueObserver>>,
    /// Which of them see events (bit i: observer i), asked once as each was added.
    seeing: u8,
    /// The earliest instant an observer wants to hear of a change before it happens.
    due: Time,
    /// An ATM trunk: the cell-level port that takes the place of the queue, serialisation and
    /// delay (the queue, loss model and observers are then unused).
    cells: Option<Box<CellPort>>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("id", &self.id)
            .field("from", &self.from)
            .field("to", &self.to)
            .field("rate", &self.rate)
            .field("delay", &self.delay)
            .field("queued", &self.queue.len())
            .field("stats", &self.stats)
            .finish()
    }
}

impl Link {
    /// A link from `from` to `to`; `rng` is its own random stream (the queue's; the loss model draws from a sibling of it).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: LinkId,
        from: NodeId,
        to: NodeId,
        rate: Rate,
        delay: Duration,
        queue: Box<dyn QueueDiscipline<QueuedPacket>>,
        loss: Option<Box<dyn LossModel>>,
        rng: ChaCha8Rng,
    ) -> Self {
        Link {
            id,
            from,
            to,
            rate,
            delay,
            queue,
            loss,
            loss_rng: crate::rng::sibling(&rng, 1),
            rng,
            busy_until: Time::ZERO,
            ready_at: None,
            departures: [None, None],
            track_departures: true,
            in_flight: VecDeque::new(),
            last_transmit: (0, Duration::ZERO),
            stats: LinkStats::default(),
            observers: Vec::new(),
            seeing: 0,
            due: Time::MAX,
            cells: None,
        }
    }

    /// Make this link an ATM trunk carried cell by cell by `port`.
    pub fn set_cells(&mut self, port: CellPort) {
        self.cells = Some(Box::new(port));
    }

    /// The ATM port, if this link is an ATM trunk.
    pub fn cells(&self) -> Option<&CellPort> {
        self.cells.as_deref()
    }

    /// The ATM port, to configure it.
    pub fn cells_mut(&mut self) -> Option<&mut CellPort> {
        self.cells.as_deref_mut()
    }

    /// Let `observer` see every later event at this link's queue, after those already there;
    /// a link that holds [`MAX_OBSERVERS`] hands it back.
    pub fn add_observer(
        &mut self,
        observer: Box<dyn QueueObserver>,
    ) -> Result<(), Box<dyn QueueObserver>> {
        if self.observers.len() >= MAX_OBSERVERS {
            return Err(observer);
        }
        if observer.sees_events() {
            self.seeing |= 1 << self.observers.len();
        }
        self.due = self.due.min(observer.due());
        self.observers.push(observer);
        Ok(())
    }

    /// The observers in place, each with the queue (to read back what they gathered).
    pub fn observers_mut(
        &mut self,
    ) -> (
        &mut [Box<dyn QueueObserver>],
        &dyn QueueDiscipline<QueuedPacket>,
    ) {
        (&mut self.observers, &*self.queue)
    }

    /// Take the observers back.
    pub fn take_observers(&mut self) -> Vec<Box<dyn QueueObserver>> {
        self.seeing = 0;
        self.due = Time::MAX;
        std::mem::take(&mut self.observers)
    }

    /// Tell the observers that want it that the queue may change at `now`.
    #[inline]
    fn before_change(&mut self, now: Time) {
        if now >= self.due {
            self.tell_before_change(now);
        }
    }

    /// [`Link::before_change`] once some observer is due (out of line: the per-packet path only
    /// compares two instants).
    #[inline(never)]
    fn tell_before_change(&mut self, now: Time) {
        self.due = Time::MAX;
        for observer in &mut self.observers {
            if now >= observer.due() {
                observer.before_change(now, &*self.queue);
            }
            self.due = self.due.min(observer.due());
        }
    }

    /// Show `event` of packet `id` to the observers that see events.
    #[inline]
    fn observe(&mut self, now: Time, event: QueueEvent, id: PacketId, store: &PacketStore) {
        if self.seeing != 0 {
            self.tell(now, event, id, store);
        }
    }

    /// [`Link::observe`] when some observer sees events (out of line, as for `before_change`).
    #[inline(never)]
    fn tell(&mut self, now: Time, event: QueueEvent, id: PacketId, store: &PacketStore) {
        let len = self.queue.len();
        for (i, observer) in self.observers.iter_mut().enumerate() {
            if self.seeing & (1 << i) != 0 {
                observer.observe(now, event, id, store.get(id), len);
            }
        }
    }

    /// The same link without a departure record: [`Link::poll_transmit`] then yields nothing and
    /// [`Link::poll_timeout`] names only sending and arrival instants. For a driver that needs
    /// only arrivals, as the simulator's network does.
    pub fn without_departures(mut self) -> Self {
        self.track_departures = false;
        self
    }

    /// Offer a packet to the link's queue at `now`; a refused packet is discarded from `store`.
    /// A driver on a real clock calls [`Link::handle_timeout`] first, so that the packets due to
    /// leave by `now` have left the queue.
    pub fn offer(&mut self, now: Time, packet: QueuedPacket, store: &mut PacketStore) -> Offered {
        if let Some(port) = self.cells.as_deref_mut() {
            let flow = store.get(packet.id).flow.0;
            self.stats.packets_sent += 1;
            self.stats.bytes_sent += u64::from(packet.size);
            return if port.offer(now, packet.id, flow, packet.size, store) {
                Offered::Queued
            } else {
                self.stats.overflow_drops += 1;
                Offered::Dropped(DropKind::Overflow)
            };
        }
        self.before_change(now);
        if self.ready_at.is_none() && self.busy_until <= now && self.seeing == 0 {
            // Idle, and no observer to show the packet queued then taken: one step for both
            // (the observers' `before_change` is already done for `now`).
            return match self
                .queue
                .enqueue_dequeue(now, packet, &mut self.rng, self.rate)
            {
                Err((refused, kind)) => self.refuse(now, refused, kind, store),
                Ok(dequeued) => match self.start(now, dequeued, store) {
                    true => Offered::Transmitting,
                    false => Offered::Queued,
                },
            };
        }
        if let Err((refused, kind)) = self.queue.enqueue(now, packet, &mut self.rng) {
            return self.refuse(now, refused, kind, store);
        }
        self.observe(now, QueueEvent::Enqueued, packet.id, store);
        if self.ready_at.is_some() {
            return Offered::Queued;
        }
        if self.busy_until <= now {
            if self.send_next(now, store) {
                return Offered::Transmitting;
            }
        } else {
            self.ready_at = Some(self.busy_until);
        }
        Offered::Queued
    }

    /// The next instant the link has something to do: ask the queue for a packet, finish a
    /// serialisation, or deliver a propagated packet. `None`: nothing until the next offer.
    pub fn poll_timeout(&self) -> Option<Time> {
        if let Some(port) = self.cells.as_deref() {
            return [port.next_wake(), port.next_arrival()]
                .into_iter()
                .flatten()
                .min();
        }
        let departure = self.oldest_departure().map(|d| d.ended);
        [self.ready_at, departure, self.next_arrival()]
            .into_iter()
            .flatten()
            .min()
    }

    /// When the link next asks its queue for a packet, if it will.
    pub fn next_ready(&self) -> Option<Time> {
        if let Some(port) = self.cells.as_deref() {
            return port.next_wake();
        }
        self.ready_at
    }

    /// When the next propagating packet reaches the far end, if one is propagating.
    pub fn next_arrival(&self) -> Option<Time> {
        if let Some(port) = self.cells.as_deref() {
            return port.next_arrival();
        }
        self.in_flight.front().map(|&(at, _)| at)
    }

    /// Do what is due by `now` on the sending side: if the link is ready, start serialising the
    /// next queued packet (or learn how long the queue makes it wait). A driver that wakes late
    /// (a real-time forwarder on a coarse timer) catches up: each packet starts at the instant it
    /// was due, not at `now`, so the link keeps its rate and its packets their schedule. The
    /// simulator calls it exactly when due, and then it starts one packet.
    pub fn handle_timeout(&mut self, now: Time, store: &mut PacketStore) {
        if let Some(port) = self.cells.as_deref_mut() {
            port.advance(now, store);
            return;
        }
        let Some(mut at) = self.ready_at.filter(|&at| at <= now) else {
            return;
        };
        loop {
            self.ready_at = None;
            if !self.send_next(at, store) {
                return;
            }
            // Continue only for packets that were due strictly before `now`: one due at `now`
            // itself is the driver's next timeout, which keeps the simulator's event order.
            match self.ready_at {
                Some(next) if next < now => at = next,
                _ => return,
            }
        }
    }

    /// The next packet whose serialisation ended by `now`.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Departure> {
        if self.oldest_departure()?.ended > now {
            return None;
        }
        match self.departures[0].take() {
            Some(d) => Some(d),
            None => self.departures[1].take(),
        }
    }

    fn oldest_departure(&self) -> Option<&Departure> {
        self.departures[0].as_ref().or(self.departures[1].as_ref())
    }

    /// The next packet that reached the far end by `now`.
    pub fn poll_arrival(&mut self, now: Time) -> Option<PacketId> {
        if let Some(port) = self.cells.as_deref_mut() {
            let packet = port.poll_arrival(now)?;
            self.stats.packets_delivered += 1;
            return Some(packet);
        }
        if self.in_flight.front()?.0 > now {
            return None;
        }
        let (_, packet) = self.in_flight.pop_front()?;
        self.stats.packets_delivered += 1;
        Some(packet)
    }

    /// Count and discard a packet the queue refused.
    fn refuse(
        &mut self,
        now: Time,
        refused: QueuedPacket,
        kind: DropKind,
        store: &mut PacketStore,
    ) -> Offered {
        match kind {
            DropKind::Overflow => self.stats.overflow_drops += 1,
            DropKind::Early => self.stats.early_drops += 1,
        }
        self.observe(now, QueueEvent::Dropped(kind), refused.id, store);
        store.discard(refused.id);
        Offered::Dropped(kind)
    }

    /// Start serialising the next queued packet, if the queue lets one go; whether one started.
    fn send_next(&mut self, now: Time, store: &mut PacketStore) -> bool {
        self.before_change(now);
        let dequeued = self.queue.dequeue(now, self.rate);
        self.start(now, dequeued, store)
    }

    /// Act on what the queue gave: serialise a packet, or wait; whether a packet started.
    fn start(
        &mut self,
        now: Time,
        dequeued: Dequeue<QueuedPacket>,
        store: &mut PacketStore,
    ) -> bool {
        match dequeued {
            Dequeue::Packet(packet) => {
                self.observe(now, QueueEvent::Dequeued, packet.id, store);
                if self.last_transmit.0 != packet.size {
                    self.last_transmit =
                        (packet.size, self.rate.transmit_time(packet.size as usize));
                }
                self.busy_until = now + self.last_transmit.1;
                self.stats.packets_sent += 1;
                self.stats.bytes_sent += u64::from(packet.size);
                let lost = match self.loss.as_mut() {
                    Some(loss) => loss.lose(&mut self.loss_rng),
                    None => false,
                };
                let arrival = if lost {
                    self.stats.random_losses += 1;
                    store.discard(packet.id);
                    None
                } else {
                    let arrival = self.busy_until + self.delay;
                    self.in_flight.push_back((arrival, packet.id));
                    Some(arrival)
                };
                if self.track_departures {
                    // A driver that never polls departures keeps only the last two.
                    if self.departures[1].is_some() {
                        self.departures[0] = self.departures[1].take();
                    }
                    self.departures[1] = Some(Departure {
                        packet: packet.id,
                        size: packet.size,
                        started: now,
                        ended: self.busy_until,
                        arrival,
                    });
                }
                if !self.queue.is_empty() {
                    self.ready_at = Some(self.busy_until);
                }
                true
            }
            Dequeue::Wait(until) => {
                // A wait that has already ended would spin; the next nanosecond is the soonest retry.
                self.ready_at = Some(until.max(now + Duration::from_nanos(1)));
                false
            }
            Dequeue::Empty => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{AgentId, FlowId};
    use crate::network::{Packet, Payload};
    use qstp_dataplane::color::Color;
    use qstp_dataplane::queue::DropTail;
    use rand::SeedableRng;

    fn packet(store: &mut PacketStore, size: u32) -> QueuedPacket {
        let id = store.insert(Packet {
            size,
            flow: FlowId(0),
            group: 0,
            color: Color::Green,
            sent: Time::ZERO,
            source: AgentId(0),
            destination: AgentId(1),
            destination_node: NodeId(1),
            payload: Payload::Udp,
        });
        QueuedPacket {
            id,
            size,
            group: 0,
            color: Color::Green,
        }
    }

    fn ms(m: u64) -> Time {
        Time::ZERO + Duration::from_millis(m)
    }

    /// A 1 Mbit/s link (8 ms per 1000 bytes) with 10 ms of delay and a drop-tail of `limit`.
    fn test_link(limit: usize) -> Link {
        Link::new(
            LinkId(0),
            NodeId(0),
            NodeId(1),
            Rate::from_mbps(1),
            Duration::from_millis(10),
            Box::new(DropTail::new(limit)),
            None,
            ChaCha8Rng::seed_from_u64(1),
        )
    }

    /// Drives the port alone, the way a real-time forwarder would: sleep until the next offer or
    /// `poll_timeout`, handle it, collect what is due, logging (instant, what, packet).
    #[test]
    fn the_port_alone_serialises_propagates_and_names_every_next_instant() {
        let mut store = PacketStore::default();
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
        let mut store = PacketStore::default();
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

    impl QueueObserver for Log {
        fn observe(&mut self, now: Time, event: QueueEvent, id: PacketId, p: &Packet, len: usize) {
            self.0.lock().unwrap().push((now, event, id, len, p.color));
        }
    }

    #[test]
    fn an_observer_sees_every_enqueue_dequeue_and_drop() {
        let mut store = PacketStore::default();
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

    #[test]
    fn a_meter_records_the_queue_at_each_bin_end_whoever_changes_it() {
        let mut store = PacketStore::default();
        let mut link = test_link(10);
        let meter = crate::network::QueueMeter::new("q", &*link.queue, Duration::from_millis(5), 8);
        assert!(link.add_observer(Box::new(meter)).is_ok());
        // Four 1000-byte packets at 1 ms: one on the wire until 9 ms, three queued; they leave
        // the queue at 9, 17 and 25 ms. Nothing happens after 25 ms.
        for _ in 0..4 {
            let p = packet(&mut store, 1000);
            link.offer(ms(1), p, &mut store);
        }
        for at in [9, 17, 25, 33] {
            link.handle_timeout(ms(at), &mut store);
        }
        let (observers, queue) = link.observers_mut();
        let meter = observers[0]
            .as_any_mut()
            .and_then(|a| a.downcast_mut::<crate::network::QueueMeter>())
            .unwrap();
        let series = meter.finish(queue);
        assert_eq!(series.len(), 1, "a FIFO has no classes");
        // Bins end at 5, 10, ..., 40 ms: what the queue held then.
        assert_eq!(series[0].packets, [3, 2, 2, 1, 1, 0, 0, 0]);
        assert_eq!(series[0].bytes, [3000, 2000, 2000, 1000, 1000, 0, 0, 0]);
    }

    /// A driver that wakes late (a coarse real-time timer) still gets the link's rate: each
    /// waiting packet starts at the instant it was due, and arrives one delay after it ends.
    #[test]
    fn a_late_driver_catches_up_on_the_schedule() {
        let mut store = PacketStore::default();
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
}
