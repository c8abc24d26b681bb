//! A TCP flow: a saturated sender (switching on and off if its group says so) and its sink.

use super::FlowSetup;
use crate::agent::switch::Switch;
use crate::agent::{self, Agent};
use crate::error::SimError;
use qstp_tcp::{CcSpec, TcpOptions};

/// The flow's sender and receiver.
pub(super) fn agents(
    congestion: &CcSpec,
    options: &TcpOptions,
    flow: FlowSetup,
) -> Result<(Agent, Agent), SimError> {
    let (source, sink) = agent::tcp::flow(
        flow.group,
        flow.sender,
        flow.receiver,
        flow.packet_size,
        congestion,
        options,
    )?;
    // A control's own random choices (BBR's gain-cycle phase) come from a sibling of the sender's
    // stream: the numbers the sender's stream gives everything else do not move.
    let mut source = source;
    let seed = rand::RngCore::next_u64(&mut crate::rng::sibling(&flow.sender_rng, 2));
    source.sender_mut().seed_control(seed);
    // The switch draws from the sender's stream after its start offset: groups without one
    // see the numbers they always saw.
    let source = match flow.group.onoff {
        Some(switching) if flow.in_group < switching.flows.unwrap_or(u32::MAX) => {
            source.with_switch(Switch::new(switching, flow.sender_rng))
        }
        _ => source,
    };
    Ok((
        Agent::TcpSource(Box::new(source)),
        Agent::TcpSink(Box::new(sink)),
    ))
}
