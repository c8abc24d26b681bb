//! Queue disciplines: drop-tail, RED, RIO (RIO-C and RIO-D), CBQ with borrowing.
//!
//! A queue holds any [`Queued`] item, so it can be tested without the rest of the simulator. Each
//! queue counts, per colour, the packets that arrived, those dropped on overflow (`ldrops`) and
//! those dropped early (`edrops`).

use crate::spec::{CodePointCounters, Color};
use qstp_proto::{Rate, Time};
use rand::RngCore;

/// What a queue needs to know of a packet.
pub trait Queued {
    /// Size on the wire, bytes.
    fn size(&self) -> usize;
    /// Drop precedence set by the edge marker.
    fn color(&self) -> Color;
    /// Index of the flow group it belongs to (CBQ classifies by group).
    fn group(&self) -> usize;
}

/// Why a packet was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropKind {
    /// The queue (or class) was full.
    Overflow,
    /// RED/RIO dropped it early.
    Early,
}

/// What `dequeue` found.
#[derive(Debug, PartialEq, Eq)]
pub enum Dequeue<P> {
    /// Send this packet now.
    Packet(P),
    /// Packets are waiting but none may go before this time (a CBQ class over its rate that may
    /// not borrow).
    Wait(Time),
    /// Nothing queued.
    Empty,
}

/// A queue discipline at a link's input.
pub trait QueueDiscipline<P: Queued> {
    /// Offer a packet arriving at `now`; a refused packet is handed back with the reason.
    /// `rng` is this queue's own random stream (RED's early-drop coin).
    fn enqueue(&mut self, now: Time, packet: P, rng: &mut dyn RngCore) -> Result<(), (P, DropKind)>;
    /// Take the next packet for a link of rate `link_rate` that is idle at `now`.
    fn dequeue(&mut self, now: Time, link_rate: Rate) -> Dequeue<P>;
    /// Packets queued.
    fn len(&self) -> usize;
    /// Whether no packet is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Counters of the colour `color` (for CBQ: summed over classes).
    fn counters(&self, color: Color) -> CodePointCounters;
    /// Per-class counters as `(class name, colour, counters)`, empty for single-FIFO queues.
    fn class_counters(&self) -> Vec<(String, Color, CodePointCounters)> {
        Vec::new()
    }
}
