//! A constant-rate controller.

use crate::cc::{FeedbackReport, RateController, RateState};
use crate::rate::Rate;
#[allow(unused_imports)]
use crate::time::{Duration, Time};

/// A constant-rate controller.
#[derive(Debug, Clone)]
pub struct FixedRate {}

impl FixedRate {
    /// Construct it.
    #[allow(unused_variables)]
    pub fn new(rate: Rate) -> Self {
        todo!()
    }
}

impl RateController for FixedRate {
    fn on_feedback(&mut self, _now: Time, _report: &FeedbackReport) {
        todo!()
    }
    fn on_packet_sent(&mut self, _now: Time, _size: usize) {
        todo!()
    }
    fn on_data_limited(&mut self, _now: Time) {
        todo!()
    }
    fn allowed_rate(&self) -> Rate {
        todo!()
    }
    fn poll_timeout(&self) -> Option<Time> {
        todo!()
    }
    fn handle_timeout(&mut self, _now: Time) {
        todo!()
    }
    fn state(&self) -> RateState {
        todo!()
    }
}
