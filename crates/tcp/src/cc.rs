//! The congestion-control seam of the simulator's TCP: the trait every control implements, what
//! it is told, and the registry that maps scenario names and parameters to controls.
//!
//! Adding a control is one new file with a [`Registered`] entry and one line in
//! [`super::REGISTRY`]; scenario parsing, validation, `--help` text and reports read the registry.

use qstp_proto::{Duration, Rate, Time};
use std::collections::BTreeMap;

/// What a congestion control sees on an ACK.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AckSample {
    /// When the ACK arrived.
    pub now: Time,
    /// Bytes newly acknowledged (cumulatively or by SACK).
    pub acked_bytes: u64,
    /// RTT sample of this ACK, if it gave one: from the newest segment it acknowledges,
    /// cumulatively or by SACK, that was sent only once (RFC 6298 §3, Karn).
    pub rtt: Option<Duration>,
    /// Smoothed RTT (zero before the first sample).
    pub srtt: Duration,
    /// Smallest RTT seen.
    pub min_rtt: Duration,
    /// Bytes in flight before this ACK.
    pub in_flight: u64,
}

/// What a congestion control sees once per round trip (when the data outstanding at the start
/// of the round is cumulatively acknowledged).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundSample {
    /// When the round ended.
    pub now: Time,
    /// How long it lasted.
    pub duration: Duration,
    /// Bytes acknowledged during it.
    pub acked_bytes: u64,
    /// Smallest RTT sample during it, if any.
    pub min_rtt: Option<Duration>,
    /// Largest RTT sample during it, if any.
    pub max_rtt: Option<Duration>,
    /// RTT samples during it.
    pub rtt_samples: u32,
    /// Smallest RTT ever seen (the propagation estimate).
    pub base_rtt: Duration,
    /// Smoothed RTT.
    pub srtt: Duration,
}

/// The sender's loss-recovery state when a [`RateSample`] is taken (Linux `icsk_ca_state`,
/// the states a control tells apart).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaState {
    /// No recovery under way (Linux `TCP_CA_Open`, `TCP_CA_Disorder`).
    Open,
    /// Fast recovery (Linux `TCP_CA_Recovery`).
    Recovery,
    /// The loss state after a retransmission timeout (Linux `TCP_CA_Loss`).
    Loss,
}

/// A delivery-rate sample, taken on every ACK for a control that asks for them
/// ([`CongestionControl::cong_control`]): draft-cheng-iccrg-delivery-rate-estimation-02 §3.3 as
/// Linux tcp_rate.c `tcp_rate_gen` fills its `struct rate_sample`, in bytes rather than packets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSample {
    /// When the ACK arrived.
    pub now: Time,
    /// Bytes delivered (acknowledged or SACKed) over the connection after this ACK (Linux
    /// `tp->delivered`, the draft's C.delivered).
    pub delivered_total: u64,
    /// When `delivered_total` last grew (Linux `tp->delivered_mstamp`, C.delivered_time).
    pub delivered_time: Time,
    /// `delivered_total` when the newest segment this ACK delivered was sent (rs.prior_delivered);
    /// `None` if it delivered nothing.
    pub prior_delivered: Option<u64>,
    /// Bytes delivered over [`RateSample::interval`] (rs.delivered); with it, `None` when the
    /// sample is not valid (nothing delivered, or an interval shorter than the minimum RTT).
    pub delivered: Option<u64>,
    /// The longer of the send and ACK phases of the sample (rs.interval).
    pub interval: Option<Duration>,
    /// Whether the sample was taken over an application-limited stretch (rs.is_app_limited).
    pub is_app_limited: bool,
    /// Bytes newly acknowledged or SACKed by this ACK (rs.acked_sacked).
    pub acked_sacked: u64,
    /// Bytes newly deemed lost while processing this ACK (rs.losses).
    pub losses: u64,
    /// Bytes deemed lost over the connection, timeouts' included (Linux `tp->lost`).
    pub lost_total: u64,
    /// Bytes in flight (RFC 6675 pipe) before this ACK (rs.prior_in_flight).
    pub prior_in_flight: u64,
    /// Bytes in flight after it, loss marking included (Linux `tcp_packets_in_flight`).
    pub in_flight: u64,
    /// RTT sample of this ACK, if any (rs.rtt_us): from the newest segment it delivered that was
    /// sent once.
    pub rtt: Option<Duration>,
    /// Smoothed RTT (zero before the first sample).
    pub srtt: Duration,
    /// The recovery state after this ACK.
    pub state: CaState,
    /// When the sender's pacing lets the next segment out (Linux `tp->tcp_wstamp_ns`, the
    /// earliest departure time); `now` or earlier when it may go at once.
    pub next_departure: Time,
    /// Header bytes the wire adds to each segment (pacing counts them).
    pub header_bytes: u32,
}

/// A TCP congestion control: the window, in bytes, and how it reacts.
///
/// Recovery itself (which segment to resend, the pipe) is the sender's; a control only sets
/// `cwnd` and `ssthresh`.
pub trait CongestionControl: std::fmt::Debug + Send {
    /// The name used in scenario files (`newreno`, `cubic`, ...).
    fn name(&self) -> &'static str;
    /// Start with window `initial_cwnd` and threshold `initial_ssthresh`, bytes; the sender calls
    /// this once, before its first segment.
    fn init(&mut self, initial_cwnd: u64, initial_ssthresh: u64);
    /// Whether the window is in slow start.
    fn in_slow_start(&self) -> bool {
        self.cwnd() < self.ssthresh()
    }
    /// Congestion window, bytes.
    fn cwnd(&self) -> u64;
    /// Slow-start threshold, bytes.
    fn ssthresh(&self) -> u64;
    /// New data was acknowledged outside recovery.
    fn on_ack(&mut self, sample: &AckSample);
    /// New data was acknowledged in the loss state of a retransmission timeout, up to and
    /// including the ACK that reaches its recovery point (ns-3's `CA_LOSS`: `PktsAcked` is called
    /// in that state, tcp-socket-base.cc:2136, and on that last ACK at :2228, before the state
    /// becomes `CA_OPEN`). By default as any ACK outside recovery
    /// ([`CongestionControl::on_ack`]).
    fn on_ack_in_loss(&mut self, sample: &AckSample) {
        self.on_ack(sample);
    }
    /// An ACK that acknowledges `ack` (the next byte the receiver expects) arrived while the
    /// next new byte to send is `snd_nxt`; called on every ACK before the others (Linux hands
    /// `cong_avoid` the ACK number and keeps `tp->snd_nxt`). Does nothing by default.
    fn on_sequence(&mut self, _ack: u64, _snd_nxt: u64) {}
    /// An ACK arrived during fast recovery (the window is the sender's business then; delay-based
    /// controls still want its RTT sample). Does nothing by default.
    fn on_ack_in_recovery(&mut self, _sample: &AckSample) {}
    /// A round trip ended (called after that ACK's `on_ack`). Does nothing by default.
    fn on_round(&mut self, _round: &RoundSample) {}
    /// A loss was detected by duplicate ACKs or SACK: reduce (once per window of data). Also
    /// called when a host-level controller tells this sender to back off in another's place.
    fn on_congestion_event(&mut self, now: Time, in_flight: u64);
    /// Fast recovery ended (the recovery point was acknowledged).
    fn on_recovery_end(&mut self, now: Time);
    /// The ACK that ended fast recovery moved the cumulative acknowledgement by `advanced` bytes,
    /// SACKed before or not (called after that ACK's `on_recovery_end` and `on_ack_in_recovery`).
    /// ns-3 hands this whole advance to its control's window increase (tcp-socket-base.cc
    /// `ProcessAck`, CA_RECOVERY -> CA_OPEN: `IncreaseWindow(m_tcb, segsAcked)`). Does nothing by
    /// default.
    fn on_recovery_exit_ack(&mut self, _now: Time, _advanced: u64) {}
    /// The retransmission timer expired (RFC 5681 §3.1: cwnd to one segment).
    fn on_retransmission_timeout(&mut self, now: Time, in_flight: u64);
    /// The loss state a timeout began ended: the data outstanding at the timeout is all
    /// acknowledged (Linux: TCP_CA_Loss -> TCP_CA_Open). Does nothing by default.
    fn on_loss_end(&mut self, _now: Time) {}
    /// Whether the sender applies two rules of ns-3 3.44's socket (tcp-socket-base.cc) around
    /// this control even without ns-3's recovery (default: only with [`super::Recovery::PrrNs3`],
    /// which brings them for every control, as ns-3's socket applies them whatever the control;
    /// otherwise the RFC rules). The ns-3-compatible variants of YeAH and H-TCP ask for them:
    /// - the `in_flight` of [`CongestionControl::on_congestion_event`] and
    ///   [`CongestionControl::on_retransmission_timeout`] is the pipe (RFC 6675 §2: outstanding
    ///   bytes neither SACKed nor deemed lost, plus those resent; on a fast retransmit after the
    ///   first unacknowledged segment is deemed lost, on a timeout before every segment is), not
    ///   FlightSize (RFC 5681 §3.1, every byte sent and not cumulatively acknowledged): ns-3
    ///   hands `GetSsThresh` `BytesInFlight()` (tcp-socket-base.cc:1715-1717 `EnterRecovery`,
    ///   :3916 and :3963 `ReTxTimeout`), which after a loss burst or in a long recovery is far
    ///   below FlightSize (the SACKed data above the holes);
    /// - the ACK that ends the loss state after a timeout (the first to reach the recovery
    ///   point) hands [`CongestionControl::on_ack`] only the whole segments it acknowledges above
    ///   that point (tcp-socket-base.cc:2226 `segsAcked = (ackNumber - m_recover) /
    ///   m_segmentSize`), usually none, so that it grows nothing.
    fn ns3_socket(&self) -> bool {
        false
    }
    /// Whether this control's Linux module, as ns-2.35's TCP/Linux carries it, sets
    /// `.min_cwnd = tcp_reno_min_cwnd` (ssthresh / 2, tcp_cong.c), the window
    /// [`super::Recovery::RateHalving`] falls to in recovery; otherwise it falls to ssthresh.
    fn reno_min_cwnd(&self) -> bool {
        false
    }
    /// The sender was idle for longer than a retransmission timeout and sends again: RFC 5681
    /// §4.1 restarts with cwnd = min(`restart_window`, cwnd), ssthresh unchanged. By default
    /// through [`CongestionControl::init`], which every control here keeps to the two values.
    fn on_idle_restart(&mut self, restart_window: u64) {
        let ssthresh = self.ssthresh();
        let cwnd = self.cwnd().min(restart_window);
        self.init(cwnd, ssthresh);
    }
    /// Leaving [`super::Recovery::RateHalving`]'s recovery, the window is clamped to `limit`
    /// bytes (ns-2.35 tcp-linux.cc tcp_moderate_cwnd: in flight plus 3 segments). By default as
    /// an idle restart to that window; a control whose window has parts clamps the sum.
    fn on_moderate(&mut self, limit: u64) {
        self.on_idle_restart(limit);
    }
    /// The rate at which to pace segments out, if the control paces; `None` sends as the window
    /// opens (ACK clocking).
    fn pacing_rate(&self) -> Option<Rate> {
        None
    }
    /// Whether the control sets the window itself on every ACK from delivery-rate samples, as a
    /// Linux module with `cong_control` does (tcp_input.c `tcp_cong_control`): the sender then
    /// hands it a [`RateSample`] per ACK ([`CongestionControl::on_rate_sample`]), and its window
    /// limits what is in flight during fast recovery too (no PRR or rate halving: Linux skips
    /// `tcp_cwnd_reduction` for such a module). No by default.
    fn cong_control(&self) -> bool {
        false
    }
    /// A delivery-rate sample, after this ACK's loss detection (Linux `cong_control`, called
    /// from `tcp_ack` after `tcp_fastretrans_alert`). Only when [`CongestionControl::cong_control`].
    fn on_rate_sample(&mut self, _sample: &RateSample) {}
    /// Whether the sender is to mark itself application-limited now (after
    /// [`CongestionControl::on_rate_sample`]): the segments sent until what is in flight has been
    /// delivered give application-limited samples (Linux `tp->app_limited`, which tcp_bbr.c sets
    /// in PROBE_RTT). No by default.
    fn mark_app_limited(&self) -> bool {
        false
    }
    /// A seed for the control's own random choices, from the flow's random stream; a control
    /// that draws none ignores it (the default).
    fn seed(&mut self, _seed: u64) {}
}

/// What values a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// Any number in its range.
    Real,
    /// A whole number in its range (a count of segments, rounds or packets, a shift).
    Integer,
    /// On or off: `true`/`false` in a scenario, or 1/0.
    Flag,
}

/// One parameter a control takes from the scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Param {
    /// Key in the scenario (`beta`, `c`, `low_window`, ...).
    pub name: &'static str,
    /// What values it takes.
    pub kind: ParamKind,
    /// Value when the scenario gives none (the reference implementation's).
    pub default: f64,
    /// Smallest value accepted.
    pub min: f64,
    /// Largest value accepted.
    pub max: f64,
    /// One line for `--help` and the docs.
    pub doc: &'static str,
}

impl Param {
    /// Its default as a scenario writes it (`true`, `16`, `0.7`).
    pub fn default_text(&self) -> String {
        match self.kind {
            ParamKind::Flag => (self.default != 0.0).to_string(),
            _ => self.default.to_string(),
        }
    }

    /// The values it takes, for `--help` and the docs: `true or false`, a whole range or a range.
    pub fn values_text(&self) -> String {
        match self.kind {
            ParamKind::Flag => "true or false".into(),
            ParamKind::Integer => format!("a whole number, {} to {}", self.min, self.max),
            ParamKind::Real => format!("{} to {}", self.min, self.max),
        }
    }
}

/// A control the simulator knows: its name, parameters and constructor.
#[derive(Debug, Clone, Copy)]
pub struct Registered {
    /// Name in scenario files and reports.
    pub name: &'static str,
    /// Other names accepted (`reno` for `newreno`).
    pub aliases: &'static [&'static str],
    /// One line: what it is and where it comes from.
    pub doc: &'static str,
    /// Parameters it takes.
    pub params: &'static [Param],
    /// Build it for segments of `mss` bytes.
    pub build: fn(mss: u32, params: &Params) -> Box<dyn CongestionControl>,
}

/// The parameter values of one control: the scenario's, or the defaults.
#[derive(Debug)]
pub struct Params<'a> {
    entry: &'a Registered,
    values: &'a BTreeMap<String, f64>,
}

impl Params<'_> {
    /// The value of `name`, which the entry declares of kind `kind` (a mismatch is a bug in the
    /// control's file, not in the scenario).
    fn value(&self, name: &str, kind: ParamKind) -> f64 {
        let param = self
            .entry
            .params
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("{} declares no parameter '{name}'", self.entry.name));
        assert_eq!(
            param.kind, kind,
            "{}.{name} is declared {:?}",
            self.entry.name, param.kind
        );
        self.values.get(name).copied().unwrap_or(param.default)
    }

    /// A real parameter.
    pub fn real(&self, name: &str) -> f64 {
        self.value(name, ParamKind::Real)
    }

    /// A whole-number parameter (validation refused any other value).
    pub fn integer(&self, name: &str) -> u32 {
        self.value(name, ParamKind::Integer) as u32
    }

    /// A flag.
    pub fn flag(&self, name: &str) -> bool {
        self.value(name, ParamKind::Flag) != 0.0
    }
}

/// A control chosen by a scenario: a name and parameter values.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct CcSpec {
    /// Name or alias, case-insensitive.
    pub name: String,
    /// Parameters given; the others take their defaults.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, f64>,
}

/// Why a control spec was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CcError {
    /// No control has this name.
    #[error("unknown TCP congestion control '{name}' (known: {known})", known = known_names().join(", "))]
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// The control takes no parameter of this name.
    #[error("{cc} has no parameter '{param}' ({known})", known = match known.is_empty() { true => "it takes none".to_string(), false => format!("known: {}", known.join(", ")) })]
    UnknownParam {
        /// The control.
        cc: &'static str,
        /// The parameter asked for.
        param: String,
        /// The parameters it takes.
        known: Vec<&'static str>,
    },
    /// A value of the wrong kind: not 0 or 1 for a flag, not whole for an integer.
    #[error("{cc} parameter '{param}' = {value}: {reason}")]
    BadValue {
        /// The control.
        cc: &'static str,
        /// The parameter.
        param: &'static str,
        /// The value given.
        value: f64,
        /// What it takes.
        reason: String,
    },
    /// A parameter outside its range.
    #[error("{cc} parameter '{param}' = {value} is outside [{min}, {max}]")]
    OutOfRange {
        /// The control.
        cc: &'static str,
        /// The parameter.
        param: &'static str,
        /// The value given.
        value: f64,
        /// Smallest accepted.
        min: f64,
        /// Largest accepted.
        max: f64,
    },
}

/// Names of every registered control, in registry order.
pub fn known_names() -> Vec<&'static str> {
    super::REGISTRY.iter().map(|r| r.name).collect()
}

/// The registry entry called `name` (or one of its aliases), case-insensitive.
pub fn lookup(name: &str) -> Option<&'static Registered> {
    let name = name.to_ascii_lowercase();
    super::REGISTRY
        .iter()
        .find(|r| r.name == name || r.aliases.contains(&name.as_str()))
}

impl CcSpec {
    /// The spec of control `name` with default parameters.
    pub fn named(name: impl Into<String>) -> Self {
        CcSpec {
            name: name.into(),
            params: BTreeMap::new(),
        }
    }

    /// Check the name and every parameter; returns the registry entry.
    pub fn validate(&self) -> Result<&'static Registered, CcError> {
        let entry = lookup(&self.name).ok_or_else(|| CcError::Unknown {
            name: self.name.clone(),
        })?;
        for (key, &value) in &self.params {
            let param = entry.params.iter().find(|p| p.name == key).ok_or_else(|| {
                CcError::UnknownParam {
                    cc: entry.name,
                    param: key.clone(),
                    known: entry.params.iter().map(|p| p.name).collect(),
                }
            })?;
            let whole = value.fract() == 0.0;
            let refuse = |reason: String| CcError::BadValue {
                cc: entry.name,
                param: param.name,
                value,
                reason,
            };
            match param.kind {
                ParamKind::Flag if value != 0.0 && value != 1.0 => {
                    return Err(refuse("a flag is true or false (1 or 0)".into()))
                }
                ParamKind::Integer if !whole => {
                    return Err(refuse("it takes a whole number".into()))
                }
                _ => {}
            }
            if !(param.min..=param.max).contains(&value) {
                return Err(CcError::OutOfRange {
                    cc: entry.name,
                    param: param.name,
                    value,
                    min: param.min,
                    max: param.max,
                });
            }
        }
        Ok(entry)
    }

    /// The canonical name of the control (its registry name), if it is known.
    pub fn canonical_name(&self) -> Option<&'static str> {
        lookup(&self.name).map(|r| r.name)
    }

    /// Build the control for segments of `mss` bytes.
    pub fn build(&self, mss: u32) -> Result<Box<dyn CongestionControl>, CcError> {
        let entry = self.validate()?;
        let params = Params {
            entry,
            values: &self.params,
        };
        Ok((entry.build)(mss, &params))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_builds_with_defaults_under_its_own_name() {
        for entry in super::super::REGISTRY {
            let cc = CcSpec::named(entry.name.to_uppercase())
                .build(1460)
                .unwrap();
            assert_eq!(cc.name(), entry.name);
            for p in entry.params {
                assert!(
                    p.min <= p.default && p.default <= p.max,
                    "{}.{}",
                    entry.name,
                    p.name
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn segments_round_as_f64_round_does(x in proptest::num::f64::ANY) {
            proptest::prop_assert_eq!(super::segments::round(x), x.round() as u64, "{}", x);
        }
    }

    #[test]
    fn rounding_halves_and_edges() {
        for x in [
            0.0,
            0.5,
            1.5,
            2.5,
            0.49999999999999994,
            4503599627370495.5,
            9007199254740993.0,
            1e19,
            1e20,
            -0.5,
            -3.7,
        ] {
            assert_eq!(super::segments::round(x), x.round() as u64, "{x}");
        }
    }

    #[test]
    fn flags_take_zero_or_one_and_integers_whole_numbers() {
        let with = |cc: &str, key: &str, value: f64| {
            let mut spec = CcSpec::named(cc);
            spec.params.insert(key.into(), value);
            spec.validate().map(|_| ()).map_err(|e| e.to_string())
        };
        assert!(with("cubic", "hystart", 0.0).is_ok());
        assert!(with("cubic", "hystart", 1.0).is_ok());
        assert_eq!(
            with("cubic", "hystart", 0.5).unwrap_err(),
            "cubic parameter 'hystart' = 0.5: a flag is true or false (1 or 0)"
        );
        assert!(with("scalable", "ai_cnt", 50.0).is_ok());
        assert_eq!(
            with("scalable", "ai_cnt", 50.5).unwrap_err(),
            "scalable parameter 'ai_cnt' = 50.5: it takes a whole number"
        );
        assert!(
            with("cubic", "beta", 0.55).is_ok(),
            "a real takes a fraction"
        );
        // Every flag and integer reads back as the type its control asks for.
        let mut spec = CcSpec::named("yeah");
        spec.params.insert("ns3".into(), 1.0);
        spec.params.insert("rho".into(), 7.0);
        let entry = spec.validate().unwrap();
        let params = Params {
            entry,
            values: &spec.params,
        };
        assert!(params.flag("ns3"));
        assert_eq!(params.integer("rho"), 7);
        assert_eq!(params.integer("delta"), 3, "the default");
    }

    #[test]
    fn every_flag_defaults_to_zero_or_one_and_every_integer_to_a_whole_number() {
        for entry in super::super::REGISTRY {
            for p in entry.params {
                match p.kind {
                    ParamKind::Flag => assert!(p.default == 0.0 || p.default == 1.0),
                    ParamKind::Integer => assert_eq!(p.default.fract(), 0.0),
                    ParamKind::Real => {}
                }
            }
        }
    }

    #[test]
    fn unknown_names_and_parameters_are_refused_with_the_known_ones() {
        let err = CcSpec::named("warp").build(1460).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("unknown TCP congestion control 'warp' (known: newreno"));
        let mut spec = CcSpec::named("reno");
        spec.params.insert("beta".into(), 0.5);
        assert_eq!(
            spec.validate().unwrap_err().to_string(),
            "newreno has no parameter 'beta' (it takes none)"
        );
    }
}

/// Window arithmetic for the controls that keep their window in (fractional) segments.
pub(crate) mod segments {
    /// `(cwnd, ssthresh)` in segments from the sender's initial values in bytes: at least one
    /// segment of window and two of threshold (RFC 5681 §3.1).
    pub(crate) fn initial(initial_cwnd: u64, initial_ssthresh: u64, mss: u64) -> (f64, f64) {
        let mss = mss.max(1) as f64;
        (
            (initial_cwnd as f64 / mss).max(1.0),
            (initial_ssthresh as f64 / mss).max(2.0),
        )
    }

    /// `segments` in bytes, rounded; an infinite threshold is `u64::MAX`.
    pub(crate) fn bytes(segments: f64, mss: u64) -> u64 {
        if segments.is_finite() {
            round(segments * mss as f64)
        } else {
            u64::MAX
        }
    }

    /// `x.round() as u64` (half away from zero; negative values give 0) without the library
    /// call `round` is on x86-64 before SSE4.1: the senders ask for the window several times per
    /// ACK. `x - t` is exact: below 2^53 it is the fraction, above it every f64 is a whole number.
    #[inline]
    pub(crate) fn round(x: f64) -> u64 {
        let t = x as u64;
        if x - t as f64 >= 0.5 {
            // Saturates as the cast does, from 2^64 on.
            t.saturating_add(1)
        } else {
            t
        }
    }

    /// Bytes acknowledged, in segments.
    pub(crate) fn acked(bytes: u64, mss: u64) -> f64 {
        bytes as f64 / mss.max(1) as f64
    }
}

/// Linux `tcp_cong_avoid_ai`: the window grows by one segment per `per` segments acknowledged,
/// the bytes acknowledged in between carried over.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AdditiveIncrease {
    /// Bytes acknowledged since the last increase.
    acked: u64,
}

impl AdditiveIncrease {
    /// Count `acked_bytes` and grow `cwnd` (bytes) by one `mss` per `per` segments they complete.
    pub(crate) fn grow(&mut self, cwnd: &mut u64, acked_bytes: u64, per: u64, mss: u64) {
        let per = per.max(1) * mss;
        self.acked += acked_bytes;
        if self.acked >= per {
            let segments = self.acked / per;
            self.acked -= segments * per;
            *cwnd += segments * mss;
        }
    }

    /// Forget the carried-over bytes (after a reduction).
    pub(crate) fn reset(&mut self) {
        self.acked = 0;
    }
}

/// Drivers for the controls' unit tests: ACK clocks without a network.
#[cfg(test)]
pub(crate) mod testkit {
    use super::*;

    /// An ACK of `acked_bytes` at time zero, without an RTT sample.
    pub(crate) fn ack_bytes(acked_bytes: u64) -> AckSample {
        AckSample {
            now: Time::ZERO,
            acked_bytes,
            rtt: None,
            srtt: Duration::ZERO,
            min_rtt: Duration::ZERO,
            in_flight: 0,
        }
    }

    /// An ACK of `segments` segments of `mss` bytes at `now`, with RTT sample `rtt`.
    pub(crate) fn ack(now: Time, mss: u64, segments: u64, rtt: Duration) -> AckSample {
        AckSample {
            now,
            acked_bytes: segments * mss,
            rtt: Some(rtt),
            srtt: rtt,
            min_rtt: rtt,
            in_flight: 0,
        }
    }

    /// Run `rounds` round trips of length `rtt` from `start`: each round acknowledges the whole
    /// window one segment per ACK, spread over the round, then calls `on_round`. Returns the time
    /// at the end and the window (segments) after each round.
    pub(crate) fn run_rounds(
        cc: &mut dyn CongestionControl,
        mss: u64,
        start: Time,
        rounds: u32,
        rtt: Duration,
    ) -> (Time, Vec<f64>) {
        let mut now = start;
        let mut windows = Vec::new();
        for _ in 0..rounds {
            let acks = (cc.cwnd() / mss).max(1);
            let step = rtt / acks;
            for _ in 0..acks {
                now += step;
                cc.on_ack(&ack(now, mss, 1, rtt));
            }
            cc.on_round(&RoundSample {
                now,
                duration: rtt,
                acked_bytes: acks * mss,
                min_rtt: Some(rtt),
                max_rtt: Some(rtt),
                rtt_samples: acks as u32,
                base_rtt: rtt,
                srtt: rtt,
            });
            windows.push(cc.cwnd() as f64 / mss as f64);
        }
        (now, windows)
    }
}
