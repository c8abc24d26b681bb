//! The TFRC sender's rate rules (RFC 5348 §4).

use crate::cc::{FeedbackReport, RateController, RateState};
use crate::rate::Rate;
use crate::time::{Duration, Time};

/// A TFRC sender (RFC 5348 §4).
#[derive(Debug, Clone)]
pub struct TfrcSender {}

impl TfrcSender {
    /// A sender of `segment_size`-byte packets, optionally knowing the handshake RTT.
    pub fn new(segment_size: usize, initial_rtt: Option<Duration>, now: Time) -> Self {
        let _ = (segment_size, initial_rtt, now);
        todo!()
    }
}

impl RateController for TfrcSender {
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
