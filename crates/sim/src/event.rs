//! The simulator's events: small values addressing components by id.
//!
//! A component that needs to be woken at an instant (a link's sending or receiving side, an
//! agent, and whatever a later feature adds: a host-level controller, a cell shaper) gets a
//! [`ComponentId`] and schedules [`Event::Timer`] with it; the event loop dispatches on the id.
//! A new kind of component adds a `ComponentId` variant and its dispatch, not a new event.

use crate::ids::{AgentId, LinkId, PacketId};

/// Something the event loop can wake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComponentId {
    /// A link's sending side: it finished serialising a packet (or a queue's wait ended), so it
    /// may start the next one.
    LinkSend(LinkId),
    /// A link's far end: the packet at the head of its propagation pipe arrives.
    LinkArrive(LinkId),
    /// An agent's timer may be due.
    Agent(AgentId),
}

/// Something that happens at a point in simulated time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A component's timer.
    Timer(ComponentId),
    /// A packet is handed to an agent on the node it was sent from.
    Deliver {
        /// The receiving agent.
        agent: AgentId,
        /// The packet.
        packet: PacketId,
    },
    /// An agent starts.
    AgentStart(AgentId),
}
