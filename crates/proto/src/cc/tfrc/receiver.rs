//! The TFRC receiver: measures X_recv and p and decides when feedback is due (RFC 5348 §6).

use crate::cc::tfrc::equation;
use crate::cc::tfrc::loss_history::LossHistory;
use crate::rate::Rate;
use crate::time::{Duration, Time};

/// Feedback interval used while the sender has not reported an RTT.
const DEFAULT_FEEDBACK_INTERVAL: Duration = Duration::from_secs(1);

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

/// The most recent data packet: when it arrived and the sender's timestamp it carried.
#[derive(Debug, Clone, Copy)]
struct LastData {
    arrived: Time,
    timestamp: u32,
}

/// The receiver half of TFRC (RFC 5348 §6).
#[derive(Debug, Clone)]
pub struct TfrcReceiver {
    /// Segment size s, bytes (for the §6.3.1 first-interval inversion).
    segment_size: f64,
    history: LossHistory,
    /// The sender's RTT estimate, from the latest data packet (RFC 5348 §6).
    rtt: Duration,
    last_data: Option<LastData>,
    /// When the first packet arrived.
    first_arrival: Option<Time>,
    /// Bytes received since the last feedback.
    bytes_since_feedback: u64,
    /// When the last feedback was sent.
    last_feedback: Option<Time>,
    /// Bytes and span of the feedback period before the current one.
    previous_period: Option<(u64, Duration)>,
    /// The last X_recv reported, bytes/s.
    last_x_recv: f64,

    /// When the feedback timer expires (RFC 5348 §6.2).
    feedback_deadline: Option<Time>,
    /// The feedback timer expired with no data: send feedback on the next packet (RFC 5348 §6.2).
    feedback_owed: bool,
}

impl TfrcReceiver {
    /// A receiver of packets of about `segment_size` bytes.
    pub fn new(segment_size: usize) -> Self {
        TfrcReceiver {
            segment_size: segment_size.max(1) as f64,
            history: LossHistory::new(),
            rtt: Duration::ZERO,
            last_data: None,
            first_arrival: None,
            bytes_since_feedback: 0,
            last_feedback: None,
            previous_period: None,
            last_x_recv: 0.0,
            feedback_deadline: None,
            feedback_owed: false,
        }
    }

    /// A data packet arrived (duplicates already filtered by the caller); true if feedback is due now.
    ///
    /// Feedback is due on the first packet (RFC 5348 §6.3), on a new loss event (§6.1), and on the
    /// first packet after a feedback timer expiry that found no data (§6.2).
    pub fn on_data(
        &mut self,
        now: Time,
        packet_number: u64,
        sender_timestamp: u32,
        sender_rtt: Duration,
        size: usize,
    ) -> bool {
        if !sender_rtt.is_zero() {
            self.rtt = sender_rtt;
            // RFC 5348 §6.2: the feedback timer runs for the sender's RTT estimate R_m. A timer
            // started before any estimate came (a 1 s default) is brought in to one RTT, or the
            // sender, whose retransmission timer is a few RTTs, would take its packets for lost.
            if let (Some(deadline), Some(last)) = (self.feedback_deadline, self.last_feedback) {
                self.feedback_deadline = Some(deadline.min(last + sender_rtt));
            }
        }
        let first = self.first_arrival.is_none();
        if first {
            self.first_arrival = Some(now);
        }
        self.bytes_since_feedback = self.bytes_since_feedback.saturating_add(size as u64);
        self.last_data = Some(LastData {
            arrived: now,
            timestamp: sender_timestamp,
        });

        // RFC 5348 §6.3.1: the first loss interval is the one for which the equation gives X_recv.
        let (s, r, x_recv) = (
            self.segment_size,
            self.rtt.as_secs_f64(),
            self.measure_x_recv(now).max(self.last_x_recv),
        );
        let new_loss_event = self.history.on_packet(packet_number, now, self.rtt, || {
            equation::first_loss_interval(s, r, x_recv)
        });
        let owed = std::mem::take(&mut self.feedback_owed);
        first || new_loss_event || owed
    }

    /// The sender skipped packet number `number` (never sent): loss detection counts it as
    /// arrived at `now`, so the gap it leaves is no loss (RFC 5348 §5.1 counts only packets the
    /// network lost). Nothing else (receive rate, feedback timing) hears of it.
    pub fn on_skipped(&mut self, now: Time, number: u64) {
        let (s, r) = (self.segment_size, self.rtt.as_secs_f64());
        let x_recv = self.last_x_recv;
        self.history.on_packet(number, now, self.rtt, || {
            equation::first_loss_interval(s, r, x_recv)
        });
    }

    /// When the feedback timer expires (once per RTT while data arrives, RFC 5348 §6.2).
    pub fn poll_timeout(&self) -> Option<Time> {
        self.feedback_deadline
    }

    /// Returns true if feedback is due now.
    pub fn handle_timeout(&mut self, now: Time) -> bool {
        match self.feedback_deadline {
            Some(deadline) if now >= deadline => {
                if self.bytes_since_feedback > 0 {
                    true
                } else {
                    // RFC 5348 §6.2: no data since the last feedback, so none is sent; the next
                    // data packet triggers it.
                    self.feedback_deadline = None;
                    self.feedback_owed = true;
                    false
                }
            }
            _ => false,
        }
    }

    /// Fill the TFRC fields of a feedback packet and restart the feedback timer.
    pub fn feedback(&mut self, now: Time) -> ReceiverReport {
        let x_recv = self.measure_x_recv(now);
        let span = now.saturating_since(self.last_feedback.or(self.first_arrival).unwrap_or(now));
        self.previous_period = Some((self.bytes_since_feedback, span));
        self.bytes_since_feedback = 0;
        self.last_feedback = Some(now);
        self.last_x_recv = x_recv;
        self.feedback_owed = false;
        // RFC 5348 §6.2: the feedback timer runs for one RTT.
        let interval = if self.rtt.is_zero() {
            DEFAULT_FEEDBACK_INTERVAL
        } else {
            self.rtt
        };
        self.feedback_deadline = Some(now + interval);
        let (timestamp_echo, t_delay) = match self.last_data {
            Some(d) => (d.timestamp, now.saturating_since(d.arrived)),
            None => (0, Duration::ZERO),
        };
        ReceiverReport {
            timestamp_echo,
            t_delay,
            x_recv: Rate::from_bytes_per_sec(x_recv),
            loss_event_rate: self.history.loss_event_rate(),
        }
    }

    /// The current loss event rate p.
    pub fn loss_event_rate(&self) -> f64 {
        self.history.loss_event_rate()
    }

    /// The loss history (for statistics).
    pub fn history(&self) -> &LossHistory {
        &self.history
    }

    /// The receive rate over at least the last RTT, bytes/s (RFC 5348 §6.2).
    ///
    /// Normally the bytes since the last feedback over the time since it; when that is shorter
    /// than an RTT (feedback sent early on a loss event) the previous period is included too.
    fn measure_x_recv(&self, now: Time) -> f64 {
        let Some(since) = self.last_feedback.or(self.first_arrival) else {
            return 0.0;
        };
        let span = now.saturating_since(since);
        let rtt = if self.rtt.is_zero() {
            DEFAULT_FEEDBACK_INTERVAL
        } else {
            self.rtt
        };
        let (bytes, span) = match self.previous_period {
            Some((prev_bytes, prev_span)) if span < rtt => {
                (self.bytes_since_feedback + prev_bytes, span + prev_span)
            }
            _ => (self.bytes_since_feedback, span),
        };
        // At least one RTT (RFC 5348 §6.2), also when there is no earlier period to add.
        bytes as f64 / span.max(rtt).as_secs_f64()
    }
}

#[cfg(test)]
#[path = "receiver_tests.rs"]
mod tests;
