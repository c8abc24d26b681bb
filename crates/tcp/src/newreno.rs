//! NewReno congestion control: RFC 5681 slow start and congestion avoidance, halving on loss.
//!
//! Recovery itself (which segment to resend, partial ACKs) lives in the sender; this is only the
//! window arithmetic that later variants replace.

use super::{AckSample, CongestionControl, Registered};
use qstp_proto::Time;

/// Registry entry.
pub(super) const ENTRY: Registered = Registered {
    name: "newreno",
    aliases: &["reno"],
    doc: "RFC 5681 slow start and congestion avoidance, RFC 6582 recovery",
    params: &[],
    build: |mss, _| Box::new(NewReno::new(mss)),
};

/// The standard TCP window: +1 MSS per ACK in slow start, +MSS²/cwnd per ACK in congestion
/// avoidance, halved on a congestion event, one segment after a timeout.
#[derive(Debug, Clone)]
pub struct NewReno {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
}

impl NewReno {
    /// NewReno for segments of `mss` bytes, with a two-segment window until `init` sets one.
    pub fn new(mss: u32) -> Self {
        let mss = u64::from(mss.max(1));
        // RFC 5681 §3.1: ssthresh starts arbitrarily high.
        NewReno {
            mss,
            cwnd: 2 * mss,
            ssthresh: u64::MAX,
        }
    }

    /// RFC 5681 §3.1 eq. (4): ssthresh = max(FlightSize / 2, 2 * SMSS).
    fn halved(&self, flight_size: u64) -> u64 {
        (flight_size / 2).max(2 * self.mss)
    }
}

impl CongestionControl for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn reno_min_cwnd(&self) -> bool {
        // ns-2.35 tcp/linux/src/tcp_cong.c: `.min_cwnd = tcp_reno_min_cwnd`.
        true
    }

    fn init(&mut self, initial_cwnd: u64, initial_ssthresh: u64) {
        self.cwnd = initial_cwnd.max(self.mss);
        self.ssthresh = initial_ssthresh.max(2 * self.mss);
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, sample: &AckSample) {
        if self.cwnd < self.ssthresh {
            // RFC 5681 §3.1 eq. (2): cwnd += min(N, SMSS).
            self.cwnd += sample.acked_bytes.min(self.mss);
        } else {
            // RFC 5681 §3.1 eq. (3): cwnd += SMSS * SMSS / cwnd, at least one byte.
            self.cwnd += (self.mss * self.mss / self.cwnd.max(1)).max(1);
        }
    }

    fn on_congestion_event(&mut self, _now: Time, in_flight: u64) {
        self.ssthresh = self.halved(in_flight);
        // RFC 6675 §5 step (4.2): cwnd = ssthresh; the sender's pipe estimate does the rest.
        self.cwnd = self.ssthresh;
    }

    fn on_recovery_end(&mut self, _now: Time) {
        // RFC 6582 §3.2 step 3: on a full ACK, cwnd = ssthresh.
        self.cwnd = self.ssthresh;
    }

    fn on_retransmission_timeout(&mut self, _now: Time, in_flight: u64) {
        self.ssthresh = self.halved(in_flight);
        // RFC 5681 §3.1: after a timeout cwnd is the loss window, one segment.
        self.cwnd = self.mss;
    }
}

#[cfg(test)]
mod tests {
    use super::super::cc::testkit::ack_bytes as ack;
    use super::*;

    #[test]
    fn slow_start_then_congestion_avoidance() {
        let mut cc = NewReno::new(1000);
        cc.init(2000, 8000);
        assert!(cc.in_slow_start());
        // Each ACK of one segment adds one segment; an ACK of two still adds one (RFC 5681).
        cc.on_ack(&ack(1000));
        cc.on_ack(&ack(2000));
        assert_eq!(cc.cwnd(), 4000);
        for _ in 0..4 {
            cc.on_ack(&ack(1000));
        }
        assert_eq!(cc.cwnd(), 8000);
        assert!(!cc.in_slow_start());
        // One window of ACKs in congestion avoidance adds about one segment.
        for _ in 0..8 {
            cc.on_ack(&ack(1000));
        }
        assert!((8900..=9000).contains(&cc.cwnd()), "{}", cc.cwnd());
    }

    #[test]
    fn loss_halves_and_timeout_collapses() {
        let mut cc = NewReno::new(1000);
        cc.init(20_000, u64::MAX);
        cc.on_congestion_event(Time::ZERO, 20_000);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (10_000, 10_000));
        cc.on_recovery_end(Time::ZERO);
        assert_eq!(cc.cwnd(), 10_000);
        cc.on_retransmission_timeout(Time::ZERO, 3_000);
        // ssthresh = max(1500, 2 * MSS).
        assert_eq!((cc.cwnd(), cc.ssthresh()), (1_000, 2_000));
    }
}
