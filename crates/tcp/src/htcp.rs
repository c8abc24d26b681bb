//! H-TCP (Leith & Shorten, "H-TCP: TCP for high-speed and long-distance networks", PFLDnet
//! 2004; Linux `tcp_htcp.c`): the additive increase alpha grows with the time since the last
//! congestion event (standard TCP for the first `delta_l` seconds, then quadratically), and the
//! backoff beta adapts to the queue, RTTmin / RTTmax clamped to [`beta_min`, `beta_max`]; alpha is
//! scaled by 2 (1 - beta) so that a flow with a larger beta is no more aggressive on average.
//!
//! `bandwidth_switch = 1` adds Linux's mode switch (`htcp_beta_update`, `use_bandwidth_switch`,
//! on by default in Linux): beta falls back to `beta_min` when the largest throughput of the
//! epoch differs by more than 20% from the last epoch's, and at the congestion event after such
//! a fall-back (and the first one). It is off by default here: it is a Linux layer on top of the
//! published base form, and on the seed-002 dumbbell it costs H-TCP a quarter of its efficiency
//! from 4 flows on (0.90 -> 0.67-0.77), which is not explained yet.
//!
//! `ns3 = true` follows ns-3 3.44's `TcpHtcp` instead where it departs from the published
//! algorithm: [`ns3`] holds those rules, each with its tcp-htcp.cc line.
//!
//! `rtt_scaling = 1` scales alpha by the connection's minimum RTT over 100 ms, within [0.1, 2]
//! (Linux `use_rtt_scaling`, on by default there and in ns-2.35's TCP/Linux; H-TCP's optional
//! RTT-unfairness fix); off by default here, as the published algorithm. Left out, compared with
//! Linux: the 10 ms floor on RTTmin and alpha's whole-segment steps (Linux keeps `factor` an
//! integer). RTTmin and RTTmax
//! are taken from the per-ACK RTT samples since the last congestion event, where Linux tracks
//! them over the connection and lets RTTmax fade.

use super::{AckSample, CongestionControl, Param, ParamKind, Registered};
use qstp_proto::{Duration, Time};

mod ns3;

/// Registry entry.
pub(super) const ENTRY: Registered = Registered {
    name: "htcp",
    aliases: &["h-tcp"],
    doc: "H-TCP (Leith & Shorten 2004; Linux tcp_htcp.c): increase grows with time since loss",
    params: &[
        Param {
            name: "delta_l",
            kind: ParamKind::Real,
            // Leith & Shorten 2004: Delta_L = 1 s (Linux tcp_htcp.c: HZ).
            default: 1.0,
            min: 0.0,
            max: 100.0,
            doc: "seconds after a congestion event during which it is standard TCP",
        },
        Param {
            name: "beta_min",
            kind: ParamKind::Real,
            // Linux tcp_htcp.c: BETA_MIN = 0.5 (1 << 6 out of 1 << 7).
            default: 0.5,
            min: 0.1,
            max: 0.95,
            doc: "smallest backoff factor",
        },
        Param {
            name: "bandwidth_switch",
            kind: ParamKind::Flag,
            // Linux tcp_htcp.c: use_bandwidth_switch = 1; off here (see the module notes).
            default: 0.0,
            min: 0.0,
            max: 1.0,
            doc: "1: beta falls back to beta_min when the epoch's throughput changed by more than 20%",
        },
        Param {
            name: "rtt_scaling",
            kind: ParamKind::Flag,
            // Linux tcp_htcp.c: use_rtt_scaling = 1; off here (see the module notes).
            default: 0.0,
            min: 0.0,
            max: 1.0,
            doc: "1: alpha scaled by the connection's minimum RTT over 100 ms, within [0.1, 2] (Linux use_rtt_scaling)",
        },
        Param {
            name: "ns3",
            kind: ParamKind::Flag,
            // Not in the paper or Linux: ns-3 3.44 tcp-htcp.cc's own rules (module notes).
            default: 0.0,
            min: 0.0,
            max: 1.0,
            doc: "1: ns-3 3.44's TcpHtcp (alpha bytes per ACK, its beta rule, smoothed RTT); 0: the published algorithm",
        },
        Param {
            name: "beta_max",
            kind: ParamKind::Real,
            // Linux tcp_htcp.c: BETA_MAX = 0.8 (102 out of 1 << 7).
            default: 0.8,
            min: 0.1,
            max: 0.95,
            doc: "largest backoff factor",
        },
    ],
    build: |mss, p| {
        let cc = Htcp {
            bandwidth_switch: p.flag("bandwidth_switch"),
            rtt_scaling: p.flag("rtt_scaling"),
            ..Htcp::new(mss, p.real("delta_l"), p.real("beta_min"), p.real("beta_max"))
        };
        Box::new(if p.flag("ns3") { cc.ns3() } else { cc })
    },
};

/// H-TCP's window.
#[derive(Debug, Clone)]
pub struct Htcp {
    mss: f64,
    /// Congestion window, bytes.
    cwnd: f64,
    /// Slow-start threshold, bytes.
    ssthresh: f64,
    /// Time of the last congestion event (or of the first ACK before any).
    last_congestion: Option<Time>,
    /// Smallest and largest RTT samples since the last congestion event.
    rtt_min: Option<Duration>,
    rtt_max: Option<Duration>,
    /// Backoff factor set at the last congestion event.
    beta: f64,
    delta_l: f64,
    beta_min: f64,
    beta_max: f64,
    /// Linux `use_bandwidth_switch`.
    bandwidth_switch: bool,
    /// Linux `use_rtt_scaling`.
    rtt_scaling: bool,
    /// The smallest RTT sample of the connection (Linux `minRTT`, which it keeps across
    /// congestion events for the scaling).
    conn_min_rtt: Option<Duration>,
    /// Linux `modeswitch`: the last backoff was not a fall-back to beta_min.
    modeswitch: bool,
    /// Linux measure_achieved_throughput: segments acknowledged since `last_time`.
    packet_count: f64,
    last_time: Option<Time>,
    /// Linux `Bi` (smoothed throughput), `maxB` (its largest value in this epoch) and `old_maxB`
    /// (the last epoch's), segments per second.
    bi: f64,
    max_b: f64,
    old_max_b: f64,
    /// ns-3 3.44's `TcpHtcp` rules (module notes).
    ns3: bool,
    /// ns-3 `m_dataSent`: bytes acknowledged in the Open state since the last backoff.
    data_sent: f64,
    /// ns-3 `m_throughput` and `m_lastThroughput`: whole bytes per second of this epoch (so
    /// far) and of the last.
    throughput: f64,
    last_throughput: f64,
}

impl Htcp {
    /// H-TCP for segments of `mss` bytes.
    pub fn new(mss: u32, delta_l: f64, beta_min: f64, beta_max: f64) -> Self {
        let mss = f64::from(mss.max(1));
        let beta_max = beta_max.max(beta_min);
        Htcp {
            mss,
            cwnd: 2.0 * mss,
            // RFC 5681 §3.1: ssthresh starts arbitrarily high.
            ssthresh: f64::MAX,
            last_congestion: None,
            rtt_min: None,
            rtt_max: None,
            // Linux tcp_htcp.c htcp_init: beta starts at BETA_MIN.
            beta: beta_min,
            delta_l,
            beta_min,
            beta_max,
            bandwidth_switch: false,
            rtt_scaling: false,
            conn_min_rtt: None,
            modeswitch: false,
            packet_count: 0.0,
            last_time: None,
            bi: 0.0,
            max_b: 0.0,
            old_max_b: 0.0,
            ns3: false,
            data_sent: 0.0,
            throughput: 0.0,
            last_throughput: 0.0,
        }
    }

    /// The same control with ns-3 3.44's `TcpHtcp` rules (module notes).
    pub fn ns3(self) -> Self {
        Htcp {
            ns3: true,
            // ns-3 tcp-htcp.cc: m_lastCon(0), the start of the simulation; m_beta(0).
            last_congestion: Some(Time::ZERO),
            beta: 0.0,
            ..self
        }
    }

    /// The increase alpha(Delta), segments per round trip, `delta` after the last congestion
    /// event, before the 2 (1 - beta) scaling (Leith & Shorten 2004).
    pub fn alpha_unscaled(&self, delta: Duration) -> f64 {
        let d = delta.as_secs_f64() - self.delta_l;
        if d <= 0.0 {
            // Leith & Shorten 2004: alpha = 1 for Delta <= Delta_L.
            1.0
        } else {
            // Leith & Shorten 2004: alpha = 1 + 10 (Delta - Delta_L) + ((Delta - Delta_L) / 2)^2.
            1.0 + 10.0 * d + (d / 2.0).powi(2)
        }
    }

    /// The increase, segments per round trip, at `now`: alpha(Delta) * 2 (1 - beta) (Leith &
    /// Shorten 2004; Linux tcp_htcp.c htcp_alpha_update).
    pub fn alpha(&self, now: Time) -> f64 {
        let delta = self
            .last_congestion
            .map_or(Duration::ZERO, |t| now.saturating_since(t));
        let scale = match (self.rtt_scaling, self.conn_min_rtt) {
            // Linux tcp_htcp.c htcp_alpha_update: factor = factor x 8 / scale with scale =
            // 8 HZ / (10 minRTT) clamped to [4, 80]: factor x minRTT / 100 ms within [0.1, 2].
            (true, Some(min)) => (min.as_secs_f64() / 0.1).clamp(0.1, 2.0),
            _ => 1.0,
        };
        self.alpha_unscaled(delta) * scale * 2.0 * (1.0 - self.beta)
    }

    /// The backoff factor.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// Leith & Shorten 2004, adaptive backoff: beta = RTTmin / RTTmax, clamped to
    /// [beta_min, beta_max]; beta_min without samples (as Linux does before it has measured).
    /// Linux tcp_htcp.c htcp_beta_update: beta_min instead when the epoch's largest throughput
    /// is outside [0.8, 1.2] times the last epoch's (`!between(5 maxB, 4 old_maxB, 6 old_maxB)`),
    /// and at the next congestion event after that (`modeswitch`).
    fn update_beta(&mut self) {
        if self.ns3 {
            self.update_beta_ns3();
            return;
        }
        if self.bandwidth_switch {
            let old = std::mem::replace(&mut self.old_max_b, self.max_b);
            let b5 = 5.0 * self.max_b;
            if !(4.0 * old..=6.0 * old).contains(&b5) {
                self.beta = self.beta_min;
                self.modeswitch = false;
                return;
            }
        }
        // Without the switch the mode never changes.
        let modeswitch = self.modeswitch || !self.bandwidth_switch;
        self.beta = match (self.rtt_min, self.rtt_max) {
            (Some(min), Some(max)) if modeswitch && !max.is_zero() => {
                (min.as_secs_f64() / max.as_secs_f64()).clamp(self.beta_min, self.beta_max)
            }
            _ => {
                self.modeswitch = true;
                self.beta_min
            }
        };
    }

    /// Linux tcp_htcp.c measure_achieved_throughput: once a window of segments has been
    /// acknowledged over at least RTTmin, a throughput sample; in the first 3 RTTmin of an epoch
    /// it restarts Bi and maxB, later Bi is smoothed (3 Bi + sample) / 4 and maxB tracks it.
    fn measure_throughput(&mut self, sample: &AckSample) {
        if !self.bandwidth_switch {
            return;
        }
        let last = *self.last_time.get_or_insert(sample.now);
        self.packet_count += sample.acked_bytes as f64 / self.mss;
        let elapsed = sample.now.saturating_since(last);
        let min_rtt = sample.min_rtt;
        // Linux: packetcount >= cwnd - max(alpha, 1) segments.
        let window = self.cwnd / self.mss - self.alpha(sample.now).floor().max(1.0);
        if min_rtt.is_zero() || self.packet_count < window || elapsed < min_rtt {
            return;
        }
        let current = self.packet_count / elapsed.as_secs_f64();
        let epoch = self
            .last_congestion
            .map_or(Duration::ZERO, |t| sample.now.saturating_since(t));
        // Linux htcp_ccount: whole RTTmin since the last congestion event.
        if epoch.as_secs_f64() / min_rtt.as_secs_f64() < 4.0 {
            (self.bi, self.max_b) = (current, current);
        } else {
            self.bi = (3.0 * self.bi + current) / 4.0;
            self.max_b = self.max_b.max(self.bi);
        }
        self.packet_count = 0.0;
        self.last_time = Some(sample.now);
    }

    /// Linux tcp_htcp.c htcp_state: entering TCP_CA_Open sets `last_cong` (its comment: "time
    /// since last congestion event end"), so the epoch's Delta counts from the end of the
    /// recovery, not from the loss. ns-3's TcpHtcp starts it at the loss.
    fn epoch_starts_open(&mut self, now: Time) {
        if !self.ns3 {
            self.last_congestion = Some(now);
        }
    }

    /// A congestion event at `now` with `in_flight` bytes outstanding: new beta, the reduced
    /// window, and a new epoch.
    fn reduce(&mut self, now: Time, in_flight: u64) -> f64 {
        self.update_beta();
        self.rtt_min = None;
        self.rtt_max = None;
        self.last_congestion = Some(now);
        if self.ns3 {
            // ns-3 tcp-htcp.cc GetSsThresh: max(2 segments, bytesInFlight * beta) in whole
            // bytes; the epoch's throughput becomes the last.
            self.last_throughput = std::mem::take(&mut self.throughput);
            self.data_sent = 0.0;
            return (in_flight as f64 * self.beta).floor().max(2.0 * self.mss);
        }
        // Linux tcp_htcp.c htcp_recalc_ssthresh: max(cwnd * beta, 2 segments).
        (self.cwnd * self.beta).max(2.0 * self.mss)
    }

    fn sample_min(&mut self, rtt: Option<Duration>) {
        if let Some(rtt) = rtt {
            self.rtt_min = Some(self.rtt_min.map_or(rtt, |m| m.min(rtt)));
        }
    }

    /// New data acknowledged outside recovery; under `ns3` it counts in the epoch's throughput
    /// only if `open` (ns-3's `CA_OPEN`).
    fn ack(&mut self, sample: &AckSample, open: bool) {
        // Linux tcp_htcp.c htcp_init: the first epoch starts with the connection.
        self.last_congestion.get_or_insert(sample.now);
        if self.ns3 {
            let open_bytes = if open { sample.acked_bytes } else { 0 };
            self.pkts_acked_ns3(sample, open_bytes);
        } else {
            self.measure_throughput(sample);
            self.sample_min(sample.rtt);
            if let Some(rtt) = sample.rtt {
                self.conn_min_rtt = Some(self.conn_min_rtt.map_or(rtt, |m| m.min(rtt)));
            }
            if let Some(rtt) = sample.rtt {
                self.rtt_max = Some(self.rtt_max.map_or(rtt, |m| m.max(rtt)));
            }
        }
        let acked = sample.acked_bytes as f64;
        if self.cwnd < self.ssthresh {
            // RFC 5681 §3.1 eq. (2): cwnd += min(N, SMSS).
            self.cwnd += acked.min(self.mss);
        } else if self.ns3 {
            // ns-3 tcp-htcp.cc:107: only if the ACK counts a segment.
            if sample.acked_bytes > 0 {
                self.cwnd += self.ns3_increase(sample.now);
            }
        } else {
            // Leith & Shorten 2004: cwnd += alpha / cwnd per acknowledged segment; in bytes,
            // alpha * SMSS per window of bytes acknowledged.
            self.cwnd += self.alpha(sample.now) * self.mss * acked / self.cwnd;
        }
    }
}

impl CongestionControl for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
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
        self.ack(sample, true);
    }

    fn on_ack_in_loss(&mut self, sample: &AckSample) {
        // ns-3 tcp-htcp.cc PktsAcked counts only data acknowledged in the Open state, and the
        // socket calls it in CA_LOSS (tcp-socket-base.cc:2136, :2228). `open` only matters under
        // `ns3`: the published algorithm takes these ACKs as any other.
        self.ack(sample, false);
    }

    fn on_ack_in_recovery(&mut self, sample: &AckSample) {
        if self.ns3 {
            // ns-3 counts only data acknowledged in the Open state (tcp-htcp.cc PktsAcked).
            self.pkts_acked_ns3(sample, 0);
            return;
        }
        // Linux tcp_htcp.c measure_rtt: RTTmax only grows in the Open state, RTTmin always.
        self.sample_min(sample.rtt);
        // Linux measure_achieved_throughput: outside Open and Disorder the count restarts.
        self.packet_count = 0.0;
        self.last_time = Some(sample.now);
    }

    fn on_congestion_event(&mut self, now: Time, in_flight: u64) {
        self.ssthresh = self.reduce(now, in_flight);
        self.cwnd = self.ssthresh;
    }

    fn on_recovery_end(&mut self, now: Time) {
        // RFC 6582 §3.2 step 3: on a full ACK, cwnd = ssthresh.
        self.cwnd = self.ssthresh;
        self.epoch_starts_open(now);
    }

    fn on_loss_end(&mut self, now: Time) {
        self.epoch_starts_open(now);
    }

    fn ns3_socket(&self) -> bool {
        // ns-3 3.44 tcp-htcp.cc:164-175: GetSsThresh(tcb, bytesInFlight) gets BytesInFlight(), the
        // pipe (tcp-socket-base.cc:1715-1717 EnterRecovery, :3916 ReTxTimeout), not FlightSize;
        // leaving CA_LOSS counts only what lies above the recovery point (:2226).
        self.ns3
    }

    fn on_retransmission_timeout(&mut self, now: Time, in_flight: u64) {
        self.ssthresh = self.reduce(now, in_flight);
        // RFC 5681 §3.1: after a timeout cwnd is one segment.
        self.cwnd = self.mss;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CcSpec;

    pub(super) const MSS: u64 = 1000;

    pub(super) fn ack(now: Time, rtt_ms: Option<u64>) -> AckSample {
        AckSample {
            now,
            acked_bytes: MSS,
            rtt: rtt_ms.map(Duration::from_millis),
            srtt: Duration::ZERO,
            min_rtt: Duration::ZERO,
            in_flight: 0,
        }
    }

    pub(super) fn secs(s: f64) -> Time {
        Time::ZERO + Duration::from_secs_f64(s)
    }

    /// In congestion avoidance at `w` segments, epoch started at time zero; the bandwidth switch
    /// off and past the first backoff, so that beta is the RTT ratio.
    pub(super) fn at(w: u64) -> Htcp {
        let mut cc = Htcp::new(MSS as u32, 1.0, 0.5, 0.8);
        cc.bandwidth_switch = false;
        cc.modeswitch = true;
        cc.init(w * MSS, 2 * MSS);
        cc.on_ack(&ack(Time::ZERO, None));
        cc.cwnd = (w * MSS) as f64;
        cc
    }

    #[test]
    fn alpha_after_one_and_three_seconds() {
        let mut cc = at(100);
        // Delta <= Delta_L: standard TCP's 1.
        assert_eq!(cc.alpha_unscaled(Duration::from_millis(500)), 1.0);
        assert_eq!(cc.alpha_unscaled(Duration::from_secs(1)), 1.0);
        // Delta = 3 s: 1 + 10 * 2 + (2 / 2)^2 = 22.
        assert!((cc.alpha_unscaled(Duration::from_secs(3)) - 22.0).abs() < 1e-9);
        // Delta = 2 s: 1 + 10 + 0.25.
        assert!((cc.alpha_unscaled(Duration::from_secs(2)) - 11.25).abs() < 1e-9);
        // Scaled by 2 (1 - beta): beta = 0.5 leaves it, beta = 0.8 makes it 0.4 of it.
        assert!((cc.alpha(secs(1.0)) - 1.0).abs() < 1e-9);
        assert!((cc.alpha(secs(3.0)) - 22.0).abs() < 1e-9);
        cc.beta = 0.8;
        assert!((cc.alpha(secs(3.0)) - 8.8).abs() < 1e-9);
        assert!((cc.alpha(secs(1.0)) - 0.4).abs() < 1e-9);
    }

    #[test]
    fn rtt_scaling_multiplies_alpha_by_the_minimum_rtt_over_100_ms_within_a_tenth_and_two() {
        // Linux tcp_htcp.c htcp_alpha_update with use_rtt_scaling: beta = 0.5 leaves 22 at 3 s.
        for (rtt_ms, expected) in [(200, 44.0), (250, 44.0), (50, 11.0), (5, 2.2)] {
            let mut cc = at(100);
            cc.rtt_scaling = true;
            cc.on_ack(&ack(secs(0.5), Some(rtt_ms)));
            // A larger sample later leaves the connection's minimum.
            cc.on_ack(&ack(secs(0.6), Some(rtt_ms + 100)));
            assert!((cc.alpha(secs(3.0)) - expected).abs() < 1e-9, "{rtt_ms} ms");
        }
        // Off, or before any sample, no scaling.
        let mut cc = at(100);
        cc.on_ack(&ack(secs(0.5), Some(200)));
        assert!((cc.alpha(secs(3.0)) - 22.0).abs() < 1e-9);
        let mut cc = at(100);
        cc.rtt_scaling = true;
        assert!((cc.alpha(secs(3.0)) - 22.0).abs() < 1e-9);
    }

    #[test]
    fn a_window_of_acks_adds_alpha() {
        // Three seconds into the epoch, beta = 0.5: 1000 segments grow by about 22 in a window.
        let mut cc = at(1000);
        for _ in 0..1000 {
            cc.on_ack(&ack(secs(3.0), None));
        }
        let grown = cc.cwnd() as f64 / MSS as f64 - 1000.0;
        assert!((grown - 22.0).abs() < 0.5, "{grown}");
    }

    #[test]
    fn beta_is_rtt_min_over_rtt_max_clamped() {
        // (RTT samples in ms, beta): 100 / 150 = 0.667 inside the range; 100 / 400 = 0.25 up
        // to 0.5; 100 / 110 = 0.91 down to 0.8; no samples, 0.5.
        for (samples, beta) in [
            (&[100, 150, 120][..], 100.0 / 150.0),
            (&[400, 100][..], 0.5),
            (&[100, 110][..], 0.8),
            (&[][..], 0.5),
        ] {
            let mut cc = at(1000);
            for &ms in samples {
                cc.on_ack(&ack(secs(0.5), Some(ms)));
            }
            let w = cc.cwnd() as f64;
            cc.on_congestion_event(secs(0.5), 0);
            assert!(
                (cc.beta() - beta).abs() < 1e-9,
                "{samples:?}: {}",
                cc.beta()
            );
            assert!((cc.cwnd() as f64 - w * beta).abs() <= 1.0);
            assert_eq!(cc.cwnd(), cc.ssthresh());
        }
    }

    #[test]
    fn a_congestion_event_starts_a_new_epoch() {
        let mut cc = at(1000);
        for ms in [100, 125] {
            cc.on_ack(&ack(secs(4.0), Some(ms)));
        }
        cc.on_congestion_event(secs(5.0), 0);
        assert!((cc.beta() - 0.8).abs() < 1e-9);
        // Back to alpha = 1, times 2 (1 - 0.8).
        assert!((cc.alpha(secs(5.5)) - 0.4).abs() < 1e-9);
        assert!((cc.alpha(secs(8.0)) - 22.0 * 0.4).abs() < 1e-9);
        // The RTT range starts afresh: one sample gives beta = 1, clamped to 0.8.
        cc.on_recovery_end(secs(5.1));
        cc.on_ack(&ack(secs(6.0), Some(300)));
        cc.on_retransmission_timeout(secs(7.0), 0);
        assert!((cc.beta() - 0.8).abs() < 1e-9);
        assert_eq!(cc.cwnd(), MSS);
    }

    #[test]
    fn the_epoch_restarts_when_recovery_ends_as_linux_enters_ca_open() {
        // Linux tcp_htcp.c htcp_state: TCP_CA_Open sets last_cong, so Delta counts from the end
        // of the recovery (or of a timeout's loss state), not from the loss.
        let mut cc = at(1000);
        cc.on_ack(&ack(secs(4.0), Some(100)));
        cc.on_congestion_event(secs(5.0), 0);
        let beta = cc.beta();
        cc.on_recovery_end(secs(5.5));
        // 3 s after the loss, 2.5 s after the recovery: alpha(2.5 s) = 1 + 15 + 0.5625.
        let scaled = 2.0 * (1.0 - beta);
        assert!((cc.alpha(secs(8.0)) - 16.5625 * scaled).abs() < 1e-9);
        cc.on_retransmission_timeout(secs(9.0), 0);
        cc.on_loss_end(secs(10.0));
        assert!((cc.alpha(secs(11.0)) - 2.0 * (1.0 - cc.beta())).abs() < 1e-9);
        assert!((cc.alpha(secs(13.0)) - 22.0 * 2.0 * (1.0 - cc.beta())).abs() < 1e-9);
        // ns-3's TcpHtcp keeps the loss as the epoch's start.
        let mut ns3 = at(1000).ns3();
        ns3.on_ack(&ack(secs(4.0), Some(100)));
        ns3.on_congestion_event(secs(5.0), 0);
        ns3.on_recovery_end(secs(5.5));
        assert_eq!(ns3.last_congestion, Some(secs(5.0)));
    }

    #[test]
    fn the_first_backoff_and_the_one_after_a_throughput_change_are_beta_min() {
        // Linux tcp_htcp.c htcp_beta_update: with RTT samples 100 and 110 ms (ratio 0.91, 0.8
        // when clamped) beta is 0.5 when the epoch's maxB is outside [0.8, 1.2] old_maxB, and at
        // the backoff after that (modeswitch), and 0.8 otherwise.
        let mut cc = Htcp::new(MSS as u32, 1.0, 0.5, 0.8);
        cc.bandwidth_switch = true;
        cc.init(1000 * MSS, 2 * MSS);
        let event = |cc: &mut Htcp, max_b: f64, t: f64| {
            for ms in [100, 110] {
                cc.on_ack(&ack(secs(t), Some(ms)));
            }
            cc.max_b = max_b;
            cc.on_congestion_event(secs(t), 0);
            cc.beta()
        };
        // First event: old_maxB = 0, so 1000 is a change.
        assert_eq!(event(&mut cc, 1000.0, 1.0), 0.5);
        // Same throughput, but the last backoff fell back: 0.5, and the mode switches back.
        assert_eq!(event(&mut cc, 1000.0, 2.0), 0.5);
        // Within 20%: the RTT ratio.
        assert!((event(&mut cc, 1150.0, 3.0) - 0.8).abs() < 1e-9);
        // 1150 -> 1400 is more than 20% up: beta_min.
        assert_eq!(event(&mut cc, 1400.0, 4.0), 0.5);
        // Switched off (the default), any throughput: the RTT ratio.
        cc.bandwidth_switch = false;
        assert!((event(&mut cc, 100.0, 5.0) - 0.8).abs() < 1e-9);
        assert!((event(&mut cc, 10.0, 6.0) - 0.8).abs() < 1e-9);
    }

    #[test]
    fn throughput_is_measured_per_window_over_at_least_rtt_min() {
        // 100 segments, RTTmin 100 ms, one segment acknowledged every millisecond: samples of
        // 1000 segments per second; more than 3 RTTmin into the epoch they are smoothed into
        // Bi and maxB.
        let mut cc = at(100);
        cc.bandwidth_switch = true;
        for i in 1..=1000u64 {
            let mut a = ack(Time::ZERO + Duration::from_millis(i), None);
            a.min_rtt = Duration::from_millis(100);
            cc.on_ack(&a);
            cc.cwnd = (100 * MSS) as f64;
        }
        assert!((cc.max_b - 1000.0).abs() < 20.0, "{}", cc.max_b);
        assert!((cc.bi - 1000.0).abs() < 20.0, "{}", cc.bi);
    }

    #[test]
    fn builds_from_the_registry() {
        let cc = CcSpec::named("htcp").build(1460).unwrap();
        assert_eq!(cc.name(), "htcp");
        let mut spec = CcSpec::named("htcp");
        spec.params.insert("ns3".into(), 1.0);
        assert_eq!(spec.build(1460).unwrap().name(), "htcp");
    }
}
