//! BIC TCP, binary increase congestion control (Xu, Harfoush, Rhee, "Binary Increase Congestion
//! Control for Fast, Long Distance Networks", IEEE INFOCOM 2004), with the constants and the
//! per-ACK increment of Linux `tcp_bic.c`.
//!
//! After a loss the window is a binary search between the reduced window and the window where
//! the loss happened (`last_max`): far below it, at most `max_increment` segments per round trip;
//! closer, a fixed fraction of the remaining distance per round trip; within a few segments,
//! very slowly. Above `last_max` it probes for a new maximum, slowly at first, then faster, then
//! at `max_increment` per round trip. Fast convergence lowers `last_max` when a loss comes below
//! the previous one. At or below `low_window` segments it is standard TCP.
//!
//! As in Linux, the increment is divided by an estimate of the segments per ACK (`delayed_ack`,
//! tcp_bic.c bictcp_acked: ratio = 15/16 ratio + sample/16, kept x16 in u32). Its integer update
//! cannot fall below 31/16 with one ACK per segment (31 - 31/16 + 1 = 31), so Linux BIC (and the
//! ns-2.35 TCP/Linux that carries it) grows 1.94 times faster than the paper's `cnt` when every
//! segment is ACKed; with delayed ACKs it settles at 2 and the window grows twice as fast per
//! acknowledged segment. Linux recomputes the increment at most every HZ/32 while the window is
//! unchanged; as it depends only on the window, `last_max` and the ratio, we recompute it on
//! every ACK.
//!
//! `ns3 = true` follows ns-3 3.44's `TcpBic` instead where it departs from Linux: [`ns3`] holds
//! those rules, each with its tcp-bic.cc line.

use super::cc::AdditiveIncrease;
use super::{AckSample, CongestionControl, Param, ParamKind, Registered};
use qstp_proto::Time;

mod ns3;

/// Linux tcp_bic.c: BICTCP_B = 4, the binary search goes to a point (max - cwnd) / B away.
const B: u64 = 4;

/// Linux tcp_bic.c and tcp_cubic.c ACK_RATIO_SHIFT: the segments-per-ACK estimate is kept x16.
pub(crate) const ACK_RATIO_SHIFT: u32 = 4;

/// Linux's estimate of the segments per ACK, x16 (tcp_bic.c and tcp_cubic.c `delayed_ack`),
/// by which both modules divide their increments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AckRatio(pub(crate) u32);

impl AckRatio {
    /// bictcp_reset: two segments per ACK.
    pub(crate) const INITIAL: AckRatio = AckRatio(2 << ACK_RATIO_SHIFT);

    /// bictcp_acked, in the Open state: ratio += sample - ratio / 16, in u32 arithmetic (so a
    /// sample below the ratio's integer part wraps to a decrement); the sample is the segments
    /// of `mss` bytes in `acked_bytes`, none for none.
    pub(crate) fn sample(&mut self, acked_bytes: u64, mss: u64) {
        let segments = acked_bytes.div_ceil(mss);
        if segments == 0 {
            return;
        }
        let sample = u32::try_from(segments).unwrap_or(u32::MAX);
        self.0 = self
            .0
            .wrapping_add(sample.wrapping_sub(self.0 >> ACK_RATIO_SHIFT));
    }
}

/// Registry entry.
pub(super) const ENTRY: Registered = Registered {
    name: "bic",
    aliases: &["bictcp"],
    doc: "BIC TCP (Xu, Harfoush, Rhee 2004; Linux tcp_bic.c): binary search for the window",
    params: &[
        Param {
            name: "beta",
            kind: ParamKind::Real,
            // Linux tcp_bic.c: beta = 819 / BICTCP_BETA_SCALE (1024).
            default: 819.0 / 1024.0,
            min: 0.1,
            max: 0.99,
            doc: "window kept on a loss (above low_window)",
        },
        Param {
            name: "max_increment",
            kind: ParamKind::Integer,
            // Linux tcp_bic.c: max_increment = 16 (the paper's S_max is 32).
            default: 16.0,
            min: 1.0,
            max: 10_000.0,
            doc: "largest increase per round trip, segments",
        },
        Param {
            name: "low_window",
            kind: ParamKind::Integer,
            // Linux tcp_bic.c: low_window = 14.
            default: 14.0,
            min: 2.0,
            max: 1e6,
            doc: "window (segments) at or below which it is standard TCP",
        },
        Param {
            name: "smooth_part",
            kind: ParamKind::Integer,
            // Linux tcp_bic.c: smooth_part = 20.
            default: 20.0,
            min: 1.0,
            max: 1000.0,
            doc: "round trips to creep the last B segments to last_max",
        },
        Param {
            name: "ns3",
            kind: ParamKind::Flag,
            // Not in the paper or Linux: ns-3 3.44 tcp-bic.cc's own rules (the ns3 module).
            default: 0.0,
            min: 0.0,
            max: 1.0,
            doc: "1: ns-3 3.44's TcpBic (last_max = beta x cwnd on fast convergence, its counter, last_max kept on a timeout); 0: Linux",
        },
    ],
    build: |mss, p| {
        Box::new(Bic {
            ns3: p.flag("ns3"),
            ..Bic::new(
                mss,
                p.real("beta"),
                f64::from(p.integer("max_increment")),
                f64::from(p.integer("low_window")),
                f64::from(p.integer("smooth_part")),
            )
        })
    },
};

/// BIC TCP's window.
#[derive(Debug, Clone)]
pub struct Bic {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    /// Bytes acknowledged in congestion avoidance since the window last grew.
    acked: AdditiveIncrease,
    /// Window, segments, where the last loss happened (0: none yet).
    last_max: u64,
    beta: f64,
    max_increment: u64,
    low_window: u64,
    smooth_part: u64,
    /// ns-3 3.44's `TcpBic` (the `ns3` module).
    ns3: bool,
    /// Under `ns3`: segments acknowledged towards the next increase (`m_cWndCnt`).
    cwnd_cnt: u64,
    /// Linux: segments per ACK x16 (tcp_bic.c `delayed_ack`); unused under `ns3`, whose TcpBic
    /// has none.
    delayed_ack: AckRatio,
}

impl Bic {
    /// BIC for segments of `mss` bytes with the Linux tcp_bic.c parameters given.
    pub fn new(mss: u32, beta: f64, max_increment: f64, low_window: f64, smooth_part: f64) -> Self {
        let mss = u64::from(mss.max(1));
        Bic {
            mss,
            cwnd: 2 * mss,
            // RFC 5681 §3.1: ssthresh starts arbitrarily high (Linux initial_ssthresh = 0).
            ssthresh: u64::MAX,
            acked: AdditiveIncrease::default(),
            last_max: 0,
            beta,
            max_increment: (max_increment.round() as u64).max(1),
            low_window: (low_window.round() as u64).max(2),
            smooth_part: (smooth_part.round() as u64).max(1),
            ns3: false,
            cwnd_cnt: 0,
            delayed_ack: AckRatio::INITIAL,
        }
    }

    fn segments(&self) -> u64 {
        self.cwnd / self.mss
    }

    /// Segments to acknowledge per one-segment increase at window `w` segments (Linux
    /// tcp_bic.c bictcp_update's `cnt`; ns-3 3.44 tcp-bic.cc `Update` with `ns3`): the window
    /// grows by about w / cnt per round trip.
    fn cnt(&self, w: u64) -> u64 {
        let (max, max_inc) = (self.last_max, self.max_increment);
        // "Start off normal", one segment per window like standard TCP: Linux at or below
        // low_window, ns-3 below it.
        let normal = if self.ns3 {
            w < self.low_window
        } else {
            w <= self.low_window
        };
        let cnt = if normal {
            w
        } else if w < max {
            // The binary search's distance, segments: Linux's integer quotient, ns-3's
            // fractional one. (For whole numbers the float quotient below truncates to the
            // integer one exactly.)
            let dist = if self.ns3 {
                (max - w) as f64 / B as f64
            } else {
                ((max - w) / B) as f64
            };
            if dist > max_inc as f64 {
                // Far below: linear increase, max_increment per round trip.
                w / max_inc
            } else if dist <= 1.0 {
                // Almost there: B / smooth_part segments per round trip.
                w * self.smooth_part / B
            } else {
                // Binary search: dist segments per round trip.
                (w as f64 / dist) as u64
            }
        } else if w < max + B {
            // Just above last_max: creep as just below it.
            w * self.smooth_part / B
        } else if w < max + max_inc * (B - 1) {
            // Max probing, slow start-like: (w - max) / (B - 1) segments per round trip.
            w * (B - 1) / (w - max)
        } else {
            // Far above: linear increase, max_increment per round trip.
            w / max_inc
        };
        // Linux tcp_bic.c: with no loss yet, at least 5% per round trip (cnt at most 20).
        let cnt = if max == 0 { cnt.min(20) } else { cnt };
        if self.ns3 {
            return cnt.max(1);
        }
        // Linux tcp_bic.c bictcp_update: `cnt = (cnt << ACK_RATIO_SHIFT) / delayed_ack`.
        ((cnt << ACK_RATIO_SHIFT) / u64::from(self.delayed_ack.0.max(1))).max(1)
    }

    /// Linux tcp_bic.c bictcp_recalc_ssthresh: remember the window (lowered by fast
    /// convergence if the loss came below the previous maximum) and return the new ssthresh.
    fn on_loss(&mut self) -> u64 {
        let w = self.segments();
        self.last_max = if w < self.last_max {
            // Fast convergence (on in Linux): last_max = w (1 + beta) / 2.
            (w as f64 * (1.0 + self.beta) / 2.0) as u64
        } else {
            w
        };
        self.acked.reset();
        let kept = if w <= self.low_window {
            // Standard TCP's halving at small windows.
            w / 2
        } else {
            (w as f64 * self.beta) as u64
        };
        // Linux tcp_bic.c: at least 2 segments.
        kept.max(2) * self.mss
    }
}

impl CongestionControl for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }

    fn init(&mut self, initial_cwnd: u64, initial_ssthresh: u64) {
        self.cwnd = initial_cwnd.max(self.mss);
        self.ssthresh = initial_ssthresh.max(2 * self.mss);
        self.acked.reset();
        self.last_max = 0;
        self.delayed_ack = AckRatio::INITIAL;
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, sample: &AckSample) {
        if self.ns3 {
            return self.on_ack_ns3(sample);
        }
        // Linux calls pkts_acked (bictcp_acked) before cong_avoid on the same ACK.
        self.delayed_ack.sample(sample.acked_bytes, self.mss);
        if self.cwnd < self.ssthresh {
            // RFC 5681 §3.1 eq. (2): cwnd += min(N, SMSS).
            self.cwnd += sample.acked_bytes.min(self.mss);
            return;
        }
        // Linux tcp_cong_avoid_ai(tp, cnt, acked): one segment per cnt acknowledged.
        let per = self.cnt(self.segments());
        self.acked
            .grow(&mut self.cwnd, sample.acked_bytes, per, self.mss);
    }

    fn on_congestion_event(&mut self, _now: Time, in_flight: u64) {
        if self.ns3 {
            self.ssthresh = self.on_loss_ns3(in_flight);
            self.cwnd = self.ssthresh;
            return;
        }
        // Linux reduces from the window, not FlightSize.
        self.ssthresh = self.on_loss();
        self.cwnd = self.ssthresh;
    }

    fn on_recovery_end(&mut self, _now: Time) {
        // RFC 6582 §3.2 step 3: on a full ACK, cwnd = ssthresh.
        self.cwnd = self.ssthresh;
    }

    fn on_recovery_exit_ack(&mut self, _now: Time, advanced: u64) {
        if self.ns3 {
            self.on_recovery_exit_ack_ns3(advanced);
        }
    }

    fn ns3_socket(&self) -> bool {
        // ns-3 3.44 tcp-bic.cc:256 GetSsThresh: below low_window, half of `bytesInFlight`, which
        // the socket sets to BytesInFlight(), the pipe (tcp-socket-base.cc:1715-1717, :3963).
        self.ns3
    }

    fn on_retransmission_timeout(&mut self, _now: Time, in_flight: u64) {
        if self.ns3 {
            return self.on_timeout_ns3(in_flight);
        }
        self.ssthresh = self.on_loss();
        // Linux tcp_bic.c bictcp_state: entering the Loss state resets the search (after the
        // ssthresh computation), so last_max and the ACK ratio are forgotten.
        self.last_max = 0;
        self.delayed_ack = AckRatio::INITIAL;
        // RFC 5681 §3.1: after a timeout cwnd is one segment.
        self.cwnd = self.mss;
    }
}

#[cfg(test)]
mod tests {
    use super::super::cc::testkit::ack_bytes as ack;
    use super::*;
    use crate::CcSpec;

    const MSS: u64 = 1000;

    fn linux() -> Bic {
        Bic::new(MSS as u32, 819.0 / 1024.0, 16.0, 14.0, 20.0)
    }

    /// In congestion avoidance at `w` segments, no loss yet, with the ACK-ratio estimate at
    /// exactly one segment per ACK (16/16, where single-segment ACKs keep it), so the paper's
    /// `cnt` shows unscaled.
    fn at(w: u64) -> Bic {
        let mut cc = linux();
        cc.init(w * MSS, 2 * MSS);
        cc.delayed_ack = AckRatio(1 << ACK_RATIO_SHIFT);
        cc
    }

    /// Acknowledge one window (as it stands now) segment by segment; returns the growth in
    /// segments.
    fn round(cc: &mut Bic) -> u64 {
        let before = cc.segments();
        for _ in 0..before {
            cc.on_ack(&ack(MSS));
        }
        cc.segments() - before
    }

    #[test]
    fn a_loss_at_1000_keeps_beta_of_it() {
        let mut cc = at(1000);
        cc.on_congestion_event(Time::ZERO, 1000 * MSS);
        // Linux: 1000 * 819 / 1024 = 799.8, rounded down.
        assert_eq!((cc.cwnd(), cc.ssthresh()), (799 * MSS, 799 * MSS));
        assert_eq!(cc.last_max, 1000);
        cc.on_recovery_end(Time::ZERO);
        assert_eq!(cc.cwnd(), 799 * MSS);
    }

    #[test]
    fn far_below_last_max_growth_is_capped_at_max_increment() {
        let mut cc = at(1000);
        cc.on_congestion_event(Time::ZERO, 1000 * MSS);
        // 201 segments short, a quarter of that (50) exceeds S_max = 16: +16 per round trip
        // (integer division of cnt makes it a little more).
        for _ in 0..3 {
            let grown = round(&mut cc);
            assert!((16..=17).contains(&grown), "{grown}");
        }
    }

    #[test]
    fn near_last_max_the_search_slows_down() {
        let mut cc = at(1000);
        cc.on_congestion_event(Time::ZERO, 1000 * MSS);
        // 40 short: the pace is a quarter (B = 4) of the distance, 10 segments, per round trip,
        // i.e. one segment per 96 acknowledged; the distance shrinks as the window grows, so a
        // whole round trip adds a little less.
        cc.cwnd = 960 * MSS;
        assert_eq!(cc.cnt(960), 96);
        let grown = round(&mut cc);
        assert!((8..=10).contains(&grown), "{grown}");
        // 4 short: within B segments, B / smooth_part = 0.2 segments per round trip, so five
        // round trips for one segment.
        cc.cwnd = 996 * MSS;
        cc.acked.reset();
        let grown: u64 = (0..5).map(|_| round(&mut cc)).sum();
        assert_eq!(grown, 1);
    }

    #[test]
    fn above_last_max_it_probes_ever_faster() {
        let mut cc = at(1000);
        cc.on_congestion_event(Time::ZERO, 1000 * MSS);
        // 24 above: (w - max) / (B - 1) = 8 segments per round trip.
        cc.cwnd = 1024 * MSS;
        let grown = round(&mut cc);
        assert!((8..=9).contains(&grown), "{grown}");
        // Past max + S_max (B - 1) = 1048: S_max = 16 per round trip.
        cc.cwnd = 1100 * MSS;
        let grown = round(&mut cc);
        assert!((16..=17).contains(&grown), "{grown}");
    }

    #[test]
    fn fast_convergence_lowers_last_max() {
        let mut cc = at(1000);
        cc.on_congestion_event(Time::ZERO, 0);
        cc.cwnd = 900 * MSS;
        cc.on_congestion_event(Time::ZERO, 0);
        // 900 (1 + 0.8) / 2 = 810 (809.9 with beta = 819/1024).
        assert_eq!(cc.last_max, 809);
        assert_eq!(cc.cwnd(), 719 * MSS);
    }

    #[test]
    fn standard_tcp_at_small_windows() {
        let mut cc = at(10);
        assert_eq!(round(&mut cc), 1);
        cc.on_congestion_event(Time::ZERO, 0);
        assert_eq!(cc.cwnd(), 5 * MSS);
    }

    #[test]
    fn linux_ack_ratio_stalls_at_31_sixteenths_so_single_acks_grow_almost_twice_as_fast() {
        // tcp_bic.c bictcp_acked from its reset value 32: 32 + 1 - 2 = 31, then 31 + 1 - 1 = 31.
        let mut cc = linux();
        cc.init(1000 * MSS, 2 * MSS);
        assert_eq!(cc.delayed_ack.0, 32);
        cc.on_congestion_event(Time::ZERO, 1000 * MSS);
        // Far below last_max the paper's pace is 16 per round trip; with the ratio at 31/16,
        // cnt = (799 / 16 = 49) x 16 / 31 = 25, so one round trip of 799 ACKs adds 31-32.
        let grown = round(&mut cc);
        assert_eq!(cc.delayed_ack.0, 31);
        assert!((31..=33).contains(&grown), "{grown}");
        // With two segments per ACK the estimate stays at 32 (2 - 32/16 = 0): cnt halves, and
        // per acknowledged segment the window grows twice as fast again.
        let mut cc = linux();
        cc.init(1000 * MSS, 2 * MSS);
        cc.on_congestion_event(Time::ZERO, 1000 * MSS);
        let before = cc.segments();
        for _ in 0..before / 2 {
            cc.on_ack(&ack(2 * MSS));
        }
        assert_eq!(cc.delayed_ack.0, 32);
        let grown = cc.segments() - before;
        assert!((31..=34).contains(&grown), "{grown}");
        // ns-3's TcpBic has no estimate.
        let mut cc = super::ns3::tests::ns3_at(1000);
        cc.on_congestion_event(Time::ZERO, 1000 * MSS);
        let unscaled = cc.cnt(799);
        cc.delayed_ack = AckRatio(31);
        assert_eq!(cc.cnt(799), unscaled);
        cc.delayed_ack = AckRatio(64);
        assert_eq!(cc.cnt(799), unscaled);
    }

    #[test]
    fn a_timeout_forgets_last_max() {
        let mut cc = at(1000);
        cc.on_retransmission_timeout(Time::ZERO, 0);
        assert_eq!(cc.delayed_ack.0, 32);
        assert_eq!((cc.cwnd(), cc.ssthresh(), cc.last_max), (MSS, 799 * MSS, 0));
        // With no maximum known, at least 5% per round trip by the paper's count (cnt 20);
        // single-segment ACKs take the reset ratio to 31/16, so cnt = 20 x 16 / 31 = 10 and
        // 1000 grows by 100.
        cc.cwnd = 1000 * MSS;
        cc.ssthresh = 2 * MSS;
        assert_eq!(round(&mut cc), 100);
        // At one segment per ACK exactly, the paper's 5%.
        cc.cwnd = 1000 * MSS;
        cc.delayed_ack = AckRatio(1 << ACK_RATIO_SHIFT);
        assert_eq!(round(&mut cc), 50);
    }

    #[test]
    fn builds_from_the_registry() {
        let cc = CcSpec::named("bic").build(1460).unwrap();
        assert_eq!(cc.name(), "bic");
    }
}
