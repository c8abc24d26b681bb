//! The network: nodes and links in arenas, the packets travelling between them, and forwarding
//! by per-node routing tables. Any topology can be built; the `topology` module builds the papers'.
//!
//! Each [`Link`] is a sans-IO port (offer, poll for timeouts, handle them, collect departures and
//! arrivals) that knows nothing of the engine, so a real-time forwarder can drive it too. Here the
//! network drives it on the engine: each link has at most one `LinkSend` and one `LinkArrive` timer
//! pending, armed from [`Link::next_ready`] and [`Link::next_arrival`] at the moment the link
//! creates that work, which keeps the engine's (time, insertion) order of the per-packet events.

pub mod link;
mod meter;
pub mod node;
pub mod packet;

pub use link::{Link, LinkPort, PacketLink};
pub use meter::QueueMeter;
pub use node::{Conditioner, Node, NodeKind};
pub use packet::{Packet, PacketStore, Payload};
pub use qstp_dataplane::link::{
    Departure, LinkStats, Offered, QueueEvent, QueueObserver, QueuedPacket, MAX_OBSERVERS,
};

use crate::engine::Scheduler;
use crate::event::{ComponentId, Event};
use crate::ids::{AgentId, LinkId, NodeId, PacketId};
use qstp_dataplane::loss::LossModel;
use qstp_dataplane::marker::Verdict;
use qstp_dataplane::queue::QueueDiscipline;
use qstp_proto::{Duration, Rate, Time};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

impl std::fmt::Debug for Network {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Network")
            .field("nodes", &self.node_count())
            .field("links", &self.links().len())
            .finish()
    }
}

/// Which of a link's two engine events are pending.
#[derive(Debug, Clone, Copy, Default)]
struct Armed {
    /// A `LinkSend` timer at [`Link::next_ready`], at this instant. A packet link's next ready
    /// instant never moves earlier while it is pending; an ATM port's may (an offer makes an idle
    /// port busy), and is then armed again, earlier: the timer that no longer matches is stale.
    ready: Option<Time>,
    /// A `LinkArrive` timer at [`Link::next_arrival`].
    arrival: bool,
}

/// Nodes, links and the packets in flight.
#[derive(Default)]
pub struct Network {
    nodes: Vec<Node>,
    links: Vec<Link>,
    /// Which of each link's engine events are pending.
    armed: Vec<Armed>,
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
        let loss_rng = crate::rng::sibling(&rng, 1);
        let port = PacketLink::new(rate, delay, queue, loss, rng, loss_rng).without_departures();
        self.links.push(Link {
            id,
            from,
            to,
            port: LinkPort::Packets(port),
        });
        self.armed.push(Armed::default());
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

    /// A link, to change it.
    pub fn link_mut(&mut self, id: LinkId) -> &mut Link {
        &mut self.links[id.index()]
    }

    /// Every link.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Packets dropped by edge policers, all nodes together (each counts its own:
    /// [`Node::policed`]).
    pub fn policed(&self) -> u64 {
        self.nodes.iter().map(Node::policed).sum()
    }

    /// Fill the routing tables: fewest hops to every host through routers, ties broken by lowest
    /// link id.
    /// Nodes with a single outgoing link keep it as their default route and get no table.
    pub fn compute_routes(&mut self) {
        let n = self.nodes.len();
        let mut in_links: Vec<Vec<LinkId>> = vec![Vec::new(); n];
        for link in &self.links {
            in_links[link.to.index()].push(link.id);
        }
        let routers: Vec<usize> = (0..n)
            .filter(|&i| self.nodes[i].out_links.len() > 1)
            .collect();
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
                // Hosts end paths; they do not carry other hosts' traffic.
                if at != destination && self.nodes[at].kind == NodeKind::Host {
                    continue;
                }
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
    pub fn send(
        &mut self,
        now: Time,
        at: NodeId,
        packet: Packet,
        events: &mut Scheduler<Event>,
    ) -> Option<(AgentId, PacketId)> {
        let id = self.packets.insert(packet);
        self.forward(now, at, id, events)
    }

    /// A link's `LinkArrive` timer fired: the packet at the head of its pipe reached the far end;
    /// returns the agent it is for if it has arrived.
    pub fn on_arrive(
        &mut self,
        now: Time,
        link: LinkId,
        events: &mut Scheduler<Event>,
    ) -> Option<(AgentId, PacketId)> {
        self.armed[link.index()].arrival = false;
        let l = &mut self.links[link.index()];
        let packet = l
            .poll_arrival(now)
            .expect("a LinkArrive timer has a packet arriving");
        let at = l.to;
        self.arm(link, events);
        self.forward(now, at, packet, events)
    }

    /// A link's `LinkSend` timer fired.
    pub fn on_link_ready(&mut self, now: Time, link: LinkId, events: &mut Scheduler<Event>) {
        if self.armed[link.index()].ready != Some(now) {
            return;
        }
        self.armed[link.index()].ready = None;
        self.links[link.index()].handle_timeout(now, &mut self.packets);
        self.arm(link, events);
    }

    /// Schedule the link's events that its last step made due and that are not pending yet:
    /// an arrival first, then the next dequeue, the order in which the link created them.
    fn arm(&mut self, link: LinkId, events: &mut Scheduler<Event>) {
        let l = &self.links[link.index()];
        let armed = &mut self.armed[link.index()];
        if !armed.arrival {
            if let Some(at) = l.next_arrival() {
                armed.arrival = true;
                events.schedule(at, Event::Timer(ComponentId::LinkArrive(link)));
            }
        }
        if let Some(at) = l.next_ready() {
            if armed.ready.map_or(true, |pending| at < pending) {
                armed.ready = Some(at);
                events.schedule(at, Event::Timer(ComponentId::LinkSend(link)));
            }
        }
    }

    /// Pass a packet at node `at` on towards its destination, marking (or policing) it at edge
    /// routers.
    fn forward(
        &mut self,
        now: Time,
        at: NodeId,
        id: PacketId,
        events: &mut Scheduler<Event>,
    ) -> Option<(AgentId, PacketId)> {
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
        match node.condition(now, || packet.meta(), packet.size, packet.color, out) {
            Some(Verdict::Pass(color)) => packet.color = color,
            Some(Verdict::Drop) => {
                self.packets.discard(id);
                return None;
            }
            None => {}
        }
        let queued = QueuedPacket {
            id,
            size: packet.size,
            group: packet.group,
            flow: packet.flow.0,
            color: packet.color,
            ecn: packet.ecn,
        };
        self.links[out.index()].offer(now, queued, &mut self.packets);
        self.arm(out, events);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::FlowId;
    use qstp_dataplane::color::Color;
    use qstp_dataplane::marker::Marker;
    use qstp_dataplane::queue::CodePointCounters;
    use qstp_dataplane::queue::{Dequeue, DropKind};
    use rand::{RngCore, SeedableRng};

    /// A test FIFO.
    struct Fifo(VecDeque<QueuedPacket>, usize);

    impl QueueDiscipline<QueuedPacket> for Fifo {
        fn enqueue(
            &mut self,
            _: Time,
            p: QueuedPacket,
            _: &mut dyn RngCore,
        ) -> Result<(), (QueuedPacket, DropKind)> {
            if self.0.len() >= self.1 {
                return Err((p, DropKind::Overflow));
            }
            self.0.push_back(p);
            Ok(())
        }
        fn dequeue(&mut self, _: Time, _: Rate) -> Dequeue<QueuedPacket> {
            self.0.pop_front().map_or(Dequeue::Empty, Dequeue::Packet)
        }
        fn len(&self) -> usize {
            self.0.len()
        }
        fn bytes(&self) -> u64 {
            qstp_dataplane::queue::fifo_bytes(&self.0)
        }
        fn counters(&self, _: Color) -> CodePointCounters {
            CodePointCounters::default()
        }
    }

    /// Marks everything green.
    struct AllGreen;

    impl Marker for AllGreen {
        fn condition(&mut self, _: Time, _: usize, _: Color, _: &mut dyn RngCore) -> Verdict {
            Verdict::Pass(Color::Green)
        }
    }

    /// A policer passing `budget` packets (keeping their colour) and dropping the rest.
    struct Budget(u32);

    impl Marker for Budget {
        fn condition(
            &mut self,
            _: Time,
            _: usize,
            incoming: Color,
            _: &mut dyn RngCore,
        ) -> Verdict {
            if self.0 == 0 {
                return Verdict::Drop;
            }
            self.0 -= 1;
            Verdict::Pass(incoming)
        }
    }

    fn link(net: &mut Network, from: NodeId, to: NodeId, delay_ms: u64, limit: usize) -> LinkId {
        let rng = ChaCha8Rng::seed_from_u64(0);
        let queue = Box::new(Fifo(VecDeque::new(), limit));
        net.add_link(
            from,
            to,
            Rate::from_mbps(8),
            Duration::from_millis(delay_ms),
            queue,
            None,
            rng,
        )
    }

    fn packet(group: u32, to: NodeId) -> Packet {
        Packet {
            size: 1000,
            flow: FlowId(0),
            group,
            color: Color::Red,
            sent: Time::ZERO,
            source: AgentId(0),
            destination: AgentId(1),
            destination_node: to,
            ecn: qstp_dataplane::ecn::Ecn::NotEct,
            payload: Payload::Udp,
        }
    }

    /// Run the network until no event is left; returns (arrival time, colour, group) per delivery.
    fn drain(net: &mut Network, events: &mut Scheduler<Event>) -> Vec<(Time, Color, u32)> {
        let mut delivered = Vec::new();
        while let Some((now, event)) = events.pop_before(Time::MAX) {
            let arrived = match event {
                Event::Timer(ComponentId::LinkArrive(l)) => net.on_arrive(now, l, events),
                Event::Timer(ComponentId::LinkSend(l)) => {
                    net.on_link_ready(now, l, events);
                    None
                }
                other => panic!("unexpected {other:?}"),
            };
            if let Some((_, id)) = arrived {
                let p = net.packets.remove(id);
                delivered.push((now, p.color, p.group));
            }
        }
        delivered
    }

    #[test]
    fn routes_take_the_fewest_hops_and_edge_markers_colour_only_their_group_and_direction() {
        // a -> r1 -> r2 -> b (3 hops, 1 ms each) and a shortcut r1 -> b (10 ms); b -> r1 -> a back.
        let mut net = Network::new();
        let a = net.add_node(NodeKind::Host);
        let r1 = net.add_node(NodeKind::Router);
        let r2 = net.add_node(NodeKind::Router);
        let b = net.add_node(NodeKind::Host);
        link(&mut net, a, r1, 1, 10);
        let r1_r2 = link(&mut net, r1, r2, 1, 10);
        let r2_b = link(&mut net, r2, b, 1, 10);
        let shortcut = link(&mut net, r1, b, 10, 10);
        link(&mut net, b, r1, 1, 10);
        let r1_a = link(&mut net, r1, a, 1, 10);
        net.compute_routes();
        assert_eq!(net.node(r1).next_hop(b), Some(shortcut));
        assert_eq!(net.node(r1).next_hop(a), Some(r1_a));
        assert_eq!(
            net.node(r2).next_hop(a),
            Some(r2_b),
            "a single link is the default route"
        );
        let rng = ChaCha8Rng::seed_from_u64(0);
        net.node_mut(r1).add_conditioner(Conditioner {
            group: 7,
            out_link: shortcut,
            marker: Box::new(AllGreen),
            rng,
        });
        let rng = ChaCha8Rng::seed_from_u64(0);
        net.node_mut(r1).add_conditioner(Conditioner {
            group: 7,
            out_link: r1_r2,
            marker: Box::new(AllGreen),
            rng,
        });

        let mut events = Scheduler::new();
        assert!(net.send(Time::ZERO, a, packet(7, b), &mut events).is_none());
        assert!(net.send(Time::ZERO, a, packet(3, b), &mut events).is_none());
        assert!(net.send(Time::ZERO, b, packet(7, a), &mut events).is_none());
        let delivered = drain(&mut net, &mut events);
        // 1000 bytes at 8 Mbit/s take 1 ms per hop to serialise; the second packet waits 1 ms at a.
        let ms = |m| Time::ZERO + Duration::from_millis(m);
        assert_eq!(
            delivered,
            vec![
                (ms(4), Color::Red, 7),
                (ms(13), Color::Green, 7),
                (ms(14), Color::Red, 3)
            ]
        );
        assert_eq!(net.packets.live(), 0);
    }

    #[test]
    fn a_full_queue_drops_and_the_link_serialises_back_to_back() {
        let mut net = Network::new();
        let a = net.add_node(NodeKind::Host);
        let b = net.add_node(NodeKind::Host);
        let l = link(&mut net, a, b, 5, 3);
        net.compute_routes();
        let mut events = Scheduler::new();
        for _ in 0..6 {
            net.send(Time::ZERO, a, packet(0, b), &mut events);
        }
        let delivered = drain(&mut net, &mut events);
        // One goes onto the wire at once, three wait, two are refused.
        let times: Vec<u64> = delivered
            .iter()
            .map(|d| d.0.as_nanos() / 1_000_000)
            .collect();
        assert_eq!(times, vec![6, 7, 8, 9]);
        assert_eq!(net.link(l).stats().overflow_drops, 2);
        assert_eq!(net.link(l).stats().packets_delivered, 4);
        assert_eq!(net.packets.live(), 0);
    }

    #[test]
    fn a_policer_drop_discards_the_packet_and_counts_it() {
        // a -> r -> b; the conditioner at r on r -> b passes two packets of group 1 and drops the
        // rest; group 2 is not policed.
        let mut net = Network::new();
        let a = net.add_node(NodeKind::Host);
        let r = net.add_node(NodeKind::Router);
        let b = net.add_node(NodeKind::Host);
        link(&mut net, a, r, 1, 10);
        let r_b = link(&mut net, r, b, 1, 10);
        link(&mut net, b, r, 1, 10);
        link(&mut net, r, a, 1, 10);
        net.compute_routes();
        net.node_mut(r).add_conditioner(Conditioner {
            group: 1,
            out_link: r_b,
            marker: Box::new(Budget(2)),
            rng: ChaCha8Rng::seed_from_u64(0),
        });
        let mut events = Scheduler::new();
        for group in [1, 1, 2, 1, 1] {
            net.send(Time::ZERO, a, packet(group, b), &mut events);
        }
        let delivered = drain(&mut net, &mut events);
        let groups: Vec<u32> = delivered.iter().map(|d| d.2).collect();
        assert_eq!(
            groups,
            vec![1, 1, 2],
            "the third and fourth of group 1 are dropped"
        );
        // Passed packets keep the colour they came with (red, best effort).
        assert!(delivered.iter().all(|d| d.1 == Color::Red));
        assert_eq!(net.policed(), 2);
        assert_eq!(net.node(r).policed(), 2);
        assert_eq!(net.node(a).policed(), 0);
        assert_eq!(net.link(r_b).stats().packets_sent, 3);
        assert_eq!(net.packets.live(), 0, "dropped packets left the store");
    }

    #[test]
    fn a_node_classifier_chooses_the_conditioner() {
        // The node at r classifies by flow: flow 1 is class 4, which its conditioner marks green;
        // flow 0 falls to the default class 9, which no conditioner meters.
        let mut net = Network::new();
        let a = net.add_node(NodeKind::Host);
        let r = net.add_node(NodeKind::Router);
        let b = net.add_node(NodeKind::Host);
        link(&mut net, a, r, 1, 10);
        let r_b = link(&mut net, r, b, 1, 10);
        link(&mut net, b, r, 1, 10);
        link(&mut net, r, a, 1, 10);
        net.compute_routes();
        net.node_mut(r)
            .set_classifier(qstp_dataplane::classify::Classifier::ByFlow {
                classes: vec![9, 4],
                default: 9,
            });
        net.node_mut(r).add_conditioner(Conditioner {
            group: 4,
            out_link: r_b,
            marker: Box::new(AllGreen),
            rng: ChaCha8Rng::seed_from_u64(0),
        });
        let mut events = Scheduler::new();
        for flow in [0, 1, 0] {
            let p = Packet {
                flow: FlowId(flow),
                ..packet(0, b)
            };
            net.send(Time::ZERO, a, p, &mut events);
        }
        let colours: Vec<Color> = drain(&mut net, &mut events).iter().map(|d| d.1).collect();
        assert_eq!(colours, vec![Color::Red, Color::Green, Color::Red]);
    }

    /// A real-time forwarder runs the data plane on a thread of its own: the queue disciplines,
    /// markers and loss models (each trait requires `Send`), and the links and nodes that own
    /// them, can move there. This fails to compile otherwise.
    #[test]
    fn the_data_plane_can_move_to_another_thread() {
        fn movable<T: Send>() {}
        movable::<Box<dyn QueueDiscipline<QueuedPacket>>>();
        movable::<Box<dyn Marker>>();
        movable::<Box<dyn LossModel>>();
        movable::<qstp_dataplane::classify::Classifier>();
        movable::<Link>();
        movable::<Node>();
        movable::<PacketStore>();
        movable::<Network>();
        // And one does: a link built here forwards a packet on another thread.
        let mut net = Network::new();
        let a = net.add_node(NodeKind::Host);
        let b = net.add_node(NodeKind::Host);
        link(&mut net, a, b, 1, 3);
        net.compute_routes();
        let net = std::thread::spawn(move || {
            let mut events = Scheduler::new();
            net.send(Time::ZERO, a, packet(0, b), &mut events);
            assert_eq!(drain(&mut net, &mut events).len(), 1);
            net
        })
        .join()
        .expect("the thread ran");
        assert_eq!(net.packets.live(), 0);
        assert_eq!(net.link(LinkId(0)).stats().packets_delivered, 1);
    }
}
