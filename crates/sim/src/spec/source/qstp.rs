//! `protocol = "qstp" | "tfrc-sack" | "tfrc" | "gtfrc"`: a qstp-proto connection, saturated by
//! its application, with the composition the name stands for.
//!
//! `qstp` is `Config::qstp(g)` (gTFRC + SACK + ordered); `tfrc-sack` and `tfrc` are the presets
//! of the same names; `gtfrc` is gTFRC with no error control and unordered delivery (the setting
//! of the gTFRC paper's ns-2 runs). When a group of several flows has a target, each flow's floor
//! g is `target / flows`: the target is the aggregate's.

use super::{CheckContext, FlowAgents, ReadContext, Source, SourceKind, Wire};
use crate::error::SimError;
use qstp_dataplane::headers::UDP_IP_HEADER;
use qstp_dataplane::params::{ParamResult, ParamTable};
use qstp_proto::config::GtfrcRule;
use qstp_proto::wire::MIN_DATAGRAM;
use qstp_proto::{Config, Congestion, ErrorControl, Order, Preset, Rate, TfrcVersion};

/// A qstp-proto connection with this composition, saturated by its application (it always has
/// data to send).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QstpSpec {
    /// The name the scenario used, for reports.
    pub name: String,
    /// The composition and limits.
    pub config: Config,
    /// For a composition that carries messages: the rate at which the application writes them,
    /// one a datagram (a video-like flow); `None`: it keeps the send buffer full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_rate: Option<Rate>,
}

impl SourceKind for QstpSpec {
    const NAMES: &'static [&'static str] = &["tfrc", "tfrc-sack", "gtfrc", "qstp"];
    const DOC: &'static str = "qstp-proto flows: qstp (gTFRC + SACK + ordered, needs target), tfrc-sack, tfrc, gtfrc (the gTFRC paper's agent, needs target); tfrc = \"rfc5348\" | \"rfc3448\", gtfrc_rule = \"qstp\" | \"fig1\" (qstp: qstp, gtfrc: fig1), oscillation_prevention = true (RFC 5348 §4.5; ns-2's TFRC has it); messages instead of a byte stream (qstp, tfrc-sack): order = \"unordered\", deadline = \"150ms\" and/or max_retransmissions = n (partial reliability), message_rate = \"1M\" (the application writes messages at this rate instead of keeping the buffer full)";

    fn read(t: &mut dyn ParamTable, cx: &ReadContext) -> ParamResult<Self> {
        let name = cx.name;
        let needs_target = |t: &dyn ParamTable| {
            cx.target_per_flow().ok_or_else(|| {
                t.error(
                    "target",
                    &format!("protocol '{name}' needs a target rate (its floor g)"),
                )
            })
        };
        let mut config = match name {
            "tfrc" => Config::preset(Preset::Tfrc, Rate::ZERO),
            "tfrc-sack" => Config::preset(Preset::TfrcSack, Rate::ZERO),
            "qstp" => Config::qstp(needs_target(t)?),
            _ => {
                // gTFRC paper §4: ns-2 TFRC agents, so no repair and no ordering.
                let mut c = Config::qstp(needs_target(t)?);
                c.error = ErrorControl::None;
                c.order = Order::Unordered;
                c
            }
        };
        let rule = match config.congestion {
            // A `gtfrc` group is the gTFRC paper's agent, so its rule is the paper's Fig. 1; a
            // `qstp` group is QSTP's, eq. (2).
            Congestion::Gtfrc { .. } if name == "gtfrc" => Some(gtfrc_rule(t, GtfrcRule::Fig1)?),
            Congestion::Gtfrc { .. } => Some(gtfrc_rule(t, GtfrcRule::Qstp)?),
            _ => None,
        };
        let version = tfrc_version(t)?;
        // RFC 5348 §4.5, off by default; ns-2's TFRC agent has it on (`ca_`).
        let oscillation_prevention = t.opt_bool("oscillation_prevention")?.unwrap_or(false);
        config.congestion = match (config.congestion, rule) {
            (Congestion::Gtfrc { target, .. }, Some(rule)) => Congestion::Gtfrc {
                target,
                rule,
                version,
                oscillation_prevention,
            },
            _ => Congestion::Tfrc {
                version,
                oscillation_prevention,
            },
        };
        config.max_datagram = cx.packet_size;
        messages(t, name, &mut config)?;
        let message_rate = t.opt_rate("message_rate")?;
        if let Some(rate) = message_rate {
            if config.supports_stream() {
                return Err(t.error(
                    "message_rate",
                    &format!("'{name}' carries a byte stream here; messages need order = \"unordered\", a deadline or max_retransmissions"),
                ));
            }
            if rate.is_zero() {
                return Err(t.error("message_rate", "must be positive"));
            }
        }
        Ok(QstpSpec {
            name: name.to_string(),
            config,
            message_rate,
        })
    }
}

impl Source for QstpSpec {
    fn label(&self) -> String {
        self.name.clone()
    }

    fn validate(&self, cx: &CheckContext) -> Result<(), SimError> {
        let least = MIN_DATAGRAM + UDP_IP_HEADER as usize;
        if cx.packet_size < least {
            return Err(cx.invalid(
                &cx.size_key,
                format!("qstp needs packets of at least {least} bytes"),
            ));
        }
        Ok(())
    }

    fn wire(&self) -> Wire {
        Wire::udp(4433)
    }

    fn agents(&self) -> FlowAgents<'_> {
        FlowAgents::Qstp {
            config: &self.config,
            message_rate: self.message_rate,
        }
    }
}

/// The QSTP paper's other compositions: `order = "unordered"` (messages delivered as they
/// arrive, still fully reliable), and partial reliability with `deadline = "150ms"` (a message is
/// given up that long after it was written) and/or `max_retransmissions = n` (given up at its
/// (n+1)-th loss); both carry messages, not a byte stream. They need error control (SACK):
/// `qstp` or `tfrc-sack`.
fn messages(t: &mut dyn ParamTable, name: &str, config: &mut Config) -> ParamResult<()> {
    match t.opt_str("order")?.as_deref() {
        None | Some("ordered") => {}
        Some("unordered") => config.order = Order::Unordered,
        Some(other) => {
            return Err(t.error(
                "order",
                &format!("'{other}' is not an order (use ordered or unordered)"),
            ))
        }
    }
    let deadline = t.opt_duration("deadline")?;
    let limit = t.opt_u64("max_retransmissions")?;
    if deadline.is_none() && limit.is_none() {
        return Ok(());
    }
    let key = if deadline.is_some() {
        "deadline"
    } else {
        "max_retransmissions"
    };
    if config.error == ErrorControl::None {
        return Err(t.error(
            key,
            &format!("'{name}' has no error control to limit (use qstp or tfrc-sack)"),
        ));
    }
    if deadline.is_some_and(|d| d.is_zero()) {
        return Err(t.error("deadline", "must be positive"));
    }
    let max_retransmissions = match limit {
        Some(n) => Some(
            u32::try_from(n)
                .map_err(|_| t.error("max_retransmissions", "must be at most 4294967295"))?,
        ),
        None => None,
    };
    // QSTP paper §3: partial reliability is SACK whose repairs stop at a message's deadline or
    // retransmission limit; its messages arrive unordered.
    config.error = ErrorControl::SackPartial {
        deadline,
        max_retransmissions,
    };
    config.order = Order::Unordered;
    Ok(())
}

/// `tfrc = "rfc5348"` (the default) or `"rfc3448"`: which RFC the TFRC sender follows.
fn tfrc_version(t: &mut dyn ParamTable) -> ParamResult<TfrcVersion> {
    match t.opt_str("tfrc")? {
        None => Ok(Default::default()),
        Some(name) => name.parse().map_err(|_| {
            t.error(
                "tfrc",
                &format!("unknown TFRC version '{name}' (use rfc5348 or rfc3448)"),
            )
        }),
    }
}

/// `gtfrc_rule = "qstp"` (QSTP paper eq. (2)) or `"fig1"` (gTFRC paper Fig. 1); `default`
/// without the key.
fn gtfrc_rule(t: &mut dyn ParamTable, default: GtfrcRule) -> ParamResult<GtfrcRule> {
    match t.opt_str("gtfrc_rule")? {
        None => Ok(default),
        Some(name) => name.parse().map_err(|_| {
            t.error(
                "gtfrc_rule",
                &format!("unknown rule '{name}' (use qstp, QSTP paper eq. (2), or fig1, gTFRC paper Fig. 1)"),
            )
        }),
    }
}
