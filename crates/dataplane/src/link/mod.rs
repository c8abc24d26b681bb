//! Links as sans-IO ports: what carries a packet from one node to the next.
//!
//! A [`Port`] takes whole packets at its input and hands whole packets out at its far end; how it
//! carries them in between is its own business. Two ports exist:
//!
//! - [`Link`]: a packet queue at the input, serialisation at the link's rate, an optional random
//!   loss model after the queue, and a propagation delay;
//! - the ATM cell port (`atm::CellPort`): an ATM trunk that cuts each packet into cells (AAL5), shapes,
//!   polices, queues and serves them cell by cell, and reassembles them at the far end.
//!
//! A port never sees a clock or a scheduler. Whoever drives it (the simulator's event loop, or the
//! testbed's router on a wall clock) offers packets with [`Port::offer`], asks [`Port::next_ready`]
//! and [`Port::next_arrival`] when it next has something to do, and at those instants calls
//! [`Port::handle_timeout`] and collects [`Port::poll_arrival`].
//!
//! A port knows packets only by their [`PacketId`] and the [`QueuedPacket`] summary a queue
//! needs. The packets themselves stay in the driver's [`PacketPool`], which the port asks to
//! discard a packet it drops or loses (and which its observers may read). The simulator's pool
//! holds simulated segments and datagrams; the testbed's holds the bytes read from a TUN device.

mod packets;
mod pool;
mod sojourn;

pub use packets::{Departure, Link, QueueEvent, QueueObserver, MAX_OBSERVERS};
pub use pool::Pool;
pub use sojourn::{Sojourn, SojournStats};

use crate::color::Color;
use crate::ecn::Ecn;
use crate::queue::{DropKind, Queued};
use qstp_proto::{Duration, Rate, Time};

/// A packet's slot in its driver's [`PacketPool`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PacketId(pub u32);

impl PacketId {
    /// The slot's index.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a port and its queue hold of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueuedPacket {
    /// The packet's slot.
    pub id: PacketId,
    /// Size on the wire, bytes.
    pub size: u32,
    /// Group index (the class a class-based queue serves it in).
    pub group: u32,
    /// The flow it belongs to (an ATM port's virtual circuit).
    pub flow: u32,
    /// Drop precedence.
    pub color: Color,
    /// ECN field (RFC 3168); a queue may set CE, which the link then writes to the packet
    /// itself ([`PacketPool::mark_ce`]) as it starts serialising it.
    pub ecn: Ecn,
}

impl Queued for QueuedPacket {
    fn size(&self) -> usize {
        self.size as usize
    }
    fn color(&self) -> Color {
        self.color
    }
    fn group(&self) -> usize {
        self.group as usize
    }
    fn flow(&self) -> u32 {
        self.flow
    }
    fn ecn_capable(&self) -> bool {
        self.ecn.capable()
    }
    fn set_ce(&mut self) {
        self.ecn = Ecn::Ce;
    }
}

/// Where a port's driver keeps the packets in flight.
pub trait PacketPool {
    /// What the pool holds per packet.
    type Packet;
    /// The packet in slot `id`, which is live.
    fn packet(&self, id: PacketId) -> &Self::Packet;
    /// Forget the packet in slot `id`: a port dropped or lost it.
    fn discard(&mut self, id: PacketId);
    /// Set the ECN field of the packet in slot `id` to CE (RFC 3168 §5): a queue marked it.
    /// Nothing by default (a pool whose packets carry no ECN field).
    fn mark_ce(&mut self, id: PacketId) {
        let _ = id;
    }
}

/// What a port counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets that finished serialisation (lost ones included); on an ATM port, frames offered.
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
    /// It waits in the port (or the queue let another packet go first).
    Queued,
    /// The port refused it, and it was discarded from the pool.
    Dropped(DropKind),
    /// The link was idle: a packet (this one, unless the queue reorders) started serialising.
    Transmitting,
}

/// A sans-IO port from one node to the next, driven with the packets of pool `S`.
pub trait Port<S: PacketPool> {
    /// Offer a packet at `now`; a refused packet is discarded from `pool`.
    fn offer(&mut self, now: Time, packet: QueuedPacket, pool: &mut S) -> Offered;
    /// Do what is due by `now` at the port's input (serve the next packet or cell).
    fn handle_timeout(&mut self, now: Time, pool: &mut S);
    /// When the port next wants [`Port::handle_timeout`], if it will.
    fn next_ready(&self) -> Option<Time>;
    /// When the next packet reaches the far end, if one is on its way.
    fn next_arrival(&self) -> Option<Time>;
    /// The next packet that reached the far end by `now`.
    fn poll_arrival(&mut self, now: Time) -> Option<PacketId>;
    /// What the port counted.
    fn stats(&self) -> &LinkStats;
    /// The rate at which it serialises.
    fn rate(&self) -> Rate;
    /// Its propagation delay.
    fn delay(&self) -> Duration;
}
