//! Compound TCP (Tan, Song, Zhang and Sridharan, "A Compound TCP Approach for High-speed and
//! Long Distance Networks", INFOCOM 2006): the window is the sum of a loss-based Reno window
//! `cwnd` and a delay-based window `dwnd`. While the flow's own queue estimate `diff` stays below
//! gamma packets, dwnd grows so that the sum rises by alpha win^k per round trip (a binomial
//! increase as scalable as HighSpeed TCP's); when the queue builds, dwnd gives way by diff; on a
//! loss the sum falls to win (1 - beta).
//!
//! The paper's constants: alpha = 1/8, beta = 1/2, k = 0.75, gamma = 30 packets, zeta = 1; the
//! delay-based part acts only above low_wnd = 41 packets (HighSpeed TCP's Low_Window, which the
//! paper adopts). The paper leaves the round's RTT estimate open; here it is the round's smallest
//! sample, as in the Vegas machinery CTCP builds on.

use super::cc::segments;
use super::{AckSample, CongestionControl, Param, ParamKind, Params, Registered, RoundSample};
use qstp_proto::{Duration, Time};

/// Registry entry.
pub(super) const ENTRY: Registered = Registered {
    name: "compound",
    aliases: &["ctcp"],
    doc: "Compound TCP (Tan et al.): Reno cwnd plus a delay-based dwnd (alpha 1/8, beta 1/2, k 0.75, gamma 30)",
    params: &[
        // CTCP paper §3.2: alpha = 1/8, beta = 1/2, k = 0.75 (HighSpeed-like scalability).
        Param { name: "alpha", kind: ParamKind::Real, default: 0.125, min: 0.001, max: 10.0, doc: "binomial increase factor alpha" },
        Param { name: "beta", kind: ParamKind::Real, default: 0.5, min: 0.05, max: 0.95, doc: "multiplicative decrease of the whole window" },
        Param { name: "k", kind: ParamKind::Real, default: 0.75, min: 0.0, max: 1.0, doc: "binomial increase exponent k" },
        // CTCP paper §3.2: gamma = 30 packets, the queue it tolerates.
        Param { name: "gamma", kind: ParamKind::Integer, default: 30.0, min: 1.0, max: 1e6, doc: "queue (packets) above which dwnd gives way" },
        // CTCP paper §3.2: zeta = 1.
        Param { name: "zeta", kind: ParamKind::Real, default: 1.0, min: 0.0, max: 10.0, doc: "how fast dwnd gives way to a queue" },
        // CTCP paper §3.2 / RFC 3649 Low_Window = 38..41: the delay part acts above 41 packets.
        Param { name: "low_window", kind: ParamKind::Integer, default: 41.0, min: 0.0, max: 1e6, doc: "window (segments) below which it is plain Reno" },
    ],
    build: |mss, p: &Params| {
        Box::new(Compound {
            alpha: p.real("alpha"),
            beta: p.real("beta"),
            k: p.real("k"),
            gamma: f64::from(p.integer("gamma")),
            zeta: p.real("zeta"),
            low_window: f64::from(p.integer("low_window")),
            ..Compound::new(mss)
        })
    },
};

/// Compound TCP.
#[derive(Debug, Clone)]
pub struct Compound {
    mss: u64,
    alpha: f64,
    beta: f64,
    k: f64,
    gamma: f64,
    zeta: f64,
    low_window: f64,
    /// Loss-based window, delay-based window and threshold, segments.
    cwnd: f64,
    dwnd: f64,
    ssthresh: f64,
    base_rtt: Option<Duration>,
    round_min: Option<Duration>,
}

impl Compound {
    /// Compound TCP with the paper's constants, for segments of `mss` bytes.
    pub fn new(mss: u32) -> Self {
        Compound {
            mss: u64::from(mss.max(1)),
            alpha: 0.125,
            beta: 0.5,
            k: 0.75,
            gamma: 30.0,
            zeta: 1.0,
            low_window: 41.0,
            cwnd: 2.0,
            dwnd: 0.0,
            ssthresh: f64::INFINITY,
            base_rtt: None,
            round_min: None,
        }
    }

    /// The delay-based window, segments.
    pub fn dwnd(&self) -> f64 {
        self.dwnd
    }

    fn win(&self) -> f64 {
        self.cwnd + self.dwnd
    }

    /// CTCP paper eq. (6), loss case: the sum falls to win (1 - beta), cwnd halves as Reno.
    fn on_loss(&mut self) {
        let win = self.win();
        self.cwnd = (self.cwnd / 2.0).max(2.0);
        self.dwnd = (win * (1.0 - self.beta) - self.cwnd).max(0.0);
        self.ssthresh = self.cwnd;
    }
}

impl CongestionControl for Compound {
    fn name(&self) -> &'static str {
        "compound"
    }

    fn reno_min_cwnd(&self) -> bool {
        // ns-2.35 tcp/linux/src/tcp_compound.c: `.min_cwnd = tcp_reno_min_cwnd`.
        true
    }

    fn init(&mut self, initial_cwnd: u64, initial_ssthresh: u64) {
        (self.cwnd, self.ssthresh) = segments::initial(initial_cwnd, initial_ssthresh, self.mss);
    }

    fn on_idle_restart(&mut self, restart_window: u64) {
        // RFC 5681 §4.1 on the whole window: the delay window restarts from zero too.
        let win = self.cwnd().min(restart_window);
        self.dwnd = 0.0;
        self.cwnd = segments::initial(win, 0, self.mss).0;
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    fn cwnd(&self) -> u64 {
        segments::bytes(self.win(), self.mss)
    }

    fn ssthresh(&self) -> u64 {
        segments::bytes(self.ssthresh, self.mss)
    }

    fn on_ack(&mut self, sample: &AckSample) {
        self.on_ack_in_recovery(sample);
        let acked = segments::acked(sample.acked_bytes, self.mss);
        if self.cwnd < self.ssthresh {
            // RFC 5681 §3.1: slow start (the paper keeps dwnd at zero meanwhile).
            self.cwnd += acked.min(1.0);
        } else {
            // CTCP paper eq. (4): cwnd += 1 / (cwnd + dwnd) per ACK.
            self.cwnd += acked / self.win();
        }
    }

    fn on_ack_in_recovery(&mut self, sample: &AckSample) {
        if let Some(rtt) = sample.rtt {
            self.base_rtt = Some(self.base_rtt.map_or(rtt, |b| b.min(rtt)));
            self.round_min = Some(self.round_min.map_or(rtt, |m| m.min(rtt)));
        }
    }

    fn on_round(&mut self, _round: &RoundSample) {
        let (Some(rtt), Some(base)) = (self.round_min.take(), self.base_rtt) else {
            return;
        };
        if self.cwnd < self.ssthresh || self.win() < self.low_window {
            return;
        }
        let win = self.win();
        // CTCP paper eq. (5): diff = (win/baseRTT - win/RTT) baseRTT, packets queued.
        let diff = win * (1.0 - base.as_secs_f64() / rtt.as_secs_f64());
        self.dwnd = if diff < self.gamma {
            // CTCP paper eq. (6): the sum grows by alpha win^k per round (cwnd brings 1).
            self.dwnd + (self.alpha * libm::pow(win, self.k) - 1.0).max(0.0)
        } else {
            (self.dwnd - self.zeta * diff).max(0.0)
        };
    }

    fn on_congestion_event(&mut self, _now: Time, _in_flight: u64) {
        self.on_loss();
    }

    fn on_recovery_end(&mut self, _now: Time) {
        self.cwnd = self.ssthresh;
    }

    fn on_retransmission_timeout(&mut self, _now: Time, _in_flight: u64) {
        // RFC 5681 §3.1 on the whole window; the delay part starts again from nothing.
        self.ssthresh = (self.win() / 2.0).max(2.0);
        self.cwnd = 1.0;
        self.dwnd = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::super::cc::testkit::run_rounds;
    use super::*;

    const MSS: u64 = 1000;

    fn ctcp_at(w: u64) -> Compound {
        let mut cc = Compound::new(MSS as u32);
        cc.init(w * MSS, w * MSS);
        cc
    }

    #[test]
    fn without_queueing_the_window_grows_by_alpha_win_to_the_k() {
        let mut cc = ctcp_at(100);
        let (_, w) = run_rounds(&mut cc, MSS, Time::ZERO, 2, Duration::from_millis(100));
        // One round from 100: 1/8 * 100^0.75 = 3.95 segments (cwnd +1, dwnd +2.95).
        assert!((w[0] - 103.95).abs() < 0.1, "{w:?}");
        let expected = 0.125 * w[0].powf(0.75);
        assert!((w[1] - w[0] - expected).abs() < 0.1, "{w:?}");
    }

    #[test]
    fn a_queue_above_gamma_makes_dwnd_give_way() {
        let mut cc = ctcp_at(100);
        let base = Duration::from_millis(100);
        run_rounds(&mut cc, MSS, Time::ZERO, 20, base);
        let dwnd = cc.dwnd();
        assert!(dwnd > 50.0, "{dwnd}");
        // RTT 150 ms: diff = win (1 - 100/150) = win / 3 > 30 packets.
        let win = cc.cwnd() as f64 / MSS as f64;
        run_rounds(&mut cc, MSS, Time::ZERO, 1, Duration::from_millis(150));
        assert!(
            cc.dwnd() < dwnd - win / 3.0 + 1.0,
            "{} -> {}",
            dwnd,
            cc.dwnd()
        );
    }

    #[test]
    fn a_loss_leaves_win_times_one_minus_beta() {
        let mut cc = ctcp_at(60);
        cc.dwnd = 40.0;
        cc.on_congestion_event(Time::ZERO, 0);
        // win = 100 -> 50: cwnd 30 (Reno halving), dwnd 20.
        assert_eq!(cc.cwnd(), 50 * MSS);
        assert_eq!(cc.dwnd(), 20.0);
        assert_eq!(cc.ssthresh(), 30 * MSS);
    }

    #[test]
    fn below_low_window_it_is_reno() {
        let mut cc = ctcp_at(20);
        let (_, w) = run_rounds(&mut cc, MSS, Time::ZERO, 5, Duration::from_millis(100));
        assert_eq!(cc.dwnd(), 0.0);
        // One segment per round (less the fraction the ACK clock drops: it acks whole segments).
        assert!((w[4] - w[3] - 1.0).abs() < 0.08, "{w:?}");
    }
}
