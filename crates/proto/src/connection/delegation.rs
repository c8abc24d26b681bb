//! A connection as a member of a Free & Stunts delegation group (Free & Stunts paper §II-B;
//! `crate::delegation`), for an equation-based sender.
//!
//! TCP's congestion signal is a loss in the AIMD phase, and its reaction halves the window. Here
//! the signal is a loss event (RFC 5348 §5.2) and the reaction is the event's place in the
//! sender's loss history, which sets p and so the rate (RFC 5348 §4.3 step 4). A group therefore
//! moves loss events: a delegated event leaves the Free's history (its current loss interval runs
//! on) and enters Stunts' (closing their current intervals now): as for TCP, the Stunts take
//! events until together they give up at least the rate the Free would have given up
//! ([`Steerable::owed`]).
//!
//! The history is the sender's own, from the SACK ranges (RFC 5348 §6 lets the sender compute
//! the loss event rate; module `honesty` already keeps it), not the receiver's: only the sender
//! can hold, give away and take loss events, and the receiver of a Stunt never sees the ones it
//! takes. This needs a byte stream, whose acknowledgements show every packet that crossed the
//! path; a message receiver may refuse fragments for room, which the sender could not tell from
//! losses.

use super::Connection;
use crate::delegation::{Decision, Delegator, Steerable};
use crate::time::Time;

/// Why a connection cannot join a delegation group.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DelegationError {
    /// Its composition carries messages: their receiver may refuse fragments for room, so the
    /// sender's acknowledgements do not show every loss.
    #[error("a delegation group needs a byte-stream composition (this one carries messages)")]
    NotAStream,
}

impl Connection {
    /// Hold this connection's loss events for a delegation group from now on (`on`), or react
    /// to each at once as TFRC does (the default). Out of slow start, each new loss event then
    /// waits, out of p, until the group settles it: [`Connection::count_loss_event`] (this
    /// connection reacts) or [`Connection::forgive_loss_event`] (a Stunt reacted in its place).
    /// The rate then follows the sender's own loss history, which holds, gives and takes loss
    /// events, alone. Turning it off counts the events still held.
    pub fn defer_loss_events(&mut self, now: Time, on: bool) -> Result<(), DelegationError> {
        if !self.config.supports_stream() {
            return Err(DelegationError::NotAStream);
        }
        self.sender.defer_losses = on;
        if on && self.sender.check.is_none() {
            // `Config::check_receiver` is off: keep the own loss history anyway, unjudging.
            self.sender.keep_own_history();
        }
        if let Some(check) = self.sender.check.as_mut() {
            let held = check.deferred();
            check.defer_events(on);
            if held > 0 && !on {
                self.apply_own_loss_event_rate(now);
            }
        }
        Ok(())
    }

    /// Loss events waiting for the group's decision.
    pub fn deferred_loss_events(&self) -> usize {
        self.sender.check.as_ref().map_or(0, |c| c.deferred())
    }

    /// React to the oldest held loss event: it enters p now. Whether one was held.
    pub fn count_loss_event(&mut self, now: Time) -> bool {
        let (rtt, segment) = self.history_scale();
        let Some(check) = self.sender.check.as_mut() else {
            return false;
        };
        if !check.count_deferred(rtt, segment) {
            return false;
        }
        self.apply_own_loss_event_rate(now);
        true
    }

    /// Drop the oldest held loss event: another connection of the group reacted in this one's
    /// place. Whether one was held.
    pub fn forgive_loss_event(&mut self) -> bool {
        self.sender
            .check
            .as_mut()
            .is_some_and(|c| c.forgive_deferred())
    }

    /// React at `now` to a loss event another connection of the group saw: a new loss event in
    /// this connection's history, closing its current loss interval. Whether it was taken (a
    /// connection that keeps no history of its own, or has not started, cannot).
    pub fn take_loss_event(&mut self, now: Time) -> bool {
        if !self.sender.defer_losses {
            return false;
        }
        let (rtt, segment) = self.history_scale();
        let Some(check) = self.sender.check.as_mut() else {
            return false;
        };
        check.take_event(now, rtt, segment);
        self.apply_own_loss_event_rate(now);
        true
    }

    /// The RTT and segment size loss events are grouped and first intervals sized with.
    fn history_scale(&self) -> (crate::time::Duration, usize) {
        let rtt = self.sender.rate.state().rtt;
        let rtt = if rtt.is_zero() {
            self.counters.latest_rtt
        } else {
            rtt
        };
        (rtt, self.config.segment_size())
    }

    /// The own history's p changed between feedbacks: the rate follows now (RFC 5348 §4.3
    /// step 4, with the last receive limit).
    fn apply_own_loss_event_rate(&mut self, now: Time) {
        let Some(check) = self.sender.check.as_ref() else {
            return;
        };
        let ppb = (check.loss_event_rate() * 1e9).round() as u32;
        if ppb > self.sender.last_loss_event_rate_ppb {
            self.counters.loss_event_rate_increases += 1;
        }
        self.sender.last_loss_event_rate_ppb = ppb;
        self.sender
            .rate
            .on_loss_event_rate(now, f64::from(ppb) / 1e9);
    }
}

/// A QSTP connection in a delegation group: its share is its allowed rate in bytes per second
/// (the total-window check of §II-B on rates), a delegated signal is a loss event taken, and its
/// own reaction is the held event counted.
impl Steerable for Connection {
    fn share(&self) -> u64 {
        self.sender.rate.allowed_rate().bps() / 8
    }
    /// The rate this connection would give up by counting its oldest held loss event: the
    /// allowed rate less the equation's rate at the p it would then have (RFC 5348 §4.3 step 4),
    /// in bytes per second. The Stunts together give up at least as much (§II-B's rule, on
    /// rates): one event each of theirs would not, for the equation is convex in p, and the
    /// cross traffic would pay the difference.
    fn owed(&self) -> u64 {
        let (rtt, segment) = self.history_scale();
        let Some(p) = self
            .sender
            .check
            .as_ref()
            .and_then(|c| c.loss_event_rate_if_counted(rtt, segment))
        else {
            return 0;
        };
        let share = self.share();
        let x =
            crate::cc::tfrc::equation::throughput(segment as f64, rtt.as_secs_f64().max(1e-6), p);
        share.saturating_sub((x as u64).min(share))
    }
    fn reduce(&mut self, now: Time) {
        self.take_loss_event(now);
    }
    fn react(&mut self, now: Time) {
        self.count_loss_event(now);
    }
}

impl Delegator {
    /// Settle at `now` every loss event the Free and its Stunts hold (Free & Stunts paper
    /// §II-B): each of the Free's, delegated when `delegate()` says so (the controller's draw
    /// with its fraction g) and the Stunts' rates together exceed the Free's, goes to the next
    /// Stunt round robin, or else the Free counts it; each of a Stunt's is taken by the Free
    /// with `reverse` delegation while the Free runs above its target (`free_above_target`) at
    /// a higher rate, or else the Stunt counts it. The connections must defer their loss events
    /// ([`Connection::defer_loss_events`]).
    pub fn settle(
        &mut self,
        now: Time,
        free: &mut Connection,
        stunts: &mut [&mut Connection],
        mut delegate: impl FnMut() -> bool,
        reverse: bool,
        free_above_target: bool,
    ) {
        // Bounded: every pass settles one held event, and a connection holds at most
        // `loss_history::MAX_DEFERRED`.
        while free.deferred_loss_events() > 0 {
            let mut refs: Vec<&mut dyn Steerable> = stunts
                .iter_mut()
                .map(|s| &mut **s as &mut dyn Steerable)
                .collect();
            let decision = self.on_free_signal(now, free, &mut refs, delegate());
            if decision != Decision::Reacted {
                free.forgive_loss_event();
            }
        }
        for stunt in stunts.iter_mut() {
            while stunt.deferred_loss_events() > 0 {
                let decision =
                    self.on_stunt_signal(now, &mut **stunt, free, reverse, free_above_target);
                if decision != Decision::Reacted {
                    stunt.forgive_loss_event();
                }
            }
        }
    }
}
