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
        // Not in the paper: the Linux CTCP patch ns-2.35 carries (tcp/linux/src/tcp_compound.c),
        // whose rules the high-speed TCP paper's ns-2 runs had (module notes, `linux_patch`).
        Param { name: "linux_patch", kind: ParamKind::Flag, default: 0.0, min: 0.0, max: 1.0, doc: "1: the rules of ns-2.35's tcp_compound.c (ssthresh from the whole window, the loss window slow-starts back to it, dwnd from the first rounds), 0: the paper's" },
    ],
    build: |mss, p: &Params| {
        Box::new(Compound {
            alpha: p.real("alpha"),
            beta: p.real("beta"),
            k: p.real("k"),
            gamma: f64::from(p.integer("gamma")),
            zeta: p.real("zeta"),
            low_window: f64::from(p.integer("low_window")),
            linux_patch: p.flag("linux_patch"),
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
    /// The rules of ns-2.35's tcp_compound.c (see [`Compound::linux_patch`]).
    linux_patch: bool,
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
            linux_patch: false,
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
        if self.linux_patch {
            // ns-2.35 tcp_compound.c: `.ssthresh = tcp_reno_ssthresh`, half the whole window;
            // dwnd is left as it is and the loss window takes the rest (tcp_compound_cong_avoid's
            // first lines).
            self.ssthresh = (win / 2.0).max(2.0);
            self.split(self.ssthresh);
            return;
        }
        self.cwnd = (self.cwnd / 2.0).max(2.0);
        self.dwnd = (win * (1.0 - self.beta) - self.cwnd).max(0.0);
        self.ssthresh = self.cwnd;
    }

    /// ns-2.35 tcp_compound.c tcp_compound_cong_avoid: when the socket's window `total` is below
    /// cwnd + dwnd, the loss window becomes total - dwnd, or total with dwnd 0 if dwnd alone
    /// exceeds it.
    fn split(&mut self, total: f64) {
        if self.dwnd > total || self.cwnd > total {
            (self.cwnd, self.dwnd) = (total, 0.0);
        } else {
            self.cwnd = total - self.dwnd;
        }
    }

    /// The rules of ns-2.35's Linux CTCP patch (tcp/linux/src/tcp_compound.c), which differ from
    /// the paper's: the threshold is half the whole window (`tcp_reno_ssthresh`); when the whole
    /// falls below cwnd + dwnd, the loss window becomes the whole less dwnd, or the whole with
    /// dwnd at 0 when either part alone exceeds it (so a loss usually empties dwnd); slow start
    /// is judged on the loss window alone and includes the threshold (`vegas->cwnd <=
    /// tp->snd_ssthresh`); dwnd is updated every round from the first, in slow start too and
    /// with no low window (its increase win^0.75 / 8 - 1 is positive above 16 segments), and
    /// only after a round of more than 2 RTT samples (`cntRTT > 2`).
    pub fn linux_patch(self) -> Self {
        Compound {
            linux_patch: true,
            ..self
        }
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
        if self.linux_patch {
            // ns-2.35 tcp_compound.c: `vegas->cwnd <= tp->snd_ssthresh`.
            return self.cwnd <= self.ssthresh;
        }
        self.cwnd < self.ssthresh
    }

    fn on_moderate(&mut self, limit: u64) {
        // ns-2.35 tcp-linux.cc tcp_moderate_cwnd clamps the whole window; tcp_compound.c's
        // cong_avoid then takes the loss window as the rest beside dwnd, which it keeps.
        let total = self.win().min(segments::acked(limit, self.mss)).max(1.0);
        self.split(total);
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
        if self.linux_patch && self.cwnd <= self.ssthresh {
            // ns-2.35 tcp_compound.c: `if (vegas->cwnd <= tp->snd_ssthresh) inc = 1`.
            self.cwnd += acked.min(1.0);
        } else if self.cwnd < self.ssthresh {
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

    fn on_round(&mut self, round: &RoundSample) {
        let (Some(rtt), Some(base)) = (self.round_min.take(), self.base_rtt) else {
            return;
        };
        if self.linux_patch {
            // ns-2.35 tcp_compound.c: only with more than 2 samples in the round, and from the
            // first round (no slow-start or low-window condition).
            if round.rtt_samples <= 2 {
                return;
            }
        } else if self.cwnd < self.ssthresh || self.win() < self.low_window {
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
        if self.linux_patch {
            // ns-2.35 tcp-linux.cc:464-467 sets the whole window to ssthresh; the module splits it.
            self.split(self.ssthresh);
            return;
        }
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
    use super::super::cc::testkit::{ack as ack_at, run_rounds};
    use super::*;

    const MSS: u64 = 1000;

    fn ack(bytes: u64) -> AckSample {
        ack_at(Time::ZERO, bytes, 1, Duration::from_millis(100))
    }

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
    fn with_the_linux_patch_a_loss_leaves_half_the_whole_as_loss_window_and_slow_start_refills_it()
    {
        // ns-2.35 tcp_compound.c: ssthresh = (cwnd + dwnd) / 2 (tcp_reno_ssthresh); the first
        // cong_avoid after the window fell finds the old loss window above the new whole, so
        // dwnd goes to 0 and the loss window is the whole; it slow-starts while <= ssthresh.
        let mut cc = ctcp_at(60).linux_patch();
        cc.dwnd = 40.0;
        cc.on_congestion_event(Time::ZERO, 0);
        assert_eq!(cc.ssthresh(), 50 * MSS);
        assert_eq!((cc.cwnd, cc.dwnd), (50.0, 0.0));
        // Moderated to 30 segments on leaving recovery: slow start back to 50, then one more.
        cc.on_recovery_end(Time::ZERO);
        cc.on_moderate(30 * MSS);
        for _ in 0..21 {
            assert!(cc.in_slow_start());
            cc.on_ack(&ack(MSS));
        }
        assert_eq!(cc.cwnd(), 51 * MSS);
        assert!(!cc.in_slow_start());
        // The paper's rules: the loss window halves, dwnd keeps the rest of win (1 - beta).
        let mut paper = ctcp_at(60);
        paper.dwnd = 40.0;
        paper.on_congestion_event(Time::ZERO, 0);
        assert_eq!((paper.cwnd, paper.dwnd), (30.0, 20.0));
        assert_eq!(paper.ssthresh(), 30 * MSS);
    }

    #[test]
    fn moderation_clamps_the_whole_window_and_keeps_dwnd() {
        // ns-2.35 tcp-linux.cc tcp_moderate_cwnd clamps snd_cwnd; tcp_compound.c keeps dwnd and
        // takes the rest as the loss window (before, the lab's moderation zeroed dwnd).
        for linux_patch in [false, true] {
            let mut cc = Compound {
                linux_patch,
                ..ctcp_at(60)
            };
            cc.dwnd = 40.0;
            cc.on_moderate(70 * MSS);
            assert_eq!((cc.cwnd, cc.dwnd), (30.0, 40.0), "{linux_patch}");
            cc.on_moderate(30 * MSS);
            assert_eq!((cc.cwnd, cc.dwnd), (30.0, 0.0), "{linux_patch}");
        }
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
