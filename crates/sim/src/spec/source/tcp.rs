//! `protocol = "tcp"`: a saturated TCP bulk transfer, with its congestion control from the
//! registry of controls and its options.

use super::{CheckContext, FlowAgents, ReadContext, Source, SourceKind, Wire};
use crate::error::SimError;
use qstp_dataplane::headers::{tcp_payload, TCP_IP_HEADER};
use qstp_dataplane::params::{NameOrTable, ParamResult, ParamTable};
use qstp_tcp::{CcRttSample, CcSpec, Recovery, RtoRule, RttSample, TcpOptions};

/// A saturated TCP bulk transfer.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TcpSpec {
    /// The congestion control and its parameters.
    pub congestion: CcSpec,
    /// Initial window, delayed ACKs, SACK, RTO floor, receive window.
    pub options: TcpOptions,
}

impl SourceKind for TcpSpec {
    const NAMES: &'static [&'static str] = &["tcp"];
    const DOC: &'static str = "a saturated TCP bulk sender (congestion = \"NAME\" or { name, PARAM = VALUE }, tcp = { .. })";

    fn read(t: &mut dyn ParamTable, _: &ReadContext) -> ParamResult<Self> {
        Ok(TcpSpec {
            congestion: congestion(t)?,
            options: options(t)?,
        })
    }
}

impl Source for TcpSpec {
    fn label(&self) -> String {
        let cc = &self.congestion;
        format!("tcp/{}", cc.canonical_name().unwrap_or(&cc.name))
    }

    fn validate(&self, cx: &CheckContext) -> Result<(), SimError> {
        // Refused before anything runs, with the list of known names.
        self.congestion
            .validate()
            .map_err(|error| SimError::CongestionControl {
                group: cx.group.name.clone(),
                error,
            })?;
        if cx.packet_size <= TCP_IP_HEADER as usize {
            return Err(cx.invalid(
                &cx.size_key,
                format!("TCP needs more than {TCP_IP_HEADER} bytes of headers"),
            ));
        }
        let mss = tcp_payload(cx.packet_size as u64) as u32;
        self.options.validate(mss).map_err(|e| SimError::Component {
            component: cx.key("tcp"),
            error: e.into(),
        })
    }

    fn wire(&self) -> Wire {
        Wire::tcp(5001)
    }

    fn agents(&self) -> FlowAgents<'_> {
        FlowAgents::Tcp {
            congestion: &self.congestion,
            options: &self.options,
        }
    }
}

/// `congestion = "cubic"` or `congestion = { name = "cubic", beta = 0.7, c = 0.4 }`, checked
/// against the registry of controls (names, parameters, ranges) as the file is read.
fn congestion(t: &mut dyn ParamTable) -> ParamResult<CcSpec> {
    let spec = match t.opt_name_or_table("congestion") {
        Ok(None) => CcSpec::named("newreno"),
        Ok(Some(NameOrTable::Name(name))) => CcSpec::named(name),
        Ok(Some(NameOrTable::Table(mut table))) => {
            let mut spec = CcSpec::named(table.str("name")?);
            let entry = qstp_tcp::lookup(&spec.name);
            for key in table.keys() {
                // A flag reads `true`/`false` (or 1/0); every other parameter a number.
                let flag = entry.is_some_and(|e| {
                    e.params
                        .iter()
                        .any(|p| p.name == key && p.kind == qstp_tcp::ParamKind::Flag)
                });
                let value = if flag {
                    table.opt_number_or_flag(&key)?
                } else {
                    table.opt_f64(&key)?
                };
                if let Some(value) = value {
                    spec.params.insert(key, value);
                }
            }
            spec
        }
        Err(mut e) => {
            e.reason = format!(
                "{} (known: {})",
                e.reason,
                qstp_tcp::known_names().join(", ")
            );
            return Err(e);
        }
    };
    spec.validate()
        .map_err(|e| t.error("congestion", &e.to_string()))?;
    Ok(spec)
}

/// The value of the string key `key` among `choices` (`None` if absent); any other string is an
/// error naming `what` it should be and the choices.
fn one_of<T: Copy>(
    t: &mut dyn ParamTable,
    key: &str,
    what: &str,
    choices: &[(&str, T)],
) -> ParamResult<Option<T>> {
    let Some(given) = t.opt_str(key)? else {
        return Ok(None);
    };
    if let Some(&(_, value)) = choices.iter().find(|(name, _)| *name == given) {
        return Ok(Some(value));
    }
    let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
    let (last, rest) = names.split_last().expect("at least one choice");
    let list = if rest.is_empty() {
        last.to_string()
    } else {
        format!("{} or {last}", rest.join(", "))
    };
    Err(t.error(key, &format!("'{given}' is not {what} (use {list})")))
}

/// TCP settings: `tcp = { initial_window, delayed_ack, min_rto, sack, window, recovery,
/// handshake, ns2_syn, rtt_sample, cc_rtt_sample, rto, lost_retransmit, ns2_clear_scoreboard,
/// ecn }`;
/// `delayed_ack`, `window` and `ecn` may also sit in the group itself.
fn options(t: &mut dyn ParamTable) -> ParamResult<TcpOptions> {
    let mut o = TcpOptions::default();
    let mut table = t.opt_table("tcp")?;
    for key in ["delayed_ack", "window", "ecn"] {
        if table.as_ref().is_some_and(|n| n.has(key)) && t.has(key) {
            return Err(t.error(key, &format!("given twice: here and in tcp.{key}")));
        }
    }
    let mut read = |t: &mut dyn ParamTable, nested: bool| -> ParamResult<()> {
        if let Some(v) = t.opt_bool("delayed_ack")? {
            o.delayed_ack = v;
        }
        if let Some(w) = t.opt_u64("window")? {
            o.receive_window = w;
        }
        // RFC 3168: ECT(0) data, ECE echoed, the window reduced on ECE.
        if let Some(v) = t.opt_bool("ecn")? {
            o.ecn = v;
        }
        if nested {
            if let Some(iw) = t.opt_u64("initial_window")? {
                o.initial_window = u32::try_from(iw)
                    .map_err(|_| t.error("initial_window", &format!("{iw} is too large")))?;
            }
            if let Some(rto) = t.opt_duration("min_rto")? {
                o.min_rto = rto;
            }
            if let Some(sack) = t.opt_bool("sack")? {
                o.sack = sack;
            }
            if let Some(handshake) = t.opt_bool("handshake")? {
                o.handshake = handshake;
            }
            if let Some(v) = t.opt_bool("ns2_syn")? {
                if v && o.handshake {
                    return Err(t.error(
                        "ns2_syn",
                        "ns-2's header-only first segment and a handshake exclude each other",
                    ));
                }
                o.ns2_syn = v;
            }
            if let Some(v) = t.opt_bool("lost_retransmit")? {
                o.lost_retransmit = v;
            }
            if let Some(v) = t.opt_bool("ns2_clear_scoreboard")? {
                o.ns2_clear_scoreboard = v;
            }
            if let Some(v) = one_of(
                t,
                "rtt_sample",
                "an RTT sample",
                &[
                    ("newest", RttSample::Newest),
                    ("oldest", RttSample::Oldest),
                    ("timed", RttSample::Timed),
                ],
            )? {
                o.rtt_sample = v;
            }
            if let Some(v) = one_of(
                t,
                "cc_rtt_sample",
                "a control's RTT sample",
                &[("karn", CcRttSample::Karn), ("ns2", CcRttSample::Ns2)],
            )? {
                o.cc_rtt_sample = v;
            }
            if let Some(v) = one_of(
                t,
                "rto",
                "an RTO rule",
                &[("rfc6298", RtoRule::Rfc6298), ("linux", RtoRule::Linux)],
            )? {
                o.rto = v;
            }
            match t.opt_str("recovery")?.as_deref() {
                None => {}
                Some("rfc6675") => o.recovery = Recovery::Rfc6675,
                Some("prr") => o.recovery = Recovery::Prr,
                Some("prr-ns3") => o.recovery = Recovery::PrrNs3,
                Some("rate-halving") => o.recovery = Recovery::RateHalving,
                Some(other) => {
                    return Err(t.error(
                        "recovery",
                        &format!(
                            "'{other}' is not a recovery (use rfc6675, prr, RFC 6937, prr-ns3 or rate-halving)"
                        ),
                    ))
                }
            }
        }
        Ok(())
    };
    read(t, false)?;
    if let Some(n) = table.as_mut() {
        read(n.as_mut(), true)?;
        n.finish()?;
    }
    Ok(o)
}
