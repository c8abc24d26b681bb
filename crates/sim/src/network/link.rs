//! A link of the simulated network: the data plane's sans-IO port between two nodes of the graph.
//!
//! The port does the work ([`qstp_dataplane::link`]): a packet link, or an ATM trunk's cell port.
//! This file only names where the link sits and lets the network drive either kind alike.

use super::packet::{Packet, PacketStore};
use crate::ids::{LinkId, NodeId, PacketId};
use qstp_dataplane::atm::CellPort;
use qstp_dataplane::link::{self, LinkStats, Offered, Port, QueuedPacket};
use qstp_proto::{Duration, Rate, Time};

/// The packet link of the simulator: its observers see simulated packets.
pub type PacketLink = link::Link<Packet>;

/// What carries a link's packets.
///
/// An enum rather than a `Box<dyn Port>`: the network calls its link on every hop of every
/// packet, and a match keeps those calls inlined. A new kind of port is a variant here and an arm
/// in each method below.
#[derive(Debug)]
// The packet link stays inline (it is on every hop of every packet); the rare cell port is boxed.
#[allow(clippy::large_enum_variant)]
pub enum LinkPort {
    /// Packets queued, serialised and propagated whole.
    Packets(PacketLink),
    /// An ATM trunk, cell by cell.
    Cells(Box<CellPort>),
}

/// A unidirectional link from one node to another.
#[derive(Debug)]
pub struct Link {
    /// Its id.
    pub id: LinkId,
    /// The node at its input.
    pub from: NodeId,
    /// The node at its far end.
    pub to: NodeId,
    /// What carries its packets.
    pub port: LinkPort,
}

/// Forward one call to the port, whichever kind it is (`$port` is a reference to it).
macro_rules! each_port {
    (&mut $self:expr, $port:ident => $call:expr) => {
        match &mut $self {
            LinkPort::Packets($port) => $call,
            LinkPort::Cells(cells) => {
                let $port: &mut CellPort = cells;
                $call
            }
        }
    };
    (&$self:expr, $port:ident => $call:expr) => {
        match &$self {
            LinkPort::Packets($port) => $call,
            LinkPort::Cells(cells) => {
                let $port: &CellPort = cells;
                $call
            }
        }
    };
}

impl Link {
    /// Offer a packet at `now`; a refused packet is discarded from `store`.
    #[inline]
    pub fn offer(&mut self, now: Time, packet: QueuedPacket, store: &mut PacketStore) -> Offered {
        each_port!(&mut self.port, p => Port::offer(p, now, packet, store))
    }

    /// Do what is due at the link's input by `now`.
    #[inline]
    pub fn handle_timeout(&mut self, now: Time, store: &mut PacketStore) {
        each_port!(&mut self.port, p => Port::handle_timeout(p, now, store))
    }

    /// When the link next wants [`Link::handle_timeout`].
    #[inline]
    pub fn next_ready(&self) -> Option<Time> {
        each_port!(&self.port, p => Port::<PacketStore>::next_ready(p))
    }

    /// When the next packet reaches the far end.
    #[inline]
    pub fn next_arrival(&self) -> Option<Time> {
        each_port!(&self.port, p => Port::<PacketStore>::next_arrival(p))
    }

    /// The next packet that reached the far end by `now`.
    #[inline]
    pub fn poll_arrival(&mut self, now: Time) -> Option<PacketId> {
        each_port!(&mut self.port, p => Port::<PacketStore>::poll_arrival(p, now))
    }

    /// What the link counted.
    pub fn stats(&self) -> &LinkStats {
        each_port!(&self.port, p => Port::<PacketStore>::stats(p))
    }

    /// Its rate (an ATM trunk's: cells with their headers).
    pub fn rate(&self) -> Rate {
        each_port!(&self.port, p => Port::<PacketStore>::rate(p))
    }

    /// Its propagation delay.
    pub fn delay(&self) -> Duration {
        each_port!(&self.port, p => Port::<PacketStore>::delay(p))
    }

    /// The packet link, unless this link is an ATM trunk.
    pub fn packets(&self) -> Option<&PacketLink> {
        match &self.port {
            LinkPort::Packets(l) => Some(l),
            LinkPort::Cells(_) => None,
        }
    }

    /// The packet link, to add observers to it.
    pub fn packets_mut(&mut self) -> Option<&mut PacketLink> {
        match &mut self.port {
            LinkPort::Packets(l) => Some(l),
            LinkPort::Cells(_) => None,
        }
    }

    /// The cell port, if this link is an ATM trunk.
    pub fn cells(&self) -> Option<&CellPort> {
        match &self.port {
            LinkPort::Cells(c) => Some(c),
            LinkPort::Packets(_) => None,
        }
    }

    /// The cell port, to configure it.
    pub fn cells_mut(&mut self) -> Option<&mut CellPort> {
        match &mut self.port {
            LinkPort::Cells(c) => Some(c),
            LinkPort::Packets(_) => None,
        }
    }
}
