//! TCP Vegas (Brakmo and Peterson, "TCP Vegas: End to End Congestion Avoidance on a Global
//! Internet", IEEE JSAC 13(8), 1995) as Linux `tcp_vegas.c` has it: once per round trip, the
//! window's expected rate (cwnd / baseRTT) beside its actual rate (cwnd / RTT) says how many
//! segments sit in queues, `diff = cwnd * (RTT - baseRTT) / baseRTT`; congestion avoidance keeps
//! it between `alpha` and `beta` (one segment more or less per round trip), and slow start ends
//! once it passes `gamma`. baseRTT is the smallest RTT seen, RTT the smallest of the last round
//! trip (which filters delayed ACKs out). Losses are Reno's.
//!
//! Constants are Linux's module parameters (alpha 2, beta 4, gamma 1 segments); the paper used
//! alpha 1, beta 3. Linux's own departures from the paper, which this follows: slow start grows
//! every round trip (as Reno), the actual rate comes from ACKs, and the window leaving slow start
//! is set to the actual rate times baseRTT.

use super::{AckSample, CongestionControl, Param, ParamKind, Params, Registered};
use qstp_proto::{Duration, Time};

/// Registry entry.
pub(super) const ENTRY: Registered = Registered {
    name: "vegas",
    aliases: &[],
    doc: "TCP Vegas (Brakmo and Peterson; Linux tcp_vegas.c): keeps alpha to beta segments queued from the RTT above its minimum",
    params: &[
        // Linux tcp_vegas.c `static int alpha = 2`.
        Param { name: "alpha", kind: ParamKind::Integer, default: 2.0, min: 0.0, max: 1e6, doc: "fewer segments queued than this: grow by one per round trip" },
        // Linux tcp_vegas.c `static int beta = 4`.
        Param { name: "beta", kind: ParamKind::Integer, default: 4.0, min: 0.0, max: 1e6, doc: "more segments queued than this: shrink by one per round trip" },
        // Linux tcp_vegas.c `static int gamma = 1`.
        Param { name: "gamma", kind: ParamKind::Integer, default: 1.0, min: 0.0, max: 1e6, doc: "more segments queued than this in slow start: leave it" },
    ],
    build: |mss, p: &Params| {
        Box::new(Vegas {
            alpha: u64::from(p.integer("alpha")),
            beta: u64::from(p.integer("beta")),
            gamma: u64::from(p.integer("gamma")),
            ..Vegas::new(mss)
        })
    },
};

/// TCP Vegas, its window in whole segments as Linux keeps it.
#[derive(Debug, Clone)]
pub struct Vegas {
    mss: u64,
    alpha: u64,
    beta: u64,
    gamma: u64,
    /// Window and threshold, segments (`u64::MAX`: no threshold yet).
    cwnd: u64,
    ssthresh: u64,
    /// Linux `snd_cwnd_cnt`: segments acknowledged towards the next additive increase.
    cwnd_cnt: u64,
    /// Linux `baseRTT`: the smallest RTT seen, microseconds plus one.
    base_rtt: u64,
    /// Linux `minRTT`: the smallest RTT of the round trip under way, microseconds plus one.
    min_rtt: u64,
    /// Linux `cntRTT`: RTT samples in the round trip under way.
    cnt_rtt: u32,
    /// Linux `doing_vegas_now`: off during recovery and a timeout's loss state.
    doing_vegas: bool,
    /// Linux `beg_snd_nxt`: the round trip under way ends when an ACK passes this byte.
    beg_snd_nxt: u64,
    /// The cumulative ACK and the next byte to send, as the sender last told them.
    ack: u64,
    snd_nxt: u64,
}

/// Linux tcp_vegas.c: `0x7fffffff`, no RTT yet.
const NO_RTT: u64 = 0x7fff_ffff;

impl Vegas {
    /// Vegas with Linux's constants, for segments of `mss` bytes.
    pub fn new(mss: u32) -> Self {
        Vegas {
            mss: u64::from(mss.max(1)),
            alpha: 2,
            beta: 4,
            gamma: 1,
            cwnd: 2,
            ssthresh: u64::MAX,
            cwnd_cnt: 0,
            base_rtt: NO_RTT,
            min_rtt: NO_RTT,
            cnt_rtt: 0,
            doing_vegas: true,
            beg_snd_nxt: 0,
            ack: 0,
            snd_nxt: 0,
        }
    }

    /// Segments queued in the network by the last round trip's estimate, if it has one.
    pub fn diff(&self) -> Option<u64> {
        (self.min_rtt != NO_RTT && self.base_rtt != NO_RTT)
            .then(|| self.cwnd * (self.min_rtt - self.base_rtt) / self.base_rtt)
    }

    /// tcp_vegas.c vegas_enable: take Vegas samples again from the next byte sent.
    fn enable(&mut self) {
        self.doing_vegas = true;
        self.beg_snd_nxt = self.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt = NO_RTT;
    }

    /// tcp_vegas.c tcp_vegas_pkts_acked: min-filter the RTT samples, over the connection
    /// (baseRTT) and over the round trip (minRTT); `+ 1` never lets either be zero.
    fn sample_rtt(&mut self, rtt: Option<Duration>) {
        if let Some(rtt) = rtt {
            let vrtt = rtt.as_micros() + 1;
            self.base_rtt = self.base_rtt.min(vrtt);
            self.min_rtt = self.min_rtt.min(vrtt);
            self.cnt_rtt += 1;
        }
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// tcp_cong.c tcp_slow_start: grow by the segments acknowledged up to ssthresh; returns
    /// those left over.
    fn slow_start(&mut self, acked: u64) -> u64 {
        let cwnd = (self.cwnd + acked).min(self.ssthresh);
        let left = acked - (cwnd - self.cwnd);
        self.cwnd = cwnd;
        left
    }

    /// tcp_cong.c tcp_reno_cong_avoid: slow start, then one segment per window acknowledged
    /// (tcp_cong_avoid_ai).
    fn reno_cong_avoid(&mut self, mut acked: u64) {
        if self.in_slow_start() {
            acked = self.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let w = self.cwnd.max(1);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
    }

    /// tcp_vegas.c tcp_vegas_cong_avoid's once-per-round-trip adjustment.
    fn adjust(&mut self, acked: u64) {
        if self.cnt_rtt <= 2 {
            // Too few samples to rule out delayed ACKs: behave as Reno.
            self.reno_cong_avoid(acked);
            return;
        }
        let rtt = self.min_rtt;
        // (actual rate in segments) * baseRTT.
        let target = self.cwnd * self.base_rtt / rtt;
        // The "Diff" of the Vegas paper: segments queued.
        let diff = self.cwnd * (rtt - self.base_rtt) / self.base_rtt;
        if diff > self.gamma && self.in_slow_start() {
            // Going too fast: leave slow start at the actual rate (+1 against truncation).
            self.cwnd = self.cwnd.min(target + 1);
            self.ssthresh = self.ssthresh.min(self.cwnd);
        } else if self.in_slow_start() {
            self.slow_start(acked);
        } else if diff > self.beta {
            self.cwnd -= 1;
            self.ssthresh = self.ssthresh.min(self.cwnd);
        } else if diff < self.alpha {
            self.cwnd += 1;
        }
        self.cwnd = self.cwnd.max(2);
        // tcp_current_ssthresh in the open state: at least 3/4 of the window.
        self.ssthresh = self.ssthresh.max((self.cwnd >> 1) + (self.cwnd >> 2));
    }

    /// tcp_cong.c tcp_reno_ssthresh: half the window, at least two segments.
    fn reno_ssthresh(&self) -> u64 {
        (self.cwnd >> 1).max(2)
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn init(&mut self, initial_cwnd: u64, initial_ssthresh: u64) {
        self.cwnd = (initial_cwnd / self.mss).max(1);
        self.ssthresh = (initial_ssthresh / self.mss).max(2);
        // tcp_vegas.c tcp_vegas_init.
        self.base_rtt = NO_RTT;
        self.enable();
    }

    fn cwnd(&self) -> u64 {
        self.cwnd.saturating_mul(self.mss)
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh.saturating_mul(self.mss)
    }

    fn on_sequence(&mut self, ack: u64, snd_nxt: u64) {
        self.ack = ack;
        self.snd_nxt = snd_nxt;
    }

    fn on_ack(&mut self, sample: &AckSample) {
        self.sample_rtt(sample.rtt);
        let acked = sample.acked_bytes.div_ceil(self.mss);
        if !self.doing_vegas {
            self.reno_cong_avoid(acked);
        } else if self.ack > self.beg_snd_nxt {
            // A round trip ended: the Vegas adjustment, then a clean slate for the next.
            self.beg_snd_nxt = self.snd_nxt;
            self.adjust(acked);
            self.cnt_rtt = 0;
            self.min_rtt = NO_RTT;
        } else if self.in_slow_start() {
            self.slow_start(acked);
        }
    }

    fn on_ack_in_recovery(&mut self, sample: &AckSample) {
        // tcp_vegas_pkts_acked runs on every ACK; the window is recovery's.
        self.sample_rtt(sample.rtt);
    }

    fn on_congestion_event(&mut self, _now: Time, _in_flight: u64) {
        // tcp_vegas_state: no Vegas samples out of the open state; Reno's ssthresh.
        self.doing_vegas = false;
        self.ssthresh = self.reno_ssthresh();
        self.cwnd = self.ssthresh;
    }

    fn on_recovery_end(&mut self, _now: Time) {
        // tcp_input.c tcp_end_cwnd_reduction: cwnd = ssthresh; back to the open state.
        self.cwnd = self.ssthresh;
        self.enable();
    }

    fn on_retransmission_timeout(&mut self, _now: Time, _in_flight: u64) {
        self.doing_vegas = false;
        self.ssthresh = self.reno_ssthresh();
        self.cwnd = 1;
        self.cwnd_cnt = 0;
    }

    fn on_loss_end(&mut self, _now: Time) {
        self.enable();
    }

    fn on_idle_restart(&mut self, restart_window: u64) {
        // tcp_vegas_cwnd_event: CA_EVENT_CWND_RESTART re-initialises Vegas (baseRTT too).
        self.cwnd = self.cwnd.min((restart_window / self.mss).max(1));
        self.base_rtt = NO_RTT;
        self.enable();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Vegas at window `cwnd` (segments) and threshold `ssthresh`, baseRTT 100 ms, whose round
    /// trip under way saw RTT samples `rtt_ms`; the next ACK passes the round's end.
    fn at_round_end(cwnd: u64, ssthresh: u64, rtt_ms: &[u64]) -> Vegas {
        let mut cc = Vegas::new(1000);
        cc.init(cwnd * 1000, ssthresh * 1000);
        cc.sample_rtt(Some(Duration::from_millis(100)));
        cc.cnt_rtt = 0;
        cc.min_rtt = NO_RTT;
        for &ms in rtt_ms {
            cc.sample_rtt(Some(Duration::from_millis(ms)));
        }
        cc.on_sequence(1000, 100_000);
        cc
    }

    fn ack(cc: &mut Vegas, rtt_ms: u64) {
        let rtt = Duration::from_millis(rtt_ms);
        cc.on_ack(&crate::cc::testkit::ack(Time::ZERO, 1000, 1, rtt));
    }

    #[test]
    fn congestion_avoidance_keeps_alpha_to_beta_segments_queued() {
        // 20 segments, RTT 105 ms over a base of 100: diff = 20 * 5 / 100 = 1 < alpha: +1.
        let mut cc = at_round_end(20, 10, &[105, 106]);
        ack(&mut cc, 105);
        assert_eq!((cc.cwnd, cc.diff()), (21, None));
        // RTT 115 ms: diff = 3, between alpha and beta: unchanged.
        let mut cc = at_round_end(20, 10, &[115, 116]);
        ack(&mut cc, 115);
        assert_eq!(cc.cwnd, 20);
        // RTT 130 ms: diff = 6 > beta: -1, and ssthresh follows.
        let mut cc = at_round_end(20, 10, &[130, 140]);
        ack(&mut cc, 130);
        assert_eq!(cc.cwnd, 19);
        // Within the round, no change; the next round trip ends past the new snd_nxt.
        cc.on_sequence(2000, 100_000);
        ack(&mut cc, 200);
        assert_eq!(cc.cwnd, 19);
        assert_eq!(cc.beg_snd_nxt, 100_000);
    }

    #[test]
    fn too_few_samples_fall_back_to_reno() {
        // Two samples in the round (delayed ACKs): Reno's increase, however long the queue.
        let mut cc = at_round_end(20, 10, &[300]);
        cc.cwnd_cnt = 19;
        ack(&mut cc, 300);
        assert_eq!(cc.cwnd, 21);
    }

    #[test]
    fn slow_start_ends_at_the_actual_rate_once_diff_passes_gamma() {
        // diff = 40 * 100 / 100 = 40 > gamma in slow start: cwnd = 40 * 100 / 200 + 1 = 21.
        let mut cc = at_round_end(40, 1000, &[200, 210]);
        ack(&mut cc, 200);
        assert_eq!(cc.cwnd, 21);
        assert!(!cc.in_slow_start(), "ssthresh {}", cc.ssthresh);
        // diff = 0 in slow start: grows by the segment acknowledged.
        let mut cc = at_round_end(40, 1000, &[100, 101]);
        ack(&mut cc, 100);
        assert_eq!(cc.cwnd, 41);
    }

    #[test]
    fn recovery_pauses_vegas_and_halves_as_reno() {
        let mut cc = at_round_end(40, 1000, &[100, 101]);
        cc.on_congestion_event(Time::ZERO, 40_000);
        assert_eq!((cc.cwnd, cc.ssthresh, cc.doing_vegas), (20, 20, false));
        cc.on_recovery_end(Time::ZERO);
        assert!(cc.doing_vegas);
        assert_eq!(cc.beg_snd_nxt, 100_000);
        cc.on_retransmission_timeout(Time::ZERO, 20_000);
        assert_eq!((cc.cwnd, cc.ssthresh), (1, 10));
    }
}
