//! Each flow's two agents, made from its group's source spec.
//!
//! What a group's flows run is its [`Protocol`], the registry of source specs (`crate::spec`'s
//! `source` module: each kind's keys, rules and wire), and each kind names the agents of its
//! flows by family ([`FlowAgents`]). This module makes them: [`agents`] has one arm per family,
//! and a file for each family that needs more than a few lines. A new source over these families
//! needs nothing here; a new family is its agents (`crate::agent`), its arm and its file.

mod qstp;
mod tcp;

use crate::agent::udp::{OnOff, UdpSink, UdpSource};
use crate::agent::{Agent, Binding};
use crate::error::SimError;
use crate::spec::source::{FlowAgents, Protocol};
use crate::spec::{GroupSpec, SimSpec};
use qstp_proto::{Duration, Rate};
use rand_chacha::ChaCha8Rng;

/// Everything one flow's agents are made from.
#[derive(Debug)]
pub struct FlowSetup<'a> {
    /// The run.
    pub spec: &'a SimSpec,
    /// The flow's group.
    pub group: &'a GroupSpec,
    /// The flow's number in the run (its addresses derive from it).
    pub index: u32,
    /// Its number in its group.
    pub in_group: u32,
    /// The sender's side.
    pub sender: Binding,
    /// The receiver's side.
    pub receiver: Binding,
    /// The sender's random stream (its start offset already drawn).
    pub sender_rng: ChaCha8Rng,
    /// The receiver's random stream.
    pub receiver_rng: ChaCha8Rng,
    /// The size of its data packets on the wire, bytes.
    pub packet_size: u32,
}

/// One flow's sender and receiver, as its group's `protocol` says.
pub fn agents(protocol: &Protocol, flow: FlowSetup) -> Result<(Agent, Agent), SimError> {
    match protocol.get().agents() {
        FlowAgents::Tcp {
            congestion,
            options,
        } => tcp::agents(congestion, options, flow),
        FlowAgents::Qstp {
            config,
            message_rate,
        } => qstp::agents(config, message_rate, flow),
        FlowAgents::Udp { schedule, on_off } => Ok(udp_agents(
            flow,
            schedule,
            on_off.map(|(on, off)| OnOff::new(on, off)),
        )),
    }
}

/// The two agents of a UDP flow: a source following `schedule` (switching on and off when
/// `on_off` says so) and a sink.
fn udp_agents(
    flow: FlowSetup,
    schedule: &[(Duration, Rate)],
    on_off: Option<OnOff>,
) -> (Agent, Agent) {
    (
        Agent::UdpSource(Box::new(UdpSource::new(
            flow.sender,
            schedule.to_vec(),
            flow.packet_size,
            on_off,
            flow.sender_rng,
        ))),
        Agent::UdpSink(UdpSink {
            binding: flow.receiver,
        }),
    )
}
