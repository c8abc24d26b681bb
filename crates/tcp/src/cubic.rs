//! CUBIC (RFC 9438): the window follows a cubic function of the time since the last congestion
//! event, concave up to the window where it was lost and convex beyond, with a Reno-friendly
//! floor and fast convergence; HyStart's delay-increase test ends slow start, as in Linux
//! `tcp_cubic.c` and ns-3's `TcpCubic` (both enable it by default).
//!
//! Windows are kept in segments (f64), exposed in bytes. Where the RFC leaves a choice, Linux is
//! followed: ssthresh from cwnd (not FlightSize), the epoch starting at the first ACK of
//! congestion avoidance.
//!
//! `ns3 = 1` builds ns-3 3.44's `TcpCubic` instead ([`ns3`]), for comparisons with ns-3, and
//! `ns2 = 1` Linux 2.6.22's `tcp_cubic.c` as ns-2.35 runs it ([`ns2`]), for comparisons with
//! ns-2; the default (both 0) is this one.

use super::cc::segments;
mod ns2;
mod ns3;

use super::{AckSample, CongestionControl, Param, ParamKind, Params, Registered, RoundSample};
use ns2::Ns2Cubic;
use ns3::Ns3Cubic;
use qstp_proto::{Duration, Time};

/// Registry entry.
pub(super) const ENTRY: Registered = Registered {
    name: "cubic",
    aliases: &[],
    doc: "CUBIC, RFC 9438 (C = 0.4, beta = 0.7, fast convergence, Reno-friendly region, HyStart)",
    params: &[
        // RFC 9438 §5.1: C = 0.4.
        Param {
            name: "c",
            kind: ParamKind::Real,
            default: 0.4,
            min: 0.01,
            max: 10.0,
            doc: "aggressiveness C of the cubic function, segments/s^3",
        },
        // RFC 9438 §4.6: beta_cubic = 0.7.
        Param {
            name: "beta",
            kind: ParamKind::Real,
            default: 0.7,
            min: 0.1,
            max: 0.95,
            doc: "multiplicative decrease factor beta_cubic",
        },
        // RFC 9438 §4.7: fast convergence SHOULD be on.
        Param {
            name: "fast_convergence",
            kind: ParamKind::Flag,
            default: 1.0,
            min: 0.0,
            max: 1.0,
            doc: "1 releases bandwidth faster to new flows (RFC 9438 §4.7), 0 turns it off",
        },
        Param {
            name: "hystart",
            kind: ParamKind::Flag,
            default: 1.0,
            min: 0.0,
            max: 1.0,
            doc: "1 ends slow start on a delay increase (HyStart, Linux and ns-3 default), 0 off",
        },
        // RFC 5681 §3.1 eq. (2): cwnd += min(N, SMSS), so 1. RFC 3465 §2.2 allows L = 2; Linux
        // tcp_slow_start and ns-3 3.44 TcpCubic::IncreaseWindow add every segment acknowledged
        // (no limit: any value at or above the segments one ACK covers).
        Param {
            name: "abc_limit",
            kind: ParamKind::Integer,
            default: 1.0,
            min: 1.0,
            max: 1e9,
            doc: "slow start adds at most this many segments per ACK (RFC 3465 L; RFC 5681: 1; Linux and ns-3: no limit)",
        },
        Param {
            name: "ns3",
            kind: ParamKind::Flag,
            // Not in the RFC or Linux: ns-3 3.44 tcp-cubic.cc's own arithmetic (cubic/ns3.rs).
            default: 0.0,
            min: 0.0,
            max: 1.0,
            doc: "1: ns-3 3.44's TcpCubic (whole-segment target and cnt, kept credit, its HyStart; abc_limit unused); 0: RFC 9438",
        },
        Param {
            name: "ns2",
            kind: ParamKind::Flag,
            // Not in the RFC: Linux 2.6.22's tcp_cubic.c, which ns-2.35 carries (cubic/ns2.rs).
            default: 0.0,
            min: 0.0,
            max: 1.0,
            doc: "1: ns-2.35's CUBIC, Linux 2.6.22's tcp_cubic.c (whole segments and jiffies, target at t without timestamps, ACK-ratio scaling, reset on a timeout; no HyStart, abc_limit unused); 0: RFC 9438",
        },
    ],
    build: |mss, p: &Params| {
        if p.flag("ns2") {
            return Box::new(Ns2Cubic::new(
                mss,
                p.real("c"),
                p.real("beta"),
                p.flag("fast_convergence"),
            ));
        }
        if p.flag("ns3") {
            return Box::new(Ns3Cubic::new(
                mss,
                p.real("c"),
                p.real("beta"),
                p.flag("fast_convergence"),
                p.flag("hystart"),
            ));
        }
        Box::new(Cubic {
            abc_limit: f64::from(p.integer("abc_limit")),
            ..Cubic::new(
                mss,
                p.real("c"),
                p.real("beta"),
                p.flag("fast_convergence"),
                p.flag("hystart"),
            )
        })
    },
};

/// Linux `tcp_cubic.c`: HyStart acts only from a window of 16 segments.
const HYSTART_LOW_WINDOW: f64 = 16.0;
/// Linux `tcp_cubic.c` HYSTART_MIN_SAMPLES: RTT samples per round before the delay test.
const HYSTART_MIN_SAMPLES: u32 = 8;
/// Linux `tcp_cubic.c`: the delay threshold is base/8 clamped to [4 ms, 16 ms].
const HYSTART_DELAY_MIN: Duration = Duration::from_millis(4);
const HYSTART_DELAY_MAX: Duration = Duration::from_millis(16);

/// CUBIC congestion control.
#[derive(Debug, Clone)]
pub struct Cubic {
    mss: u64,
    c: f64,
    beta: f64,
    fast_convergence: bool,
    hystart: bool,
    /// Most segments slow start adds per ACK (RFC 3465's L).
    abc_limit: f64,
    /// Window and threshold, segments.
    cwnd: f64,
    ssthresh: f64,
    /// RFC 9438 §4.1: window just before the last reduction (lowered by fast convergence, §4.7).
    w_max: f64,
    /// RFC 9438 eq. (2): time for the cubic function to reach W_max, seconds.
    k: f64,
    /// Start of the current congestion-avoidance epoch.
    epoch_start: Option<Time>,
    /// RFC 9438 §4.3: the Reno-friendly window estimate, segments.
    w_est: f64,
    /// HyStart: smallest RTT ever, and the smallest of this round's first samples.
    base_rtt: Option<Duration>,
    round_min: Option<Duration>,
    round_samples: u32,
}

impl Cubic {
    /// CUBIC for segments of `mss` bytes.
    pub fn new(mss: u32, c: f64, beta: f64, fast_convergence: bool, hystart: bool) -> Self {
        Cubic {
            mss: u64::from(mss.max(1)),
            c,
            beta,
            fast_convergence,
            hystart,
            abc_limit: 1.0,
            cwnd: 2.0,
            ssthresh: f64::INFINITY,
            w_max: 0.0,
            k: 0.0,
            epoch_start: None,
            w_est: 0.0,
            base_rtt: None,
            round_min: None,
            round_samples: 0,
        }
    }

    /// RFC 9438 eq. (1): W_cubic(t) = C (t - K)^3 + W_max, segments, t in seconds.
    pub fn w_cubic(&self, t: f64) -> f64 {
        let d = t - self.k;
        self.c * d * d * d + self.w_max
    }

    /// RFC 9438 eq. (2): K, seconds.
    pub fn k(&self) -> f64 {
        self.k
    }

    /// RFC 9438 §4.6-4.7: remember W_max and set ssthresh.
    fn reduce(&mut self) {
        // RFC 9438 §4.7 fast convergence: a flow losing below W_max, as the last reduction left
        // it (lowered already if that one converged too; Linux `last_max_cwnd`), lowers it
        // further. RFC 8312 §4.6 compared with the last window at loss instead.
        self.w_max = if self.fast_convergence && self.cwnd < self.w_max {
            self.cwnd * (1.0 + self.beta) / 2.0
        } else {
            self.cwnd
        };
        // RFC 9438 §4.6: ssthresh = cwnd * beta_cubic, at least 2 segments (RFC 5681).
        self.ssthresh = (self.cwnd * self.beta).max(2.0);
        self.epoch_start = None;
    }

    fn hystart_sample(&mut self, rtt: Duration) {
        self.base_rtt = Some(self.base_rtt.map_or(rtt, |b| b.min(rtt)));
        if !self.hystart || self.cwnd < HYSTART_LOW_WINDOW || self.cwnd >= self.ssthresh {
            return;
        }
        if self.round_samples < HYSTART_MIN_SAMPLES {
            self.round_min = Some(self.round_min.map_or(rtt, |m| m.min(rtt)));
            self.round_samples += 1;
            if self.round_samples == HYSTART_MIN_SAMPLES {
                let base = self.base_rtt.unwrap_or(rtt);
                let eta = (base / 8).max(HYSTART_DELAY_MIN).min(HYSTART_DELAY_MAX);
                // Linux tcp_cubic.c hystart_update: the round's RTT rose by eta: leave slow start.
                if self.round_min.is_some_and(|m| m >= base + eta) {
                    self.ssthresh = self.cwnd;
                }
            }
        }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn init(&mut self, initial_cwnd: u64, initial_ssthresh: u64) {
        (self.cwnd, self.ssthresh) = segments::initial(initial_cwnd, initial_ssthresh, self.mss);
    }

    fn on_idle_restart(&mut self, restart_window: u64) {
        // RFC 5681 §4.1, and a new epoch: the idle time must not count as growth time of W(t)
        // (Linux tcp_cubic.c moves the epoch on CA_EVENT_TX_START for the same reason).
        self.cwnd = self
            .cwnd
            .min(segments::initial(restart_window, 0, self.mss).0);
        self.epoch_start = None;
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
        if let Some(rtt) = sample.rtt {
            self.hystart_sample(rtt);
        }
        let acked = segments::acked(sample.acked_bytes, self.mss);
        if self.cwnd < self.ssthresh {
            // RFC 9438 §4.10 / RFC 5681 §3.1: slow start, at most one segment per ACK (RFC 3465
            // §2.2: at most L = abc_limit).
            self.cwnd += acked.min(self.abc_limit);
            return;
        }
        let now = sample.now;
        let epoch = *self.epoch_start.get_or_insert_with(|| {
            // RFC 9438 §4.2 eq. (2): K from the window at the start of the epoch.
            self.k = if self.cwnd < self.w_max {
                libm::cbrt((self.w_max - self.cwnd) / self.c)
            } else {
                self.w_max = self.cwnd;
                0.0
            };
            self.w_est = self.cwnd;
            now
        });
        let t = now.saturating_since(epoch).as_secs_f64();
        let rtt = if sample.srtt.is_zero() {
            sample.min_rtt
        } else {
            sample.srtt
        };
        // RFC 9438 §4.3: W_est grows by alpha_cubic per window, 1 once it passed W_max.
        let alpha = if self.w_est >= self.w_max {
            1.0
        } else {
            3.0 * (1.0 - self.beta) / (1.0 + self.beta)
        };
        self.w_est += alpha * acked / self.cwnd;
        if self.w_cubic(t) < self.w_est {
            // RFC 9438 §4.3: the Reno-friendly region.
            self.cwnd = self.w_est;
        } else {
            // RFC 9438 §4.4-4.5: aim at W_cubic one RTT ahead, within [cwnd, 1.5 cwnd].
            let target = self
                .w_cubic(t + rtt.as_secs_f64())
                .clamp(self.cwnd, 1.5 * self.cwnd);
            self.cwnd += (target - self.cwnd) / self.cwnd * acked;
        }
    }

    fn on_round(&mut self, _round: &RoundSample) {
        self.round_min = None;
        self.round_samples = 0;
    }

    fn on_congestion_event(&mut self, _now: Time, _in_flight: u64) {
        self.reduce();
        self.cwnd = self.ssthresh;
    }

    fn on_recovery_end(&mut self, _now: Time) {
        self.cwnd = self.ssthresh;
    }

    fn on_retransmission_timeout(&mut self, _now: Time, _in_flight: u64) {
        // RFC 9438 §4.8: ssthresh as for a congestion event, cwnd as Reno after a timeout.
        self.reduce();
        self.cwnd = 1.0;
    }
}

#[cfg(test)]
mod tests {
    use super::super::cc::testkit::run_rounds;
    use super::*;

    const MSS: u64 = 1000;

    fn cubic_at(w: u64) -> Cubic {
        let mut cc = Cubic::new(MSS as u32, 0.4, 0.7, true, false);
        cc.init(w * MSS, 1);
        cc
    }

    #[test]
    fn a_loss_keeps_seventy_percent_and_k_follows_eq_2() {
        let mut cc = cubic_at(100);
        cc.on_congestion_event(Time::ZERO, 100 * MSS);
        cc.on_recovery_end(Time::ZERO);
        assert_eq!(cc.cwnd(), 70 * MSS);
        // First ACK of congestion avoidance starts the epoch: K = cbrt(100 * 0.3 / 0.4).
        let (_, _) = run_rounds(&mut cc, MSS, Time::ZERO, 1, Duration::from_millis(100));
        assert!((cc.k() - 75f64.cbrt()).abs() < 1e-9, "{}", cc.k());
        assert!((cc.w_cubic(0.0) - 70.0).abs() < 1e-9);
        assert!((cc.w_cubic(cc.k()) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn the_window_follows_w_cubic_then_plateaus_near_w_max() {
        let mut cc = cubic_at(100);
        cc.on_congestion_event(Time::ZERO, 100 * MSS);
        cc.on_recovery_end(Time::ZERO);
        let rtt = Duration::from_millis(100);
        // 2 s: W_cubic(2 + RTT) = 0.4 (2.1 - 4.217)^3 + 100 = 96.2, ahead of W_est = 80.6.
        let (_, w) = run_rounds(&mut cc, MSS, Time::ZERO, 20, rtt);
        let at_2s = w[19];
        assert!((94.0..=97.5).contains(&at_2s), "{w:?}");
        // Around K the growth flattens: less than one segment per round near W_max.
        let (_, w) = run_rounds(&mut cc, MSS, Time::ZERO + Duration::from_secs(2), 22, rtt);
        let near_k = w[20] - w[19];
        assert!(near_k < 1.0 && w[20] > 99.0 && w[20] < 101.5, "{w:?}");
        // Beyond, convex growth probes faster and faster.
        let (_, w) = run_rounds(&mut cc, MSS, Time::ZERO + Duration::from_secs(4), 30, rtt);
        assert!(w[29] - w[28] > w[10] - w[9], "{w:?}");
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_losing_below_the_last_maximum() {
        let mut cc = cubic_at(100);
        cc.on_congestion_event(Time::ZERO, 0);
        cc.init(90 * MSS, 1);
        cc.on_congestion_event(Time::ZERO, 0);
        // RFC 9438 §4.7: W_max = 90 (1 + 0.7) / 2 = 76.5.
        assert!((cc.w_max - 76.5).abs() < 1e-9);
        assert_eq!(cc.cwnd(), 63 * MSS);
        // The next loss at 85 segments is above the lowered W_max of 76.5, though below the 90 of
        // the last loss: no further lowering (RFC 9438 §4.7; RFC 8312 §4.6 would give 72.25).
        cc.init(85 * MSS, 1);
        cc.on_congestion_event(Time::ZERO, 0);
        assert!((cc.w_max - 85.0).abs() < 1e-9, "{}", cc.w_max);
        // Below it again: lowered.
        cc.init(80 * MSS, 1);
        cc.on_congestion_event(Time::ZERO, 0);
        assert!((cc.w_max - 68.0).abs() < 1e-9, "{}", cc.w_max);
    }

    #[test]
    fn on_short_paths_the_reno_friendly_window_takes_over() {
        let mut cc = cubic_at(10);
        cc.on_congestion_event(Time::ZERO, 0);
        cc.on_recovery_end(Time::ZERO);
        // RTT 10 ms: 100 rounds in 1 s. W_cubic(1 s) = 0.4 (1 - 1.957)^3 + 10 = 9.65, while
        // W_est grows by 3 (0.3)/1.7 = 0.53 per round to W_max, then by 1.
        let (_, w) = run_rounds(&mut cc, MSS, Time::ZERO, 100, Duration::from_millis(10));
        let w_est = {
            let rounds_to_wmax = (10.0 - 7.0) / (0.9 / 1.7);
            10.0 + (100.0 - rounds_to_wmax)
        };
        assert!((w[99] - w_est).abs() < 3.0, "{} vs {w_est}", w[99]);
    }

    #[test]
    fn hystart_leaves_slow_start_when_the_rtt_rises() {
        let mut cc = Cubic::new(MSS as u32, 0.4, 0.7, true, true);
        cc.init(20 * MSS, u64::MAX);
        let base = Duration::from_millis(100);
        run_rounds(&mut cc, MSS, Time::ZERO, 1, base);
        assert!(cc.in_slow_start());
        // RTT up by 20 ms > eta = clamp(100/8, 4, 16) = 16 ms.
        run_rounds(
            &mut cc,
            MSS,
            Time::ZERO,
            1,
            base + Duration::from_millis(20),
        );
        assert!(!cc.in_slow_start());
        assert!(cc.ssthresh() >= 40 * MSS);
    }

    #[test]
    fn slow_start_adds_one_segment_per_ack_unless_byte_counting_allows_more() {
        // RFC 5681 eq. (2): an ACK of two segments adds one; with RFC 3465's L = 2 (or ns-3's and
        // Linux's unlimited byte counting) it adds two.
        for (limit, grown) in [(1.0, 1.0), (2.0, 2.0), (1e9, 2.0)] {
            let mut cc = Cubic {
                abc_limit: limit,
                ..Cubic::new(MSS as u32, 0.4, 0.7, true, false)
            };
            cc.init(10 * MSS, u64::MAX);
            cc.on_ack(&AckSample {
                now: Time::ZERO,
                acked_bytes: 2 * MSS,
                rtt: None,
                srtt: Duration::ZERO,
                min_rtt: Duration::ZERO,
                in_flight: 0,
            });
            assert_eq!(cc.cwnd(), (10.0 + grown) as u64 * MSS, "L = {limit}");
        }
    }

    #[test]
    fn a_timeout_collapses_to_one_segment() {
        let mut cc = cubic_at(100);
        cc.on_retransmission_timeout(Time::ZERO, 0);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (MSS, 70 * MSS));
    }
}
