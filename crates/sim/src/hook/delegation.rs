//! The host of a delegation group in the simulator: it watches the Free connection and its
//! Stunts, samples the Free's throughput every control period, runs the controller, and decides
//! for each congestion signal who backs off (Free & Stunts paper Fig. 2, §II): a TCP sender's
//! fast-retransmit signal, or a QSTP connection's loss event
//! (`qstp_proto::Connection::defer_loss_events`).

use super::MarkShare;
use super::{HookCtx, RunHook};
use crate::agent::Agent;
use crate::delegation::{Controller, Delegator, Steerable};
use crate::output::{DelegationRecord, RunOutput};
use crate::rng::{stream, StreamKind};
use crate::spec::DelegationSpec;
use qstp_dataplane::loss::uniform;
use qstp_proto::{Connection, Duration, Rate, Time};
use qstp_tcp::{LossPolicy, Signal, TcpEvent, TcpSender};
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The running delegation group.
#[derive(Debug)]
pub struct DelegationHost {
    spec: DelegationSpec,
    /// Agent index of the Free's sender.
    free: usize,
    /// Agent indices of the Stunts' senders.
    stunts: Vec<usize>,
    controller: Controller,
    delegator: Delegator,
    rng: ChaCha8Rng,
    segment_bits: u64,
    next_control: Time,
    acked_at_last_control: u64,
    /// The Free's throughput over the last control period.
    x: Rate,
    samples: Vec<(f64, f64)>,
    /// With `by = "network"`: what the bottleneck's mark mover shares with the host.
    marks: Option<Arc<MarkShare>>,
    /// The uniform draw for the Free's next fast-retransmit signal while the controller's
    /// fraction is above 0, drawn before the signal (one draw per such signal, in order).
    draw: Option<f64>,
}

impl DelegationHost {
    /// The host of `spec` over the senders at agent indices `free` and `stunts`, whose data
    /// segments carry `segment_bits` bits of payload; the senders are switched to deferred loss
    /// reactions and report their events. With `marks` (`by = "network"`), the senders keep
    /// reacting for themselves and the host only tells the bottleneck the fraction g.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        spec: DelegationSpec,
        free: usize,
        stunts: Vec<usize>,
        segment_bits: u64,
        seed: u64,
        duration: Duration,
        agents: &mut [Agent],
        marks: Option<Arc<MarkShare>>,
    ) -> Self {
        // Delegating by the network, the senders keep reacting for themselves. Delegating by
        // the host, a TCP sender learns before each of its turns whether its next
        // fast-retransmit signal is to be deferred ([`DelegationHost::before_agent`]).
        if marks.is_none() {
            for &i in std::iter::once(&free).chain(&stunts) {
                if let Some(sender) = agents[i].tcp_sender_mut() {
                    sender.record_events(true);
                }
                if let Some(client) = agents[i].qstp_client_mut() {
                    client.defer_loss_events();
                }
            }
        }
        let period = spec.period;
        let capacity = (duration.as_nanos() / period.as_nanos().max(1)).min(1 << 20) as usize;
        DelegationHost {
            controller: Controller::new(spec.controller),
            spec,
            free,
            stunts,
            delegator: Delegator::new(),
            rng: stream(seed, StreamKind::Host, 0),
            segment_bits,
            next_control: Time::ZERO + period,
            acked_at_last_control: 0,
            x: Rate::ZERO,
            samples: Vec::with_capacity(capacity),
            marks,
            draw: None,
        }
    }

    /// Whether agent `index` is one of the group's senders whose signals the host settles (none
    /// when the network moves the marks).
    pub fn watches(&self, index: usize) -> bool {
        self.marks.is_none() && (index == self.free || self.stunts.contains(&index))
    }

    /// The control instants due by `now` (before the event at `now` runs): sample the Free's
    /// throughput over each period and update the delegation fraction.
    pub fn control(&mut self, now: Time, agents: &mut [Agent]) {
        while now >= self.next_control {
            let at = self.next_control;
            let acked = bytes_acked(&mut agents[self.free]);
            let bytes = acked.saturating_sub(self.acked_at_last_control);
            self.acked_at_last_control = acked;
            self.x = Rate::from_bytes_over(bytes, self.spec.period);
            let target = self.spec.trace.at(at.saturating_since(Time::ZERO));
            self.controller.update(self.x, target, self.segment_bits);
            if self.samples.len() < self.samples.capacity() {
                self.samples
                    .push((self.x.bps() as f64, target.bps() as f64));
            }
            self.next_control = at + self.spec.period;
            if let Some(marks) = &self.marks {
                let reverse = self.spec.reverse && self.free_above_target(at);
                let (free, stunts) = senders(agents, self.free, &self.stunts);
                let free_window = free.map_or(0, |f| f.share());
                let total: u64 = stunts.iter().map(|s| s.share()).sum();
                let mean = total / (stunts.len() as u64).max(1);
                marks.set(self.controller.fraction(), reverse, free_window, mean);
            }
        }
    }

    /// Before one of the group's TCP senders runs at `now`: decide now what its next
    /// fast-retransmit signal will bring, so that it halves at once when it is to react, as a
    /// plain TCP sender does, instead of sending on its old window until the host has looked.
    /// The Free defers while its window is below the Stunts' total, if the controller's next
    /// draw says delegate; a Stunt defers while its window is below the Free's, if reverse
    /// delegation is on and the Free runs above its target (§II-B). Nothing else runs between
    /// this decision and the signal.
    fn before_agent(&mut self, now: Time, index: usize, agents: &mut [Agent]) {
        if agents[index].tcp_sender_mut().is_none() {
            return;
        }
        let g = self.controller.fraction();
        let delegate = g > 0.0 && *self.draw.get_or_insert_with(|| uniform(&mut self.rng)) < g;
        let above = self.spec.reverse && self.free_above_target(now);
        // Each window read by index: this runs before every turn of the group's senders.
        let cwnd =
            |agents: &mut [Agent], i: usize| agents[i].tcp_sender_mut().map_or(0, |s| s.cwnd());
        let bound = if index == self.free && delegate {
            // §II-B: delegated only while the Stunts' windows sum to more than the Free's.
            self.stunts.iter().map(|&i| cwnd(agents, i)).sum()
        } else if index != self.free && above {
            cwnd(agents, self.free)
        } else {
            0
        };
        if let Some(sender) = agents[index].tcp_sender_mut() {
            sender.set_loss_policy(LossPolicy::DeferBelow(bound));
        }
    }

    /// Whether the Free runs above its target at `now`, as the controllers see it (eqs. 3-4):
    /// beyond 1.33 T_i, the top of the AIMD sawtooth whose mean is T_i. Against T_i itself, the
    /// Free would pay back on the upper half of every sawtooth while on target, and sit below
    /// it (fs-fig4 showed it on its 8 Mbit/s step).
    fn free_above_target(&self, now: Time) -> bool {
        let target = self.spec.trace.at(now.saturating_since(Time::ZERO));
        self.x.bps() as f64 > crate::delegation::controller::MARGIN * target.bps() as f64
    }

    /// After agent `index` ran at `now`: act on the congestion signals its sender reported.
    pub fn after_agent(&mut self, now: Time, index: usize, agents: &mut [Agent]) {
        if let Some(client) = agents[index].qstp_client_mut() {
            let held = client.deferred_loss_events() > 0;
            if held {
                self.settle_qstp(now, agents);
            }
            return;
        }
        loop {
            let Some(event) = agents[index].tcp_sender_mut().and_then(|s| s.poll_event()) else {
                return;
            };
            let TcpEvent::CongestionSignal {
                signal: Signal::FastRetransmit,
                deferred,
                ..
            } = event
            else {
                continue;
            };
            if index == self.free {
                // The controller's fraction g as a probability per signal (§II-A: "the ratio
                // of congestion signals to be delegated"), drawn before the signal came.
                if self.controller.fraction() > 0.0 {
                    self.draw = None;
                }
                if !deferred {
                    self.delegator.free_reacted();
                    continue;
                }
                let (free, mut stunts) = senders(agents, self.free, &self.stunts);
                let Some(free) = free else { return };
                self.delegator.delegate(now, free.owed(), &mut stunts);
            } else if deferred {
                let Some(free) = agents[self.free].tcp_sender_mut() else {
                    return;
                };
                self.delegator.take_by_free(now, free);
            }
        }
    }

    /// Settle the loss events the group's QSTP connections hold: the delegator's decisions for
    /// equation-based senders (`Delegator::settle`), the controller's fraction g drawn per
    /// event of the Free as for TCP's signals.
    fn settle_qstp(&mut self, now: Time, agents: &mut [Agent]) {
        let above = self.free_above_target(now);
        let g = self.controller.fraction();
        let rng = &mut self.rng;
        let (free, mut stunts) = connections(agents, self.free, &self.stunts);
        let Some(free) = free else { return };
        self.delegator.settle(
            now,
            free,
            &mut stunts,
            || g > 0.0 && uniform(rng) < g,
            self.spec.reverse,
            above,
        );
    }

    /// What the group did.
    /// What the group did: with `by = "network"`, the marks the bottleneck moved (and left on
    /// the Free) stand for the signals.
    pub fn record(self) -> DelegationRecord {
        let (delegated, reacted, taken_by_free) = match &self.marks {
            Some(m) => (
                m.delegated.load(Ordering::Relaxed),
                m.kept.load(Ordering::Relaxed),
                m.taken_by_free.load(Ordering::Relaxed),
            ),
            None => (
                self.delegator.delegated,
                self.delegator.reacted,
                self.delegator.taken_by_free,
            ),
        };
        DelegationRecord {
            period: self.spec.period,
            samples: self.samples,
            delegated,
            reacted,
            taken_by_free,
        }
    }
}

/// The senders of agents `free` and `stunts` (in `stunts`' order), borrowed together.
fn senders<'a>(
    agents: &'a mut [Agent],
    free: usize,
    stunts: &[usize],
) -> (Option<&'a mut dyn Steerable>, Vec<&'a mut dyn Steerable>) {
    let mut free_sender = None;
    let mut found: Vec<(usize, &'a mut TcpSender)> = Vec::with_capacity(stunts.len());
    for (i, agent) in agents.iter_mut().enumerate() {
        if i == free {
            free_sender = agent.tcp_sender_mut().map(|s| s as &mut dyn Steerable);
        } else if let Some(pos) = stunts.iter().position(|&s| s == i) {
            if let Some(s) = agent.tcp_sender_mut() {
                found.push((pos, s));
            }
        }
    }
    found.sort_by_key(|(pos, _)| *pos);
    (
        free_sender,
        found
            .into_iter()
            .map(|(_, s)| s as &mut dyn Steerable)
            .collect(),
    )
}

/// The qstp connections of agents `free` and `stunts` (in `stunts`' order), borrowed together.
fn connections<'a>(
    agents: &'a mut [Agent],
    free: usize,
    stunts: &[usize],
) -> (Option<&'a mut Connection>, Vec<&'a mut Connection>) {
    let mut free_conn = None;
    let mut found: Vec<(usize, &'a mut Connection)> = Vec::with_capacity(stunts.len());
    for (i, agent) in agents.iter_mut().enumerate() {
        let position = stunts.iter().position(|&s| s == i);
        if i != free && position.is_none() {
            continue;
        }
        let Some(conn) = agent.qstp_client_mut().and_then(|c| c.connection_mut()) else {
            continue;
        };
        match position {
            Some(pos) => found.push((pos, conn)),
            None => free_conn = Some(conn),
        }
    }
    found.sort_by_key(|(pos, _)| *pos);
    (free_conn, found.into_iter().map(|(_, c)| c).collect())
}

/// Bytes the peer of a TCP or qstp sender acknowledged so far.
fn bytes_acked(agent: &mut Agent) -> u64 {
    if let Some(client) = agent.qstp_client_mut() {
        return client.bytes_acked();
    }
    agent.tcp_sender_mut().map_or(0, |s| s.stats().bytes_acked)
}

/// The group plugs into the run loop: its control instants before each event, its decisions
/// after each of its senders ran, its record in the output.
impl RunHook for DelegationHost {
    fn before_event(&mut self, ctx: &mut HookCtx<'_>) {
        self.control(ctx.now, ctx.agents);
    }

    fn watches(&self, index: usize) -> bool {
        DelegationHost::watches(self, index)
    }

    fn before_agent(&mut self, ctx: &mut HookCtx<'_>, index: usize) {
        DelegationHost::before_agent(self, ctx.now, index, ctx.agents);
    }

    fn after_agent(&mut self, ctx: &mut HookCtx<'_>, index: usize) {
        DelegationHost::after_agent(self, ctx.now, index, ctx.agents);
    }

    fn finish(self: Box<Self>, output: &mut RunOutput) {
        output.delegation = Some(self.record());
    }
}
