//! An on/off flow: a UDP source following its schedule during exponential on periods, and a
//! sink.

use super::{udp_agents, FlowSetup};
use crate::agent::udp::OnOff;
use crate::agent::Agent;
use crate::error::SimError;
use crate::spec::source::OnOffSpec;

/// The flow's sender and receiver.
pub(super) fn agents(spec: &OnOffSpec, flow: FlowSetup) -> Result<(Agent, Agent), SimError> {
    Ok(udp_agents(
        flow,
        &spec.schedule,
        Some(OnOff::new(spec.mean_on, spec.mean_off)),
    ))
}
