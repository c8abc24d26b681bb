//! Run hooks: what plugs into the run loop without being written into it.
//!
//! The loop ([`crate::sim`]) processes one event after another. A [`RunHook`] sees the world at
//! fixed points of that loop: before each event (the state then is the state at every instant
//! since the last event), after each agent ran, after each event, once the last event is done,
//! and finally when the output is assembled. Free & Stunts delegation
//! ([`crate::delegation::DelegationHost`]), the per-bin sampling of qstp senders
//! ([`SenderSampler`]) and the packet capture ([`crate::capture::CaptureDrain`]) are hooks. A run
//! installs only the hooks its spec asks for, so a plain run pays one empty loop per event.
//!
//! Hooks run in the order they were installed; a hook must not depend on another's work at the
//! same point.

use crate::agent::Agent;
use crate::network::Network;
use crate::output::RunOutput;
use crate::record::Recorder;
use qstp_proto::{Duration, Time};

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

    /// Whether [`RunHook::after_agent`] wants agent `index` (asked before each call).
    fn watches(&self, _index: usize) -> bool {
        false
    }

    /// Agent `index` just ran at `ctx.now`.
    fn after_agent(&mut self, _ctx: &mut HookCtx<'_>, _index: usize) {}

    /// The event at `ctx.now` was processed.
    fn after_event(&mut self, _ctx: &mut HookCtx<'_>) {}

    /// The last event was processed; `ctx.now` is the end of the run.
    fn end(&mut self, _ctx: &mut HookCtx<'_>) {}

    /// Add what the hook gathered to the run's output.
    fn finish(self: Box<Self>, _output: &mut RunOutput) {}
}

/// Records the rate state of the qstp senders at the end of each bin: before an event, for every
/// bin that ended since the last one (the senders held still in between), and after the last
/// event for the bins left.
#[derive(Debug)]
pub struct SenderSampler {
    /// The agents sampled (qstp clients).
    agents: Vec<usize>,
    bin: Duration,
    bins: usize,
    /// Bins sampled so far, and when the next one ends.
    sampled: usize,
    next_end: Time,
}

impl SenderSampler {
    /// A sampler of the qstp clients among `agents`, over `bins` bins of width `bin`; `None` if
    /// there are none.
    pub fn new(agents: &[Agent], bin: Duration, bins: usize) -> Option<Self> {
        let sampled: Vec<usize> = agents
            .iter()
            .enumerate()
            .filter(|(_, a)| matches!(a, Agent::QstpClient(_)))
            .map(|(i, _)| i)
            .collect();
        (!sampled.is_empty()).then(|| SenderSampler {
            agents: sampled,
            bin,
            bins,
            sampled: 0,
            next_end: Time::ZERO + bin,
        })
    }

    /// Record the senders as they stand now as their state at the end of the next bin.
    fn sample_bin(&mut self, agents: &mut [Agent], recorder: &mut Recorder) {
        let bin = self.sampled;
        self.next_end = if bin + 1 >= self.bins {
            Time::MAX
        } else {
            self.next_end + self.bin
        };
        if bin >= self.bins {
            return;
        }
        self.sampled += 1;
        for &i in &self.agents {
            if let Agent::QstpClient(client) = &mut agents[i] {
                client.sample(bin, recorder);
            }
        }
    }
}

impl RunHook for SenderSampler {
    fn before_event(&mut self, ctx: &mut HookCtx<'_>) {
        while ctx.now >= self.next_end {
            self.sample_bin(ctx.agents, ctx.recorder);
        }
    }

    fn end(&mut self, ctx: &mut HookCtx<'_>) {
        // The bins that end after the last event see the senders as it left them.
        while self.sampled < self.bins {
            self.sample_bin(ctx.agents, ctx.recorder);
        }
    }
}
