//! The simulator's events: small values addressing components by id.

use crate::ids::{AgentId, LinkId, PacketId};

/// Something that happens at a point in simulated time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A link finished serialising a packet (or a queue's wait ended): send the next one.
    LinkReady(LinkId),
    /// The packet at the head of a link's propagation pipe reaches the far end.
    Arrive(LinkId),
    /// A packet is handed to an agent on the node it was sent from.
    Deliver {
        /// The receiving agent.
        agent: AgentId,
        /// The packet.
        packet: PacketId,
    },
    /// An agent starts.
    AgentStart(AgentId),
    /// An agent's timer may be due.
    AgentTimer(AgentId),
}
