//! gTFRC (gTFRC paper Fig. 1): TFRC whose rate stays at or above a target g after slow start.

use crate::cc::{FeedbackReport, RateController, RateState};
use crate::rate::Rate;
#[allow(unused_imports)]
use crate::time::{Duration, Time};

/// gTFRC (gTFRC paper Fig. 1): TFRC whose rate stays at or above a target g after slow start.
#[derive(Debug, Clone)]
pub struct Gtfrc {}

impl Gtfrc {
    /// Construct it.
    #[allow(unused_variables)]
    pub fn new(target: Rate, segment_size: usize, initial_rtt: Option<Duration>, now: Time) -> Self {
        todo!()
    }
}

impl RateController for Gtfrc {
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
