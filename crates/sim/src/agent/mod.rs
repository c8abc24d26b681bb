//! Agents: the traffic sources and sinks attached to hosts.
//!
//! A flow is a pair of agents (a sender on its source host, a receiver on its sink host). The
//! built-in agents are variants of an enum, so dispatch to them stays a match; a source kind with
//! agents of its own (the `source` module) wraps them in [`Agent::Other`], a [`Behavior`] trait
//! object, without an edit here. Every agent exposes the same sans-IO shape as the protocols it
//! wraps: `start`, `on_packet`, `on_timer`, and `poll_timeout` for the next wake-up.

pub mod qstp;
pub mod switch;
pub mod tcp;
pub mod udp;

use crate::engine::Scheduler;
use crate::event::Event;
use crate::ids::{AgentId, FlowId, NodeId};
use crate::network::{Network, Packet, Payload};
use crate::record::Recorder;
use qstp_dataplane::color::Color;
use qstp_proto::Time;

/// What an agent may touch while it runs.
pub struct Ctx<'a> {
    /// The current time.
    pub now: Time,
    /// The network, to send packets and recycle their buffers.
    pub network: &'a mut Network,
    /// The scheduler, for local deliveries.
    pub events: &'a mut Scheduler<Event>,
    /// Where receivers record what they got.
    pub recorder: &'a mut Recorder,
    /// A scratch buffer for reading delivered data.
    pub scratch: &'a mut Vec<u8>,
}

impl Ctx<'_> {
    /// Send a packet from the host `at`.
    pub fn send(&mut self, at: NodeId, packet: Packet) {
        if let Some((agent, id)) = self.network.send(self.now, at, packet, self.events) {
            self.events
                .schedule(self.now, Event::Deliver { agent, packet: id });
        }
    }
}

/// The fixed facts of one side of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    /// This agent.
    pub me: AgentId,
    /// The host it lives on.
    pub node: NodeId,
    /// The agent at the other end.
    pub peer: AgentId,
    /// The host of the other end.
    pub peer_node: NodeId,
    /// The flow.
    pub flow: FlowId,
    /// The flow's group.
    pub group: u32,
}

impl Binding {
    /// A packet from this agent to its peer.
    pub fn packet(&self, now: Time, size: u32, payload: Payload) -> Packet {
        Packet {
            size,
            flow: self.flow,
            group: self.group,
            color: Color::Red,
            sent: now,
            source: self.me,
            destination: self.peer,
            destination_node: self.peer_node,
            ecn: qstp_dataplane::ecn::Ecn::NotEct,
            payload,
        }
    }
}

/// Every kind of agent.
#[derive(Debug)]
pub enum Agent {
    /// A UDP source (CBR or on/off).
    UdpSource(Box<udp::UdpSource>),
    /// A UDP sink.
    UdpSink(udp::UdpSink),
    /// A TCP bulk sender.
    TcpSource(Box<tcp::TcpSource>),
    /// A TCP receiver.
    TcpSink(Box<tcp::TcpSink>),
    /// A qstp client, saturated by its application.
    QstpClient(Box<qstp::QstpClient>),
    /// A qstp server draining what it receives.
    QstpServer(Box<qstp::QstpServer>),
    /// Any other agent, from a source kind of its own.
    Other(Box<dyn Behavior>),
}

/// What an agent does, for agents outside the built-in set ([`Agent::Other`]).
pub trait Behavior: std::fmt::Debug + Send {
    /// The agent's binding.
    fn binding(&self) -> &Binding;
    /// Begin (a source starts sending).
    fn start(&mut self, ctx: &mut Ctx);
    /// A packet for this agent arrived; its payload's buffer is the agent's to recycle.
    fn on_packet(&mut self, ctx: &mut Ctx, packet: Packet);
    /// The agent's wake-up time may have come (it checks).
    fn on_timer(&mut self, ctx: &mut Ctx);
    /// When the agent next wants to be woken.
    fn poll_timeout(&self) -> Option<Time>;
    /// Put its totals into the record at the end of the run.
    fn finish(&self, _recorder: &mut Recorder) {}
}

impl Agent {
    /// The sending side of a qstp flow, if this agent is one.
    pub fn qstp_client_mut(&mut self) -> Option<&mut qstp::QstpClient> {
        match self {
            Agent::QstpClient(client) => Some(client),
            _ => None,
        }
    }

    /// The TCP sender of a TCP source agent.
    pub fn tcp_sender_mut(&mut self) -> Option<&mut qstp_tcp::TcpSender> {
        match self {
            Agent::TcpSource(source) => Some(source.sender_mut()),
            _ => None,
        }
    }

    /// The agent's binding.
    pub fn binding(&self) -> &Binding {
        match self {
            Agent::UdpSource(a) => &a.binding,
            Agent::UdpSink(a) => &a.binding,
            Agent::TcpSource(a) => &a.binding,
            Agent::TcpSink(a) => &a.binding,
            Agent::QstpClient(a) => &a.binding,
            Agent::QstpServer(a) => &a.binding,
            Agent::Other(a) => a.binding(),
        }
    }

    /// Begin (sources start sending).
    pub fn start(&mut self, ctx: &mut Ctx) {
        match self {
            Agent::UdpSource(a) => a.start(ctx),
            Agent::UdpSink(_) => {}
            Agent::TcpSource(a) => a.start(ctx),
            Agent::TcpSink(_) => {}
            Agent::QstpClient(a) => a.start(ctx),
            Agent::QstpServer(_) => {}
            Agent::Other(a) => a.start(ctx),
        }
    }

    /// A packet for this agent arrived.
    pub fn on_packet(&mut self, ctx: &mut Ctx, packet: Packet) {
        match self {
            Agent::UdpSource(_) => ctx.network.packets.recycle(packet.payload),
            Agent::UdpSink(a) => a.on_packet(ctx, packet),
            Agent::TcpSource(a) => a.on_packet(ctx, packet),
            Agent::TcpSink(a) => a.on_packet(ctx, packet),
            Agent::QstpClient(a) => a.on_packet(ctx, packet),
            Agent::QstpServer(a) => a.on_packet(ctx, packet),
            Agent::Other(a) => a.on_packet(ctx, packet),
        }
    }

    /// The agent's wake-up time may have come (it checks).
    pub fn on_timer(&mut self, ctx: &mut Ctx) {
        match self {
            Agent::UdpSource(a) => a.on_timer(ctx),
            Agent::UdpSink(_) => {}
            Agent::TcpSource(a) => a.on_timer(ctx),
            Agent::TcpSink(a) => a.on_timer(ctx),
            Agent::QstpClient(a) => a.on_timer(ctx),
            Agent::QstpServer(a) => a.on_timer(ctx),
            Agent::Other(a) => a.on_timer(ctx),
        }
    }

    /// When the agent next wants to be woken.
    pub fn poll_timeout(&self) -> Option<Time> {
        match self {
            Agent::UdpSource(a) => a.poll_timeout(),
            Agent::UdpSink(_) => None,
            Agent::TcpSource(a) => a.poll_timeout(),
            Agent::TcpSink(a) => a.poll_timeout(),
            Agent::QstpClient(a) => a.poll_timeout(),
            Agent::QstpServer(a) => a.poll_timeout(),
            Agent::Other(a) => a.poll_timeout(),
        }
    }

    /// Put the sender's totals into the record at the end of the run.
    pub fn finish(&self, recorder: &mut Recorder) {
        match self {
            Agent::QstpClient(a) => a.finish(recorder),
            Agent::Other(a) => a.finish(recorder),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An agent from outside the built-in set: it wants waking once, at 1 s.
    #[derive(Debug)]
    struct Beacon(Binding);

    impl Behavior for Beacon {
        fn binding(&self) -> &Binding {
            &self.0
        }
        fn start(&mut self, _: &mut Ctx) {}
        fn on_packet(&mut self, ctx: &mut Ctx, packet: Packet) {
            ctx.network.packets.recycle(packet.payload);
        }
        fn on_timer(&mut self, _: &mut Ctx) {}
        fn poll_timeout(&self) -> Option<Time> {
            Some(Time::ZERO + qstp_proto::Duration::from_secs(1))
        }
    }

    #[test]
    fn an_agent_of_another_kind_is_dispatched_through_its_behavior() {
        let binding = Binding {
            me: AgentId(4),
            node: NodeId(1),
            peer: AgentId(5),
            peer_node: NodeId(2),
            flow: FlowId(2),
            group: 1,
        };
        let agent = Agent::Other(Box::new(Beacon(binding)));
        assert_eq!(*agent.binding(), binding);
        assert_eq!(
            agent.poll_timeout(),
            Some(Time::ZERO + qstp_proto::Duration::from_secs(1))
        );
        let mut agent = agent;
        assert!(agent.tcp_sender_mut().is_none());
    }
}
