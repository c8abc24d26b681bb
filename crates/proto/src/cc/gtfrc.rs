//! gTFRC (QSTP paper §4.1, eq. (2); gTFRC paper Fig. 1): TFRC whose rate is lifted to a target g
//! after slow start.
//!
//! A thin layer over [`TfrcSender`]: the TFRC rules run unchanged and the sender applies g in its
//! rate update (RFC 5348 §4.3 step 4) whenever it is out of slow start. Two rules exist
//! ([`GtfrcRule`]): by default the QSTP paper's X = min(max(X_calc, g), 2 X_recv), where the
//! receive-rate cap still guards against a wrong g or an under-provisioned path; as a named
//! variant the gTFRC paper's Fig. 1, X = max(min(X_calc, 2 X_recv), g), a hard floor. Slow start is
//! untouched ("this maximum value is not applied during the TFRC slow-start period", gTFRC paper
//! §3.2), and g = 0 is exactly TFRC. g belongs to the feedback path, as in Fig. 1, which applies it
//! on receipt of feedback only.
//!
//! g is therefore not a guarantee while feedback is missing: each time the no-feedback timer fires
//! (RFC 5348 §4.4) the rate is halved as in plain TFRC and may fall below g, down to one packet
//! per t_mbi. Under the QSTP rule g is not a guarantee either when the receiver reports less than
//! g / 2: the path cannot carry g, and sending it anyway would only be dropped.
//!
//! One detail differs from Fig. 1: there the feedback that ends slow start sets the rate to the
//! equation rate and g applies from the next feedback on; here it applies from that same feedback.

use crate::cc::tfrc::sender::TfrcSender;
use crate::cc::{FeedbackReport, RateController, RateState};
use crate::config::{GtfrcRule, TfrcVersion};
use crate::rate::Rate;
use crate::time::{Duration, Time};

/// A gTFRC sender: TFRC lifted to the target g (QSTP paper eq. (2), or gTFRC paper Fig. 1).
#[derive(Debug, Clone)]
pub struct Gtfrc {
    tfrc: TfrcSender,
}

impl Gtfrc {
    /// A gTFRC sender with target `target` and the QSTP paper's rule (zero behaves as plain TFRC).
    pub fn new(
        target: Rate,
        segment_size: usize,
        initial_rtt: Option<Duration>,
        now: Time,
    ) -> Self {
        Gtfrc::with_rule(target, GtfrcRule::Qstp, segment_size, initial_rtt, now)
    }

    /// A gTFRC sender with target `target` applied by `rule`.
    pub fn with_rule(
        target: Rate,
        rule: GtfrcRule,
        segment_size: usize,
        initial_rtt: Option<Duration>,
        now: Time,
    ) -> Self {
        Gtfrc::with_version(
            target,
            rule,
            TfrcVersion::Rfc5348,
            segment_size,
            initial_rtt,
            now,
        )
    }

    /// A gTFRC sender with target `target` applied by `rule` on top of `version`'s TFRC: under
    /// RFC 3448 the same composition, X = min(max(X_calc, g), 2 X_recv) (QSTP paper eq. (2)), with
    /// the last reported X_recv in place of RFC 5348's X_recv_set.
    pub fn with_version(
        target: Rate,
        rule: GtfrcRule,
        version: TfrcVersion,
        segment_size: usize,
        initial_rtt: Option<Duration>,
        now: Time,
    ) -> Self {
        let mut tfrc = TfrcSender::with_version(version, segment_size, initial_rtt, now);
        tfrc.set_floor(target);
        tfrc.set_rule(rule);
        Gtfrc { tfrc }
    }

    /// The same controller with RFC 5348 §4.5's oscillation prevention on or off.
    pub fn with_oscillation_prevention(self, on: bool) -> Self {
        Gtfrc {
            tfrc: self.tfrc.with_oscillation_prevention(on),
        }
    }

    /// The target g.
    pub fn target(&self) -> Rate {
        self.tfrc.state().target
    }
}

impl RateController for Gtfrc {
    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        self.tfrc.on_feedback(now, report);
    }
    fn on_loss_event_rate(&mut self, now: Time, p: f64) {
        self.tfrc.on_loss_event_rate(now, p);
    }
    fn on_packet_sent(&mut self, now: Time, size: usize) {
        self.tfrc.on_packet_sent(now, size);
    }
    fn on_data_limited(&mut self, now: Time) {
        self.tfrc.on_data_limited(now);
    }
    fn allowed_rate(&self) -> Rate {
        self.tfrc.allowed_rate()
    }
    fn poll_timeout(&self) -> Option<Time> {
        self.tfrc.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Time) {
        self.tfrc.handle_timeout(now);
    }
    /// The new g takes effect at the next rate update (the next feedback).
    fn set_target(&mut self, target: Rate) {
        self.tfrc.set_floor(target);
    }
    fn set_segment_size(&mut self, size: usize) {
        self.tfrc.set_segment_size(size);
    }
    fn state(&self) -> RateState {
        self.tfrc.state()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::test_feedback::{at, report};

    const S: usize = 1460;

    /// Drive a controller with one feedback per 100 ms RTT, sending every 10 ms in between.
    fn drive(c: &mut dyn RateController, reports: &[FeedbackReport]) -> Vec<RateState> {
        let mut now = 0;
        let mut states = vec![];
        for r in reports {
            for t in (now..now + 100).step_by(10) {
                c.on_packet_sent(at(t), S);
            }
            now += 100;
            c.on_feedback(at(now), r);
            states.push(c.state());
        }
        states
    }

    /// A slow start, then a heavy loss episode: p = 0.1 and X_recv collapsing to 10 kB/s.
    fn heavy_loss_stream() -> Vec<FeedbackReport> {
        let mut reports: Vec<_> = [20_000.0, 40_000.0, 80_000.0]
            .iter()
            .map(|&x| report(x, 0.0))
            .collect();
        reports.extend((0..20).map(|_| report(10_000.0, 0.1)));
        reports
    }

    #[test]
    fn fig1_holds_target_where_tfrc_falls_short() {
        let g = Rate::from_kbps(600); // 75000 B/s
        let rtt = Some(Duration::from_millis(100));
        let mut tfrc = TfrcSender::new(S, rtt, Time::ZERO);
        let mut gtfrc = Gtfrc::with_rule(g, GtfrcRule::Fig1, S, rtt, Time::ZERO);
        let stream = heavy_loss_stream();
        let tfrc_states = drive(&mut tfrc, &stream);
        let gtfrc_states = drive(&mut gtfrc, &stream);
        // X_calc(p = 0.1, R = 100 ms) = 25843 B/s, and 2 * X_recv = 20000 B/s: both below g.
        let last_tfrc = tfrc_states.last().unwrap();
        assert!(last_tfrc.rate < g, "TFRC {}", last_tfrc.rate);
        assert!(last_tfrc.x_calc < g);
        for st in gtfrc_states.iter().filter(|s| !s.slow_start) {
            assert!(st.rate >= g, "gTFRC {} < g", st.rate);
            assert_eq!(st.target, g);
        }
        assert_eq!(gtfrc_states.last().unwrap().rate, g);
    }

    #[test]
    fn fig1_follows_tfrc_below_g_when_the_equation_rate_is_above_it() {
        // gTFRC paper Fig. 1: `if (rcvrate > gtfrc_)` (the equation rate above g) TFRC's own
        // update, capped by the receive rate even below g; only `else` sets g. p = 0.001 gives
        // X_calc far above g = 75000 B/s while 2 X_recv = 20000 B/s.
        let g = Rate::from_kbps(600);
        let rtt = Some(Duration::from_millis(100));
        let mut fig1 = Gtfrc::with_rule(g, GtfrcRule::Fig1, S, rtt, Time::ZERO);
        let mut stream: Vec<_> = [20_000.0, 40_000.0, 80_000.0]
            .iter()
            .map(|&x| report(x, 0.0))
            .collect();
        stream.extend((0..20).map(|_| report(10_000.0, 0.001)));
        let last = *drive(&mut fig1, &stream).last().unwrap();
        assert!(!last.slow_start && last.x_calc > g, "{last:?}");
        assert_eq!(last.rate, Rate::from_bytes_per_sec(20_000.0));
    }

    #[test]
    fn qstp_rule_keeps_the_receive_rate_cap_on_an_under_provisioned_path() {
        // The path delivers 10 kB/s while g = 75 kB/s: QSTP paper eq. (2) caps X at 2 X_recv,
        // where Fig. 1 would keep sending g into the bottleneck forever.
        let g = Rate::from_kbps(600);
        let rtt = Some(Duration::from_millis(100));
        let mut qstp = Gtfrc::new(g, S, rtt, Time::ZERO);
        let mut fig1 = Gtfrc::with_rule(g, GtfrcRule::Fig1, S, rtt, Time::ZERO);
        let q = drive(&mut qstp, &heavy_loss_stream());
        let f = drive(&mut fig1, &heavy_loss_stream());
        let (q, f) = (q.last().unwrap(), f.last().unwrap());
        assert!(!q.slow_start);
        assert_eq!(q.rate, Rate::from_bytes_per_sec(20_000.0));
        assert_eq!(f.rate, g);
    }

    #[test]
    fn qstp_rule_lifts_the_equation_rate_to_g_when_the_path_carries_it() {
        // X_calc(p = 0.1) = 25843 B/s < g = 75000 B/s <= 2 X_recv = 200000 B/s: X = g.
        let g = Rate::from_kbps(600);
        let rtt = Some(Duration::from_millis(100));
        let mut qstp = Gtfrc::new(g, S, rtt, Time::ZERO);
        let mut tfrc = TfrcSender::new(S, rtt, Time::ZERO);
        let stream: Vec<_> = (0..10).map(|_| report(100_000.0, 0.1)).collect();
        let q = drive(&mut qstp, &stream);
        let t = drive(&mut tfrc, &stream);
        assert!(t.last().unwrap().rate < g);
        assert_eq!(q.last().unwrap().rate, g);
    }

    #[test]
    fn gtfrc_above_target_is_tfrc() {
        // When the equation gives more than g, gTFRC follows TFRC (gTFRC paper Fig. 1, first branch).
        let g = Rate::from_kbps(100);
        let mut tfrc = TfrcSender::new(S, Some(Duration::from_millis(100)), Time::ZERO);
        let mut gtfrc = Gtfrc::new(g, S, Some(Duration::from_millis(100)), Time::ZERO);
        let stream: Vec<_> = (0..10).map(|_| report(1e6, 0.01)).collect();
        let a = drive(&mut tfrc, &stream);
        let b = drive(&mut gtfrc, &stream);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.rate, y.rate);
            assert!(x.rate > g);
        }
    }

    #[test]
    fn gtfrc_is_tfrc_without_target() {
        let mut tfrc = TfrcSender::new(S, None, Time::ZERO);
        let mut gtfrc = Gtfrc::new(Rate::ZERO, S, None, Time::ZERO);
        let stream = heavy_loss_stream();
        let a = drive(&mut tfrc, &stream);
        let b = drive(&mut gtfrc, &stream);
        assert_eq!(a, b);
        for c in [&mut tfrc as &mut dyn RateController, &mut gtfrc] {
            let t = c.poll_timeout().unwrap();
            c.handle_timeout(t);
        }
        assert_eq!(tfrc.state(), gtfrc.state());
    }

    #[test]
    fn gtfrc_does_not_apply_the_floor_in_slow_start() {
        let g = Rate::from_mbps(10);
        let mut gtfrc = Gtfrc::new(g, S, Some(Duration::from_millis(100)), Time::ZERO);
        let mut tfrc = TfrcSender::new(S, Some(Duration::from_millis(100)), Time::ZERO);
        assert!(gtfrc.allowed_rate() < g);
        let stream: Vec<_> = [20_000.0, 40_000.0, 80_000.0]
            .iter()
            .map(|&x| report(x, 0.0))
            .collect();
        let a = drive(&mut tfrc, &stream);
        let b = drive(&mut gtfrc, &stream);
        for (x, y) in a.iter().zip(&b) {
            assert!(y.slow_start);
            assert!(y.rate < g);
            assert_eq!(x.rate, y.rate);
        }
        // The first loss ends slow start; from then on g holds where the path carries it.
        let st = drive(&mut gtfrc, &[report(2e6, 0.05)]);
        assert!(!st[0].slow_start);
        assert_eq!(st[0].rate, g);
    }

    #[test]
    fn rfc3448_gtfrc_caps_g_by_the_last_x_recv_alone() {
        // QSTP paper eq. (2) on RFC 3448 §4.3: X = min(max(X_calc, g), 2 X_recv) with the last
        // report's X_recv, where RFC 5348 keeps the largest X_recv of the last two RTTs.
        let g = Rate::from_kbps(600);
        let mut v3448 = Gtfrc::with_version(
            g,
            GtfrcRule::Qstp,
            TfrcVersion::Rfc3448,
            S,
            None,
            Time::ZERO,
        );
        let mut v5348 = Gtfrc::new(g, S, Some(Duration::from_millis(100)), Time::ZERO);
        let stream = [report(100_000.0, 0.1), report(10_000.0, 0.1)];
        let a = drive(&mut v3448, &stream);
        let b = drive(&mut v5348, &stream);
        // X_calc(p = 0.1) = 25843 B/s < g = 75000 B/s <= 2 X_recv = 200000 B/s: X = g.
        assert_eq!(a[0].rate, g);
        assert_eq!(b[0].rate, g);
        // Then 2 X_recv = 20000 B/s < g: RFC 3448 follows it, RFC 5348's X_recv_set still holds
        // the 100000 B/s of the round trip before.
        assert_eq!(a[1].rate, Rate::from_bytes_per_sec(20_000.0));
        assert_eq!(b[1].rate, g);
    }

    #[test]
    fn target_can_change() {
        let mut gtfrc = Gtfrc::new(
            Rate::from_kbps(600),
            S,
            Some(Duration::from_millis(100)),
            Time::ZERO,
        );
        drive(&mut gtfrc, &heavy_loss_stream());
        gtfrc.set_target(Rate::from_kbps(300));
        assert_eq!(gtfrc.target(), Rate::from_kbps(300));
        let st = drive(&mut gtfrc, &[report(100_000.0, 0.1)]);
        assert_eq!(st[0].rate, Rate::from_kbps(300));
    }
}
