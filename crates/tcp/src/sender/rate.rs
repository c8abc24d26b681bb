//! Delivery-rate sampling for the controls that ask for it ([`CongestionControl::cong_control`]):
//! draft-cheng-iccrg-delivery-rate-estimation-02 as Linux tcp_rate.c has it, in bytes.
//!
//! [`CongestionControl::cong_control`]: crate::CongestionControl::cong_control

use crate::scoreboard::{Delivered, TxState};
use qstp_proto::{Duration, Time};

/// The connection's delivery state (the draft's per-connection "C" variables, §3.1.1).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct DeliveryRate {
    /// C.delivered: bytes delivered (acknowledged or SACKed) so far.
    delivered: u64,
    /// C.delivered_time: when `delivered` last grew.
    delivered_time: Time,
    /// C.first_sent_time: the send time of the newest segment delivered.
    first_sent_time: Time,
    /// C.app_limited: 0, or the value of `delivered` past which samples stop being
    /// application-limited.
    app_limited: u64,
}

/// What one ACK gives: the draft's rate sample "rs" before the control reads it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Sample {
    pub prior_delivered: Option<u64>,
    pub delivered: Option<u64>,
    pub interval: Option<Duration>,
    pub is_app_limited: bool,
}

impl DeliveryRate {
    /// Bytes delivered so far.
    pub(super) fn delivered(&self) -> u64 {
        self.delivered
    }

    /// When the delivered count last grew.
    pub(super) fn delivered_time(&self) -> Time {
        self.delivered_time
    }

    /// The state a segment sent at `now` carries (§3.2; tcp_rate_skb_sent). With nothing
    /// outstanding, the sample interval starts now: an ACK after this shows the network
    /// delivered that segment within the interval.
    pub(super) fn on_send(&mut self, now: Time, nothing_outstanding: bool) -> TxState {
        if nothing_outstanding {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        TxState {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited != 0,
        }
    }

    /// An ACK at `now` delivered `bytes`, the newest segment among them `newest`: count them and
    /// take the sample (§3.3 UpdateRateSample and GenerateRateSample; tcp_rate_skb_delivered,
    /// tcp_rate_gen). `min_rtt` is the connection's smallest RTT.
    pub(super) fn on_ack(
        &mut self,
        now: Time,
        bytes: u64,
        newest: Option<Delivered>,
        min_rtt: Duration,
    ) -> Sample {
        self.delivered += bytes;
        // tcp_rate_gen: the application-limited stretch ends once its bubble is delivered.
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if bytes > 0 {
            self.delivered_time = now;
        }
        let Some(p) = newest else {
            return Sample::default();
        };
        // §3.3 UpdateRateSample: the newest segment delivered gives the sample, and its send time
        // starts the next one's send phase.
        self.first_sent_time = p.sent_at;
        let send_elapsed = p.sent_at.saturating_since(p.tx.first_sent_time);
        let ack_elapsed = self.delivered_time.saturating_since(p.tx.delivered_time);
        let mut sample = Sample {
            prior_delivered: Some(p.tx.delivered),
            is_app_limited: p.tx.app_limited,
            ..Sample::default()
        };
        // §3.3 GenerateRateSample: the longer of the send and ACK phases (ACK compression can
        // make the ACK phase the shorter one).
        let interval = send_elapsed.max(ack_elapsed);
        // tcp_rate_gen: an interval shorter than the minimum RTT is not a valid sample.
        if interval < min_rtt || interval.is_zero() {
            return sample;
        }
        sample.delivered = Some(self.delivered - p.tx.delivered);
        sample.interval = Some(interval);
        sample
    }

    /// §3.4 / tcp_rate_check_app_limited: the sender has nothing to send although the window
    /// has room; what is sent until `in_flight` more bytes are delivered is application-limited.
    pub(super) fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited = (self.delivered + in_flight).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: u64) -> Time {
        Time::from_nanos(t * 1_000_000)
    }

    #[test]
    fn a_window_paced_through_a_bottleneck_samples_the_bottleneck_rate() {
        // Ten 1000-byte segments sent back to back at 0 ms reach a 1000-byte/ms bottleneck and
        // are ACKed 1 ms apart from 50 ms on: the ACK phase (1 ms per segment) is the longer.
        let mut rate = DeliveryRate::default();
        let sent: Vec<(TxState, u64)> = (0..10)
            .map(|i| (rate.on_send(ms(0), i == 0), (i + 1) * 1000))
            .collect();
        let mut last = Sample::default();
        for (i, &(tx, end)) in sent.iter().enumerate() {
            let newest = Delivered {
                sent_at: ms(0),
                end,
                tx,
            };
            let now = ms(50 + i as u64);
            last = rate.on_ack(now, 1000, Some(newest), Duration::from_millis(40));
            // The first sample spans only 50 ms for 1000 bytes; each later one one more segment.
            assert_eq!(last.delivered, Some(1000 * (i as u64 + 1)));
            assert_eq!(last.interval, Some(now.saturating_since(ms(0))));
        }
        assert_eq!(last.prior_delivered, Some(0));
        assert!(!last.is_app_limited);
        // The next window's segments, sent at 50-59 ms, carry the new delivery state.
        let tx = rate.on_send(ms(60), false);
        assert_eq!((tx.delivered, tx.delivered_time), (10_000, ms(59)));
        assert_eq!(tx.first_sent_time, ms(0));
    }

    #[test]
    fn an_interval_below_the_min_rtt_is_no_sample_and_app_limited_marks_last_a_flight() {
        let mut rate = DeliveryRate::default();
        let tx = rate.on_send(ms(0), true);
        let newest = Delivered {
            sent_at: ms(0),
            end: 1000,
            tx,
        };
        let s = rate.on_ack(ms(10), 1000, Some(newest), Duration::from_millis(40));
        assert_eq!((s.delivered, s.interval), (None, None));
        assert_eq!(s.prior_delivered, Some(0));
        rate.mark_app_limited(3000);
        assert!(rate.on_send(ms(11), false).app_limited);
        // Once more than the 3000 bytes then in flight are delivered, the mark is gone.
        rate.on_ack(ms(60), 4000, None, Duration::from_millis(40));
        assert!(!rate.on_send(ms(61), false).app_limited);
    }
}
