//! `ns3 = true` reproduces ns-3 3.44's `TcpBic` (src/internet/model/tcp-bic.cc) where it departs
//! from Linux; the default (0) is Linux's. Under it:
//! - fast convergence sets `last_max` to beta x the window, not (1 + beta) / 2 x it
//!   (`GetSsThresh`: `m_lastMaxCwnd = m_beta * segCwnd`), truncated to whole segments;
//! - below `low_window` ssthresh is half the bytes in flight, at least 2 segments, not half the
//!   window (`GetSsThresh`); the standard-TCP region is below `low_window`, not at or below it;
//!   the bytes in flight are ns-3's `BytesInFlight()`, the pipe, not FlightSize
//!   (tcp-socket-base.cc:1715-1717, :3963), and the ACK that ends a timeout's loss state counts
//!   only the segments above the recovery point (:2226) ([`CongestionControl::ns3_socket`]);
//! - the binary search's distance is fractional (`double dist = (m_lastMaxCwnd - segCwnd) / m_b`)
//!   and `cnt` is the window over it, truncated;
//! - one segment is added once *more than* `cnt` segments were acknowledged, and the count then
//!   starts again from zero, whatever was left over (`IncreaseWindow`: `m_cWndCnt > cnt`,
//!   `m_cWndCnt = 0`); in slow start each ACK adds one segment and the segments it acknowledged
//!   beyond the first count towards congestion avoidance once the window reaches ssthresh;
//! - a timeout keeps `last_max` (`TcpBic` has no `CongestionStateSet`, Linux `bictcp_state`
//!   resets it);
//! - the ACK that ends fast recovery counts its whole cumulative advance (tcp-socket-base.cc
//!   `ProcessAck` -> `IncreaseWindow`).
//!
//! ns-3's `Beta` is 0.8 and `SmoothPart` 5, Linux's 819/1024 and 20: parameters, not `ns3`.
use super::Bic;
use crate::cc::AckSample;

impl Bic {
    /// tcp-bic.cc `IncreaseWindow`: in slow start one segment per ACK, the segments it
    /// acknowledged beyond the first counting towards congestion avoidance.
    pub(super) fn on_ack_ns3(&mut self, sample: &AckSample) {
        let mut segments = sample.acked_bytes / self.mss;
        if self.cwnd < self.ssthresh {
            // tcp-bic.cc: one segment per ACK; the rest may count in congestion avoidance.
            self.cwnd += self.mss;
            segments = segments.saturating_sub(1);
        }
        self.increase_ns3(segments);
    }

    /// A timeout: no CongestionStateSet in tcp-bic.cc, so last_max survives it.
    pub(super) fn on_timeout_ns3(&mut self, in_flight: u64) {
        self.ssthresh = self.on_loss_ns3(in_flight);
        self.cwnd = self.mss;
    }

    /// The ACK that ends fast recovery: tcp-socket-base.cc `ProcessAck` hands
    /// `segsAcked = (ackNumber - oldHeadSequence) / m_segmentSize` to `IncreaseWindow`.
    pub(super) fn on_recovery_exit_ack_ns3(&mut self, advanced: u64) {
        self.increase_ns3(advanced / self.mss);
    }

    /// ns-3 3.44 tcp-bic.cc `IncreaseWindow` in congestion avoidance: one segment once more than
    /// `cnt` were acknowledged, the count restarting from zero.
    pub(super) fn increase_ns3(&mut self, segments: u64) {
        if self.cwnd < self.ssthresh || segments == 0 {
            return;
        }
        self.cwnd_cnt += segments;
        if self.cwnd_cnt > self.cnt(self.segments()) {
            self.cwnd += self.mss;
            self.cwnd_cnt = 0;
        }
    }

    /// ns-3 3.44 tcp-bic.cc `GetSsThresh`: `last_max` (fast convergence to beta x the window)
    /// and the new ssthresh, from the window or, below `low_window`, half the bytes in flight.
    pub(super) fn on_loss_ns3(&mut self, in_flight: u64) -> u64 {
        let w = self.segments();
        self.last_max = if w < self.last_max {
            (self.beta * w as f64) as u64
        } else {
            w
        };
        if w < self.low_window {
            (in_flight / 2).max(2 * self.mss)
        } else {
            ((w as f64 * self.beta).max(2.0) * self.mss as f64) as u64
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::Bic;
    use crate::cc::testkit::ack_bytes as ack;
    use crate::CongestionControl;
    use qstp_proto::Time;

    const MSS: u64 = 1000;

    pub(in crate::bic) fn ns3_at(w: u64) -> Bic {
        let mut cc = Bic {
            ns3: true,
            ..Bic::new(MSS as u32, 0.8, 16.0, 14.0, 5.0)
        };
        cc.init(w * MSS, 2 * MSS);
        cc
    }

    #[test]
    fn ns3_fast_convergence_takes_beta_of_the_window() {
        let mut cc = ns3_at(1000);
        cc.on_congestion_event(Time::ZERO, 1000 * MSS);
        assert_eq!((cc.last_max, cc.ssthresh()), (1000, 800 * MSS));
        cc.cwnd = 900 * MSS;
        cc.on_congestion_event(Time::ZERO, 900 * MSS);
        // tcp-bic.cc: 0.8 x 900 = 720, where Linux takes 900 x 1.8 / 2 = 810.
        assert_eq!((cc.last_max, cc.ssthresh()), (720, 720 * MSS));
    }

    #[test]
    fn ns3_counts_more_than_cnt_then_restarts_from_zero() {
        let mut cc = ns3_at(1000);
        cc.on_congestion_event(Time::ZERO, 1000 * MSS);
        cc.on_recovery_end(Time::ZERO);
        // 200 below last_max: dist 50 > 16, cnt = 800 / 16 = 50. Delayed ACKs of 2 segments:
        // the count passes 50 at 52, so 26 ACKs per segment (Linux: 25, the extra carried).
        let mut acks = 0;
        while cc.cwnd() == 800 * MSS {
            cc.on_ack(&ack(2 * MSS));
            acks += 1;
        }
        assert_eq!((acks, cc.cwnd_cnt), (26, 0));
        // Near last_max the distance is fractional: 990 is 2.5 short, cnt = 990 / 2.5 = 396
        // (Linux: dist 2, cnt 495).
        assert_eq!(cc.cnt(990), 396);
    }

    #[test]
    fn ns3_timeout_keeps_last_max_and_small_windows_halve_the_flight() {
        let mut cc = ns3_at(1000);
        cc.on_retransmission_timeout(Time::ZERO, 1000 * MSS);
        assert_eq!(
            (cc.cwnd(), cc.ssthresh(), cc.last_max),
            (MSS, 800 * MSS, 1000)
        );
        let mut cc = ns3_at(10);
        cc.on_congestion_event(Time::ZERO, 7 * MSS);
        assert_eq!(cc.ssthresh(), 3 * MSS + MSS / 2);
    }

    #[test]
    fn ns3_recovery_exit_counts_the_whole_advance() {
        let mut cc = ns3_at(1000);
        cc.on_congestion_event(Time::ZERO, 1000 * MSS);
        cc.on_recovery_end(Time::ZERO);
        cc.on_recovery_exit_ack(Time::ZERO, 60 * MSS);
        assert_eq!((cc.cwnd(), cc.cwnd_cnt), (801 * MSS, 0));
    }
}
