//! `ns3 = true` reproduces ns-3 3.44's `TcpHtcp` (src/internet/model/tcp-htcp.cc) where it
//! departs from the published algorithm; the default (0) is the published algorithm. Under it:
//! - the increase is alpha **bytes** plus Reno's mss²/cwnd per ACK, truncated to whole bytes and
//!   at least one (tcp-htcp.cc `CongestionAvoidance`: `(mss * mss + cwnd * alpha) / cwnd`), not
//!   alpha segments per RTT; alpha is at least 1 after the 2 (1 - beta) scaling (`UpdateAlpha`),
//!   and beta is 0 before the first backoff (the constructor's `m_beta(0)`);
//! - beta is 0.5 (`DefaultBackoff`, here `beta_min`) unless the epoch's throughput (bytes
//!   acknowledged in the Open state, not in recovery nor in a timeout's loss state, over the
//!   time since the last backoff) rose against the last epoch's, by less than 100 %:
//!   `UpdateBeta` tests `diff / m_lastThroughput <= 0.2` on two `uint32_t`, so the quotient is
//!   an integer and only 0 passes. Then beta = RTTmin / RTTmax, **not clamped** to
//!   [beta_min, beta_max];
//! - RTTmin and RTTmax are those of the smoothed RTT on every ACK, in recovery too (ns-3 hands
//!   every control `m_srtt`, tcp-socket-base.cc:2136 and the other `PktsAcked` calls);
//! - ssthresh is beta times the bytes in flight (`GetSsThresh(tcb, bytesInFlight)`), not the
//!   window, truncated to whole bytes, at least 2 segments; the bytes in flight are ns-3's
//!   `BytesInFlight()`, the pipe (neither SACKed nor deemed lost), on a fast retransmit
//!   (tcp-socket-base.cc:1715-1717) and on a timeout (:3916), not FlightSize; and the ACK that
//!   ends a timeout's loss state counts only the segments above the recovery point
//!   (tcp-socket-base.cc:2226), usually none ([`CongestionControl::ns3_socket`]);
//! - the first epoch starts at time zero of the simulation (`m_lastCon(0)`), not at the first ACK.
//!
//! `bandwidth_switch` has no effect under `ns3 = 1` (ns-3 has no such switch).

use super::Htcp;
use crate::cc::AckSample;
use qstp_proto::Time;

impl Htcp {
    /// ns-3 3.44 tcp-htcp.cc `UpdateBeta`: `DefaultBackoff` (here `beta_min`), unless the
    /// epoch's throughput rose and `diff / m_lastThroughput <= m_throughputRatio` (0.2) with
    /// `diff` and `m_lastThroughput` both `uint32_t`: the integer quotient is 0 for any rise of
    /// less than 100 %, and only then beta = RTTmin / RTTmax, unclamped.
    pub(super) fn update_beta_ns3(&mut self) {
        self.beta = self.beta_min;
        if self.throughput > self.last_throughput && self.last_throughput > 0.0 {
            let quotient =
                ((self.throughput - self.last_throughput) / self.last_throughput).floor();
            if quotient <= 0.2 {
                if let (Some(min), Some(max)) = (self.rtt_min, self.rtt_max) {
                    if !max.is_zero() {
                        self.beta = min.as_secs_f64() / max.as_secs_f64();
                    }
                }
            }
        }
    }

    /// ns-3 3.44 tcp-htcp.cc `PktsAcked` (called on every ACK, in any state, with the smoothed
    /// RTT): RTTmin and RTTmax of the srtt, and the epoch's throughput so far, whole bytes per
    /// second of data acknowledged in the Open state (`open_bytes`) since the last backoff.
    pub(super) fn pkts_acked_ns3(&mut self, sample: &AckSample, open_bytes: u64) {
        self.data_sent += open_bytes as f64;
        if let Some(last) = self.last_congestion {
            let elapsed = sample.now.saturating_since(last).as_secs_f64();
            if elapsed > 0.0 {
                self.throughput = (self.data_sent / elapsed).floor();
            }
        }
        if !sample.srtt.is_zero() {
            let srtt = sample.srtt;
            self.rtt_min = Some(self.rtt_min.map_or(srtt, |m| m.min(srtt)));
            self.rtt_max = Some(self.rtt_max.map_or(srtt, |m| m.max(srtt)));
        }
    }

    /// ns-3 3.44 tcp-htcp.cc `CongestionAvoidance`, bytes added per ACK: alpha (at least 1,
    /// `UpdateAlpha`) taken as bytes, plus mss²/cwnd, at least 1, truncated to whole bytes.
    pub(super) fn ns3_increase(&self, now: Time) -> f64 {
        let alpha = self.alpha(now).max(1.0);
        ((self.mss * self.mss + self.cwnd * alpha) / self.cwnd)
            .max(1.0)
            .floor()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ack, at, secs, MSS};
    use super::super::Htcp;
    use crate::cc::AckSample;
    use crate::CongestionControl;
    use qstp_proto::Duration;

    /// An ACK of two segments (ns-3's delayed ACK) at `t` s with smoothed RTT `srtt_ms` and a
    /// sample of 100 ms.
    fn ack2(t: f64, srtt_ms: u64) -> AckSample {
        AckSample {
            acked_bytes: 2 * MSS,
            srtt: Duration::from_millis(srtt_ms),
            ..ack(secs(t), Some(100))
        }
    }

    #[test]
    fn ns3_adds_alpha_bytes_per_ack() {
        // ns-3 tcp-htcp.cc CongestionAvoidance: 3 s into the epoch, beta 0.5, alpha = 22; at
        // 1000 segments an ACK of 2 segments adds (1000² + 1e6 x 22) / 1e6 = 23 bytes. The
        // published rule adds alpha segments per window: 22 x 1000 x 2000 / 1e6 = 44 bytes.
        for (ns3, added) in [(true, 23), (false, 44)] {
            let mut cc = at(1000);
            cc.ns3 = ns3;
            cc.beta = 0.5;
            cc.on_ack(&ack2(3.0, 200));
            assert_eq!(cc.cwnd() - 1000 * MSS, added, "ns3 = {ns3}");
        }
        // ns-3 UpdateAlpha: alpha at least 1 after the scaling; beta 0.99 scales 22 down to
        // 0.44, raised to 1, and the Reno part, 1000² / 1e6, makes 2 bytes.
        let mut cc = at(1000);
        cc.ns3 = true;
        cc.beta = 0.99;
        cc.on_ack(&ack2(3.0, 200));
        assert_eq!(cc.cwnd() - 1000 * MSS, 2);
    }

    /// An ns-3-compatible H-TCP in congestion avoidance at 1000 segments.
    fn ns3_at_1000() -> Htcp {
        let mut cc = Htcp::new(MSS as u32, 1.0, 0.5, 0.8).ns3();
        cc.init(1000 * MSS, 2 * MSS);
        cc
    }

    #[test]
    fn ns3_backoff_follows_the_epoch_throughput_unclamped() {
        // ns-3 tcp-htcp.cc UpdateBeta. Each epoch acknowledges `acks` ACKs of 2 segments over
        // 1 s in the Open state, with smoothed RTTs 200 and 210 ms: beta is 200/210 = 0.952
        // (not clamped to 0.8) when the epoch's throughput rose by less than 100 %, else 0.5.
        let mut cc = ns3_at_1000();
        let mut t = 0.0;
        let mut epoch = |cc: &mut Htcp, acks: u32| {
            for i in 0..acks {
                let srtt = if i % 2 == 0 { 200 } else { 210 };
                cc.on_ack(&ack2(t + f64::from(i + 1) / f64::from(acks), srtt));
            }
            t += 1.0;
            cc.on_congestion_event(secs(t), 1000 * MSS);
            cc.beta()
        };
        let ratio = 200.0 / 210.0;
        // The first backoff: no last throughput, 0.5.
        assert_eq!(epoch(&mut cc, 100), 0.5);
        // Up by 50 %: the RTT ratio, unclamped.
        assert!((epoch(&mut cc, 150) - ratio).abs() < 1e-9);
        // Down: 0.5.
        assert_eq!(epoch(&mut cc, 140), 0.5);
        // Up by 100 % or more (integer quotient 1 > 0.2): 0.5.
        assert_eq!(epoch(&mut cc, 280), 0.5);
        // Up by 99 %: the RTT ratio again.
        assert!((epoch(&mut cc, 557) - ratio).abs() < 1e-9);
        // The published rule would have clamped it to beta_max.
        assert!(ratio > 0.8);
    }

    #[test]
    fn ns3_counts_no_throughput_in_a_timeouts_loss_state() {
        // ns-3 tcp-htcp.cc PktsAcked adds to m_dataSent only in CA_OPEN, and the socket calls
        // it in CA_LOSS too (tcp-socket-base.cc:2136). A second epoch of 150 ACKs, 50 % more
        // than the first, rises (beta = RTTmin / RTTmax) if all are in the Open state; if 100
        // of them come in a timeout's loss state its throughput fell (beta = 0.5).
        let ratio = 200.0 / 210.0;
        for (in_loss, beta) in [(0, ratio), (100, 0.5)] {
            let mut cc = ns3_at_1000();
            for i in 0..100 {
                cc.on_ack(&ack2(f64::from(i + 1) / 100.0, 200));
            }
            cc.on_congestion_event(secs(1.0), 1000 * MSS);
            for i in 0..150 {
                let sample = ack2(1.0 + f64::from(i + 1) / 150.0, 200 + 10 * (i % 2) as u64);
                if i < in_loss {
                    cc.on_ack_in_loss(&sample);
                } else {
                    cc.on_ack(&sample);
                }
            }
            cc.on_congestion_event(secs(2.0), 1000 * MSS);
            assert!((cc.beta() - beta).abs() < 1e-9, "{in_loss}: {}", cc.beta());
        }
    }

    #[test]
    fn ns3_takes_the_smoothed_rtt_and_backs_off_from_the_bytes_in_flight() {
        // An epoch with about 65 % more throughput than the first: beta = RTTmin / RTTmax of
        // the srtt (180 / 240), whatever the samples (always 100 ms here); and ssthresh =
        // beta x bytes in flight (900 segments), not x cwnd (1000 segments).
        let mut cc = ns3_at_1000();
        for i in 0..100 {
            cc.on_ack(&ack2(0.5 + f64::from(i) / 100.0, 200));
        }
        cc.on_congestion_event(secs(1.5), 1000 * MSS);
        for (i, srtt) in (0..110).zip([180, 240].into_iter().cycle()) {
            cc.on_ack(&ack2(1.5 + f64::from(i) / 110.0, srtt));
        }
        cc.on_congestion_event(secs(2.5), 900 * MSS);
        assert!((cc.beta() - 0.75).abs() < 1e-9, "{}", cc.beta());
        assert_eq!(cc.ssthresh(), 675 * MSS);
        // In recovery too the srtt counts: 250 ms there makes the next beta 200 / 250.
        for i in 0..121 {
            cc.on_ack(&ack2(2.5 + f64::from(i) / 121.0, 200));
        }
        cc.on_ack_in_recovery(&ack2(3.495, 250));
        cc.on_congestion_event(secs(3.5), 1000 * MSS);
        assert!((cc.beta() - 0.8).abs() < 1e-9, "{}", cc.beta());
    }

    #[test]
    fn ns3_epochs_start_at_time_zero_and_beta_starts_at_zero() {
        // ns-3 tcp-htcp.cc: m_lastCon(0) and m_beta(0). A flow whose first ACK comes at 5 s is
        // already 4 s past Delta_L: alpha = (1 + 40 + 4) x 2 (1 - 0) = 90 bytes per ACK.
        let mut cc = ns3_at_1000();
        cc.on_ack(&ack2(5.0, 200));
        assert_eq!(cc.cwnd() - 1000 * MSS, 91);
        // The published form starts the epoch at the first ACK: alpha 1 segment per window.
        let mut cc = Htcp::new(MSS as u32, 1.0, 0.5, 0.8);
        cc.init(1000 * MSS, 2 * MSS);
        cc.on_ack(&ack2(5.0, 200));
        assert_eq!(cc.cwnd() - 1000 * MSS, 2);
    }
}
