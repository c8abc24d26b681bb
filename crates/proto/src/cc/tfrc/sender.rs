//! The TFRC sender's rate rules (RFC 5348 §4), and as a named variant those of RFC 3448 §4.
//!
//! [`TfrcVersion::Rfc3448`] follows the older RFC where it differs: the initial rate (§4.2), the
//! rate update from the last reported X_recv alone with no X_recv_set and no data-limited rules
//! (§4.3), and the nofeedback timer (§4.4). Each such rule cites RFC 3448 beside it.
//!
//! Rates are kept in bytes per second as `f64`, the unit of RFC 5348's equations, and converted to
//! [`Rate`] at the trait boundary.

use crate::cc::tfrc::equation;
use crate::cc::{FeedbackReport, RateController, RateState};
use crate::config::{GtfrcRule, TfrcVersion};
use crate::rate::Rate;
use crate::time::{Duration, Time};

/// Maximum back-off interval t_mbi, seconds (RFC 5348 §4.3 step 4).
const T_MBI_SECS: f64 = 64.0;
/// RTT filter constant q (RFC 5348 §4.3 step 1).
const RTT_FILTER: f64 = 0.9;
/// The nofeedback timer before any RTT is known (RFC 5348 §4.2).
pub(crate) const INITIAL_NO_FEEDBACK: Duration = Duration::from_secs(2);
/// Smallest RTT sample used, so the equation stays finite on a broken sample.
const MIN_RTT_SECS: f64 = 1e-6;
/// RFC 5348 §4.5: the filter constant of R_sqmean, q2 (the RFC's recommended 0.9).
const Q2: f64 = 0.9;
/// Most entries kept in X_recv_set (RFC 5348 §4.3 keeps two RTTs' worth, about three entries).
const MAX_RECV_SET: usize = 16;

/// The initial window W_init = min(4s, max(2s, 4380)) bytes (RFC 5348 §4.2).
pub fn initial_window(segment_size: f64) -> f64 {
    (4.0 * segment_size).min((2.0 * segment_size).max(4380.0))
}

/// The handshake RTT in seconds, if one is known and not zero.
pub(crate) fn initial_rtt_secs(initial_rtt: Option<Duration>) -> Option<f64> {
    initial_rtt
        .filter(|r| !r.is_zero())
        .map(|r| r.as_secs_f64().max(MIN_RTT_SECS))
}

/// The first allowed rate, s per second until an RTT is known, then W_init / R (RFC 5348 §4.2).
pub(crate) fn initial_rate(segment_size: f64, rtt: Option<f64>) -> f64 {
    match rtt {
        Some(r) => initial_window(segment_size) / r,
        None => segment_size,
    }
}

/// R after a feedback: R_sample first, then q*R + (1-q)*R_sample (RFC 5348 §4.3 step 1).
pub(crate) fn smoothed_rtt(rtt: Option<f64>, feedback_seen: bool, sample: Duration) -> f64 {
    let sample = sample.as_secs_f64().max(MIN_RTT_SECS);
    match (feedback_seen, rtt) {
        (true, Some(r)) => RTT_FILTER * r + (1.0 - RTT_FILTER) * sample,
        _ => sample,
    }
}

/// The smallest rate ever allowed, s / t_mbi (RFC 5348 §4.3 step 4).
pub(crate) fn min_rate(segment_size: f64) -> f64 {
    segment_size / T_MBI_SECS
}

/// The nofeedback interval max(4R, 2s/X) (RFC 5348 §4.3 step 2, §4.4), or 2 s without R.
pub(crate) fn no_feedback_interval(rtt: Option<f64>, segment_size: f64, x: f64) -> Duration {
    match rtt {
        Some(r) => Duration::from_secs_f64((4.0 * r).max(2.0 * segment_size / x)),
        None => INITIAL_NO_FEEDBACK,
    }
}

/// One X_recv_set entry: a reported receive rate (bytes/s, possibly infinite) and when it came.
#[derive(Debug, Clone, Copy)]
struct RecvEntry {
    rate: f64,
    at: Time,
}

/// A TFRC sender (RFC 5348 §4).
#[derive(Debug, Clone)]
pub struct TfrcSender {
    /// Segment size s, bytes.
    segment_size: f64,
    /// Allowed sending rate X, bytes/s.
    x: f64,
    /// Equation rate X_Bps, bytes/s (zero while p = 0).
    x_calc: f64,
    /// Last reported receive rate, bytes/s.
    x_recv: f64,
    /// Last reported loss event rate.
    p: f64,
    /// Smoothed RTT R, seconds, once known.
    rtt: Option<f64>,
    /// Whether any feedback arrived.
    feedback_seen: bool,
    /// The receive limit of the last feedback (RFC 5348 §4.3 step 4), bytes/s.
    last_recv_limit: f64,
    /// Time last doubled during slow start, tld (RFC 5348 §4.2: initially -1, here `None`).
    time_last_doubled: Option<Time>,
    /// X_recv_set (RFC 5348 §4.3), bounded.
    recv_set: Vec<RecvEntry>,
    /// When the nofeedback timer expires.
    no_feedback_deadline: Time,
    /// When the nofeedback timer was last set.
    no_feedback_set_at: Time,
    /// When the last data packet left.
    last_sent: Option<Time>,
    /// The sender had nothing to send since the last packet left (RFC 5348 §8.2.1).
    limited_since_last_send: bool,
    /// RFC 5348 §8.2.1 bookkeeping: times the sender was seen not data-limited.
    not_limited1: Option<Time>,
    not_limited2: Option<Time>,
    /// RFC 5348 §8.2.1: send time of the packet the last feedback covered, and that feedback's time.
    t_new: Option<Time>,
    t_next: Option<Time>,
    /// The gTFRC target g, bytes/s, applied outside slow start (zero: plain TFRC).
    target: f64,
    /// How g combines with X_calc and X_recv.
    rule: GtfrcRule,
    /// Which RFC's rules apply.
    version: TfrcVersion,
    /// RFC 5348 §4.5: whether the sender paces at X_inst, and its state: R_sqmean (seconds^1/2)
    /// and the last R_sample's square root, once feedback has brought one.
    oscillation_prevention: bool,
    r_sqmean: Option<f64>,
    sqrt_r_sample: f64,
}

impl TfrcSender {
    /// A sender of `segment_size`-byte packets, optionally knowing the handshake RTT.
    pub fn new(segment_size: usize, initial_rtt: Option<Duration>, now: Time) -> Self {
        TfrcSender::with_version(TfrcVersion::Rfc5348, segment_size, initial_rtt, now)
    }

    /// A sender following `version`'s rules.
    pub fn with_version(
        version: TfrcVersion,
        segment_size: usize,
        initial_rtt: Option<Duration>,
        now: Time,
    ) -> Self {
        let segment_size = segment_size.max(1) as f64;
        let (rtt, x) = match version {
            TfrcVersion::Rfc5348 => {
                let rtt = initial_rtt_secs(initial_rtt);
                (rtt, initial_rate(segment_size, rtt))
            }
            // RFC 3448 §4.2: X starts at 1 packet/second and R is undefined until the first
            // feedback; a handshake RTT is not used.
            TfrcVersion::Rfc3448 => (None, segment_size),
        };
        TfrcSender {
            segment_size,
            x,
            x_calc: 0.0,
            x_recv: 0.0,
            p: 0.0,
            rtt,
            feedback_seen: false,
            last_recv_limit: 0.0,
            time_last_doubled: None,
            // RFC 5348 §4.2: X_recv_set starts with the single value Infinity.
            recv_set: vec![RecvEntry {
                rate: f64::INFINITY,
                at: now,
            }],
            // RFC 5348 §4.2: the nofeedback timer is first set to two seconds.
            no_feedback_deadline: now + INITIAL_NO_FEEDBACK,
            no_feedback_set_at: now,
            last_sent: None,
            limited_since_last_send: false,
            not_limited1: None,
            not_limited2: None,
            t_new: None,
            t_next: None,
            target: 0.0,
            rule: GtfrcRule::Qstp,
            version,
            oscillation_prevention: false,
            r_sqmean: None,
            sqrt_r_sample: 0.0,
        }
    }

    /// The same sender with RFC 5348 §4.5's oscillation prevention on or off.
    pub fn with_oscillation_prevention(self, on: bool) -> Self {
        TfrcSender {
            oscillation_prevention: on,
            ..self
        }
    }

    /// RFC 5348 §4.5: R_sqmean = q2 R_sqmean + (1 - q2) sqrt(R_sample), q2 = 0.9, from the
    /// first sample's square root.
    fn track_sqrt_rtt(&mut self, sample: Duration) {
        let root = sample.as_secs_f64().max(MIN_RTT_SECS).sqrt();
        self.sqrt_r_sample = root;
        self.r_sqmean = Some(match self.r_sqmean {
            None => root,
            Some(mean) => Q2 * mean + (1.0 - Q2) * root,
        });
    }

    /// Which RFC's rules this sender follows.
    pub fn version(&self) -> TfrcVersion {
        self.version
    }

    /// Set the gTFRC floor g (zero for plain TFRC); used by [`crate::cc::Gtfrc`].
    pub(crate) fn set_floor(&mut self, target: Rate) {
        self.target = target.bytes_per_sec();
    }

    /// Choose how g combines with X_calc and X_recv; used by [`crate::cc::Gtfrc`].
    pub(crate) fn set_rule(&mut self, rule: GtfrcRule) {
        self.rule = rule;
    }

    /// Whether the sender is in slow start (no loss reported yet: RFC 5348 §4.3 step 4, p = 0).
    pub fn in_slow_start(&self) -> bool {
        self.p <= 0.0
    }

    /// The smallest rate ever allowed, s / t_mbi (RFC 5348 §4.3 step 4).
    fn min_rate(&self) -> f64 {
        min_rate(self.segment_size)
    }

    /// W_init / R, also the recover rate after idle periods (RFC 5348 §4.2, §4.4).
    fn initial_rate(&self) -> Option<f64> {
        self.rtt.map(|r| initial_window(self.segment_size) / r)
    }

    /// The nofeedback interval max(4R, 2s/X) (RFC 5348 §4.3 step 2, §4.4), or 2 s without R.
    fn no_feedback_interval(&self) -> Duration {
        no_feedback_interval(self.rtt, self.segment_size, self.x)
    }

    fn recv_set_max(&self) -> f64 {
        self.recv_set.iter().map(|e| e.rate).fold(0.0, f64::max)
    }

    /// Maximize_X_recv_set (RFC 5348 §4.3): keep only the largest value, drop Infinity.
    fn maximize_recv_set(&mut self, x_recv: f64, now: Time) {
        let largest = self
            .recv_set
            .iter()
            .map(|e| e.rate)
            .filter(|r| r.is_finite())
            .fold(x_recv, f64::max);
        self.recv_set.clear();
        self.recv_set.push(RecvEntry {
            rate: largest,
            at: now,
        });
    }

    /// Update_X_recv_set (RFC 5348 §4.3): add X_recv, forget values older than two RTTs.
    fn update_recv_set(&mut self, x_recv: f64, now: Time) {
        let two_rtt = Duration::from_secs_f64(2.0 * self.rtt.unwrap_or(0.0));
        self.recv_set
            .retain(|e| now.saturating_since(e.at) <= two_rtt);
        if self.recv_set.len() >= MAX_RECV_SET {
            self.recv_set.remove(0);
        }
        self.recv_set.push(RecvEntry {
            rate: x_recv,
            at: now,
        });
    }

    /// Whether the interval this feedback covers was data-limited (RFC 5348 §8.2.1).
    ///
    /// The report carries no send time of the echoed packet, so it is taken as now - R_sample
    /// (later than the truth by the receiver's t_delay, which is small while data flows).
    fn covered_interval_was_data_limited(&mut self, now: Time, rtt_sample: Duration) -> bool {
        let t_old = self.t_new;
        let t_new = Some(now - rtt_sample);
        self.t_new = t_new;
        self.t_next = Some(now);
        let covers = |t: Option<Time>| t.is_some() && t_old < t && t <= t_new;
        let limited = !(covers(self.not_limited1) || covers(self.not_limited2));
        if self.not_limited1 <= t_new && self.not_limited2 > t_new {
            self.not_limited1 = self.not_limited2;
        }
        limited
    }

    /// RFC 5348 §4.3 step 4, with the gTFRC floor outside slow start.
    fn update_rate(&mut self, now: Time, recv_limit: f64) {
        if self.p > 0.0 {
            self.update_equation_rate(recv_limit);
        } else {
            if self.doubling_due(now) {
                // RFC 5348 §4.3 step 4, slow start: X = max(min(2X, recv_limit), initial_rate).
                let initial = self.initial_rate().unwrap_or(self.segment_size);
                self.x = (2.0 * self.x).min(recv_limit).max(initial);
                self.time_last_doubled = Some(now);
            }
        }
    }

    /// Slow start doubles at most once per RTT (RFC 5348 and RFC 3448 §4.3 step 4: tld).
    fn doubling_due(&self, now: Time) -> bool {
        let r = self.rtt.unwrap_or(MIN_RTT_SECS);
        self.time_last_doubled
            .map_or(true, |tld| now.saturating_since(tld).as_secs_f64() >= r)
    }

    /// X from the equation once p > 0, lifted to g by the gTFRC rule: RFC 5348 §4.3 step 4 and
    /// RFC 3448 §4.3 step 4, which differ only in `recv_limit`.
    fn update_equation_rate(&mut self, recv_limit: f64) {
        self.x_calc =
            equation::throughput(self.segment_size, self.rtt.unwrap_or(MIN_RTT_SECS), self.p);
        self.x = match self.rule {
            // QSTP paper eq. (2), §4.3.2: X = min(max(X_calc, g), 2 X_recv); with g = 0 this is
            // RFC 5348 §4.3 step 4, X = max(min(X_Bps, recv_limit), s/t_mbi), and RFC 3448 §4.3
            // step 4, X = max(min(X_calc, 2*X_recv), s/t_mbi).
            GtfrcRule::Qstp => self.x_calc.max(self.target).min(recv_limit),
            // gTFRC paper Fig. 1, line by line: `if (rcvrate > gtfrc_)`, the equation rate above g,
            // TFRC's own update (`increase_rate` / `decrease_rate`, here RFC 5348's X =
            // min(X_calc, recv_limit), which may fall below g); `else rate_ = gtfrc_`, g whatever
            // X_recv.
            GtfrcRule::Fig1 => {
                if self.x_calc > self.target {
                    self.x_calc.min(recv_limit)
                } else {
                    self.target
                }
            }
        }
        .max(self.min_rate());
    }

    /// RFC 3448 §4.3, sender behaviour when a feedback packet is received.
    fn on_feedback_rfc3448(&mut self, now: Time, report: &FeedbackReport) {
        // RFC 3448 §4.3 steps 1-2: R_sample, then R = q*R + (1-q)*R_sample (as RFC 5348).
        self.rtt = Some(smoothed_rtt(
            self.rtt,
            self.feedback_seen,
            report.rtt_sample,
        ));
        self.p = crate::cc::sane_loss_event_rate(report.loss_event_rate);
        // RFC 3448 §4.3: the sender keeps the last reported X_recv only (no X_recv_set, and no
        // data-limited rules: those came with RFC 5348 §4.3 and §8.2).
        self.x_recv = report.x_recv.bytes_per_sec();
        self.update_rate_rfc3448(now);
        self.feedback_seen = true;
        // RFC 3448 §4.3 step 5: the nofeedback timer runs max(4*R, 2*s/X), from the new X.
        self.restart_no_feedback_timer_rfc3448(now);
    }

    /// RFC 3448 §4.3 step 4, from the cached X_recv.
    fn update_rate_rfc3448(&mut self, now: Time) {
        let recv_limit = 2.0 * self.x_recv;
        if self.p > 0.0 {
            // RFC 3448 §4.3 step 4: X = max(min(X_calc, 2*X_recv), s/t_mbi), with g composed as
            // the gTFRC rule says.
            self.update_equation_rate(recv_limit);
        } else {
            if self.doubling_due(now) {
                let r = self.rtt.unwrap_or(MIN_RTT_SECS);
                // RFC 3448 §4.3 step 4, slow start: X = max(min(2*X, 2*X_recv), s/R); tld = now.
                self.x = (2.0 * self.x).min(recv_limit).max(self.segment_size / r);
                self.time_last_doubled = Some(now);
            }
        }
    }

    /// RFC 3448 §4.3 step 5 and §4.4 step 2: expire after max(4*R, 2*s/X); before any R, the
    /// two seconds of §4.2, or 2*s/X if longer.
    fn restart_no_feedback_timer_rfc3448(&mut self, now: Time) {
        let two_packets = 2.0 * self.segment_size / self.x;
        let interval = match self.rtt {
            Some(r) => (4.0 * r).max(two_packets),
            None => INITIAL_NO_FEEDBACK.as_secs_f64().max(two_packets),
        };
        self.no_feedback_deadline = now + Duration::from_secs_f64(interval);
        self.no_feedback_set_at = now;
    }

    /// RFC 3448 §4.4, expiration of the nofeedback timer.
    fn handle_timeout_rfc3448(&mut self, now: Time) {
        let idle = match self.last_sent {
            Some(sent) => sent < self.no_feedback_set_at,
            None => true,
        };
        let r = self.rtt.unwrap_or(MIN_RTT_SECS);
        if !self.feedback_seen || self.p <= 0.0 {
            // RFC 3448 §4.4 step 1 (with its verified erratum 1458): without an RTT sample and any
            // feedback, or when p == 0, X is cut in half directly: X = max(X/2, s/t_mbi). The
            // idle exception below keeps at least two packets per RTT once feedback came.
            let idle_at_low_rate =
                self.feedback_seen && idle && self.x_recv < 4.0 * self.segment_size / r;
            if !idle_at_low_rate {
                self.x = (self.x / 2.0).max(self.min_rate());
            }
        } else if idle && self.x_recv < 4.0 * self.segment_size / r {
            // RFC 3448 §4.4: idle since the timer was set and X_recv below four packets per RTT,
            // so X_recv is not halved (X stays at two packets per RTT or more).
        } else {
            // RFC 3448 §4.4 step 1: halve through the cached X_recv, which caps X at 2*X_recv.
            self.x_recv = if self.x_calc > 2.0 * self.x_recv {
                (self.x_recv / 2.0).max(self.segment_size / (2.0 * T_MBI_SECS))
            } else {
                self.x_calc / 4.0
            };
            // "Recalculate X as in step (4)" (p > 0 here). The gTFRC floor is a rule of the
            // feedback path, as in the RFC 5348 mode, so without feedback X may fall below g.
            self.x = self.x_calc.min(2.0 * self.x_recv).max(self.min_rate());
        }
        // RFC 3448 §4.4 step 2.
        self.restart_no_feedback_timer_rfc3448(now);
    }

    /// Update_Limits (RFC 5348 §4.4) after the nofeedback timer expired.
    fn update_limits(&mut self, now: Time, timer_limit: f64) {
        let timer_limit = timer_limit.max(self.min_rate());
        self.recv_set.clear();
        self.recv_set.push(RecvEntry {
            rate: timer_limit / 2.0,
            at: now,
        });
        // Recalculate X as in RFC 5348 §4.3 step 4 (p > 0 here). The gTFRC floor is a rule of the
        // feedback path (gTFRC paper Fig. 1), so without feedback the rate may fall below g.
        self.x_calc =
            equation::throughput(self.segment_size, self.rtt.unwrap_or(MIN_RTT_SECS), self.p);
        self.x = self.x_calc.min(timer_limit).max(self.min_rate());
    }
}

impl RateController for TfrcSender {
    fn on_feedback(&mut self, now: Time, report: &FeedbackReport) {
        self.track_sqrt_rtt(report.rtt_sample);
        if self.version == TfrcVersion::Rfc3448 {
            self.on_feedback_rfc3448(now, report);
            return;
        }
        let r = smoothed_rtt(self.rtt, self.feedback_seen, report.rtt_sample);
        self.rtt = Some(r);
        // RFC 5348 §4.3 step 2: the timeout, from the rate before this update.
        let rto = self.no_feedback_interval();

        let p = crate::cc::sane_loss_event_rate(report.loss_event_rate);
        let mut x_recv = report.x_recv.bytes_per_sec();
        self.x_recv = x_recv;

        // RFC 5348 §4.3 step 4 (recv_limit) with the data-limited rules of §8.2.1.
        let data_limited = self.covered_interval_was_data_limited(now, report.rtt_sample);
        let recv_limit = if data_limited {
            if p > self.p {
                // A new loss event or a higher p during a data-limited interval.
                for e in &mut self.recv_set {
                    e.rate /= 2.0;
                }
                x_recv *= 0.85;
                self.maximize_recv_set(x_recv, now);
                self.recv_set_max()
            } else {
                self.maximize_recv_set(x_recv, now);
                2.0 * self.recv_set_max()
            }
        } else {
            self.update_recv_set(x_recv, now);
            2.0 * self.recv_set_max()
        };

        self.p = p;
        self.update_rate(now, recv_limit);
        self.last_recv_limit = recv_limit;
        self.feedback_seen = true;

        // RFC 5348 §4.3 step 5: restart the nofeedback timer.
        self.no_feedback_deadline = now + rto;
        self.no_feedback_set_at = now;
    }

    fn on_loss_event_rate(&mut self, now: Time, p: f64) {
        let p = crate::cc::sane_loss_event_rate(p);
        if !self.feedback_seen || p == self.p {
            return;
        }
        self.p = p;
        if self.version == TfrcVersion::Rfc3448 {
            self.update_rate_rfc3448(now);
        } else {
            self.update_rate(now, self.last_recv_limit);
        }
    }

    fn on_packet_sent(&mut self, now: Time, _size: usize) {
        // RFC 5348 §8.2.1: a packet sent with no idle send opportunity since the previous one was
        // sent while the sender was not data-limited.
        if !self.limited_since_last_send {
            let now = Some(now);
            if self.not_limited1 <= self.t_new {
                self.not_limited1 = now;
            } else if self.not_limited2 <= self.t_next {
                self.not_limited2 = now;
            }
        }
        self.limited_since_last_send = false;
        self.last_sent = Some(now);
    }

    fn on_data_limited(&mut self, _now: Time) {
        self.limited_since_last_send = true;
    }

    fn allowed_rate(&self) -> Rate {
        match self.r_sqmean {
            // RFC 5348 §4.5: t_ipi = s / X_inst, X_inst = X R_sqmean / sqrt(R_sample).
            Some(mean) if self.oscillation_prevention => {
                Rate::from_bytes_per_sec(self.x * mean / self.sqrt_r_sample)
            }
            _ => Rate::from_bytes_per_sec(self.x),
        }
    }

    fn poll_timeout(&self) -> Option<Time> {
        Some(self.no_feedback_deadline)
    }

    fn handle_timeout(&mut self, now: Time) {
        if now < self.no_feedback_deadline {
            return;
        }
        if self.version == TfrcVersion::Rfc3448 {
            self.handle_timeout_rfc3448(now);
            return;
        }
        // RFC 5348 §4.4, expiration of the nofeedback timer.
        let x_recv = self.recv_set_max();
        let idle = match self.last_sent {
            Some(sent) => sent < self.no_feedback_set_at,
            None => true,
        };
        let recover_rate = self.initial_rate();
        let idle_at_low_rate = match recover_rate {
            Some(recover) => {
                idle && ((self.p > 0.0 && x_recv < recover)
                    || (self.p <= 0.0 && self.x < 2.0 * recover))
            }
            None => false,
        };
        if self.rtt.is_none() && !self.feedback_seen && !idle {
            // No X_Bps and no recover rate yet: halve.
            self.x = (self.x / 2.0).max(self.min_rate());
        } else if idle_at_low_rate {
            // An idle sender keeps at least the recover rate: do nothing.
        } else if self.p <= 0.0 {
            self.x = (self.x / 2.0).max(self.min_rate());
        } else if self.x_calc > 2.0 * x_recv {
            // 2*X_recv was already limiting the rate.
            self.update_limits(now, x_recv);
        } else {
            // X_Bps was limiting the rate.
            self.update_limits(now, self.x_calc / 2.0);
        }
        self.no_feedback_deadline = now + self.no_feedback_interval();
        self.no_feedback_set_at = now;
    }

    fn set_target(&mut self, _target: Rate) {
        // Plain TFRC has no target; gTFRC uses `set_floor`.
    }

    fn set_segment_size(&mut self, size: usize) {
        // RFC 5348 §4.1: s is the segment size in use; X (bytes per second) is kept as it is.
        self.segment_size = size.max(1) as f64;
    }

    fn state(&self) -> RateState {
        RateState {
            rate: self.allowed_rate(),
            x_calc: Rate::from_bytes_per_sec(self.x_calc),
            x_recv: Rate::from_bytes_per_sec(self.x_recv),
            loss_event_rate: self.p,
            rtt: self
                .rtt
                .map(Duration::from_secs_f64)
                .unwrap_or(Duration::ZERO),
            target: Rate::from_bytes_per_sec(self.target),
            slow_start: self.in_slow_start(),
        }
    }
}

#[cfg(test)]
#[path = "sender_tests.rs"]
mod tests;
