//! A unidirectional link: a queue at its input, serialisation at its rate, a propagation delay,
//! and optional random losses after the queue.

use super::packet::{PacketStore, QueuedPacket};
use crate::engine::Scheduler;
use crate::event::Event;
use crate::ids::{LinkId, NodeId, PacketId};
use crate::loss::LossModel;
use crate::queue::{Dequeue, DropKind, QueueDiscipline};
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
    /// Whether a `LinkReady` event is pending.
    ready_pending: bool,
    /// Packets propagating, with their arrival times. Arrivals keep sending order (one rate, one
    /// delay), so only the head has an `Arrive` event in the scheduler, which keeps the event heap
    /// as small as the number of links and agents rather than the number of packets in flight.
    in_flight: VecDeque<(Time, PacketId)>,
    /// The serialisation time of the last packet size seen (most packets share a size).
    last_transmit: (u32, Duration),
    /// Counters.
    pub stats: LinkStats,
    /// The packet capture on this link, if any.
    pub tap: Option<Box<crate::capture::Tap>>,
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
            ready_pending: false,
            in_flight: VecDeque::new(),
            last_transmit: (0, Duration::ZERO),
            stats: LinkStats::default(),
            tap: None,
        }
    }

    /// Offer a packet to the link's queue at `now`; a refused packet is discarded from `store`.
    pub fn offer(
        &mut self,
        now: Time,
        packet: QueuedPacket,
        store: &mut PacketStore,
        events: &mut Scheduler<Event>,
    ) {
        if let Err((refused, kind)) = self.queue.enqueue(now, packet, &mut self.rng) {
            match kind {
                DropKind::Overflow => self.stats.overflow_drops += 1,
                DropKind::Early => self.stats.early_drops += 1,
            }
            store.discard(refused.id);
            return;
        }
        if self.ready_pending {
            return;
        }
        if self.busy_until <= now {
            self.send_next(now, store, events);
        } else {
            self.ready_pending = true;
            events.schedule(self.busy_until, Event::LinkReady(self.id));
        }
    }

    /// The pending `LinkReady` event fired.
    pub fn on_ready(&mut self, now: Time, store: &mut PacketStore, events: &mut Scheduler<Event>) {
        self.ready_pending = false;
        self.send_next(now, store, events);
    }

    /// The `Arrive` event fired: the packet at the head of the pipe reached the far end.
    pub fn on_arrive(&mut self, now: Time, events: &mut Scheduler<Event>) -> PacketId {
        let (_, packet) = self
            .in_flight
            .pop_front()
            .expect("an Arrive event has a packet in flight");
        self.stats.packets_delivered += 1;
        if let Some(&(next, _)) = self.in_flight.front() {
            events.schedule(next.max(now), Event::Arrive(self.id));
        }
        packet
    }

    /// Start serialising the next queued packet, if the queue lets one go.
    fn send_next(&mut self, now: Time, store: &mut PacketStore, events: &mut Scheduler<Event>) {
        match self.queue.dequeue(now, self.rate) {
            Dequeue::Packet(packet) => {
                if let Some(tap) = self.tap.as_deref_mut() {
                    tap.record(now, store.get(packet.id));
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
                if lost {
                    self.stats.random_losses += 1;
                    store.discard(packet.id);
                } else {
                    let arrival = self.busy_until + self.delay;
                    if self.in_flight.is_empty() {
                        events.schedule(arrival, Event::Arrive(self.id));
                    }
                    self.in_flight.push_back((arrival, packet.id));
                }
                if !self.queue.is_empty() {
                    self.ready_pending = true;
                    events.schedule(self.busy_until, Event::LinkReady(self.id));
                }
            }
            Dequeue::Wait(until) => {
                // A wait that has already ended would spin; the next nanosecond is the soonest retry.
                self.ready_pending = true;
                events.schedule(
                    until.max(now + Duration::from_nanos(1)),
                    Event::LinkReady(self.id),
                );
            }
            Dequeue::Empty => {}
        }
    }
}
