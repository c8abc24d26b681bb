//! Each flow's two agents, made from its group's source spec.
//!
//! What a group's flows run is its [`Protocol`], the registry of source specs (`crate::spec`'s
//! `source` module: each kind's keys, rules and wire). This module is the running side of the same
//! kinds: one file per kind that puts its sender and receiver agents on the flow's hosts, and
//! [`agents`], one line per kind. A new source is its spec file and registry line there, and its
//! file and line here (the match below is exhaustive, so the compiler asks for it). A kind whose
//! agents are not among [`Agent`]'s own wraps them in [`Agent::Other`].

mod cbr;
mod onoff;
mod qstp;
mod tcp;

use crate::agent::udp::{OnOff, UdpSink, UdpSource};
use crate::agent::{Agent, Binding};
use crate::error::SimError;
use crate::spec::source::Protocol;
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
    match protocol {
        Protocol::Tcp(spec) => tcp::agents(spec, flow),
        Protocol::Qstp(spec) => qstp::agents(spec, flow),
        Protocol::Cbr(spec) => cbr::agents(spec, flow),
        Protocol::OnOff(spec) => onoff::agents(spec, flow),
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
