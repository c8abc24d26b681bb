//! CUBIC as ns-2.35 runs it, for comparisons with ns-2: `congestion = { name = "cubic", ns2 = 1 }`.
//! ns-2.35's TCP/Linux carries Linux 2.6.22's `tcp_cubic.c` (CUBIC 2.1, tcp/linux/src/), whose
//! arithmetic differs from RFC 9438's (the default) in ways that move a window:
//! - whole segments and whole jiffies: ns-2's clock truncated to 1 ms (HZ 1000, tcp-linux.cc:319),
//!   the cubic function in 1/1024 s (`BICTCP_HZ`), C as `bic_scale` / 1024 x 10 (41 for 0.4),
//!   K from the module's table-and-Newton cube root ([`cubic_root`]);
//! - the target is W(t) at t itself: `delay_min`, which would aim it one RTT ahead and bound the
//!   growth by `max_increment`, comes only from TCP timestamps (`measure_delay`), which the
//!   high-speed dumbbell turns off (hstcp_dumbbell.tcl) and the lab does not model;
//! - the window grows by one segment per `cnt` ACKs (`snd_cwnd_cnt`, reset at each reduction),
//!   `cnt = cwnd / (target - cwnd)` (`100 cwnd` at or above the target), 50 before the first
//!   loss (`loss_cwnd == 0`), scaled by the ACK-ratio estimate (`(cnt << 4) / delayed_ack`,
//!   31/16 with an ACK per segment as in BIC: [`crate::bic`]), recomputed at most every HZ/32
//!   while the window stays put;
//! - TCP friendliness: one Reno segment per `cwnd x beta_scale / 8` ACKs (beta_scale 23 for beta
//!   819/1024), at that rate throughout (no switch to 1 past W_max);
//! - slow start while cwnd <= ssthresh (`bictcp_cong_avoid`), one segment per ACK that
//!   acknowledges a full segment (`sysctl_tcp_abc = 1`, tcp_cong.c `tcp_slow_start`);
//! - a timeout computes ssthresh as a loss does, then the Loss state resets every variable
//!   (`bictcp_state` -> `bictcp_reset`: W_max, the loss window, the ratio), as tcp-linux.cc
//!   `enter_loss` orders them.
//!
//! No HyStart (2.6.22 has none): `hystart` and `abc_limit` are unused. Not reproduced:
//! `tcp_is_cwnd_limited` (the lab's bulk senders fill the window), and Linux telling an ACK in
//! the Open state from one in the Loss state for the ratio estimate (the lab's BIC does not
//! either).

use crate::bic::{AckRatio, ACK_RATIO_SHIFT};
use crate::{AckSample, CongestionControl};
use qstp_proto::Time;

/// ns-linux-c.h: HZ 1000, jiffies of 1 ms.
const HZ: u32 = 1000;
/// tcp_cubic.c BICTCP_HZ: the cubic function's time unit is 2^-10 s.
const BICTCP_HZ: u32 = 10;
/// tcp_cubic.c BICTCP_BETA_SCALE.
const BETA_SCALE: u32 = 1024;

/// tcp_cubic.c `cubic_root`: the cube root of `a` by a table of 64 entries and one
/// Newton-Raphson step ("avg err ~= 0.195%"), in the module's u32 arithmetic.
pub fn cubic_root(a: u64) -> u32 {
    // cbrt(x) MSB values for x MSB values in [0..63], as the module tabulates them.
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161, 164,
        168, 170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204, 206, 209,
        211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229, 231, 232, 234, 236, 237, 239, 240,
        242, 244, 245, 246, 248, 250, 251, 252, 254,
    ];
    // fls64: the position of the highest set bit, from 1.
    let b = 64 - a.leading_zeros();
    if b < 7 {
        return (u32::from(V[a as usize]) + 35) >> 6;
    }
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let x = ((u32::from(V[shift]) + 10) << b) >> 6;
    // x = (2x + a / (x (x - 1))) / 3, the division by 3 as * 341 >> 10.
    let square = u64::from(x) * u64::from(x.wrapping_sub(1));
    let x = x
        .wrapping_mul(2)
        .wrapping_add(a.checked_div(square).unwrap_or(0) as u32);
    x.wrapping_mul(341) >> 10
}

/// ns-2.35's (Linux 2.6.22's) CUBIC.
#[derive(Debug, Clone)]
pub struct Ns2Cubic {
    mss: u64,
    fast_convergence: bool,
    /// beta x 1024 (819 for 0.8).
    beta: u32,
    /// `beta_scale = 8 (1024 + beta) / 3 / (1024 - beta)`.
    beta_scale: u32,
    /// `cube_rtt_scale = bic_scale x 10`.
    cube_rtt_scale: u64,
    /// `cube_factor = 2^40 / (bic_scale x 10)`.
    cube_factor: u64,
    /// Window and threshold, segments (`snd_cwnd`, `snd_ssthresh`).
    cwnd: u32,
    ssthresh: u32,
    /// ACKs towards the next one-segment increase (`snd_cwnd_cnt`).
    cwnd_cnt: u32,
    /// Bytes acknowledged since slow start last grew the window (`bytes_acked`).
    bytes_acked: u64,
    /// The module's state (`struct bictcp`), times in jiffies; 0 is "none" as there.
    cnt: u32,
    last_max_cwnd: u32,
    loss_cwnd: u32,
    last_cwnd: u32,
    last_time: u32,
    origin: u32,
    k: u32,
    epoch_start: u32,
    ack_cnt: u32,
    tcp_cwnd: u32,
    delayed_ack: AckRatio,
}

impl Ns2Cubic {
    /// ns-2's CUBIC for segments of `mss` bytes: C (segments/s^3) and beta as the lab's
    /// parameters give them, turned into the module's integers.
    pub fn new(mss: u32, c: f64, beta: f64, fast_convergence: bool) -> Self {
        // C = bic_scale x 10 / 1024 (tcp_cubic.c cube_rtt_scale: "1024*c/rtt" with rtt 100 ms).
        let bic_scale = ((c * f64::from(BETA_SCALE) / 10.0).round() as u64).max(1);
        let beta = ((beta * f64::from(BETA_SCALE)).round() as u32).clamp(1, BETA_SCALE - 1);
        let mut cc = Ns2Cubic {
            mss: u64::from(mss.max(1)),
            fast_convergence,
            beta,
            // tcp_cubic.c cubictcp_register.
            beta_scale: 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta),
            cube_rtt_scale: bic_scale * 10,
            cube_factor: (1u64 << (10 + 3 * BICTCP_HZ)) / (bic_scale * 10),
            cwnd: 2,
            ssthresh: u32::MAX,
            cwnd_cnt: 0,
            bytes_acked: 0,
            cnt: 0,
            last_max_cwnd: 0,
            loss_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            origin: 0,
            k: 0,
            epoch_start: 0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            delayed_ack: AckRatio::INITIAL,
        };
        cc.reset();
        cc
    }

    /// tcp_cubic.c `bictcp_reset`.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.loss_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.origin = 0;
        self.k = 0;
        self.epoch_start = 0;
        self.delayed_ack = AckRatio::INITIAL;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
    }

    /// tcp-linux.cc:319: `tcp_time_stamp`, ns-2's clock truncated to jiffies (u32).
    fn jiffies(now: Time) -> u32 {
        (now.as_nanos() / 1_000_000) as u32
    }

    /// tcp_cubic.c `bictcp_update`: `cnt`, the ACKs per one-segment increase.
    fn update(&mut self, now: u32) {
        let cwnd = self.cwnd;
        self.ack_cnt = self.ack_cnt.wrapping_add(1);
        if self.last_cwnd == cwnd && (now.wrapping_sub(self.last_time) as i32) <= (HZ / 32) as i32 {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = now;
        if self.epoch_start == 0 {
            self.epoch_start = now;
            self.ack_cnt = 1;
            self.tcp_cwnd = cwnd;
            if self.last_max_cwnd <= cwnd {
                self.k = 0;
                self.origin = cwnd;
            } else {
                // K = cbrt((W_max - cwnd) / C), in 2^-10 s.
                self.k = cubic_root(self.cube_factor * u64::from(self.last_max_cwnd - cwnd));
                self.origin = self.last_max_cwnd;
            }
        }
        // No delay_min (see the module's note): t is the time since the epoch began, 2^-10 s.
        let t = (now.wrapping_sub(self.epoch_start) << BICTCP_HZ) / HZ;
        let offs = u64::from(t.abs_diff(self.k));
        // delta = C (t - K)^3, segments.
        let delta = ((self.cube_rtt_scale * offs * offs * offs) >> (10 + 3 * BICTCP_HZ)) as u32;
        let target = if t < self.k {
            self.origin.wrapping_sub(delta)
        } else {
            self.origin.wrapping_add(delta)
        };
        self.cnt = if target > cwnd {
            cwnd / (target - cwnd)
        } else {
            // "very small increment"
            cwnd.wrapping_mul(100)
        };
        // "slow start and low utilization": before the first loss.
        if self.loss_cwnd == 0 {
            self.cnt = 50;
        }
        // TCP friendliness: the Reno window, one segment per cwnd x beta_scale / 8 ACKs.
        let per = ((cwnd.wrapping_mul(self.beta_scale)) >> 3).max(1);
        while self.ack_cnt > per {
            self.ack_cnt -= per;
            self.tcp_cwnd += 1;
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        // In the module's u32 arithmetic.
        self.cnt = (self.cnt << ACK_RATIO_SHIFT) / self.delayed_ack.0.max(1);
        if self.cnt == 0 {
            self.cnt = 1;
        }
    }

    /// tcp_cubic.c `bictcp_recalc_ssthresh`: W_max with fast convergence, the new ssthresh.
    fn recalc_ssthresh(&mut self) -> u32 {
        self.epoch_start = 0;
        self.last_max_cwnd = if self.cwnd < self.last_max_cwnd && self.fast_convergence {
            ((u64::from(self.cwnd) * u64::from(BETA_SCALE + self.beta)) / u64::from(2 * BETA_SCALE))
                as u32
        } else {
            self.cwnd
        };
        self.loss_cwnd = self.cwnd;
        ((u64::from(self.cwnd) * u64::from(self.beta) / u64::from(BETA_SCALE)) as u32).max(2)
    }
}

impl CongestionControl for Ns2Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn init(&mut self, initial_cwnd: u64, initial_ssthresh: u64) {
        self.cwnd = u32::try_from((initial_cwnd / self.mss).max(1)).unwrap_or(u32::MAX);
        self.ssthresh = u32::try_from((initial_ssthresh / self.mss).max(2)).unwrap_or(u32::MAX);
        self.cwnd_cnt = 0;
        self.reset();
    }

    fn on_idle_restart(&mut self, restart_window: u64) {
        // RFC 5681 §4.1; 2.6.22's module keeps its state (it has no CA_EVENT_TX_START).
        let restart = u32::try_from((restart_window / self.mss).max(1)).unwrap_or(u32::MAX);
        self.cwnd = self.cwnd.min(restart);
    }

    fn cwnd(&self) -> u64 {
        u64::from(self.cwnd) * self.mss
    }

    fn ssthresh(&self) -> u64 {
        u64::from(self.ssthresh).saturating_mul(self.mss)
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd <= self.ssthresh
    }

    fn on_ack(&mut self, sample: &AckSample) {
        let segments = sample.acked_bytes.div_ceil(self.mss);
        if segments == 0 {
            return;
        }
        // tcp-linux.cc:382 pkts_acked before cong_avoid: tcp_cubic.c `bictcp_acked`.
        self.delayed_ack.sample(sample.acked_bytes, self.mss);
        // tcp_cubic.c `bictcp_cong_avoid`.
        if self.cwnd <= self.ssthresh {
            // tcp_cong.c tcp_slow_start with sysctl_tcp_abc = 1: only once a full segment is
            // acknowledged since the last increase, then cwnd credits, a segment per cwnd.
            self.bytes_acked += sample.acked_bytes;
            if self.bytes_acked < self.mss {
                return;
            }
            self.bytes_acked = 0;
            self.cwnd_cnt += self.cwnd;
            while self.cwnd_cnt >= self.cwnd {
                self.cwnd_cnt -= self.cwnd;
                self.cwnd += 1;
            }
            return;
        }
        self.update(Self::jiffies(sample.now));
        if self.cwnd_cnt >= self.cnt {
            self.cwnd += 1;
            self.cwnd_cnt = 0;
        } else {
            self.cwnd_cnt += 1;
        }
    }

    fn on_congestion_event(&mut self, _now: Time, _in_flight: u64) {
        // tcp-linux.cc:494-499: ssthresh from the module, the counter cleared, cwnd = ssthresh.
        self.ssthresh = self.recalc_ssthresh();
        self.cwnd_cnt = 0;
        self.bytes_acked = 0;
        self.cwnd = self.ssthresh;
    }

    fn on_recovery_end(&mut self, _now: Time) {
        self.cwnd = self.ssthresh;
    }

    fn on_retransmission_timeout(&mut self, _now: Time, _in_flight: u64) {
        // tcp-linux.cc enter_loss: ssthresh from the module, cwnd 1, then the Loss state
        // (tcp_cubic.c bictcp_state: bictcp_reset).
        self.ssthresh = self.recalc_ssthresh();
        self.cwnd = 1;
        self.cwnd_cnt = 0;
        self.bytes_acked = 0;
        self.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qstp_proto::Duration;

    const MSS: u64 = 1000;

    fn ack(now: Time) -> AckSample {
        AckSample {
            now,
            acked_bytes: MSS,
            rtt: None,
            srtt: Duration::from_millis(200),
            min_rtt: Duration::from_millis(200),
            in_flight: 0,
        }
    }

    fn at_ms(ms: u64) -> Time {
        Time::ZERO + Duration::from_millis(ms)
    }

    /// The window in congestion avoidance at `w` segments, the last loss at `w_max`.
    fn lost_at(w_max: u32, w: u32) -> Ns2Cubic {
        let mut cc = Ns2Cubic::new(MSS as u32, 0.4, 0.8, true);
        cc.init(u64::from(w_max) * MSS, 2 * MSS);
        cc.on_congestion_event(Time::ZERO, 0);
        cc.cwnd = w;
        cc
    }

    #[test]
    fn the_cube_root_is_the_modules_approximation() {
        // Values worked by hand through the module's code: the table for small a, one Newton
        // step above.
        assert_eq!(cubic_root(0), 0);
        assert_eq!(cubic_root(27), 3);
        assert_eq!(cubic_root(1000), 10);
        // Within 2% of the true root across the range a window's K needs.
        for a in [1u64 << 20, 123_456_789, 1 << 40, 98_765_432_123, 1 << 50] {
            let exact = (a as f64).cbrt();
            let got = f64::from(cubic_root(a));
            assert!(
                (got - exact).abs() / exact < 0.02,
                "{a}: {got} against {exact}"
            );
        }
    }

    #[test]
    fn the_modules_constants_follow_from_c_and_beta() {
        let cc = Ns2Cubic::new(MSS as u32, 0.4, 0.8, true);
        assert_eq!((cc.beta, cc.beta_scale, cc.cube_rtt_scale), (819, 23, 410));
        assert_eq!(cc.cube_factor, (1u64 << 40) / 410);
    }

    #[test]
    fn a_loss_keeps_819_of_1024_and_fast_convergence_lowers_w_max() {
        let mut cc = lost_at(100, 100);
        assert_eq!(
            (cc.last_max_cwnd, cc.ssthresh, cc.loss_cwnd),
            (100, 79, 100)
        );
        // Lost again at 90 < 100: W_max = 90 x 1843 / 2048 = 80.
        cc.cwnd = 90;
        cc.on_congestion_event(Time::ZERO, 0);
        assert_eq!((cc.last_max_cwnd, cc.ssthresh), (80, 71));
    }

    #[test]
    fn k_comes_from_the_distance_to_w_max_and_the_target_is_aimed_at_t_itself() {
        // W_max 100, cwnd 80: K = cbrt(20 / 0.4) = 3.68 s, 3770 in 2^-10 s by the module's root.
        let mut cc = lost_at(100, 80);
        cc.ssthresh = 79;
        cc.update(1);
        assert_eq!(cc.k, cubic_root(cc.cube_factor * 20));
        assert!((3700..3800).contains(&cc.k), "K {}", cc.k);
        // At the epoch's start the target W(0) is within a segment of cwnd (the cubic is flat
        // there): at most one segment per 80 ACKs, x 16 / 32 by the initial ratio.
        let at_start = cc.cnt;
        assert!(at_start >= 40, "flat at the start: {at_start}");
        // Two seconds later (2048 in 2^-10 s) the target is 100 - 1 (0.4 x 1.68^3 = 1.9,
        // truncated) = 99 segments: cnt = 80 / 19 = 4, x 16 / 32 = 2. With the target one RTT
        // ahead (RFC 9438, the default) it would be nearer still.
        cc.last_cwnd = 0;
        cc.update(2001);
        assert_eq!(cc.cnt, 2);
    }

    #[test]
    fn before_any_loss_it_grows_one_segment_per_fifty_acks_scaled_by_the_ack_ratio() {
        let mut cc = Ns2Cubic::new(MSS as u32, 0.4, 0.8, true);
        cc.init(100 * MSS, 50 * MSS);
        // Past ssthresh, no loss yet: cnt = 50, and one ACK per segment moves the ratio from
        // 32 to 31 (31 - 31/16 + 1 stays 31): cnt = 50 x 16 / 31 = 25.
        let mut ms = 0;
        for _ in 0..26 {
            ms += 2;
            cc.on_ack(&ack(at_ms(ms)));
        }
        assert_eq!(cc.delayed_ack.0, 31);
        assert_eq!(cc.cnt, 25);
        assert_eq!(
            cc.cwnd, 101,
            "one segment after 26 ACKs (cnt 25, counted from 0)"
        );
    }

    #[test]
    fn slow_start_lasts_while_the_window_is_at_most_ssthresh() {
        let mut cc = Ns2Cubic::new(MSS as u32, 0.4, 0.8, true);
        cc.init(2 * MSS, 4 * MSS);
        for ms in 1..=3 {
            cc.on_ack(&ack(at_ms(ms)));
        }
        // 2 -> 3 -> 4 -> 5: the third ACK finds cwnd == ssthresh and still adds one.
        assert_eq!(cc.cwnd, 5);
        // Half a segment adds nothing, the second half one (sysctl_tcp_abc = 1).
        let mut cc = Ns2Cubic::new(MSS as u32, 0.4, 0.8, true);
        cc.init(2 * MSS, 4 * MSS);
        let half = AckSample {
            acked_bytes: MSS / 2,
            ..ack(at_ms(1))
        };
        cc.on_ack(&half);
        assert_eq!(cc.cwnd, 2);
        cc.on_ack(&half);
        assert_eq!(cc.cwnd, 3);
    }

    #[test]
    fn a_timeout_forgets_w_max_and_the_loss_window() {
        let mut cc = lost_at(100, 90);
        cc.on_retransmission_timeout(Time::ZERO, 0);
        // ssthresh as for a loss (90 x 819 / 1024 = 71), then bictcp_reset.
        assert_eq!((cc.ssthresh, cc.cwnd), (71, 1));
        assert_eq!((cc.last_max_cwnd, cc.loss_cwnd, cc.epoch_start), (0, 0, 0));
        assert_eq!(cc.delayed_ack, AckRatio::INITIAL);
    }

    #[test]
    fn the_increment_is_recomputed_at_most_every_31_ms_while_the_window_stays() {
        let mut cc = lost_at(100, 80);
        cc.ssthresh = 79;
        cc.update(10);
        let (time, acks) = (cc.last_time, cc.ack_cnt);
        cc.update(41);
        assert_eq!(cc.last_time, time, "31 ms later: not yet");
        assert_eq!(cc.ack_cnt, acks + 1, "the ACK still counts");
        cc.update(42);
        assert_eq!(cc.last_time, 42);
    }
}
