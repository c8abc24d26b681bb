//! The network: nodes and links in arenas, the packets travelling between them, and forwarding
//! by per-node routing tables. Any topology can be built; [`crate::topology`] builds the papers'.

pub mod link;
pub mod node;
pub mod packet;

pub use link::{Link, LinkStats};
pub use node::{Conditioner, Node, NodeKind};
pub use packet::{Packet, PacketStore, Payload, QueuedPacket};

use crate::engine::Scheduler;
use crate::event::Event;
use crate::ids::{AgentId, LinkId, NodeId, PacketId};
use crate::loss::LossModel;
use crate::queue::QueueDiscipline;
use qstp_proto::{Duration, Rate, Time};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// Nodes, links and the packets in flight.
#[derive(Default)]
pub struct Network {
    nodes: Vec<Node>,
    links: Vec<Link>,
    /// Packets in flight.
    pub packets: PacketStore,
    /// Packets dropped because a node had no route to their destination.
    pub unroutable: u64,
}

impl Network {
    /// An empty network.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a node.
    pub fn add_node(&mut self, kind: NodeKind) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(Node::new(id, kind));
        id
    }

    /// Add a unidirectional link; `rng` is its random stream.
    #[allow(clippy::too_many_arguments)]
    pub fn add_link(
        &mut self,
        from: NodeId,
        to: NodeId,
        rate: Rate,
        delay: Duration,
        queue: Box<dyn QueueDiscipline<QueuedPacket>>,
        loss: Option<Box<dyn LossModel>>,
        rng: ChaCha8Rng,
    ) -> LinkId {
        let id = LinkId(self.links.len() as u32);
        self.links.push(Link::new(id, from, to, rate, delay, queue, loss, rng));
        self.nodes[from.index()].out_links.push(id);
        id
    }

    /// A node.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// A node, to configure it.
    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[id.index()]
    }

    /// A link.
    pub fn link(&self, id: LinkId) -> &Link {
        &self.links[id.index()]
    }

    /// Every link.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Fill the routing tables: fewest hops to every host, ties broken by lowest link id.
    /// Nodes with a single outgoing link keep it as their default route and get no table.
    pub fn compute_routes(&mut self) {
        let n = self.nodes.len();
        let mut in_links: Vec<Vec<LinkId>> = vec![Vec::new(); n];
        for link in &self.links {
            in_links[link.to.index()].push(link.id);
        }
        let routers: Vec<usize> = (0..n).filter(|&i| self.nodes[i].out_links.len() > 1).collect();
        let mut tables: Vec<Vec<Option<LinkId>>> = vec![vec![None; n]; routers.len()];
        let mut next: Vec<Option<LinkId>> = vec![None; n];
        let mut seen = vec![false; n];
        let mut frontier = VecDeque::new();
        for destination in 0..n {
            if self.nodes[destination].kind != NodeKind::Host {
                continue;
            }
            next.iter_mut().for_each(|x| *x = None);
            seen.iter_mut().for_each(|x| *x = false);
            seen[destination] = true;
            frontier.push_back(destination);
            while let Some(at) = frontier.pop_front() {
                for &l in &in_links[at] {
                    let from = self.links[l.index()].from.index();
                    if !seen[from] {
                        seen[from] = true;
                        next[from] = Some(l);
                        frontier.push_back(from);
                    }
                }
            }
            for (table, &router) in tables.iter_mut().zip(&routers) {
                table[destination] = next[router];
            }
        }
        for (table, &router) in tables.into_iter().zip(&routers) {
            self.nodes[router].set_routes(table);
        }
    }

    /// An agent on node `at` sends `packet`; returns the local delivery if its destination is on
    /// the same node (the caller schedules it).
    pub fn send(&mut self, now: Time, at: NodeId, packet: Packet, events: &mut Scheduler<Event>) -> Option<(AgentId, PacketId)> {
        let id = self.packets.insert(packet);
        self.forward(now, at, id, events)
    }

    /// A packet crossed `link`; returns the agent it is for if it has arrived.
    pub fn on_arrive(&mut self, now: Time, link: LinkId, events: &mut Scheduler<Event>) -> Option<(AgentId, PacketId)> {
        let l = &mut self.links[link.index()];
        let packet = l.on_arrive(now, events);
        let at = l.to;
        self.forward(now, at, packet, events)
    }

    /// A link's `LinkReady` event fired.
    pub fn on_link_ready(&mut self, now: Time, link: LinkId, events: &mut Scheduler<Event>) {
        self.links[link.index()].on_ready(now, &mut self.packets, events);
    }

    /// Pass a packet at node `at` on towards its destination, marking it at edge routers.
    fn forward(&mut self, now: Time, at: NodeId, id: PacketId, events: &mut Scheduler<Event>) -> Option<(AgentId, PacketId)> {
        let packet = self.packets.get_mut(id);
        if packet.destination_node == at {
            return Some((packet.destination, id));
        }
        let node = &mut self.nodes[at.index()];
        let Some(out) = node.next_hop(packet.destination_node) else {
            self.unroutable += 1;
            self.packets.discard(id);
            return None;
        };
        if let Some(color) = node.condition(now, packet.group, packet.size, out) {
            packet.color = color;
        }
        let queued = QueuedPacket { id, size: packet.size, group: packet.group, color: packet.color };
        self.links[out.index()].offer(now, queued, &mut self.packets, events);
        None
    }
}
