//! A constant-rate controller, for tests and calibration: it ignores every congestion signal.

use crate::cc::{FeedbackReport, RateController, RateState};
use crate::rate::Rate;
use crate::time::Time;

/// Sends at a fixed rate whatever the network says.
#[derive(Debug, Clone)]
pub struct FixedRate {
    rate: Rate,
    last_report: Option<FeedbackReport>,
}

impl FixedRate {
    /// A controller that always allows `rate`.
    pub fn new(rate: Rate) -> Self {
        FixedRate {
            rate,
            last_report: None,
        }
    }
}

impl RateController for FixedRate {
    fn on_feedback(&mut self, _now: Time, report: &FeedbackReport) {
        self.last_report = Some(*report);
    }
    fn on_packet_sent(&mut self, _now: Time, _size: usize) {}
    fn on_data_limited(&mut self, _now: Time) {}
    fn allowed_rate(&self) -> Rate {
        self.rate
    }
    fn poll_timeout(&self) -> Option<Time> {
        None
    }
    fn handle_timeout(&mut self, _now: Time) {}
    fn state(&self) -> RateState {
        RateState {
            rate: self.rate,
            x_recv: self.last_report.map(|r| r.x_recv).unwrap_or_default(),
            loss_event_rate: self
                .last_report
                .map_or(0.0, |r| crate::cc::sane_loss_event_rate(r.loss_event_rate)),
            rtt: self.last_report.map(|r| r.rtt_sample).unwrap_or_default(),
            ..RateState::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    #[test]
    fn ignores_loss_and_timeouts() {
        let mut c = FixedRate::new(Rate::from_kbps(300));
        let report = FeedbackReport {
            rtt_sample: Duration::from_millis(50),
            x_recv: Rate::from_kbps(10),
            loss_event_rate: 0.5,
        };
        c.on_feedback(Time::ZERO, &report);
        c.handle_timeout(Time::ZERO + Duration::from_secs(100));
        assert_eq!(c.allowed_rate(), Rate::from_kbps(300));
        assert_eq!(c.poll_timeout(), None);
        assert_eq!(c.state().loss_event_rate, 0.5);
        assert_eq!(c.state().rtt, Duration::from_millis(50));
    }
}
