//! The per-bin sampling of the qstp senders' rate state.

use super::{HookCtx, RunHook};
use crate::agent::Agent;
use crate::record::Recorder;
use qstp_proto::{Duration, Time};

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
