//! A TCP-like AIMD rate controller, for comparison with TFRC and gTFRC.
//!
//! It works on the same feedback as TFRC. Congestion signal: the receiver's loss event rate p
//! going up. p only rises when the receiver records a new loss event (RFC 5348 §5.4: without a new
//! event the open interval grows and p can only fall), so "p increased" is a loss indication, and
//! as in TCP (RFC 5681 §3.1) at most one halving happens per RTT. Without a loss indication the
//! rate doubles once per RTT in slow start (until the first loss) and then grows by one segment per
//! RTT per RTT (additive increase, RFC 5681 §3.1). Increases are limited to 2*X_recv, as TFRC's
//! are (RFC 5348 §4.3), so an application-limited flow does not build up an unused rate. The
//! nofeedback timer and the s/t_mbi floor are TFRC's (RFC 5348 §4.3, §4.4).

use crate::cc::tfrc::sender::{
    initial_rate, initial_rtt_secs, initial_window, min_rate, no_feedback_interval, smoothed_rtt,
    INITIAL_NO_FEEDBACK,
};
use crate::cc::{FeedbackReport, RateController, RateState};
use crate::rate::Rate;
use crate::time::{Duration, Time};

/// A TCP-like AIMD rate controller: +1 segment per RTT, halve on a new loss event.
#[derive(Debug, Clone)]
pub struct Aimd {
    segment_size: f64,
    /// Allowed rate, bytes/s.
    x: f64,
    /// Smoothed RTT, seconds.
    rtt: Option<f64>,
    slow_start: bool,
    /// Last reported loss event rate.
    p: f64,
    /// Last reported receive rate, bytes/s.
    x_recv: f64,
    feedback_seen: bool,
    /// When the rate last grew or was halved.
    last_change: Option<Time>,
    last_decrease: Option<Time>,
    no_feedback_deadline: Time,
}

impl Aimd {
    /// An AIMD controller for `segment_size`-byte packets, optionally knowing the handshake RTT.
    pub fn new(segment_size: usize, initial_rtt: Option<Duration>, now: Time) -> Self {
        let segment_size = segment_size.max(1) as f64;
        let rtt = initial_rtt_secs(initial_rtt);
        let x = initial_rate(segment_size, rtt);
        Aimd {
            segment_size,
            x,
            rtt,
            slow_start: true,
            p: 0.0,
            x_recv: 0.0,
            feedback_seen: false,
            last_change: None,
            last_decrease: None,
            no_feedback_deadline: now + INITIAL_NO_FEEDBACK,
        }
    }

    fn min_rate(&self) -> f64 {
        min_rate(self.segment_size)
    }

    fn no_feedback_interval(&self) -> Duration {
        no_feedback_interval(self.rtt, self.segment_size, self.x)
    }
}

impl RateController for Aimd {
    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        let r = smoothed_rtt(self.rtt, self.feedback_seen, report.rtt_sample);
        self.rtt = Some(r);
        let p = crate::cc::sane_loss_event_rate(report.loss_event_rate);
        self.x_recv = report.x_recv.bytes_per_sec();
        let loss_indication = p > self.p;
        self.p = p;
        self.feedback_seen = true;

        let since =
            |t: Option<Time>| t.map_or(f64::INFINITY, |t| now.saturating_since(t).as_secs_f64());
        if loss_indication {
            self.slow_start = false;
            // At most one multiplicative decrease per RTT (RFC 5681 §3.1: one per window of data).
            if since(self.last_decrease) >= r {
                self.x = (self.x / 2.0).max(self.min_rate());
                self.last_decrease = Some(now);
                self.last_change = Some(now);
            }
        } else {
            let cap = self.x.max(2.0 * self.x_recv);
            if self.slow_start {
                if since(self.last_change) >= r {
                    let initial = initial_window(self.segment_size) / r;
                    self.x = (2.0 * self.x).min(cap).max(initial);
                    self.last_change = Some(now);
                }
            } else {
                // Additive increase: one segment per RTT each RTT, in proportion to elapsed time.
                let elapsed = since(self.last_change).min(r);
                self.x = (self.x + self.segment_size / r * (elapsed / r)).min(cap);
                self.last_change = Some(now);
            }
        }
        self.no_feedback_deadline = now + self.no_feedback_interval();
    }

    fn on_packet_sent(&mut self, _now: Time, _size: usize) {}

    fn on_data_limited(&mut self, _now: Time) {}

    fn allowed_rate(&self) -> Rate {
        Rate::from_bytes_per_sec(self.x)
    }

    fn poll_timeout(&self) -> Option<Time> {
        Some(self.no_feedback_deadline)
    }

    fn handle_timeout(&mut self, now: Time) {
        if now < self.no_feedback_deadline {
            return;
        }
        // RFC 5348 §4.4: no feedback for max(4R, 2s/X): halve.
        self.x = (self.x / 2.0).max(self.min_rate());
        self.no_feedback_deadline = now + self.no_feedback_interval();
    }

    fn set_segment_size(&mut self, size: usize) {
        self.segment_size = size.max(1) as f64;
    }

    fn state(&self) -> RateState {
        RateState {
            rate: self.allowed_rate(),
            x_calc: Rate::ZERO,
            x_recv: Rate::from_bytes_per_sec(self.x_recv),
            loss_event_rate: self.p,
            rtt: self
                .rtt
                .map(Duration::from_secs_f64)
                .unwrap_or(Duration::ZERO),
            target: Rate::ZERO,
            slow_start: self.slow_start,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::test_feedback::{at, report};

    const S: usize = 1000;

    fn rate(c: &Aimd) -> f64 {
        c.allowed_rate().bytes_per_sec()
    }

    #[test]
    fn slow_start_doubles_then_halves_on_loss_then_grows_one_segment_per_rtt() {
        let mut c = Aimd::new(S, Some(Duration::from_millis(100)), Time::ZERO);
        assert_eq!(rate(&c), 40_000.0); // W_init = 4000 B over 100 ms
        c.on_feedback(at(100), &report(1e9, 0.0));
        assert_eq!(rate(&c), 80_000.0);
        c.on_feedback(at(200), &report(1e9, 0.0));
        assert_eq!(rate(&c), 160_000.0);
        c.on_feedback(at(300), &report(1e9, 0.01));
        assert_eq!(rate(&c), 80_000.0);
        assert!(!c.state().slow_start);
        // p falls as the open interval grows: no loss, +1 segment per RTT = +10000 B/s per RTT.
        c.on_feedback(at(400), &report(1e9, 0.009));
        assert!((rate(&c) - 90_000.0).abs() < 1.0, "{}", rate(&c));
        c.on_feedback(at(500), &report(1e9, 0.008));
        assert!((rate(&c) - 100_000.0).abs() < 1.0, "{}", rate(&c));
    }

    #[test]
    fn halves_at_most_once_per_rtt() {
        let mut c = Aimd::new(S, Some(Duration::from_millis(100)), Time::ZERO);
        c.on_feedback(at(100), &report(1e9, 0.01));
        let x = rate(&c);
        c.on_feedback(at(130), &report(1e9, 0.02));
        assert_eq!(rate(&c), x);
        c.on_feedback(at(230), &report(1e9, 0.03));
        assert_eq!(rate(&c), x / 2.0);
    }

    #[test]
    fn increase_is_limited_by_twice_x_recv() {
        let mut c = Aimd::new(S, Some(Duration::from_millis(100)), Time::ZERO);
        for i in 1..10 {
            c.on_feedback(at(100 * i), &report(30_000.0, 0.0));
        }
        assert_eq!(rate(&c), 60_000.0);
    }

    #[test]
    fn no_feedback_halves_down_to_s_over_t_mbi() {
        let mut c = Aimd::new(S, Some(Duration::from_millis(100)), Time::ZERO);
        let x = rate(&c);
        let t = c.poll_timeout().unwrap();
        c.handle_timeout(t);
        assert_eq!(rate(&c), x / 2.0);
        for _ in 0..100 {
            let t = c.poll_timeout().unwrap();
            c.handle_timeout(t);
        }
        assert!((rate(&c) - S as f64 / 64.0).abs() < 0.1);
    }
}
