//! The composition of micro-protocols and the limits of one connection, validated in one place.
//!
//! QSTP is `gtfrc + sack-full + ordered` (QSTP paper §4); "TFRC/SACK" is `tfrc + sack-full +
//! ordered`; plain `tfrc` is a DCCP-like `tfrc + none + unordered` message service.

use crate::protection::Protection;
use crate::rate::Rate;
use crate::time::Duration;
use crate::wire::{ErrorControl, Order, RateControl, MAX_DATAGRAM, MIN_DATAGRAM};
use core::fmt;
use core::str::FromStr;

/// How gTFRC combines its target g with TFRC's limits outside slow start.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GtfrcRule {
    /// X = min(max(X_calc, g), 2 X_recv): g lifts the equation rate but never the receive-rate
    /// cap, which guards against a wrong g or an under-provisioned network (QSTP paper eq. (2),
    /// §4.3.2). The default.
    #[default]
    Qstp,
    /// gTFRC paper Fig. 1: X = g whenever the equation rate X_calc is not above g, whatever the
    /// receiver reports; above g, TFRC's own X = min(X_calc, 2 X_recv). Used by the lab's
    /// scenarios of the gTFRC paper.
    Fig1,
}

impl GtfrcRule {
    /// Every rule, for help texts.
    pub const ALL: [GtfrcRule; 2] = [GtfrcRule::Qstp, GtfrcRule::Fig1];

    /// The rule's name as written in configs.
    pub fn name(self) -> &'static str {
        match self {
            GtfrcRule::Qstp => "qstp",
            GtfrcRule::Fig1 => "fig1",
        }
    }
}

impl FromStr for GtfrcRule {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        GtfrcRule::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| ConfigError::Invalid {
                key: "gtfrc_rule",
                reason: format!("unknown rule '{s}' (use qstp or fig1)"),
            })
    }
}

/// Which TFRC specification the sender follows. Local to the sender, so the wire does not carry
/// it: the feedback format is the same, and the receiver's rules are those of both RFCs (RFC 3448
/// §5, §6 and RFC 5348 §5, §6 agree on loss detection, loss events, the average loss interval and
/// feedback timing). They differ only in the receive rate that seeds the first loss interval (RFC
/// 3448 §6.3.1: the last round trip's; RFC 5348 §6.3.1: the largest so far), where the receiver
/// takes the larger of the last round trip's and the last reported, the same while slow start
/// still raises the rate at each report.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TfrcVersion {
    /// RFC 5348 (2008): initial window W_init / R, X_recv_set, data-limited rules. The default.
    #[default]
    Rfc5348,
    /// RFC 3448 (2003), which the QSTP and gTFRC papers cite: one packet per second until the
    /// first feedback, X = max(min(X_calc, 2 X_recv), s/t_mbi) from the last report alone, and
    /// the nofeedback timer halving X_recv.
    Rfc3448,
}

impl TfrcVersion {
    /// Every version, for help texts.
    pub const ALL: [TfrcVersion; 2] = [TfrcVersion::Rfc5348, TfrcVersion::Rfc3448];

    /// The version's name as written in configs.
    pub fn name(self) -> &'static str {
        match self {
            TfrcVersion::Rfc5348 => "rfc5348",
            TfrcVersion::Rfc3448 => "rfc3448",
        }
    }
}

impl FromStr for TfrcVersion {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        TfrcVersion::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| ConfigError::Invalid {
                key: "tfrc",
                reason: format!("unknown TFRC version '{s}' (use rfc5348 or rfc3448)"),
            })
    }
}

/// The sender's rate control: the controller the hello negotiates ([`RateControl`]) together
/// with the settings that stay local to the sender, in a shape that holds no setting its
/// controller does not read (a gTFRC rule only beside a target, a TFRC version only for TFRC).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Congestion {
    /// Send at a fixed rate, whatever the network says (for tests and calibration only).
    Fixed {
        /// The constant sending rate.
        rate: Rate,
    },
    /// TFRC (RFC 5348, or RFC 3448 by `version`).
    Tfrc {
        /// Which TFRC specification the sender follows.
        version: TfrcVersion,
        /// RFC 5348 §4.5's oscillation prevention ([`Congestion::oscillation_prevention`]).
        #[cfg_attr(feature = "serde", serde(default))]
        oscillation_prevention: bool,
    },
    /// gTFRC: TFRC with the negotiated rate as its floor (QSTP paper §4.3.2).
    Gtfrc {
        /// The negotiated rate g; zero makes it plain TFRC.
        target: Rate,
        /// How the floor combines with TFRC's limits.
        rule: GtfrcRule,
        /// Which TFRC specification it builds on.
        version: TfrcVersion,
        /// RFC 5348 §4.5, as for [`Congestion::Tfrc`].
        #[cfg_attr(feature = "serde", serde(default))]
        oscillation_prevention: bool,
    },
    /// A TCP-like additive-increase multiplicative-decrease rate controller, for comparison.
    Aimd,
}

impl Congestion {
    /// gTFRC with target `target`, the QSTP rule and RFC 5348.
    pub const fn gtfrc(target: Rate) -> Congestion {
        Congestion::Gtfrc {
            target,
            rule: GtfrcRule::Qstp,
            version: TfrcVersion::Rfc5348,
            oscillation_prevention: false,
        }
    }

    /// Plain TFRC after RFC 5348.
    pub const TFRC: Congestion = Congestion::Tfrc {
        version: TfrcVersion::Rfc5348,
        oscillation_prevention: false,
    };

    /// What the hello carries: the controller, without the sender's local settings.
    pub fn negotiated(&self) -> RateControl {
        match *self {
            Congestion::Fixed { rate } => RateControl::Fixed { rate },
            Congestion::Tfrc { .. } => RateControl::Tfrc,
            Congestion::Gtfrc { target, .. } => RateControl::Gtfrc { target },
            Congestion::Aimd => RateControl::Aimd,
        }
    }

    /// The target rate g this controller guarantees, zero if none.
    pub fn target(&self) -> Rate {
        self.negotiated().target()
    }

    /// The TFRC version of a TFRC or gTFRC controller.
    pub fn tfrc_version(&self) -> Option<TfrcVersion> {
        match *self {
            Congestion::Tfrc { version, .. } | Congestion::Gtfrc { version, .. } => Some(version),
            _ => None,
        }
    }

    /// Whether a TFRC or gTFRC sender paces with RFC 5348 §4.5's oscillation prevention: the
    /// inter-packet interval scaled by sqrt(R_sample) / R_sqmean, so that the rate falls as the
    /// queue (and the RTT) grows within a feedback interval. Off by default, as in the RFC; ns-2's
    /// TFRC agent has it on (`ca_`), which the gTFRC paper's simulations ran.
    pub fn oscillation_prevention(&self) -> bool {
        match *self {
            Congestion::Tfrc {
                oscillation_prevention,
                ..
            }
            | Congestion::Gtfrc {
                oscillation_prevention,
                ..
            } => oscillation_prevention,
            _ => false,
        }
    }

    /// The controller `negotiated` names (a peer's hello), keeping this side's local settings
    /// where they still apply and the defaults elsewhere.
    pub fn adopt(&self, negotiated: RateControl) -> Congestion {
        let version = self.tfrc_version().unwrap_or_default();
        let oscillation_prevention = self.oscillation_prevention();
        let rule = match *self {
            Congestion::Gtfrc { rule, .. } => rule,
            _ => GtfrcRule::default(),
        };
        match negotiated {
            RateControl::Fixed { rate } => Congestion::Fixed { rate },
            RateControl::Tfrc => Congestion::Tfrc {
                version,
                oscillation_prevention,
            },
            RateControl::Gtfrc { target } => Congestion::Gtfrc {
                target,
                rule,
                version,
                oscillation_prevention,
            },
            RateControl::Aimd => Congestion::Aimd,
        }
    }
}

impl From<RateControl> for Congestion {
    /// The controller with the default local settings (the QSTP rule, RFC 5348).
    fn from(negotiated: RateControl) -> Congestion {
        Congestion::TFRC.adopt(negotiated)
    }
}

/// The named compositions.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// gTFRC + SACK (full reliability) + ordered: QSTP.
    Qstp,
    /// TFRC + SACK (full reliability) + ordered.
    TfrcSack,
    /// TFRC + no error control + unordered messages (DCCP-like).
    Tfrc,
}

impl Preset {
    /// Every preset, for help texts.
    pub const ALL: [Preset; 3] = [Preset::Qstp, Preset::TfrcSack, Preset::Tfrc];

    /// The preset's name as written in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Qstp => "qstp",
            Preset::TfrcSack => "tfrc-sack",
            Preset::Tfrc => "tfrc",
        }
    }
}

impl FromStr for Preset {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| ConfigError::UnknownPreset(s.to_string()))
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything that shapes one connection. Build it with a preset, adjust fields, then
/// [`Config::validate`] (the endpoint validates again before use).
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Congestion control: the negotiated controller and its local settings.
    pub congestion: Congestion,
    /// Error control.
    pub error: ErrorControl,
    /// Delivery order.
    pub order: Order,
    /// Largest datagram the connection emits, headers included (TFRC's segment size s is this):
    /// with `pmtu_discovery`, the ceiling of the search.
    pub max_datagram: usize,
    /// Path MTU discovery (RFC 8899): data packets start at 1200 bytes (RFC 9000 §14) and grow up
    /// to `max_datagram` as padded probes confirm the path carries them; a datagram the local
    /// network refuses (EMSGSIZE) fails a probe. Off, every data packet may be `max_datagram` bytes
    /// from the start, as in the papers' simulations; `qstp send` and `recv` turn it on. Local to
    /// the sender.
    #[cfg_attr(feature = "serde", serde(default))]
    pub pmtu_discovery: bool,
    /// Bytes the application may have written but not yet acknowledged by the peer.
    pub send_buffer: usize,
    /// Bytes received but not yet read by the application; advertised to the peer as its window.
    pub recv_buffer: usize,
    /// RTT assumed before the first measurement.
    pub initial_rtt: Duration,
    /// The retransmission timeout never goes below this (RFC 6298 §2.4: 1 s).
    pub min_rto: Duration,
    /// The connection closes after this long without hearing from the peer.
    pub idle_timeout: Duration,
    /// With data in flight, a peer that answers nothing for this many probe timeouts (RFC 9002
    /// §6.2: SRTT + 4 RTTVAR + the feedback interval), at least a second in all, while packets
    /// went out in as many distinct round trips, is declared gone long before the idle timeout
    /// (`CloseReason::PeerUnresponsive`); zero turns the check off.
    ///
    /// On a live path losing `p` of the packets each way, a round trip with one packet goes
    /// unanswered with probability about `1 - (1 - p)^2`, so each silence ends the connection with
    /// probability about that to the power of this count: at the default of 8, 3e-4 at 20% loss
    /// each way, 5e-3 at 30%. Raise it on paths that lose more.
    #[cfg_attr(feature = "serde", serde(default = "default_peer_silence_ptos"))]
    pub peer_silence_ptos: u32,
    /// A connection attempt fails after this long without an answer.
    pub handshake_timeout: Duration,
    /// Most datagrams the pacer lets out back to back at high rates (a burst stays small at low
    /// rates: see the pacing module).
    pub max_burst: u32,
    /// A cap on the sending rate: the pacer never goes faster, whatever the congestion control
    /// allows (iperf3's `-b`); `None` for no cap. Never below a gTFRC target. Local to the sender.
    pub max_rate: Option<Rate>,
    /// Packet protection: authenticated encryption by default; [`Protection::Null`] for the
    /// simulator and tests only. The client's choice, carried by its hello.
    pub protection: Protection,
    /// Leave a packet number unused now and then, so that a receiver acknowledging what it never
    /// received is caught (RFC 9000 §21.4). On by default; the simulator turns it off, as the
    /// papers' protocols numbered every packet.
    pub skip_packet_numbers: bool,
    /// Distrust the receiver's reports (RFC 5348 §9): on a byte stream the sender also computes
    /// the loss event rate from the SACK ranges, rates by the smaller of the two (so skipped
    /// packet numbers go unannounced) and closes the connection when the receiver keeps reporting
    /// far less loss than its acknowledgements show; on every composition the reported receive
    /// rate is capped at 1.25 times what was acknowledged in the last RTT. On by default; the
    /// simulator turns it off, as the papers' TFRC believed its receiver.
    pub check_receiver: bool,
}

impl Config {
    /// The configuration of a preset; `target` is the gTFRC floor g for [`Preset::Qstp`] and ignored
    /// by the others.
    pub fn preset(preset: Preset, target: Rate) -> Config {
        let (congestion, error, order) = match preset {
            Preset::Qstp => (
                Congestion::gtfrc(target),
                ErrorControl::SackFull,
                Order::Ordered,
            ),
            Preset::TfrcSack => (Congestion::TFRC, ErrorControl::SackFull, Order::Ordered),
            Preset::Tfrc => (Congestion::TFRC, ErrorControl::None, Order::Unordered),
        };
        Config {
            congestion,
            error,
            order,
            ..Config::default()
        }
    }

    /// QSTP with target rate `target`.
    pub fn qstp(target: Rate) -> Config {
        Config::preset(Preset::Qstp, target)
    }

    /// The TFRC segment size s in bytes (RFC 5348 §3.1): the largest datagram.
    pub fn segment_size(&self) -> usize {
        self.max_datagram
    }

    /// Bytes packet protection adds to each data, feedback and close packet.
    pub fn packet_overhead(&self) -> usize {
        match self.protection {
            Protection::Aead => crate::protection::OVERHEAD,
            Protection::Null => 0,
        }
    }

    /// Payload bytes one data packet carries at most: a datagram less the largest data header and
    /// the protection overhead.
    pub(crate) fn payload_per_packet(&self) -> usize {
        self.max_datagram
            .saturating_sub(crate::wire::MAX_DATA_HEADER + self.packet_overhead())
            .max(1)
    }

    /// Whether the ordered byte-stream API (`write`/`read`) is available: it needs full
    /// reliability and ordered delivery.
    pub fn supports_stream(&self) -> bool {
        self.error == ErrorControl::SackFull && self.order == Order::Ordered
    }

    /// Check every field; the first problem found is returned.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(MIN_DATAGRAM..=MAX_DATAGRAM).contains(&self.max_datagram) {
            return Err(ConfigError::Invalid {
                key: "max_datagram",
                reason: format!(
                    "{} is outside {MIN_DATAGRAM}..={MAX_DATAGRAM} bytes",
                    self.max_datagram
                ),
            });
        }
        if self.send_buffer < self.max_datagram {
            return Err(ConfigError::Invalid {
                key: "send_buffer",
                reason: format!(
                    "{} bytes is less than one datagram ({})",
                    self.send_buffer, self.max_datagram
                ),
            });
        }
        if self.recv_buffer < self.max_datagram {
            return Err(ConfigError::Invalid {
                key: "recv_buffer",
                reason: format!(
                    "{} bytes is less than one datagram ({})",
                    self.recv_buffer, self.max_datagram
                ),
            });
        }
        if self.send_buffer > MAX_BUFFER || self.recv_buffer > MAX_BUFFER {
            return Err(ConfigError::Invalid {
                key: "send_buffer/recv_buffer",
                reason: format!("buffers are limited to {MAX_BUFFER} bytes"),
            });
        }
        if self.initial_rtt.is_zero() {
            return Err(ConfigError::Invalid {
                key: "initial_rtt",
                reason: "must be positive".into(),
            });
        }
        if self.min_rto.is_zero() {
            return Err(ConfigError::Invalid {
                key: "min_rto",
                reason: "must be positive".into(),
            });
        }
        if self.idle_timeout.is_zero() {
            return Err(ConfigError::Invalid {
                key: "idle_timeout",
                reason: "must be positive".into(),
            });
        }
        if self.handshake_timeout.is_zero() {
            return Err(ConfigError::Invalid {
                key: "handshake_timeout",
                reason: "must be positive".into(),
            });
        }
        if let Some(cap) = self.max_rate {
            if cap.is_zero() {
                return Err(ConfigError::Invalid {
                    key: "max_rate",
                    reason: "must be positive".into(),
                });
            }
            if cap < self.congestion.target() {
                return Err(ConfigError::Invalid {
                    key: "max_rate",
                    reason: format!(
                        "{cap:?} is below the target rate {:?}: the floor cannot be met",
                        self.congestion.target()
                    ),
                });
            }
        }
        if self.max_burst == 0 {
            return Err(ConfigError::Invalid {
                key: "max_burst",
                reason: "must be at least 1".into(),
            });
        }
        if let Congestion::Fixed { rate } = self.congestion {
            if rate.is_zero() {
                return Err(ConfigError::Invalid {
                    key: "congestion.rate",
                    reason: "a fixed rate must be positive".into(),
                });
            }
        }
        if let ErrorControl::SackPartial {
            deadline,
            max_retransmissions,
        } = self.error
        {
            if deadline.is_none() && max_retransmissions.is_none() {
                return Err(ConfigError::Invalid {
                    key: "error",
                    reason: "partial reliability needs a deadline or a retransmission limit".into(),
                });
            }
            if deadline == Some(Duration::ZERO) {
                return Err(ConfigError::Invalid {
                    key: "error.deadline",
                    reason: "must be positive".into(),
                });
            }
        }
        Ok(())
    }
}

/// Probe timeouts of silence, with data in flight, after which a peer is declared gone.
pub const DEFAULT_PEER_SILENCE_PTOS: u32 = 8;

#[cfg(feature = "serde")]
fn default_peer_silence_ptos() -> u32 {
    DEFAULT_PEER_SILENCE_PTOS
}

/// Largest send or receive buffer, per connection.
pub const MAX_BUFFER: usize = 1 << 30;

impl Default for Config {
    /// QSTP with no target (so plain TFRC + SACK + ordered) and 1500-byte datagrams.
    fn default() -> Self {
        Config {
            congestion: Congestion::gtfrc(Rate::ZERO),
            error: ErrorControl::SackFull,
            order: Order::Ordered,
            max_datagram: 1500,
            pmtu_discovery: false,
            send_buffer: 4 << 20,
            recv_buffer: 4 << 20,
            // RFC 5348 §4.2 leaves the initial RTT to the implementation; 100 ms is a common choice.
            initial_rtt: Duration::from_millis(100),
            // RFC 6298 §2.4: RTO SHOULD be rounded up to 1 second.
            min_rto: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(30),
            peer_silence_ptos: DEFAULT_PEER_SILENCE_PTOS,
            handshake_timeout: Duration::from_secs(10),
            max_burst: 16,
            max_rate: None,
            protection: Protection::Aead,
            skip_packet_numbers: true,
            check_receiver: true,
        }
    }
}

/// A configuration that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A preset name that does not exist.
    #[error("unknown profile '{0}' (use qstp, tfrc-sack or tfrc)")]
    UnknownPreset(String),
    /// A field with a value that cannot work.
    #[error("invalid {key}: {reason}")]
    Invalid {
        /// The field.
        key: &'static str,
        /// Why.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_compose_as_the_design_says() {
        let q = Config::qstp(Rate::from_kbps(500));
        assert_eq!(q.congestion, Congestion::gtfrc(Rate::from_kbps(500)));
        assert_eq!(
            q.congestion.negotiated(),
            RateControl::Gtfrc {
                target: Rate::from_kbps(500)
            }
        );
        assert_eq!(q.error, ErrorControl::SackFull);
        assert!(q.supports_stream());
        let t = Config::preset(Preset::Tfrc, Rate::ZERO);
        assert_eq!((t.error, t.order), (ErrorControl::None, Order::Unordered));
        assert!(!t.supports_stream());
        for p in Preset::ALL {
            assert_eq!(p.name().parse::<Preset>().unwrap(), p);
            Config::preset(p, Rate::ZERO).validate().unwrap();
        }
        assert!(matches!(
            "quic".parse::<Preset>(),
            Err(ConfigError::UnknownPreset(_))
        ));
    }

    #[test]
    fn a_peer_s_controller_keeps_the_local_settings_that_still_apply() {
        let g = Rate::from_kbps(800);
        let local = Congestion::Gtfrc {
            target: Rate::ZERO,
            rule: GtfrcRule::Fig1,
            version: TfrcVersion::Rfc3448,
            oscillation_prevention: false,
        };
        // The hello names the controller and its target; rule and version stay this side's.
        assert_eq!(
            local.adopt(RateControl::Gtfrc { target: g }),
            Congestion::Gtfrc {
                target: g,
                rule: GtfrcRule::Fig1,
                version: TfrcVersion::Rfc3448,
                oscillation_prevention: false,
            }
        );
        assert_eq!(
            local.adopt(RateControl::Tfrc),
            Congestion::Tfrc {
                version: TfrcVersion::Rfc3448,
                oscillation_prevention: false,
            }
        );
        assert_eq!(local.adopt(RateControl::Aimd), Congestion::Aimd);
        assert_eq!(local.adopt(RateControl::Aimd).tfrc_version(), None);
        // From a plain TFRC side, a gTFRC hello gets the default rule.
        let tfrc = Congestion::Tfrc {
            version: TfrcVersion::Rfc3448,
            oscillation_prevention: false,
        };
        assert_eq!(
            tfrc.adopt(RateControl::Gtfrc { target: g }),
            Congestion::Gtfrc {
                target: g,
                rule: GtfrcRule::Qstp,
                version: TfrcVersion::Rfc3448,
                oscillation_prevention: false,
            }
        );
        for c in [Congestion::gtfrc(g), Congestion::TFRC, Congestion::Aimd] {
            assert_eq!(Congestion::from(c.negotiated()), c);
        }
    }

    #[test]
    fn tfrc_versions_parse_and_default_to_rfc5348() {
        assert_eq!(
            Config::default().congestion.tfrc_version(),
            Some(TfrcVersion::Rfc5348)
        );
        for v in TfrcVersion::ALL {
            assert_eq!(v.name().parse::<TfrcVersion>().unwrap(), v);
        }
        assert!(matches!(
            "rfc2581".parse::<TfrcVersion>(),
            Err(ConfigError::Invalid { key: "tfrc", .. })
        ));
    }

    #[test]
    fn validation_names_the_field() {
        let c = Config {
            max_datagram: 10,
            ..Config::default()
        };
        assert!(matches!(
            c.validate(),
            Err(ConfigError::Invalid {
                key: "max_datagram",
                ..
            })
        ));
        let c = Config {
            error: ErrorControl::SackPartial {
                deadline: None,
                max_retransmissions: None,
            },
            ..Config::default()
        };
        assert!(matches!(
            c.validate(),
            Err(ConfigError::Invalid { key: "error", .. })
        ));
        let c = Config {
            recv_buffer: 100,
            ..Config::default()
        };
        assert!(matches!(
            c.validate(),
            Err(ConfigError::Invalid {
                key: "recv_buffer",
                ..
            })
        ));
    }
}
