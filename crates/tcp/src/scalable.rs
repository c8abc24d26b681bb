//! Scalable TCP (Kelly, "Scalable TCP: Improving Performance in Highspeed Wide Area Networks",
//! ACM CCR 2003) as Linux `tcp_scalable.c` does it: in congestion avoidance the window grows by a
//! fixed fraction of a segment per acknowledged segment (so a fixed proportion per round trip),
//! and a loss takes off a fixed 1/8 of it; recovery time after a loss does not grow with the
//! window. Small windows grow no faster than standard TCP (one segment per window).
//!
//! The window is counted in bytes, with a counter of bytes acknowledged since the last increase
//! in place of Linux's `snd_cwnd_cnt` (which counts segments).

use super::cc::AdditiveIncrease;
use super::{AckSample, CongestionControl, Param, ParamKind, Registered};
use qstp_proto::Time;

/// Registry entry.
pub(super) const ENTRY: Registered = Registered {
    name: "scalable",
    aliases: &["stcp"],
    doc: "Scalable TCP (Kelly 2003, Linux tcp_scalable.c): fixed increase per ACK, 1/8 decrease",
    params: &[
        Param {
            name: "ai_cnt",
            kind: ParamKind::Integer,
            // Kelly 2003: a = 0.01 per acknowledged segment; Linux tcp_scalable.c since 2016
            // counts acknowledged segments with TCP_SCALABLE_AI_CNT = 100 (before, 50 per ACK
            // "to account for delayed ack"). This sender counts acknowledged bytes: 100.
            default: 100.0,
            min: 1.0,
            max: 1e6,
            doc: "segments acknowledged per one-segment increase (at windows above it)",
        },
        Param {
            name: "md_shift",
            kind: ParamKind::Integer,
            // Linux tcp_scalable.c: TCP_SCALABLE_MD_SCALE = 3, i.e. Kelly's b = 1/8.
            default: 3.0,
            min: 1.0,
            max: 16.0,
            doc: "a loss takes cwnd >> md_shift off the window",
        },
    ],
    build: |mss, p| {
        Box::new(Scalable::new(
            mss,
            f64::from(p.integer("ai_cnt")),
            f64::from(p.integer("md_shift")),
        ))
    },
};

/// Scalable TCP's window.
#[derive(Debug, Clone)]
pub struct Scalable {
    mss: u64,
    cwnd: u64,
    ssthresh: u64,
    /// Bytes acknowledged in congestion avoidance since the window last grew.
    acked: AdditiveIncrease,
    ai_cnt: u64,
    md_shift: u32,
}

impl Scalable {
    /// Scalable TCP for segments of `mss` bytes: +1 segment per `ai_cnt` acknowledged segments
    /// (at windows of at least `ai_cnt`), and `cwnd >> md_shift` off on a loss.
    pub fn new(mss: u32, ai_cnt: f64, md_shift: f64) -> Self {
        let mss = u64::from(mss.max(1));
        Scalable {
            mss,
            cwnd: 2 * mss,
            // RFC 5681 §3.1: ssthresh starts arbitrarily high.
            ssthresh: u64::MAX,
            acked: AdditiveIncrease::default(),
            ai_cnt: (ai_cnt.round() as u64).max(1),
            md_shift: (md_shift.round() as u32).clamp(1, 63),
        }
    }

    /// Linux tcp_scalable.c ssthresh: max(cwnd - (cwnd >> 3), 2 segments).
    fn reduced(&self) -> u64 {
        (self.cwnd - (self.cwnd >> self.md_shift)).max(2 * self.mss)
    }
}

impl CongestionControl for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }

    fn reno_min_cwnd(&self) -> bool {
        // ns-2.35 tcp/linux/src/tcp_scalable.c: `.min_cwnd = tcp_reno_min_cwnd`.
        true
    }

    fn init(&mut self, initial_cwnd: u64, initial_ssthresh: u64) {
        self.cwnd = initial_cwnd.max(self.mss);
        self.ssthresh = initial_ssthresh.max(2 * self.mss);
        self.acked.reset();
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, sample: &AckSample) {
        if self.cwnd < self.ssthresh {
            // RFC 5681 §3.1 eq. (2): cwnd += min(N, SMSS).
            self.cwnd += sample.acked_bytes.min(self.mss);
            return;
        }
        // Linux tcp_scalable.c: tcp_cong_avoid_ai(tp, min(cwnd, AI_CNT), acked), i.e. one more
        // segment per min(cwnd, ai_cnt) segments acknowledged.
        let per = (self.cwnd / self.mss).clamp(1, self.ai_cnt);
        self.acked
            .grow(&mut self.cwnd, sample.acked_bytes, per, self.mss);
    }

    fn on_congestion_event(&mut self, _now: Time, _in_flight: u64) {
        // Linux reduces from the window, not FlightSize.
        self.ssthresh = self.reduced();
        self.cwnd = self.ssthresh;
        self.acked.reset();
    }

    fn on_recovery_end(&mut self, _now: Time) {
        // RFC 6582 §3.2 step 3: on a full ACK, cwnd = ssthresh.
        self.cwnd = self.ssthresh;
    }

    fn on_retransmission_timeout(&mut self, _now: Time, _in_flight: u64) {
        self.ssthresh = self.reduced();
        // RFC 5681 §3.1: after a timeout cwnd is one segment.
        self.cwnd = self.mss;
        self.acked.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::super::cc::testkit::ack_bytes as ack;
    use super::*;
    use crate::CcSpec;

    const MSS: u64 = 1000;

    /// In congestion avoidance at `w` segments.
    fn at(w: u64, ai_cnt: f64) -> Scalable {
        let mut cc = Scalable::new(MSS as u32, ai_cnt, 3.0);
        cc.init(w * MSS, 2 * MSS);
        cc
    }

    fn acks(cc: &mut Scalable, n: u64) {
        for _ in 0..n {
            cc.on_ack(&ack(MSS));
        }
    }

    #[test]
    fn fixed_increase_per_ack_at_large_windows() {
        // ai_cnt = 50: +1/50 = 0.02 segment per acknowledged segment, whatever the window.
        for w in [1000, 10_000] {
            let mut cc = at(w, 50.0);
            acks(&mut cc, 49);
            assert_eq!(cc.cwnd(), w * MSS);
            acks(&mut cc, 1);
            assert_eq!(cc.cwnd(), (w + 1) * MSS);
            acks(&mut cc, 450);
            assert_eq!(cc.cwnd(), (w + 10) * MSS);
        }
        // Kelly's a = 0.01: 100 acknowledged segments per segment of growth.
        let mut cc = at(1000, 100.0);
        acks(&mut cc, 1000);
        assert_eq!(cc.cwnd(), 1010 * MSS);
        // An ACK of two segments counts twice.
        let mut cc = at(1000, 50.0);
        for _ in 0..25 {
            cc.on_ack(&ack(2 * MSS));
        }
        assert_eq!(cc.cwnd(), 1001 * MSS);
    }

    #[test]
    fn small_windows_grow_like_standard_tcp() {
        // Below ai_cnt the increase is one segment per window (min(cwnd, ai_cnt)).
        let mut cc = at(20, 50.0);
        acks(&mut cc, 20);
        assert_eq!(cc.cwnd(), 21 * MSS);
    }

    #[test]
    fn a_loss_takes_an_eighth_off() {
        // Kelly's b = 0.125: 1000 segments become 875.
        let mut cc = at(1000, 50.0);
        cc.on_congestion_event(Time::ZERO, 1000 * MSS);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (875 * MSS, 875 * MSS));
        cc.on_recovery_end(Time::ZERO);
        assert_eq!(cc.cwnd(), 875 * MSS);
        // Never below two segments.
        let mut cc = at(2, 50.0);
        cc.on_congestion_event(Time::ZERO, 0);
        assert_eq!(cc.cwnd(), 2 * MSS);
        // A timeout: one segment, ssthresh 7/8 of the window.
        let mut cc = at(800, 50.0);
        cc.on_retransmission_timeout(Time::ZERO, 0);
        assert_eq!((cc.cwnd(), cc.ssthresh()), (MSS, 700 * MSS));
    }

    #[test]
    fn slow_start_below_ssthresh() {
        let mut cc = Scalable::new(MSS as u32, 50.0, 3.0);
        cc.init(2 * MSS, 10 * MSS);
        cc.on_ack(&ack(3 * MSS));
        assert_eq!(cc.cwnd(), 3 * MSS);
    }

    #[test]
    fn builds_from_the_registry() {
        let cc = CcSpec::named("scalable").build(1460).unwrap();
        assert_eq!(cc.name(), "scalable");
    }
}
