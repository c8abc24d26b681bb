//! Congestion control: the rate controllers (fixed, TFRC, gTFRC, AIMD) behind one trait, the TFRC
//! receiver that measures what the sender needs, and the pacer.

use crate::rate::Rate;
use crate::time::{Duration, Time};

/// What the sender learns from one feedback packet (RFC 5348 §4.3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeedbackReport {
    /// RTT sample: now minus the echoed timestamp minus t_delay.
    pub rtt_sample: Duration,
    /// The receive rate the receiver measured (X_recv).
    pub x_recv: Rate,
    /// The loss event rate p the receiver computed.
    pub loss_event_rate: f64,
}

/// A snapshot of a rate controller, for statistics.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RateState {
    /// Allowed sending rate X.
    pub rate: Rate,
    /// Equation rate X_calc (zero before the first loss).
    pub x_calc: Rate,
    /// Last reported receive rate.
    pub x_recv: Rate,
    /// Last reported loss event rate.
    pub loss_event_rate: f64,
    /// Smoothed RTT R.
    pub rtt: Duration,
    /// Target g (zero if none).
    pub target: Rate,
    /// Whether in slow start.
    pub slow_start: bool,
}

/// A sender-side rate controller: decides the allowed sending rate X.
pub trait RateController: core::fmt::Debug + Send + BoxClone {
    /// Feedback arrived.
    fn on_feedback(&mut self, now: Time, report: &FeedbackReport);
    /// A data packet of `size` bytes left.
    fn on_packet_sent(&mut self, now: Time, size: usize);
    /// The sender had a send opportunity but no data (RFC 5348 §8.2.1: data-limited).
    fn on_data_limited(&mut self, now: Time);
    /// The allowed sending rate X now.
    fn allowed_rate(&self) -> Rate;
    /// When the no-feedback timer (or another timer of the controller) expires.
    fn poll_timeout(&self) -> Option<Time>;
    /// Run the timers due at `now`.
    fn handle_timeout(&mut self, now: Time);
    /// The loss event rate changed between feedbacks to `p` (a delegation group moved a loss
    /// event: `crate::delegation`): recompute the rate from it as a feedback would, with the
    /// last receive limit. No effect on controllers without an equation, or before feedback.
    fn on_loss_event_rate(&mut self, _now: Time, _p: f64) {}
    /// Change the target g (no effect on controllers without one).
    fn set_target(&mut self, _target: Rate) {}
    /// Packets grew or shrank to `size` bytes (path MTU discovery): the segment size s of the
    /// throughput equation follows (RFC 5348 §4.1: s is the packet size in use).
    fn set_segment_size(&mut self, _size: usize) {}
    /// A snapshot for statistics.
    fn state(&self) -> RateState;
}

/// A boxed controller copies itself (so a whole connection can be copied: the fuzz targets
/// fork one handshaken connection per input).
pub trait BoxClone {
    /// A copy in a new box.
    fn box_clone(&self) -> Box<dyn RateController>;
}

impl<T: RateController + Clone + 'static> BoxClone for T {
    fn box_clone(&self) -> Box<dyn RateController> {
        Box::new(self.clone())
    }
}

impl Clone for Box<dyn RateController> {
    fn clone(&self) -> Self {
        self.box_clone()
    }
}

pub mod aimd;
pub mod fixed;
pub mod gtfrc;
pub mod pacing;
pub mod tfrc;

pub use aimd::Aimd;
pub use fixed::FixedRate;
pub use gtfrc::Gtfrc;
pub use pacing::Pacer;
pub use tfrc::receiver::{ReceiverReport, TfrcReceiver};
pub use tfrc::sender::TfrcSender;

use crate::config::Congestion;

/// A reported loss event rate made usable: clamped to [0, 1], NaN taken as no loss.
pub(crate) fn sane_loss_event_rate(p: f64) -> f64 {
    if p.is_nan() {
        0.0
    } else {
        p.clamp(0.0, 1.0)
    }
}

/// Construct the rate controller a configuration names.
pub fn build(
    congestion: &Congestion,
    segment_size: usize,
    initial_rtt: Option<Duration>,
    now: Time,
) -> Box<dyn RateController> {
    match *congestion {
        Congestion::Fixed { rate } => Box::new(FixedRate::new(rate)),
        Congestion::Tfrc {
            version,
            oscillation_prevention,
        } => Box::new(
            TfrcSender::with_version(version, segment_size, initial_rtt, now)
                .with_oscillation_prevention(oscillation_prevention),
        ),
        Congestion::Gtfrc {
            target,
            rule,
            version,
            oscillation_prevention,
        } => Box::new(
            Gtfrc::with_version(target, rule, version, segment_size, initial_rtt, now)
                .with_oscillation_prevention(oscillation_prevention),
        ),
        Congestion::Aimd => Box::new(Aimd::new(segment_size, initial_rtt, now)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_constructs_the_named_controller() {
        let rtt = Some(Duration::from_millis(100));
        let fixed = build(
            &Congestion::Fixed {
                rate: Rate::from_kbps(64),
            },
            1000,
            rtt,
            Time::ZERO,
        );
        assert_eq!(fixed.allowed_rate(), Rate::from_kbps(64));
        assert_eq!(fixed.poll_timeout(), None);
        let g = Rate::from_kbps(400);
        let gtfrc = build(&Congestion::gtfrc(g), 1000, rtt, Time::ZERO);
        assert_eq!(gtfrc.state().target, g);
        let tfrc = build(&Congestion::TFRC, 1000, rtt, Time::ZERO);
        assert_eq!(tfrc.state().target, Rate::ZERO);
        assert!(tfrc.state().slow_start);
        // W_init / R = 4000 B / 100 ms.
        assert_eq!(tfrc.allowed_rate(), Rate::from_bytes_per_sec(40_000.0));
        let aimd = build(&Congestion::Aimd, 1000, rtt, Time::ZERO);
        assert_eq!(aimd.allowed_rate(), Rate::from_bytes_per_sec(40_000.0));
        assert_eq!(aimd.state().x_calc, Rate::ZERO);
    }
}

#[cfg(test)]
pub(crate) mod test_feedback {
    use super::FeedbackReport;
    use crate::rate::Rate;
    use crate::time::{Duration, Time};

    /// The instant `millis` milliseconds after time zero.
    pub fn at(millis: u64) -> Time {
        Time::ZERO + Duration::from_millis(millis)
    }

    /// Feedback with a 100 ms RTT sample, X_recv of `x_recv` bytes/s and loss event rate `p`.
    pub fn report(x_recv: f64, p: f64) -> FeedbackReport {
        FeedbackReport {
            rtt_sample: Duration::from_millis(100),
            x_recv: Rate::from_bytes_per_sec(x_recv),
            loss_event_rate: p,
        }
    }
}

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod closed_loop_tests;
