//! HighSpeed TCP (Floyd, RFC 3649): above `Low_Window` segments the additive increase a(w) grows
//! and the multiplicative decrease b(w) shrinks with the window, following a response function
//! that is a straight line in log-log space from standard TCP at `Low_Window` to one loss in
//! `1/High_P` packets at `High_Window`. At or below `Low_Window` it is standard TCP.
//!
//! a(w) and b(w) are computed from the RFC 3649 §5 formulas rather than looked up in the
//! Appendix B table that Linux `tcp_highspeed.c` carries; the tests check the formulas against that
//! table. The window is kept in bytes, as a float so that increases smaller than a byte add up.

use super::{AckSample, CongestionControl, Param, ParamKind, Registered};
use qstp_proto::Time;

/// Registry entry.
pub(super) const ENTRY: Registered = Registered {
    name: "highspeed",
    aliases: &["hstcp"],
    doc: "HighSpeed TCP, RFC 3649: increase a(w) and decrease b(w) scale with the window",
    params: &[
        Param {
            name: "low_window",
            kind: ParamKind::Integer,
            // RFC 3649 §5: Low_Window = 38.
            default: 38.0,
            min: 1.0,
            max: 1000.0,
            doc: "window (segments) at or below which it is standard TCP",
        },
        Param {
            name: "high_window",
            kind: ParamKind::Integer,
            // RFC 3649 §5: High_Window = 83000.
            default: 83_000.0,
            min: 1001.0,
            max: 1e9,
            doc: "window (segments) reached at loss rate high_p",
        },
        Param {
            name: "high_p",
            kind: ParamKind::Real,
            // RFC 3649 §5: High_P = 10^-7.
            default: 1e-7,
            min: 1e-15,
            max: 1e-6,
            doc: "packet loss rate at which the window is high_window",
        },
        Param {
            name: "high_decrease",
            kind: ParamKind::Real,
            // RFC 3649 §5: High_Decrease = 0.1.
            default: 0.1,
            min: 0.01,
            max: 0.5,
            doc: "decrease factor b(w) at high_window",
        },
    ],
    build: |mss, p| {
        Box::new(HighSpeed::new(
            mss,
            f64::from(p.integer("low_window")),
            f64::from(p.integer("high_window")),
            p.real("high_p"),
            p.real("high_decrease"),
        ))
    },
};

/// HighSpeed TCP's window.
#[derive(Debug, Clone)]
pub struct HighSpeed {
    mss: f64,
    /// Congestion window, bytes.
    cwnd: f64,
    /// Slow-start threshold, bytes.
    ssthresh: f64,
    low_window: f64,
    high_window: f64,
    high_decrease: f64,
    /// Loss rate of standard TCP at `low_window`.
    low_p: f64,
    /// Slope of the response function in log-log space.
    s: f64,
}

impl HighSpeed {
    /// HighSpeed TCP for segments of `mss` bytes with the RFC 3649 §5 parameters given.
    pub fn new(
        mss: u32,
        low_window: f64,
        high_window: f64,
        high_p: f64,
        high_decrease: f64,
    ) -> Self {
        let mss = f64::from(mss.max(1));
        // RFC 3649 §5: Low_P is the loss rate at which standard TCP, whose response function is
        // w = 1.2 / sqrt(p) (RFC 3649 §1), has window Low_Window: about 10^-3 for 38.
        let low_p = (1.2 / low_window).powi(2);
        // RFC 3649 §5: S = (log High_Window - log Low_Window) / (log High_P - log Low_P).
        let s = (high_window.ln() - low_window.ln()) / (high_p.ln() - low_p.ln());
        HighSpeed {
            mss,
            cwnd: 2.0 * mss,
            // RFC 5681 §3.1: ssthresh starts arbitrarily high.
            ssthresh: f64::MAX,
            low_window,
            high_window,
            high_decrease,
            low_p,
            s,
        }
    }

    /// Loss rate p(w) of the HighSpeed response function at window `w` segments:
    /// w = Low_Window (p / Low_P)^S, so p(w) = Low_P (w / Low_Window)^(1/S) (RFC 3649 §5).
    pub fn p(&self, w: f64) -> f64 {
        self.low_p * (w / self.low_window).powf(1.0 / self.s)
    }

    /// Decrease factor b(w) at window `w` segments.
    pub fn b(&self, w: f64) -> f64 {
        if w <= self.low_window {
            // RFC 3649 §5: standard TCP at or below Low_Window.
            return 0.5;
        }
        // Beyond High_Window the line would go on falling (below zero eventually); hold it at
        // High_Decrease, as the last row (84035, 0.10) of the Linux tcp_highspeed.c table does.
        let w = w.min(self.high_window);
        // RFC 3649 §5: b(w) = (High_Decrease - 0.5)(log w - log Low_Window)
        //                     / (log High_Window - log Low_Window) + 0.5.
        (self.high_decrease - 0.5) * (w.ln() - self.low_window.ln())
            / (self.high_window.ln() - self.low_window.ln())
            + 0.5
    }

    /// Increase a(w), segments per round trip, at window `w` segments.
    pub fn a(&self, w: f64) -> f64 {
        if w <= self.low_window {
            // RFC 3649 §5: standard TCP at or below Low_Window.
            return 1.0;
        }
        let b = self.b(w);
        // RFC 3649 §5: a(w) = w^2 p(w) 2 b(w) / (2 - b(w)); never less than standard TCP's 1.
        (w * w * self.p(w) * 2.0 * b / (2.0 - b)).max(1.0)
    }

    /// Window in segments.
    fn w(&self) -> f64 {
        self.cwnd / self.mss
    }

    /// RFC 3649 §5: after a congestion event w becomes (1 - b(w)) w; at least two segments
    /// (RFC 5681 §3.1 eq. (4)).
    fn reduced(&self) -> f64 {
        let w = self.w();
        ((1.0 - self.b(w)) * self.cwnd).max(2.0 * self.mss)
    }
}

impl CongestionControl for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }

    fn reno_min_cwnd(&self) -> bool {
        // ns-2.35 tcp/linux/src/tcp_highspeed.c: `.min_cwnd = tcp_reno_min_cwnd`.
        true
    }

    fn init(&mut self, initial_cwnd: u64, initial_ssthresh: u64) {
        self.cwnd = (initial_cwnd as f64).max(self.mss);
        self.ssthresh = (initial_ssthresh as f64).max(2.0 * self.mss);
    }

    fn cwnd(&self) -> u64 {
        self.cwnd as u64
    }

    fn ssthresh(&self) -> u64 {
        // The cast saturates: an infinite threshold is u64::MAX.
        self.ssthresh as u64
    }

    fn on_ack(&mut self, sample: &AckSample) {
        let acked = sample.acked_bytes as f64;
        if self.cwnd < self.ssthresh {
            // RFC 5681 §3.1 eq. (2): cwnd += min(N, SMSS).
            self.cwnd += acked.min(self.mss);
        } else {
            // RFC 3649 §5: w += a(w) / w per acknowledged segment; in bytes, a(w) * SMSS per
            // window of bytes acknowledged (counting acknowledged segments as Linux does, so
            // delayed ACKs do not slow it down).
            self.cwnd += self.a(self.w()) * self.mss * acked / self.cwnd;
        }
    }

    fn on_congestion_event(&mut self, _now: Time, _in_flight: u64) {
        // Linux tcp_highspeed.c reduces from the window (not FlightSize); so do we.
        self.ssthresh = self.reduced();
        self.cwnd = self.ssthresh;
    }

    fn on_recovery_end(&mut self, _now: Time) {
        // RFC 6582 §3.2 step 3: on a full ACK, cwnd = ssthresh.
        self.cwnd = self.ssthresh;
    }

    fn on_retransmission_timeout(&mut self, _now: Time, _in_flight: u64) {
        self.ssthresh = self.reduced();
        // RFC 5681 §3.1: after a timeout cwnd is one segment.
        self.cwnd = self.mss;
    }
}

#[cfg(test)]
mod tests {
    use super::super::cc::testkit::ack_bytes as ack;
    use super::*;
    use crate::CcSpec;

    const MSS: u32 = 1000;

    fn rfc() -> HighSpeed {
        HighSpeed::new(MSS, 38.0, 83_000.0, 1e-7, 0.1)
    }

    /// In congestion avoidance at `w` segments.
    fn at(w: u64) -> HighSpeed {
        let mut cc = rfc();
        cc.init(w * u64::from(MSS), 2 * u64::from(MSS));
        cc
    }

    #[test]
    fn a_and_b_match_rfc_3649_appendix_b() {
        let cc = rfc();
        // RFC 3649 Appendix B rows (w, a(w), b(w)): (38, 1, 0.50), (118, 2, 0.44),
        // (1058, 8, 0.33), (84035, 73, 0.10); the table rounds a(w) to an integer.
        assert_eq!((cc.a(38.0), cc.b(38.0)), (1.0, 0.5));
        assert!((cc.a(118.0) - 2.0).abs() < 0.5, "{}", cc.a(118.0));
        assert!((cc.b(118.0) - 0.44).abs() < 0.005, "{}", cc.b(118.0));
        assert!((cc.a(1058.0) - 8.0).abs() < 0.5, "{}", cc.a(1058.0));
        assert!((cc.b(1058.0) - 0.33).abs() < 0.005, "{}", cc.b(1058.0));
        // At High_Window b is High_Decrease and p is High_P, so a = 83000^2 * 1e-7 * 0.2 / 1.9
        // = 72.5 (RFC 3649 §5).
        assert!((cc.b(83_000.0) - 0.1).abs() < 1e-12);
        assert!((cc.p(83_000.0) - 1e-7).abs() < 1e-15);
        assert!((cc.a(83_000.0) - 72.5).abs() < 0.1, "{}", cc.a(83_000.0));
        // w = 1000 lies between the rows (851, 7, 0.34) and (1058, 8, 0.33), whose b is rounded
        // to two places.
        assert!((7.0..8.0).contains(&cc.a(1000.0)), "{}", cc.a(1000.0));
        assert!((0.325..0.345).contains(&cc.b(1000.0)), "{}", cc.b(1000.0));
        // RFC 3649 §5: the response function is w = 0.12 / p^0.835.
        assert!((cc.s + 0.835).abs() < 0.001, "{}", cc.s);
        let w = 10_000.0;
        assert!((0.12 / cc.p(w).powf(0.835) / w - 1.0).abs() < 0.02);
    }

    #[test]
    fn one_loss_at_1000_segments_takes_b_1000_off() {
        let mut cc = at(1000);
        cc.on_congestion_event(Time::ZERO, 1000 * u64::from(MSS));
        // b(1000) by the RFC 3649 §5 formula: 0.5 - 0.4 ln(1000/38) / ln(83000/38) = 0.3297.
        let b = 0.5 - 0.4 * (1000.0f64 / 38.0).ln() / (83_000.0f64 / 38.0).ln();
        let want = ((1.0 - b) * 1000.0 * f64::from(MSS)) as u64;
        assert!(cc.cwnd().abs_diff(want) <= 1, "{} vs {want}", cc.cwnd());
        assert_eq!(cc.ssthresh(), cc.cwnd());
        assert!((670_000..671_000).contains(&cc.cwnd()), "{}", cc.cwnd());
        cc.on_recovery_end(Time::ZERO);
        assert!((670_000..671_000).contains(&cc.cwnd()));
        cc.on_retransmission_timeout(Time::ZERO, 0);
        assert_eq!(cc.cwnd(), u64::from(MSS));
    }

    #[test]
    fn a_window_of_acks_adds_a_w() {
        // At 1058 segments one window of ACKs adds a(1058) = 8 segments (RFC 3649 Appendix B).
        let mut cc = at(1058);
        for _ in 0..1058 {
            cc.on_ack(&ack(u64::from(MSS)));
        }
        let added = cc.cwnd() as f64 / f64::from(MSS) - 1058.0;
        assert!((added - 8.0).abs() < 0.5, "{added}");
    }

    #[test]
    fn standard_tcp_at_or_below_low_window() {
        let mut cc = at(20);
        for _ in 0..20 {
            cc.on_ack(&ack(u64::from(MSS)));
        }
        assert!((20_900..=21_000).contains(&cc.cwnd()), "{}", cc.cwnd());
        cc.on_congestion_event(Time::ZERO, 0);
        assert!(cc.cwnd().abs_diff(10_500) <= 50, "{}", cc.cwnd());
    }

    #[test]
    fn slow_start_below_ssthresh() {
        let mut cc = rfc();
        cc.init(2000, 10_000);
        cc.on_ack(&ack(3000));
        assert_eq!(cc.cwnd(), 3000);
    }

    #[test]
    fn builds_from_the_registry() {
        let cc = CcSpec::named("highspeed").build(1460).unwrap();
        assert_eq!(cc.name(), "highspeed");
        assert_eq!(cc.cwnd(), 2920);
    }
}
