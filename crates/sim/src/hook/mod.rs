//! Run hooks: what plugs into the run loop without being written into it.
//!
//! The loop (the `sim` module) processes one event after another. A [`RunHook`] sees the world at
//! fixed points of that loop: before each event (the state then is the state at every instant
//! since the last event), after each agent ran, after each event, once the last event is done,
//! and finally when the output is assembled. Free & Stunts delegation ([`DelegationHost`]), the
//! per-bin sampling of qstp senders ([`SenderSampler`]) and the packet capture (the capture
//! module's `CaptureDrain`) are hooks. A run installs only the hooks its spec asks for, so a plain
//! run pays one empty loop per event.
//!
//! Hooks run in the order they were installed; a hook must not depend on another's work at the
//! same point.

mod delegation;
mod marks;
mod sampler;

pub use delegation::DelegationHost;
pub use marks::{MarkDelegation, MarkShare};
pub use sampler::SenderSampler;

use crate::agent::Agent;
use crate::network::Network;
use crate::output::RunOutput;
use crate::record::Recorder;
use qstp_proto::Time;

/// What a hook may look at and change.
pub struct HookCtx<'w> {
    /// The simulated time.
    pub now: Time,
    /// Every agent, by index.
    pub agents: &'w mut [Agent],
    /// The run's records.
    pub recorder: &'w mut Recorder,
    /// The network.
    pub network: &'w mut Network,
}

/// Something that takes part in a run besides its agents and network.
pub trait RunHook {
    /// The event at `ctx.now` is next; nothing has happened at that instant yet.
    fn before_event(&mut self, _ctx: &mut HookCtx<'_>) {}

    /// Whether [`RunHook::before_agent`] and [`RunHook::after_agent`] want agent `index` (asked
    /// before each agent runs).
    fn watches(&self, _index: usize) -> bool {
        false
    }

    /// Agent `index` is about to run at `ctx.now`.
    fn before_agent(&mut self, _ctx: &mut HookCtx<'_>, _index: usize) {}

    /// Agent `index` just ran at `ctx.now`.
    fn after_agent(&mut self, _ctx: &mut HookCtx<'_>, _index: usize) {}

    /// The event at `ctx.now` was processed.
    fn after_event(&mut self, _ctx: &mut HookCtx<'_>) {}

    /// The last event was processed; `ctx.now` is the end of the run.
    fn end(&mut self, _ctx: &mut HookCtx<'_>) {}

    /// Add what the hook gathered to the run's output.
    fn finish(self: Box<Self>, _output: &mut RunOutput) {}
}
