//! The TFRC receiver: measures X_recv and p and decides when feedback is due (RFC 5348 §6).

use crate::rate::Rate;
use crate::time::{Duration, Time};

/// The TFRC fields of one feedback packet (RFC 5348 §3.2.2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReceiverReport {
    /// Timestamp of the last data packet received, echoed.
    pub timestamp_echo: u32,
    /// Time between receiving that packet and sending this feedback.
    pub t_delay: Duration,
    /// Receive rate over the last RTT.
    pub x_recv: Rate,
    /// Loss event rate p.
    pub loss_event_rate: f64,
}

/// The receiver half of TFRC (RFC 5348 §6).
#[derive(Debug, Clone)]
pub struct TfrcReceiver {}

impl TfrcReceiver {
    /// A receiver of packets of about `segment_size` bytes.
    pub fn new(segment_size: usize) -> Self {
        let _ = segment_size;
        todo!()
    }

    /// A data packet arrived (duplicates already filtered by the caller); true if feedback is due now.
    pub fn on_data(&mut self, now: Time, packet_number: u64, sender_timestamp: u32, sender_rtt: Duration, size: usize) -> bool {
        let _ = (now, packet_number, sender_timestamp, sender_rtt, size);
        todo!()
    }

    /// When the feedback timer expires (once per RTT while data arrives, RFC 5348 §6.2).
    pub fn poll_timeout(&self) -> Option<Time> {
        todo!()
    }

    /// Returns true if feedback is due now.
    pub fn handle_timeout(&mut self, now: Time) -> bool {
        let _ = now;
        todo!()
    }

    /// Fill the TFRC fields of a feedback packet and restart the feedback timer.
    pub fn feedback(&mut self, now: Time) -> ReceiverReport {
        let _ = now;
        todo!()
    }

    /// The current loss event rate p.
    pub fn loss_event_rate(&self) -> f64 {
        todo!()
    }
}
