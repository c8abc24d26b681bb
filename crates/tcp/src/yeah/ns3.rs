//! `ns3 = true` reproduces ns-3 3.44's `TcpYeah` (src/internet/model/tcp-yeah.cc) where it departs
//! from the paper and Linux; the default (0) follows the paper and Linux. Under it:
//! - slow mode as soon as the round's RTT exceeds the base RTT at all: ns-3 tests
//!   `L > (1 / m_phy)` (tcp-yeah.cc:250) with `m_phy` a `uint32_t` (tcp-yeah.h:158), so with
//!   phy = 8 the threshold is the integer 1 / 8 = 0, not 1/8 of the base RTT (with phy = 1 it is
//!   1, a queueing delay of a whole base RTT);
//! - the RTTs are the smoothed RTT on every ACK (ns-3 hands every control `m_srtt`,
//!   tcp-socket-base.cc:2136 and the other `PktsAcked` calls), so the base RTT is the smallest
//!   srtt and a round's RTT its smallest srtt;
//! - the queue estimate is truncated to whole packets from the window in whole segments
//!   (`static_cast<uint32_t>(bw * rttQueue)`, `GetCwndInSegments()`);
//! - slow mode grows as ns-3's NewReno: mss²/cwnd bytes per ACK, at least 1, truncated to whole
//!   bytes (tcp-newreno.cc `CongestionAvoidance`), whatever the ACK covers: half a segment per
//!   RTT with delayed ACKs, where Linux's `tcp_cong_avoid_ai` adds one per window acknowledged;
//! - a loss reduces from the bytes in flight, not the window (`GetSsThresh(tcb,
//!   bytesInFlight)`), the reduction bounded below by in-flight / 2^delta before it is bounded
//!   above by half (Linux bounds in the other order); the bytes in flight are ns-3's
//!   `BytesInFlight()`, the pipe (neither SACKed nor deemed lost), on a fast retransmit
//!   (tcp-socket-base.cc:1715-1717) and on a timeout (:3916), not FlightSize; and the ACK that
//!   ends a timeout's loss state counts only the segments above the recovery point
//!   (tcp-socket-base.cc:2226), usually none ([`CongestionControl::ns3_socket`]);
//! - the per-round block runs only where ns-3 calls `IncreaseWindow` (not in fast recovery),
//!   and leaving recovery starts a new round (`CongestionStateSet(CA_OPEN)` -> `EnableYeah`).

use super::Yeah;

impl Yeah {
    /// ns-3 3.44 tcp-yeah.cc `GetSsThresh`: the reduction in whole segments of the bytes in
    /// flight (`segBytesInFlight`), at least in-flight >> delta and then at most half; the
    /// threshold is the bytes in flight less the reduction, at least 2 segments.
    pub(super) fn after_loss_ns3(&mut self, in_flight: u64) -> f64 {
        let flight = (in_flight / self.mss) as f64;
        let half = (flight / 2.0).floor().max(2.0);
        let reduction = if self.slow_rounds < self.rho {
            self.last_queue
                .max((flight / f64::from(1u32 << self.delta)).floor())
                .min(half)
        } else {
            half
        };
        self.fast_rounds = 0;
        self.reno_count = (self.reno_count / 2.0).floor().max(2.0);
        (in_flight as f64 / self.mss as f64 - reduction).max(2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{yeah_at, MSS};
    use super::super::Yeah;
    use crate::cc::testkit::run_rounds;
    use crate::cc::{AckSample, RoundSample};
    use crate::CongestionControl;
    use qstp_proto::{Duration, Time};

    fn ns3_at(w: u64) -> Yeah {
        let mut cc = Yeah::new(MSS as u32).ns3();
        cc.init(w * MSS, w * MSS);
        cc
    }

    /// An ACK of `segments` at `now` with RTT sample `rtt_ms` and smoothed RTT `srtt_ms`.
    fn ack_srtt(now: Time, segments: u64, rtt_ms: u64, srtt_ms: u64) -> AckSample {
        AckSample {
            srtt: Duration::from_millis(srtt_ms),
            ..crate::cc::testkit::ack(now, MSS, segments, Duration::from_millis(rtt_ms))
        }
    }

    /// A round of `acks` ACKs, then its end.
    fn round(cc: &mut Yeah, acks: u32, rtt_ms: u64, srtt_ms: u64) {
        for _ in 0..acks {
            cc.on_ack(&ack_srtt(Time::ZERO, 1, rtt_ms, srtt_ms));
        }
        cc.on_round(&round_sample());
    }

    fn round_sample() -> RoundSample {
        let rtt = Duration::from_millis(100);
        RoundSample {
            now: Time::ZERO,
            duration: rtt,
            acked_bytes: 0,
            min_rtt: Some(rtt),
            max_rtt: Some(rtt),
            rtt_samples: 0,
            base_rtt: rtt,
            srtt: rtt,
        }
    }

    #[test]
    fn ns3_any_queueing_delay_is_slow_mode() {
        // 2 ms of queueing on a 100 ms base, a queue of about 20 packets: below base / 8 and
        // alpha, so fast mode; ns-3's integer 1 / m_phy = 0 makes it slow mode (tcp-yeah.cc:250).
        // With phy = 1 ns-3's threshold is 1 (a whole base RTT) and it stays fast.
        for (cc, fast) in [
            (yeah_at(1000), true),
            (ns3_at(1000), false),
            (
                Yeah {
                    phy: 1.0,
                    ..ns3_at(1000)
                },
                true,
            ),
        ] {
            let mut cc = cc;
            run_rounds(&mut cc, MSS, Time::ZERO, 1, Duration::from_millis(100));
            run_rounds(&mut cc, MSS, Time::ZERO, 1, Duration::from_millis(102));
            assert_eq!(cc.fast_mode(), fast, "ns3 = {}, phy = {}", cc.ns3, cc.phy);
        }
    }

    #[test]
    fn ns3_measures_the_queue_on_the_smoothed_rtt() {
        // Every sample is the 100 ms base, but the srtt rises to 110 ms in the second round:
        // ns-3 sees 10 ms of queueing, about 92 packets > alpha, and decongests.
        for (mut cc, fast) in [
            (yeah_at(1000), true),
            (
                Yeah {
                    phy: 1.0,
                    ..ns3_at(1000)
                },
                false,
            ),
        ] {
            round(&mut cc, 1000, 100, 100);
            let before = cc.cwnd() / MSS;
            round(&mut cc, 1010, 100, 110);
            assert_eq!(cc.fast_mode(), fast, "ns3 = {}", cc.ns3);
            assert_eq!(cc.cwnd() / MSS < before, !fast, "ns3 = {}", cc.ns3);
        }
    }

    #[test]
    fn ns3_truncates_the_queue_estimate() {
        // cwnd 1000 and a round 8.7549 ms above the 100 ms base: a queue of 80.5 packets, above
        // alpha = 80 (decongestion), or 80 under ns-3's uint32 cast (none). phy = 1 keeps the
        // delay test out of it.
        for (mut cc, decongests) in [(yeah_at(1000), true), (ns3_at(1000), false)] {
            cc.phy = 1.0;
            cc.base_rtt = Some(Duration::from_millis(100));
            cc.round_min = Some(Duration::from_nanos(108_754_894));
            cc.round_samples = 3;
            cc.on_round(&round_sample());
            assert_eq!(cc.cwnd() < 1000 * MSS, decongests, "ns3 = {}", cc.ns3);
        }
    }

    #[test]
    fn ns3_slow_mode_adds_mss_squared_over_cwnd_per_ack() {
        // 100 segments in slow mode, 50 ACKs of 2 segments (one window with delayed ACKs):
        // ns-3's NewReno adds 10 bytes for the first ACK, then 9 (1e6 / 100010 truncated):
        // 0.451 segment. Linux's tcp_cong_avoid_ai adds one segment per window acknowledged.
        for (mut cc, grown) in [(yeah_at(100), 1.0), (ns3_at(100), 0.451)] {
            cc.slow_rounds = 1;
            for _ in 0..50 {
                cc.on_ack(&ack_srtt(Time::ZERO, 2, 100, 100));
            }
            assert!(
                (cc.cwnd - 100.0 - grown).abs() < 0.01,
                "ns3 = {}: {}",
                cc.ns3,
                cc.cwnd
            );
        }
    }

    #[test]
    fn ns3_reduces_from_the_bytes_in_flight() {
        // No queue: the reduction is its floor, 1/8; of the 800 segments in flight under ns-3
        // (tcp-yeah.cc GetSsThresh: 800 - 100), of the 1000-segment window otherwise.
        for (mut cc, after) in [(yeah_at(1000), 875), (ns3_at(1000), 700)] {
            cc.on_congestion_event(Time::ZERO, 800 * MSS);
            assert_eq!(cc.ssthresh() / MSS, after, "ns3 = {}", cc.ns3);
        }
    }

    #[test]
    fn ns3_rounds_pause_in_recovery_and_restart_after_it() {
        // A round ending in fast recovery with 20 ms of queueing turns Linux's YeAH to slow
        // mode, not ns-3's (no IncreaseWindow in recovery).
        for (mut cc, fast) in [
            (yeah_at(1000), false),
            (
                Yeah {
                    phy: 1.0,
                    ..ns3_at(1000)
                },
                true,
            ),
        ] {
            round(&mut cc, 1000, 100, 100);
            cc.on_congestion_event(Time::ZERO, 1000 * MSS);
            for _ in 0..10 {
                cc.on_ack_in_recovery(&ack_srtt(Time::ZERO, 1, 120, 120));
            }
            cc.on_round(&round_sample());
            assert_eq!(cc.fast_mode(), fast, "ns3 = {}", cc.ns3);
        }
        // Samples from recovery do not count in the first round after it (EnableYeah): 100 ms
        // in recovery, 115 ms after (a queue of about 114 packets > alpha) is a long queue.
        let mut cc = Yeah {
            phy: 1.0,
            ..ns3_at(1000)
        };
        round(&mut cc, 1000, 100, 100);
        cc.on_congestion_event(Time::ZERO, 1000 * MSS);
        for _ in 0..10 {
            cc.on_ack_in_recovery(&ack_srtt(Time::ZERO, 1, 100, 100));
        }
        cc.on_recovery_end(Time::ZERO);
        round(&mut cc, 900, 115, 115);
        assert!(!cc.fast_mode());
    }
}
