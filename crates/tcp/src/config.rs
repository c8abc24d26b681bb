//! TCP parameters shared by sender and receiver.

use qstp_proto::Duration;

/// How the sender paces its sending during fast recovery. In every one, with SACK, only an ACK
/// that SACKs data not SACKed before is a duplicate ACK (RFC 6675 §2); without SACK, RFC 5681
/// §2's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recovery {
    /// RFC 6675: cwnd drops to ssthresh at once and the sender sends whenever pipe < cwnd (a
    /// burst once pipe falls below it).
    #[default]
    Rfc6675,
    /// RFC 6937 Proportional Rate Reduction (with its slow-start reduction bound): sending in
    /// recovery follows the data delivered, so the window reaches ssthresh smoothly (ns-3's and
    /// Linux's default).
    Prr,
    /// PRR as ns-3 3.44 computes it (tcp-prr-recovery.cc `DoRecovery`, and the calls in
    /// tcp-socket-base.cc), bugs included, for comparisons with ns-3: `prr_delivered x ssthresh`
    /// in 32-bit unsigned arithmetic, which wraps above 4 GiB (so with windows of a few hundred
    /// segments the proportional part sends almost nothing; ns-3 issue #1282, fixed after 3.44);
    /// one segment counted delivered per ACK with new SACK information on top of what it SACKed
    /// (issue #1350); RecoverFS the pipe, not FlightSize (issue #1351); a partial ACK with new
    /// SACK information counted twice; below ssthresh PRR-CRB, one segment more only when the ACK
    /// covers a retransmission, nothing when more was sent than delivered (unsigned wrap). With
    /// SACK, a partial ACK does not mark
    /// the head lost; unless the head is a retransmission it sends one segment whatever the
    /// window, the first one deemed lost or else new data (`ProcessAck` -> `DoRetransmit`).
    /// Entering recovery resends the head even if it was resent before (`EnterRecovery`). With
    /// SACK, a cumulative ACK that SACKs new data counts as a duplicate too and does not reset
    /// the count; none counts in a timeout's loss state (`DupAck`).
    /// With it come ns-3's socket rules around every control
    /// ([`super::CongestionControl::ns3_socket`]): the control reduces from the pipe
    /// (`BytesInFlight()`), not FlightSize, on a fast retransmit and a timeout, and the ACK that
    /// ends a timeout's loss state hands it only the segments above the recovery point.
    #[serde(rename = "prr-ns3")]
    PrrNs3,
    /// ns-2.35's TCP/Linux (tcp-linux.cc:448-507 and :607-660, Linux 2.6's rate halving
    /// simplified): entering recovery, the window drops to the control's `min_cwnd` (ssthresh / 2
    /// for the modules that use `tcp_reno_min_cwnd`, else ssthresh) and a ceiling starts at the
    /// old window; each ACK lowers the ceiling to the pipe plus one segment, each segment sent
    /// to the pipe less one, so one segment goes out per two ACKs until the pipe reaches the
    /// window. Leaving recovery, a window below ssthresh becomes min(ssthresh, pipe + 3
    /// segments) (`tcp_moderate_cwnd`) and slow start takes it back to ssthresh. Its
    /// retransmission timer restarts on every ACK while data is outstanding, duplicates
    /// included (`renew_timer` in `time_processing`, tcp-linux.cc:168 and :226), where Linux
    /// restarts it on ACKs of new data and on resending the first unacknowledged segment.
    #[serde(rename = "rate-halving")]
    RateHalving,
}

/// Which segment of a cumulative ACK gives the RTT estimator (RFC 6298) its sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RttSample {
    /// The last segment it acknowledges, if none of them was sent twice (Karn).
    #[default]
    Newest,
    /// The first segment it acknowledges, if that one was sent only once: ns-3 3.44
    /// (tcp-socket-base.cc `EstimateRtt`, `m_history.front()`), so with delayed ACKs the sample
    /// includes the wait for the second segment.
    Oldest,
    /// One segment timed at a time, as ns-2.35's TCP agents do without timestamps (tcp.cc:780-786,
    /// tcp-linux.cc:210-222): a new segment sent while none is timed starts the clock, the
    /// cumulative ACK that covers it gives the sample, and a timeout stops the timing (tcp.cc:972;
    /// a fast retransmission does not). About one sample per round trip, so RTTVAR shrinks less
    /// than with a sample per ACK.
    Timed,
}

/// Which RTT sample a congestion control gets on an ACK (its per-ACK sample, beside the RTO
/// estimator's [`RttSample`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CcRttSample {
    /// The newest segment the ACK newly acknowledges, cumulatively or by SACK, if that one was
    /// sent only once (RFC 6298 §3, Karn): a SACK-only ACK gives one too.
    #[default]
    Karn,
    /// As ns-2.35's TCP/Linux hands it to a module's `pkts_acked` (tcp-linux.cc:374-382): only
    /// an ACK that advances the cumulative ACK gives one, from the latest transmission of the
    /// highest segment it acknowledges (the agent's `tss` table), unless the ACK covers a
    /// retransmitted segment no SACK had covered or SACKs a retransmitted one (its scoreboard
    /// calls the ACK unsure, scoreboard1.cc:89, :199). A segment resent and then SACKed does not
    /// stop the sample of the ACK that later covers it.
    Ns2,
}

impl CcRttSample {
    fn is_karn(&self) -> bool {
        *self == CcRttSample::Karn
    }
}

impl RttSample {
    fn is_newest(&self) -> bool {
        *self == RttSample::Newest
    }
}

/// How the retransmission timeout follows the RTT samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RtoRule {
    /// RFC 6298 §2: RTO = max(SRTT + 4 RTTVAR, min_rto).
    #[default]
    Rfc6298,
    /// Linux (net/ipv4/tcp_input.c `tcp_rtt_estimator`, `__tcp_set_rto`): RTO = SRTT + RTTVAR,
    /// where RTTVAR is the largest mean deviation (x4) of the last round trip but never below
    /// min_rto, so the floor applies to the variance term rather than to the whole.
    Linux,
}

impl RtoRule {
    fn is_rfc6298(&self) -> bool {
        *self == RtoRule::Rfc6298
    }
}

/// Parameters of one TCP connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpConfig {
    /// Maximum segment size: payload bytes per full segment.
    pub mss: u32,
    /// Header bytes added to every segment on the wire (IP and TCP, 40).
    pub header_bytes: u32,
    /// Initial window, segments (RFC 5681 §3.1 allows up to 4 for small segments).
    pub initial_window: u32,
    /// The receiver's buffer, bytes: the window it advertises.
    pub receive_window: u64,
    /// Whether the receiver delays ACKs (RFC 5681 §4.2).
    pub delayed_ack: bool,
    /// Whether the receiver sends SACK blocks (RFC 2018); without them the sender recovers by
    /// NewReno partial ACKs alone (RFC 6582).
    pub sack: bool,
    /// How sending is paced during fast recovery.
    pub recovery: Recovery,
    /// Longest an ACK is delayed (RFC 5681 §4.2: at most 500 ms; 200 ms is usual).
    pub delayed_ack_timeout: Duration,
    /// Lower bound of the retransmission timeout (RFC 6298 §2.4: 1 s; simulations often 200 ms).
    pub min_rto: Duration,
    /// Upper bound of the retransmission timeout (RFC 6298 §2.5: at least 60 s).
    pub max_rto: Duration,
    /// Retransmission timeout before any RTT sample (RFC 6298 §2.1: 1 s).
    pub initial_rto: Duration,
    /// Whether the connection opens with a SYN / SYN-ACK exchange before any data (RFC 9293
    /// §3.5), whose round trip is the first RTT sample, as ns-3 and Linux measure it.
    pub handshake: bool,
    /// Whether the first segment is ns-2.35's header-only "SYN" (`Agent/TCP set syn_ true`,
    /// tcp.cc:699-705): sent with the first window and taking one of its segments, not waited
    /// for; its ACK is an ordinary one, an RTT sample for the estimator and the control and one
    /// segment acknowledged. Ignored with [`TcpConfig::handshake`].
    pub ns2_syn: bool,
    /// Which segment of a cumulative ACK gives the RTT estimator its sample.
    pub rtt_sample: RttSample,
    /// Which RTT sample the congestion control gets on an ACK.
    pub cc_rtt_sample: CcRttSample,
    /// How the RTO follows the RTT samples.
    pub rto: RtoRule,
    /// Whether a retransmission is deemed lost again once data sent after it is SACKed (Linux
    /// tcp_mark_lost_retrans, as ns-2's TCP/Linux), instead of waiting for the timer (RFC 6675).
    pub lost_retransmit: bool,
    /// Whether the SACK scoreboard is cleared when a fast recovery or a timeout's loss state
    /// ends, as ns-2.35's TCP/Linux clears its own (tcp-linux.cc:460-462, scoreboard1.cc
    /// ClearScoreBoard): what SACK blocks said of the data above `recover` is forgotten and
    /// learned again from later ACKs, so segments the receiver already holds may be deemed lost
    /// and sent again. RFC 6675 keeps the scoreboard.
    pub ns2_clear_scoreboard: bool,
    /// ECN (RFC 3168 §6.1): data sent ECT(0), CE echoed as ECE, the window reduced on ECE.
    pub ecn: bool,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1460,
            header_bytes: 40,
            initial_window: 2,
            receive_window: 1 << 20,
            delayed_ack: false,
            sack: true,
            recovery: Recovery::Rfc6675,
            delayed_ack_timeout: Duration::from_millis(200),
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            initial_rto: Duration::from_secs(1),
            handshake: false,
            ns2_syn: false,
            rtt_sample: RttSample::Newest,
            cc_rtt_sample: CcRttSample::Karn,
            rto: RtoRule::Rfc6298,
            lost_retransmit: false,
            ns2_clear_scoreboard: false,
            ecn: false,
        }
    }
}

/// The per-group TCP settings a scenario chooses; the rest of [`TcpConfig`] follows the RFCs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TcpOptions {
    /// Initial window, segments.
    pub initial_window: u32,
    /// Whether the receiver delays ACKs (RFC 5681 §4.2: every second segment, 200 ms timer).
    pub delayed_ack: bool,
    /// Lower bound of the retransmission timeout.
    pub min_rto: Duration,
    /// Whether the receiver sends SACK blocks (RFC 2018).
    pub sack: bool,
    /// The receiver's window, bytes.
    pub receive_window: u64,
    /// Sending during fast recovery.
    pub recovery: Recovery,
    /// Whether the connection opens with a SYN / SYN-ACK exchange (off: data from the start).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub handshake: bool,
    /// Whether the first segment is ns-2.35's header-only "SYN", sent with the first window.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ns2_syn: bool,
    /// Which segment of a cumulative ACK gives the RTT estimator its sample.
    #[serde(default, skip_serializing_if = "RttSample::is_newest")]
    pub rtt_sample: RttSample,
    /// Which RTT sample the congestion control gets on an ACK.
    #[serde(default, skip_serializing_if = "CcRttSample::is_karn")]
    pub cc_rtt_sample: CcRttSample,
    /// How the RTO follows the RTT samples.
    #[serde(default, skip_serializing_if = "RtoRule::is_rfc6298")]
    pub rto: RtoRule,
    /// Whether lost retransmissions are detected from SACKs (Linux) rather than by the timer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lost_retransmit: bool,
    /// Whether the SACK scoreboard is cleared when a recovery ends, as ns-2.35's TCP/Linux does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ns2_clear_scoreboard: bool,
    /// Whether the flow uses ECN (RFC 3168).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
}

impl Default for TcpOptions {
    fn default() -> Self {
        TcpOptions {
            initial_window: TcpConfig::default().initial_window,
            delayed_ack: false,
            // The papers' testbeds and simulations bound the RTO below at 200 ms (ns-2's
            // default), not RFC 6298's 1 s.
            min_rto: Duration::from_millis(200),
            sack: true,
            // Unlimited: a receive buffer that never caps the window (Linux autotuning).
            receive_window: u64::MAX,
            recovery: Recovery::Rfc6675,
            handshake: false,
            ns2_syn: false,
            rtt_sample: RttSample::Newest,
            cc_rtt_sample: CcRttSample::Karn,
            rto: RtoRule::Rfc6298,
            lost_retransmit: false,
            ns2_clear_scoreboard: false,
            ecn: false,
        }
    }
}

impl TcpOptions {
    /// The full configuration for segments of `mss` bytes.
    pub fn config(&self, mss: u32) -> TcpConfig {
        let defaults = TcpConfig::default();
        TcpConfig {
            mss,
            initial_window: self.initial_window,
            delayed_ack: self.delayed_ack,
            min_rto: self.min_rto,
            // RFC 6298 §2.1 sets the initial RTO to 1 s; a larger floor raises it with it.
            initial_rto: defaults.initial_rto.max(self.min_rto),
            max_rto: defaults.max_rto.max(self.min_rto),
            sack: self.sack,
            receive_window: self.receive_window,
            recovery: self.recovery,
            handshake: self.handshake,
            ns2_syn: self.ns2_syn,
            rtt_sample: self.rtt_sample,
            cc_rtt_sample: self.cc_rtt_sample,
            rto: self.rto,
            lost_retransmit: self.lost_retransmit,
            ns2_clear_scoreboard: self.ns2_clear_scoreboard,
            ecn: self.ecn,
            ..defaults
        }
    }
}

impl TcpOptions {
    /// Check the options for segments of `mss` payload bytes: the single home of these rules
    /// (the simulator and the lab both call it).
    pub fn validate(&self, mss: u32) -> Result<(), TcpConfigError> {
        if self.initial_window > MAX_INITIAL_WINDOW {
            return Err(TcpConfigError::InitialWindowTooLarge(self.initial_window));
        }
        // RFC 6298 §2.5: a maximum may be placed on RTO provided it is at least 60 s; a floor
        // above that ceiling would leave no room for backing off.
        let ceiling = TcpConfig::default().max_rto;
        if self.min_rto > ceiling {
            return Err(TcpConfigError::MinRtoTooLarge(self.min_rto, ceiling));
        }
        self.config(mss).validate()
    }
}

/// Why a TCP configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TcpConfigError {
    /// A segment must carry at least one byte.
    #[error("mss must be at least 1 byte")]
    ZeroMss,
    /// The initial window must hold at least one segment.
    #[error("initial_window must be at least 1 segment")]
    ZeroInitialWindow,
    /// The receive window must hold at least one full segment.
    #[error("receive_window ({window} bytes) is smaller than one segment ({mss} bytes)")]
    WindowBelowMss {
        /// The receive window.
        window: u64,
        /// The segment size.
        mss: u32,
    },
    /// The RTO bounds are inverted or zero.
    #[error("need 0 < min_rto <= initial_rto <= max_rto")]
    BadRtoBounds,
    /// An initial window above [`MAX_INITIAL_WINDOW`].
    #[error("initial_window {0} is more than {MAX_INITIAL_WINDOW} segments")]
    InitialWindowTooLarge(u32),
    /// A floor of the retransmission timeout above its ceiling.
    #[error("min_rto {0} is above the {1} ceiling of the retransmission timeout")]
    MinRtoTooLarge(Duration, Duration),
}

/// Most segments an initial window may hold: a bound on the first burst.
pub const MAX_INITIAL_WINDOW: u32 = 100_000;

impl TcpConfigError {
    /// The key of a scenario's `tcp` table the error is about (`packet_size`, a key of the
    /// scenario's top level, for a segment that cannot carry a byte).
    pub fn field(&self) -> &'static str {
        match self {
            TcpConfigError::ZeroMss => "packet_size",
            TcpConfigError::ZeroInitialWindow | TcpConfigError::InitialWindowTooLarge(_) => {
                "initial_window"
            }
            TcpConfigError::WindowBelowMss { .. } => "window",
            TcpConfigError::BadRtoBounds | TcpConfigError::MinRtoTooLarge(..) => "min_rto",
        }
    }
}

impl TcpConfig {
    /// Check the parameters make a working connection.
    pub fn validate(&self) -> Result<(), TcpConfigError> {
        if self.mss == 0 {
            return Err(TcpConfigError::ZeroMss);
        }
        if self.initial_window == 0 {
            return Err(TcpConfigError::ZeroInitialWindow);
        }
        if self.receive_window < self.mss as u64 {
            return Err(TcpConfigError::WindowBelowMss {
                window: self.receive_window,
                mss: self.mss,
            });
        }
        if self.min_rto.is_zero()
            || self.min_rto > self.initial_rto
            || self.initial_rto > self.max_rto
        {
            return Err(TcpConfigError::BadRtoBounds);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_follows_the_rfcs() {
        let c = TcpConfig::default();
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.initial_rto, Duration::from_secs(1));
        assert_eq!(c.min_rto, Duration::from_secs(1));
        assert_eq!(c.initial_window, 2);
    }

    #[test]
    fn refuses_unworkable_configurations() {
        let bad = |f: fn(&mut TcpConfig)| {
            let mut c = TcpConfig::default();
            f(&mut c);
            c.validate()
        };
        assert_eq!(bad(|c| c.mss = 0), Err(TcpConfigError::ZeroMss));
        assert_eq!(
            bad(|c| c.initial_window = 0),
            Err(TcpConfigError::ZeroInitialWindow)
        );
        assert_eq!(
            bad(|c| c.receive_window = 100),
            Err(TcpConfigError::WindowBelowMss {
                window: 100,
                mss: 1460
            })
        );
        assert_eq!(
            bad(|c| c.min_rto = Duration::from_secs(5)),
            Err(TcpConfigError::BadRtoBounds)
        );
    }

    #[test]
    fn options_are_checked_against_the_segment_size() {
        let o = TcpOptions::default();
        assert_eq!(o.validate(1460), Ok(()));
        let o = TcpOptions {
            receive_window: 1000,
            ..TcpOptions::default()
        };
        assert_eq!(o.validate(1460).unwrap_err().field(), "window");
        let o = TcpOptions {
            initial_window: MAX_INITIAL_WINDOW + 1,
            ..TcpOptions::default()
        };
        assert_eq!(o.validate(1460).unwrap_err().field(), "initial_window");
        let o = TcpOptions {
            min_rto: Duration::from_secs(61),
            ..TcpOptions::default()
        };
        assert_eq!(o.validate(1460).unwrap_err().field(), "min_rto");
        assert_eq!(
            TcpOptions::default().validate(0),
            Err(TcpConfigError::ZeroMss)
        );
    }
}
