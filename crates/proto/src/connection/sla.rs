//! SLA breach detection: a connection with a target g that keeps losing while sending at or below
//! g, and whose receiver reports less than g, is not getting its guarantee. The QSTP paper
//! (§4.3.2) leaves the reaction open; the connection reports it and carries on.

use crate::cc::RateState;
use crate::rate::Rate;

/// Consecutive feedbacks that must agree before the verdict changes.
pub(crate) const SLA_FEEDBACKS: u32 = 8;

/// Below this share of g the receive rate counts as short of the target.
const SHORT_OF_TARGET: f64 = 0.95;

/// The breach detector, fed once per accepted feedback.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlaMonitor {
    /// Whether the target is currently met (true without a target).
    met: bool,
    /// Consecutive feedbacks contradicting the current verdict.
    streak: u32,
    /// The receive rate of the latest feedback that was judged.
    delivered: Rate,
}

impl Default for SlaMonitor {
    fn default() -> Self {
        SlaMonitor {
            met: true,
            streak: 0,
            delivered: Rate::ZERO,
        }
    }
}

impl SlaMonitor {
    /// Judge one feedback; returns the new verdict when it changed. A sender that ran out of data
    /// since the last feedback (`data_limited`) is not judged: it asked for less than g.
    pub(crate) fn on_feedback(&mut self, state: &RateState, data_limited: bool) -> Option<bool> {
        let g = state.target;
        if g.is_zero() || state.slow_start || data_limited {
            self.streak = 0;
            return None;
        }
        self.delivered = state.x_recv;
        let short = state.loss_event_rate > 0.0
            && state.rate <= g
            && state.x_recv.bytes_per_sec() < SHORT_OF_TARGET * g.bytes_per_sec();
        if short == self.met {
            self.streak += 1;
        } else {
            self.streak = 0;
        }
        if self.streak >= SLA_FEEDBACKS {
            self.met = !short;
            self.streak = 0;
            return Some(self.met);
        }
        None
    }

    /// Whether the target is met (true without a target or before any verdict).
    pub(crate) fn met(&self) -> bool {
        self.met
    }

    /// The receive rate reported by the latest judged feedback.
    pub(crate) fn delivered(&self) -> Rate {
        self.delivered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    fn state(rate_kbps: u64, x_recv_kbps: u64, p: f64) -> RateState {
        RateState {
            rate: Rate::from_kbps(rate_kbps),
            x_calc: Rate::ZERO,
            x_recv: Rate::from_kbps(x_recv_kbps),
            loss_event_rate: p,
            rtt: Duration::from_millis(100),
            target: Rate::from_kbps(1000),
            slow_start: false,
        }
    }

    #[test]
    fn a_breach_needs_a_streak_and_heals_with_one() {
        let mut m = SlaMonitor::default();
        for _ in 1..SLA_FEEDBACKS {
            assert_eq!(m.on_feedback(&state(600, 300, 0.05), false), None);
        }
        assert_eq!(m.on_feedback(&state(600, 300, 0.05), false), Some(false));
        assert!(!m.met());
        assert_eq!(m.delivered(), Rate::from_kbps(300));
        // A data-limited sender is not judged, and one good feedback does not heal it.
        assert_eq!(m.on_feedback(&state(600, 300, 0.05), true), None);
        assert_eq!(m.on_feedback(&state(1000, 1000, 0.01), false), None);
        for _ in 2..SLA_FEEDBACKS {
            assert_eq!(m.on_feedback(&state(1000, 1000, 0.01), false), None);
        }
        assert_eq!(m.on_feedback(&state(1000, 1000, 0.01), false), Some(true));
    }

    #[test]
    fn losses_above_the_target_or_without_a_target_are_no_breach() {
        let mut m = SlaMonitor::default();
        for _ in 0..3 * SLA_FEEDBACKS {
            // Sending above g: the losses are TFRC's share of spare capacity.
            assert_eq!(m.on_feedback(&state(2000, 900, 0.05), false), None);
            let mut best_effort = state(600, 300, 0.05);
            best_effort.target = Rate::ZERO;
            assert_eq!(m.on_feedback(&best_effort, false), None);
        }
        assert!(m.met());
    }
}
