//! YeAH-TCP (Baiocchi, Castellani and Vacirca, "YeAH-TCP: Yet Another Highspeed TCP", PFLDnet
//! 2007): a "fast" mode that grows like Scalable TCP while the estimated queue is short, a
//! "slow" mode that grows like Reno when it is long, precautionary decongestion that drains the
//! queue it estimates, and a loss reduction sized to that queue.
//!
//! Constants and the per-round logic follow Linux `tcp_yeah.c` (alpha 80 packets, gamma 1, delta
//! 3, epsilon 1, phy 8, rho 16, zeta 50; Scalable increase of one segment per 100 acknowledged).
//! The round's RTT is its smallest sample, as in Linux's Vegas machinery.
//!
//! `ns3 = true` follows ns-3 3.44's `TcpYeah` instead where it departs from the paper and Linux:
//! [`ns3`] says where and holds its reduction rule, each with its tcp-yeah.cc line.

use super::cc::segments;
use super::{AckSample, CongestionControl, Param, ParamKind, Params, Registered, RoundSample};
use qstp_proto::{Duration, Time};

mod ns3;

/// Registry entry.
pub(super) const ENTRY: Registered = Registered {
    name: "yeah",
    aliases: &[],
    doc: "YeAH-TCP (Baiocchi et al.): Scalable-fast or Reno-slow mode from the queue estimate, precautionary decongestion",
    params: &[
        // Linux tcp_yeah.c TCP_YEAH_ALPHA = 80: largest queue (packets) tolerated.
        Param { name: "alpha", kind: ParamKind::Integer, default: 80.0, min: 1.0, max: 1e6, doc: "queue (packets) above which it decongests" },
        // Linux tcp_yeah.c TCP_YEAH_PHY = 8: queueing delay above base_rtt / phy means congestion.
        Param { name: "phy", kind: ParamKind::Real, default: 8.0, min: 1.0, max: 1000.0, doc: "slow mode when the queueing delay exceeds base RTT / phy" },
        // Linux tcp_yeah.c TCP_YEAH_EPSILON = 1: decongestion takes at most cwnd / 2^epsilon.
        Param { name: "epsilon", kind: ParamKind::Integer, default: 1.0, min: 0.0, max: 10.0, doc: "precautionary decongestion removes at most cwnd / 2^epsilon" },
        // Linux tcp_yeah.c TCP_YEAH_DELTA = 3: a loss removes at least cwnd / 2^delta.
        Param { name: "delta", kind: ParamKind::Integer, default: 3.0, min: 0.0, max: 10.0, doc: "a loss in fast mode removes at least cwnd / 2^delta" },
        // Linux tcp_yeah.c TCP_YEAH_RHO = 16.
        Param { name: "rho", kind: ParamKind::Integer, default: 16.0, min: 0.0, max: 1e6, doc: "slow rounds after which a loss halves as Reno" },
        // Linux tcp_yeah.c TCP_YEAH_ZETA = 50.
        Param { name: "zeta", kind: ParamKind::Integer, default: 50.0, min: 1.0, max: 1e6, doc: "fast rounds after which the Reno window estimate restarts" },
        // Not in the paper or Linux: ns-3 3.44 tcp-yeah.cc's own rules (module notes).
        Param { name: "ns3", kind: ParamKind::Flag, default: 0.0, min: 0.0, max: 1.0, doc: "1: ns-3 3.44's TcpYeah (integer 1/phy, smoothed RTT, NewReno per-ACK slow mode); 0: paper and Linux" },
    ],
    build: |mss, p: &Params| {
        Box::new(Yeah {
            alpha: f64::from(p.integer("alpha")),
            phy: p.real("phy"),
            epsilon: p.integer("epsilon"),
            delta: p.integer("delta"),
            rho: p.integer("rho"),
            zeta: p.integer("zeta"),
            ns3: p.flag("ns3"),
            ..Yeah::new(mss)
        })
    },
};

/// Linux tcp_yeah.c / tcp_scalable.c TCP_SCALABLE_AI_CNT: fast mode adds one segment per 100
/// acknowledged.
const SCALABLE_AI_CNT: f64 = 100.0;
/// Linux tcp_yeah.c TCP_YEAH_GAMMA = 1: decongestion removes queue / gamma.
const GAMMA: f64 = 1.0;
/// Linux tcp_yeah.c: the queue estimate needs more than 2 RTT samples in the round.
const MIN_SAMPLES: u32 = 3;

/// YeAH-TCP.
#[derive(Debug, Clone)]
pub struct Yeah {
    mss: u64,
    alpha: f64,
    phy: f64,
    epsilon: u32,
    delta: u32,
    rho: u32,
    zeta: u32,
    /// Window and threshold, segments.
    cwnd: f64,
    ssthresh: f64,
    base_rtt: Option<Duration>,
    round_min: Option<Duration>,
    round_samples: u32,
    /// Linux `doing_reno_now`: rounds in slow mode (0 = fast mode).
    slow_rounds: u32,
    /// Linux `reno_count`: the window Reno would have.
    reno_count: f64,
    /// Linux `fast_count`: rounds in fast mode.
    fast_rounds: u32,
    /// Linux `lastQ`: the last queue estimate, packets.
    last_queue: f64,
    /// ns-3 3.44's `TcpYeah` rules (module notes).
    ns3: bool,
    /// In fast recovery (only followed under `ns3`).
    in_recovery: bool,
}

impl Yeah {
    /// YeAH with the reference constants, for segments of `mss` bytes.
    pub fn new(mss: u32) -> Self {
        Yeah {
            mss: u64::from(mss.max(1)),
            alpha: 80.0,
            phy: 8.0,
            epsilon: 1,
            delta: 3,
            rho: 16,
            zeta: 50,
            cwnd: 2.0,
            ssthresh: f64::INFINITY,
            base_rtt: None,
            round_min: None,
            round_samples: 0,
            slow_rounds: 0,
            reno_count: 2.0,
            fast_rounds: 0,
            last_queue: 0.0,
            ns3: false,
            in_recovery: false,
        }
    }

    /// The same control with ns-3 3.44's `TcpYeah` rules (module notes).
    pub fn ns3(self) -> Self {
        Yeah { ns3: true, ..self }
    }

    /// Whether it grows as Scalable TCP (fast mode) rather than Reno.
    pub fn fast_mode(&self) -> bool {
        self.slow_rounds == 0
    }

    /// Linux tcp_yeah.c tcp_yeah_ssthresh: the window after a loss, segments; under `ns3`,
    /// ns-3 tcp-yeah.cc `GetSsThresh`, from `in_flight` bytes.
    fn after_loss(&mut self, in_flight: u64) -> f64 {
        if self.ns3 {
            return self.after_loss_ns3(in_flight);
        }
        let half = (self.cwnd / 2.0).floor().max(2.0);
        let reduction = if self.slow_rounds < self.rho {
            // Remove the queue, at least cwnd / 2^delta and at most half.
            self.last_queue
                .min(half)
                .max((self.cwnd / f64::from(1u32 << self.delta)).floor())
        } else {
            half
        };
        self.fast_rounds = 0;
        self.reno_count = (self.reno_count / 2.0).floor().max(2.0);
        (self.cwnd - reduction).max(2.0)
    }

    /// The RTT this ACK gives the control: the sample, or under `ns3` the smoothed RTT.
    fn rtt_of(&self, sample: &AckSample) -> Option<Duration> {
        if self.ns3 {
            // ns-3 tcp-socket-base.cc:2136: PktsAcked(m_tcb, segsAcked, m_tcb->m_srtt); tcp-yeah.cc
            // PktsAcked ignores a zero RTT.
            Some(sample.srtt).filter(|r| !r.is_zero())
        } else {
            sample.rtt
        }
    }

    /// Whether a round with queueing delay `rtt - base` is congested beyond the delay test:
    /// queueing delay above base / phy (paper, Linux), or under `ns3`, L = (rtt - base) / base
    /// above ns-3's `1 / m_phy` in integers (tcp-yeah.cc:250).
    fn delay_congested(&self, rtt: f64, base: f64) -> bool {
        if self.ns3 {
            let threshold = 1 / (self.phy as u32).max(1);
            (rtt - base) / base > f64::from(threshold)
        } else {
            rtt - base > base / self.phy
        }
    }
}

impl CongestionControl for Yeah {
    fn name(&self) -> &'static str {
        "yeah"
    }

    fn reno_min_cwnd(&self) -> bool {
        // ns-2.35 tcp/linux/src/tcp_yeah.c: `.min_cwnd = tcp_reno_min_cwnd`.
        true
    }

    fn init(&mut self, initial_cwnd: u64, initial_ssthresh: u64) {
        (self.cwnd, self.ssthresh) = segments::initial(initial_cwnd, initial_ssthresh, self.mss);
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    fn cwnd(&self) -> u64 {
        segments::bytes(self.cwnd, self.mss)
    }

    fn ssthresh(&self) -> u64 {
        segments::bytes(self.ssthresh, self.mss)
    }

    fn on_ack(&mut self, sample: &AckSample) {
        self.on_ack_in_recovery(sample);
        let acked = segments::acked(sample.acked_bytes, self.mss);
        if self.cwnd < self.ssthresh {
            // RFC 5681 §3.1: slow start.
            self.cwnd += acked.min(1.0);
        } else if self.fast_mode() {
            // Linux tcp_yeah.c: Scalable increase, one segment per min(cwnd, 100) acknowledged.
            self.cwnd += acked / self.cwnd.min(SCALABLE_AI_CNT);
        } else if self.ns3 {
            // ns-3 tcp-congestion-ops.cc:177-189 TcpNewReno::CongestionAvoidance: max(1,
            // mss² / cwnd) bytes per ACK, truncated, if it counts a segment.
            if sample.acked_bytes == 0 {
                return;
            }
            let mss = self.mss as f64;
            let bytes = (mss * mss / (self.cwnd * mss)).max(1.0).floor();
            self.cwnd += bytes / mss;
        } else {
            // Reno: one segment per window.
            self.cwnd += acked / self.cwnd;
        }
    }

    fn on_ack_in_recovery(&mut self, sample: &AckSample) {
        if let Some(rtt) = self.rtt_of(sample) {
            self.base_rtt = Some(self.base_rtt.map_or(rtt, |b| b.min(rtt)));
            self.round_min = Some(self.round_min.map_or(rtt, |m| m.min(rtt)));
            self.round_samples += 1;
        }
    }

    fn on_round(&mut self, _round: &RoundSample) {
        let samples = std::mem::take(&mut self.round_samples);
        let round_min = self.round_min.take();
        let (Some(rtt), Some(base)) = (round_min, self.base_rtt) else {
            return;
        };
        // ns-3 tcp-yeah.cc: the block runs in IncreaseWindow, which ns-3 does not call in fast
        // recovery (tcp-socket-base.cc ReceivedAck).
        if self.ns3 && self.in_recovery {
            return;
        }
        // Linux tcp_yeah.c tcp_yeah_cong_avoid: the per-round block (`do_vegas`) runs in slow
        // start too, so a queue above alpha ends slow start by precautionary decongestion.
        if samples < MIN_SAMPLES {
            return;
        }
        let (rtt, base) = (rtt.as_secs_f64(), base.as_secs_f64());
        // YeAH paper §2 / Linux: Q = cwnd (RTT - base) / RTT, packets queued by this flow.
        let queue = if self.ns3 {
            // ns-3 tcp-yeah.cc: static_cast<uint32_t>(segCwnd / minRtt * rttQueue).
            (self.cwnd.floor() / rtt * (rtt - base)).floor()
        } else {
            self.cwnd * (rtt - base) / rtt
        };
        if queue > self.alpha || self.delay_congested(rtt, base) {
            if queue > self.alpha && self.cwnd > self.reno_count {
                // Precautionary decongestion: drain the flow's own queue.
                let reduction = (queue / GAMMA)
                    .min((self.cwnd / f64::from(1u32 << self.epsilon)).floor())
                    .floor();
                self.cwnd = (self.cwnd - reduction).max(self.reno_count);
                self.ssthresh = self.cwnd;
            }
            if self.reno_count <= 2.0 {
                self.reno_count = (self.cwnd / 2.0).floor().max(2.0);
            } else {
                self.reno_count += 1.0;
            }
            self.slow_rounds = self.slow_rounds.saturating_add(1);
        } else {
            self.fast_rounds += 1;
            if self.fast_rounds > self.zeta {
                self.reno_count = 2.0;
                self.fast_rounds = 0;
            }
            self.slow_rounds = 0;
        }
        self.last_queue = queue;
    }

    fn on_congestion_event(&mut self, _now: Time, in_flight: u64) {
        self.ssthresh = self.after_loss(in_flight);
        self.cwnd = self.ssthresh;
        self.in_recovery = true;
    }

    fn on_recovery_end(&mut self, _now: Time) {
        self.cwnd = self.ssthresh;
        self.in_recovery = false;
        if self.ns3 {
            // ns-3 tcp-yeah.cc EnableYeah on CA_OPEN: a new round, its samples from here on.
            self.round_samples = 0;
            self.round_min = None;
        }
    }

    fn ns3_socket(&self) -> bool {
        // ns-3 3.44 tcp-yeah.cc:310-314: GetSsThresh(tcb, bytesInFlight) gets BytesInFlight(), the
        // pipe (tcp-socket-base.cc:1715-1717 EnterRecovery, :3916 ReTxTimeout), not FlightSize;
        // leaving CA_LOSS counts only what lies above the recovery point (:2226).
        self.ns3
    }

    fn on_retransmission_timeout(&mut self, _now: Time, in_flight: u64) {
        self.ssthresh = self.after_loss(in_flight);
        self.cwnd = 1.0;
        // ns-3's CA_LOSS calls IncreaseWindow, and so runs the per-round block.
        self.in_recovery = false;
    }
}

#[cfg(test)]
mod tests {
    use super::super::cc::testkit::run_rounds;
    use super::*;

    pub(super) const MSS: u64 = 1000;

    pub(super) fn yeah_at(w: u64) -> Yeah {
        let mut cc = Yeah::new(MSS as u32);
        cc.init(w * MSS, w * MSS);
        cc
    }

    #[test]
    fn an_empty_queue_means_scalable_growth() {
        let mut cc = yeah_at(1000);
        let (_, w) = run_rounds(&mut cc, MSS, Time::ZERO, 10, Duration::from_millis(100));
        assert!(cc.fast_mode());
        // One segment per 100 acknowledged: 1% per round.
        let growth = w[9] / w[8];
        assert!((1.009..=1.011).contains(&growth), "{w:?}");
    }

    #[test]
    fn a_long_queue_triggers_decongestion_and_reno_growth() {
        let mut cc = yeah_at(1000);
        let base = Duration::from_millis(100);
        run_rounds(&mut cc, MSS, Time::ZERO, 1, base);
        // RTT 125 ms after a round of 1% growth (1010 -> 1020.1 segments): the queue estimate
        // is 1020.1 (25/125) = 204 packets > alpha = 80.
        let (_, w) = run_rounds(&mut cc, MSS, Time::ZERO, 1, Duration::from_millis(125));
        assert!(!cc.fast_mode());
        // Decongestion removed those 204 packets.
        assert!((w[0] - 816.1).abs() < 0.5, "{w:?}");
        // 14 ms of queueing (> 100/8 ms): slow mode; decongestion shrinks the window until its
        // queue (cwnd 14/114) is below 80 packets, then it grows as Reno, one segment per round.
        let (_, w) = run_rounds(&mut cc, MSS, Time::ZERO, 8, Duration::from_millis(114));
        assert!(!cc.fast_mode());
        assert!(w[7] * 14.0 / 114.0 < 80.0, "{w:?}");
        assert!((w[7] - w[6] - 1.0).abs() < 0.1, "{w:?}");
    }

    #[test]
    fn a_long_queue_in_slow_start_decongests_and_ends_slow_start() {
        // Linux tcp_yeah.c: the per-round block runs in slow start as well.
        let mut cc = Yeah::new(MSS as u32);
        cc.init(1000 * MSS, u64::MAX);
        assert!(cc.in_slow_start());
        run_rounds(&mut cc, MSS, Time::ZERO, 1, Duration::from_millis(100));
        // Slow start doubles the window each round (2000, then 4000). A 125 ms round against the
        // 100 ms base is a queue of 4000 x 25 / 125 = 800 packets > alpha: decongestion removes
        // them (3200) and sets ssthresh to the new window.
        let (_, w) = run_rounds(&mut cc, MSS, Time::ZERO, 1, Duration::from_millis(125));
        assert!(!cc.fast_mode());
        assert!((3200.0..=3202.0).contains(&w[0]), "{w:?}");
        assert!(!cc.in_slow_start());
    }

    #[test]
    fn a_loss_in_fast_mode_removes_the_queue_but_at_least_an_eighth() {
        let mut cc = yeah_at(1000);
        run_rounds(&mut cc, MSS, Time::ZERO, 1, Duration::from_millis(100));
        // No queue: the reduction is its floor, cwnd / 2^3.
        let before = cc.cwnd() / MSS;
        cc.on_congestion_event(Time::ZERO, 0);
        assert_eq!(cc.cwnd() / MSS, before - before / 8);
    }

    #[test]
    fn after_rho_slow_rounds_a_loss_halves() {
        let mut cc = yeah_at(100);
        run_rounds(&mut cc, MSS, Time::ZERO, 1, Duration::from_millis(100));
        // Delay above base/phy (12.5 ms) with a short queue: slow mode without decongestion.
        run_rounds(&mut cc, MSS, Time::ZERO, 17, Duration::from_millis(120));
        assert!(!cc.fast_mode());
        let before = cc.cwnd() / MSS;
        cc.on_congestion_event(Time::ZERO, 0);
        assert_eq!(cc.cwnd() / MSS, before - before / 2);
    }
}
