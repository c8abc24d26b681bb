//! The packet port: a queue at its input, serialisation at its rate, a propagation delay, and
//! optional random losses after the queue.
//!
//! Besides the [`Port`] methods, a driver on a real clock may ask [`Link::poll_timeout`] for the
//! next instant of any kind and collect [`Link::poll_transmit`] (packets whose serialisation
//! ended), as the testbed's router does.
//!
//! The [`QueueObserver`]s added with [`Link::add_observer`] (at most [`MAX_OBSERVERS`]) see every
//! event at the link's queue (a packet queued, taken for transmission, or dropped and why), and
//! the queue as it stands just before each change: the simulator's packet capture is one, its
//! queue-length series another. Without one the link pays one empty loop per event.

use super::sojourn::Sojourn;
use super::{LinkStats, Offered, PacketId, PacketPool, Port, QueuedPacket};
use crate::ecn::Ecn;
use crate::loss::LossModel;
use crate::queue::{Dequeue, DropKind, QueueDiscipline};
use qstp_proto::{Duration, Rate, Time};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

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
pub trait QueueObserver<P>: Send {
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
    fn observe(&mut self, now: Time, event: QueueEvent, id: PacketId, packet: &P, queue_len: usize);

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

/// A unidirectional packet link whose observers see packets of type `P`.
pub struct Link<P> {
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
    observers: Vec<Box<dyn QueueObserver<P>>>,
    /// Which of them see events (bit i: observer i), asked once as each was added.
    seeing: u8,
    /// The earliest instant an observer wants to hear of a change before it happens.
    due: Time,
    /// The queue's sojourn times, when the driver asked for them ([`Link::measure_sojourn`]).
    sojourn: Option<Box<Sojourn>>,
}

impl<P> std::fmt::Debug for Link<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("rate", &self.rate)
            .field("delay", &self.delay)
            .field("queued", &self.queue.len())
            .field("stats", &self.stats)
            .finish()
    }
}

impl<P> Link<P> {
    /// A link of `rate` and `delay` behind `queue`; `rng` is the queue's random stream,
    /// `loss_rng` the loss model's (its own, so that a change of queue does not move the loss
    /// pattern).
    pub fn new(
        rate: Rate,
        delay: Duration,
        queue: Box<dyn QueueDiscipline<QueuedPacket>>,
        loss: Option<Box<dyn LossModel>>,
        rng: ChaCha8Rng,
        loss_rng: ChaCha8Rng,
    ) -> Self {
        Link {
            rate,
            delay,
            queue,
            loss,
            loss_rng,
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
            sojourn: None,
        }
    }

    /// Count the sojourn time of every packet the queue lets go from now on (time from its
    /// offer to the start of its serialisation). Off by default: then the link pays one branch
    /// per offer and per departure.
    pub fn measure_sojourn(&mut self) {
        self.sojourn.get_or_insert_with(Box::default);
    }

    /// The sojourn times counted, if the link counts them.
    pub fn sojourn(&self) -> Option<&Sojourn> {
        self.sojourn.as_deref()
    }

    /// The sojourn times counted, to restart them (at the end of a warm-up).
    pub fn sojourn_mut(&mut self) -> Option<&mut Sojourn> {
        self.sojourn.as_deref_mut()
    }

    /// Let `observer` see every later event at this link's queue, after those already there;
    /// a link that holds [`MAX_OBSERVERS`] hands it back.
    pub fn add_observer(
        &mut self,
        observer: Box<dyn QueueObserver<P>>,
    ) -> Result<(), Box<dyn QueueObserver<P>>> {
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
        &mut [Box<dyn QueueObserver<P>>],
        &dyn QueueDiscipline<QueuedPacket>,
    ) {
        (&mut self.observers, &*self.queue)
    }

    /// Take the observers back.
    pub fn take_observers(&mut self) -> Vec<Box<dyn QueueObserver<P>>> {
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
    fn observe<S: PacketPool<Packet = P>>(
        &mut self,
        now: Time,
        event: QueueEvent,
        id: PacketId,
        store: &S,
    ) {
        if self.seeing != 0 {
            self.tell(now, event, id, store);
        }
    }

    /// [`Link::observe`] when some observer sees events (out of line, as for `before_change`).
    #[inline(never)]
    fn tell<S: PacketPool<Packet = P>>(
        &mut self,
        now: Time,
        event: QueueEvent,
        id: PacketId,
        store: &S,
    ) {
        let len = self.queue.len();
        for (i, observer) in self.observers.iter_mut().enumerate() {
            if self.seeing & (1 << i) != 0 {
                observer.observe(now, event, id, store.packet(id), len);
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
    pub fn offer<S: PacketPool<Packet = P>>(
        &mut self,
        now: Time,
        packet: QueuedPacket,
        store: &mut S,
    ) -> Offered {
        self.before_change(now);
        if let Some(sojourn) = self.sojourn.as_deref_mut() {
            sojourn.arrive(packet.id, now);
        }
        if self.ready_at.is_none() && self.busy_until <= now && self.seeing == 0 {
            // Idle, and no observer to show the packet queued then taken: one step for both
            // (the observers' `before_change` is already done for `now`).
            return match self
                .queue
                .enqueue_dequeue(now, packet, &mut self.rng, self.rate)
            {
                Err((refused, kind)) if refused.id != packet.id => {
                    // Another packet was dropped in this one's place (FQ-CoDel), which waits.
                    self.refuse(now, refused, kind, store);
                    match self.send_next(now, store) {
                        true => Offered::Transmitting,
                        false => Offered::Queued,
                    }
                }
                Err((refused, kind)) => self.refuse(now, refused, kind, store),
                Ok(dequeued) => match self.start(now, dequeued, store) {
                    true => Offered::Transmitting,
                    false => Offered::Queued,
                },
            };
        }
        if let Err((refused, kind)) = self.queue.enqueue(now, packet, &mut self.rng) {
            let refusal = self.refuse(now, refused, kind, store);
            if refused.id == packet.id {
                return refusal;
            }
            // Another packet was dropped in this one's place (FQ-CoDel): this one is queued.
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
        let departure = self.oldest_departure().map(|d| d.ended);
        [self.ready_at, departure, self.next_arrival()]
            .into_iter()
            .flatten()
            .min()
    }

    /// When the link next asks its queue for a packet, if it will.
    #[inline]
    pub fn next_ready(&self) -> Option<Time> {
        self.ready_at
    }

    /// When the next propagating packet reaches the far end, if one is propagating.
    #[inline]
    pub fn next_arrival(&self) -> Option<Time> {
        self.in_flight.front().map(|&(at, _)| at)
    }

    /// Do what is due by `now` on the sending side: if the link is ready, start serialising the
    /// next queued packet (or learn how long the queue makes it wait). A driver that wakes late
    /// (a real-time forwarder on a coarse timer) catches up: each packet starts at the instant it
    /// was due, not at `now`, so the link keeps its rate and its packets their schedule. The
    /// simulator calls it exactly when due, and then it starts one packet.
    pub fn handle_timeout<S: PacketPool<Packet = P>>(&mut self, now: Time, store: &mut S) {
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
        if self.in_flight.front()?.0 > now {
            return None;
        }
        let (_, packet) = self.in_flight.pop_front()?;
        self.stats.packets_delivered += 1;
        Some(packet)
    }

    /// Count and discard a packet the queue refused.
    fn refuse<S: PacketPool<Packet = P>>(
        &mut self,
        now: Time,
        refused: QueuedPacket,
        kind: DropKind,
        store: &mut S,
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
    fn send_next<S: PacketPool<Packet = P>>(&mut self, now: Time, store: &mut S) -> bool {
        self.before_change(now);
        let dequeued = self.queue.dequeue(now, self.rate);
        self.start(now, dequeued, store)
    }

    /// Act on what the queue gave: serialise a packet, or wait; whether a packet started.
    fn start<S: PacketPool<Packet = P>>(
        &mut self,
        now: Time,
        dequeued: Dequeue<QueuedPacket>,
        store: &mut S,
    ) -> bool {
        // Packets the queue dropped while choosing this one (CoDel drops at dequeue).
        while let Some((dropped, kind)) = self.queue.take_dropped() {
            self.refuse(now, dropped, kind, store);
        }
        match dequeued {
            Dequeue::Packet(packet) => {
                if packet.ecn == Ecn::Ce {
                    // The queue marked it (or it came marked): the packet itself says so.
                    store.mark_ce(packet.id);
                }
                self.observe(now, QueueEvent::Dequeued, packet.id, store);
                if let Some(sojourn) = self.sojourn.as_deref_mut() {
                    sojourn.depart(packet.id, now);
                }
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

impl<P, S: PacketPool<Packet = P>> Port<S> for Link<P> {
    #[inline]
    fn offer(&mut self, now: Time, packet: QueuedPacket, pool: &mut S) -> Offered {
        Link::offer(self, now, packet, pool)
    }
    #[inline]
    fn handle_timeout(&mut self, now: Time, pool: &mut S) {
        Link::handle_timeout(self, now, pool)
    }
    #[inline]
    fn next_ready(&self) -> Option<Time> {
        Link::next_ready(self)
    }
    #[inline]
    fn next_arrival(&self) -> Option<Time> {
        Link::next_arrival(self)
    }
    #[inline]
    fn poll_arrival(&mut self, now: Time) -> Option<PacketId> {
        Link::poll_arrival(self, now)
    }
    fn stats(&self) -> &LinkStats {
        &self.stats
    }
    fn rate(&self) -> Rate {
        self.rate
    }
    fn delay(&self) -> Duration {
        self.delay
    }
}

#[cfg(test)]
#[path = "packets_tests.rs"]
mod tests;
