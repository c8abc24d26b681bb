//! A CBR flow: a UDP source following its schedule, and a sink.

use super::{udp_agents, FlowSetup};
use crate::agent::Agent;
use crate::error::SimError;
use crate::spec::source::CbrSpec;

/// The flow's sender and receiver.
pub(super) fn agents(spec: &CbrSpec, flow: FlowSetup) -> Result<(Agent, Agent), SimError> {
    Ok(udp_agents(flow, &spec.schedule, None))
}
