//! Traffic sources: what a group's flows run, and the registry of them.
//!
//! A kind of source is one file of this module: its spec (serde, so it travels as JSON with the
//! `kind` a scenario's `protocol` key names), the reader of its keys in the group's table
//! (through a [`ParamTable`], with the name the scenario used, the group's target and packet size
//! as context), its rules, its label and how its packets look on a wire. The registry
//! [`Protocol`] is one line per kind; the list of names for `--help` and errors, the reader that
//! dispatches on the name, serde and dispatch to the kind's [`Source`] follow from it. A kind
//! names the agents of its flows by family ([`FlowAgents`]); the top-level `source` module makes
//! them, so a new kind over the existing families needs nothing there.

mod cbr;
mod onoff;
mod qstp;
mod tcp;

pub use cbr::CbrSpec;
pub use onoff::OnOffSpec;
pub use qstp::QstpSpec;
pub use tcp::TcpSpec;

use super::GroupSpec;
use crate::error::SimError;
use qstp_dataplane::headers::UDP_IP_HEADER;
use qstp_dataplane::params::{ParamResult, ParamTable};
use qstp_proto::{Duration, Rate};

/// Fastest rate a UDP source may be scheduled at (a guard against schedules that would emit a
/// packet every nanosecond).
pub const MAX_SOURCE_RATE: Rate = Rate::from_mbps(100_000);

/// What a source's reader knows beside the group's table.
#[derive(Debug, Clone, Copy)]
pub struct ReadContext<'a> {
    /// The name the scenario gave (`protocol = "tfrc-sack"`): one of the kind's
    /// [`SourceKind::NAMES`].
    pub name: &'a str,
    /// The group's target rate, for its whole aggregate.
    pub target: Option<Rate>,
    /// How many flows the group has.
    pub flows: u32,
    /// The size of the group's data packets on the wire, bytes.
    pub packet_size: usize,
}

impl ReadContext<'_> {
    /// Each flow's share of the group's target.
    pub fn target_per_flow(&self) -> Option<Rate> {
        self.target
            .map(|t| Rate::from_bps(t.bps() / u64::from(self.flows.max(1))))
    }
}

/// What a source's rules see: its group, with the keys to name at fault.
#[derive(Debug, Clone)]
pub struct CheckContext<'a> {
    /// The group.
    pub group: &'a GroupSpec,
    /// The size of the group's data packets on the wire, bytes.
    pub packet_size: usize,
    /// The key that set that size (the group's own `packet_size`, or the scenario's).
    pub size_key: String,
}

impl CheckContext<'_> {
    /// The key of the group's `field`.
    pub fn key(&self, field: &str) -> String {
        format!("groups[{}].{field}", self.group.name)
    }

    /// A refusal of the value at `key`.
    pub fn invalid(&self, key: &str, reason: impl Into<String>) -> SimError {
        SimError::Invalid {
            key: key.to_string(),
            reason: reason.into(),
        }
    }

    /// The rule of every UDP source: a packet larger than its IP and UDP headers.
    pub fn check_udp_size(&self) -> Result<(), SimError> {
        if self.packet_size <= UDP_IP_HEADER as usize {
            return Err(self.invalid(
                &self.size_key,
                format!("UDP needs more than {UDP_IP_HEADER} bytes of headers"),
            ));
        }
        Ok(())
    }
}

/// How a source's packets look on a wire (for packet captures): the receiver's port and the IP
/// protocol number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wire {
    /// The receiver's port.
    pub port: u16,
    /// The IP protocol number (6 TCP, 17 UDP).
    pub ip_protocol: u8,
}

impl Wire {
    /// UDP to `port`.
    pub const fn udp(port: u16) -> Wire {
        Wire {
            port,
            ip_protocol: 17,
        }
    }
    /// TCP to `port`.
    pub const fn tcp(port: u16) -> Wire {
        Wire {
            port,
            ip_protocol: 6,
        }
    }
}

/// What every kind of source declares for the registry.
pub trait SourceKind: Sized {
    /// The names a scenario's `protocol` key gives it (several presets may share one kind).
    const NAMES: &'static [&'static str];
    /// One line for `--help`: what it is, its source, and its keys.
    const DOC: &'static str;
    /// Read the kind's keys from the group's table `t`.
    fn read(t: &mut dyn ParamTable, cx: &ReadContext) -> ParamResult<Self>;
}

/// What a kind of source's spec says of itself: its label, its rules, its wire and the agents
/// its flows run.
pub trait Source: std::fmt::Debug {
    /// Its name in reports (`tcp/cubic`, `tfrc-sack`, `cbr`).
    fn label(&self) -> String;
    /// Check the description against its group: the single home of the kind's rules.
    fn validate(&self, cx: &CheckContext) -> Result<(), SimError>;
    /// How its packets look on a wire.
    fn wire(&self) -> Wire;
    /// The agents each of its flows runs at its two ends.
    fn agents(&self) -> FlowAgents<'_>;
}

/// The two agents of a flow, by the family the simulator makes them from (the top-level
/// `source` module, one arm per family). A new source over these families is one file of this
/// module and its registry line; a new family of agents is simulator code.
#[derive(Debug, Clone, Copy)]
pub enum FlowAgents<'a> {
    /// A saturated sender of the TCP model with this control and these options (switching on
    /// and off when its group says so), and its sink.
    Tcp {
        /// Its congestion control.
        congestion: &'a qstp_tcp::CcSpec,
        /// Its TCP settings.
        options: &'a qstp_tcp::TcpOptions,
    },
    /// A qstp-proto client with this composition, saturated by its application, and its server.
    Qstp {
        /// Its composition.
        config: &'a qstp_proto::Config,
        /// The rate its application writes messages at (`None`: saturated).
        message_rate: Option<Rate>,
    },
    /// A UDP source following `schedule` (`(from, rate)` steps), sending only during
    /// exponential on periods of these means `(on, off)` when `on_off` is given, and a sink.
    Udp {
        /// Its rate steps.
        schedule: &'a [(Duration, Rate)],
        /// Mean on and off periods.
        on_off: Option<(Duration, Duration)>,
    },
}

/// Declare the registry of sources. See the module documentation.
macro_rules! sources {
    ($($var:ident($ty:ty)),+ $(,)?) => {
        /// What a group's flows run, as a scenario's `protocol` key names it: the registry of
        /// sources. A new source is a file of this module (its spec implementing
        /// [`SourceKind`] and [`Source`]) and one line here, and its agents in the top-level
        /// `source` module. Serde tags it by `kind`, the variant's name in lower case.
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind", rename_all = "lowercase")]
        #[non_exhaustive]
        pub enum Protocol {
            $(
                #[doc = concat!("[`", stringify!($ty), "`]")]
                $var($ty),
            )+
        }

        impl Protocol {
            /// Every kind, as `(its names, one line of documentation)`, in registry order.
            pub const KINDS: &'static [(&'static [&'static str], &'static str)] =
                &[$((<$ty as SourceKind>::NAMES, <$ty as SourceKind>::DOC)),+];

            /// This spec's own behaviour.
            pub fn get(&self) -> &dyn Source {
                match self {
                    $(Self::$var(spec) => spec,)+
                }
            }

            /// Read the source that `cx.name` names from the group's table.
            pub fn read(t: &mut dyn ParamTable, cx: &ReadContext) -> ParamResult<Self> {
                $(
                    if <$ty as SourceKind>::NAMES.contains(&cx.name) {
                        return <$ty as SourceKind>::read(t, cx).map(Self::$var);
                    }
                )+
                Err(t.error(
                    "protocol",
                    &format!("'{}' is not a protocol (use {})", cx.name, names().join(", ")),
                ))
            }
        }

        $(
            impl From<$ty> for Protocol {
                fn from(spec: $ty) -> Self {
                    Protocol::$var(spec)
                }
            }
        )+
    };
}

sources! {
    Tcp(TcpSpec),
    Qstp(QstpSpec),
    Cbr(CbrSpec),
    OnOff(OnOffSpec),
}

/// Every name the `protocol` key takes, in registry order.
pub fn names() -> Vec<&'static str> {
    Protocol::KINDS
        .iter()
        .flat_map(|(names, _)| names.iter().copied())
        .collect()
}

/// A rate schedule: `rate = "300k"`, or `schedule = [["0s", "300k"], ["60s", "1000k"], ...]`.
pub(crate) fn read_schedule(t: &mut dyn ParamTable) -> ParamResult<Vec<(Duration, Rate)>> {
    let single = t.opt_rate("rate")?;
    let steps = t.opt_steps("schedule")?;
    match (single, steps) {
        (Some(_), Some(_)) => Err(t.error("schedule", "give either rate or schedule, not both")),
        (None, None) => Err(t.error("schedule", "missing (give rate = \"300k\" or a schedule)")),
        (Some(r), None) => Ok(vec![(Duration::ZERO, r)]),
        (None, Some(steps)) => Ok(steps),
    }
}

/// A rate schedule's rules: not empty, starting at zero, strictly increasing step times.
pub(crate) fn check_schedule(
    schedule: &[(Duration, Rate)],
    cx: &CheckContext,
) -> Result<(), SimError> {
    let key = cx.key("schedule");
    match schedule.first() {
        None => return Err(cx.invalid(&key, "needs at least one (from, rate) step")),
        Some((from, _)) if !from.is_zero() => {
            return Err(cx.invalid(&key, "the first step must start at 0s"))
        }
        _ => {}
    }
    if schedule.windows(2).any(|w| w[0].0 >= w[1].0) {
        return Err(cx.invalid(&key, "steps must be in increasing order of time"));
    }
    if schedule.iter().any(|(_, rate)| *rate > MAX_SOURCE_RATE) {
        return Err(cx.invalid(
            &key,
            format!("rates above {MAX_SOURCE_RATE} are not supported"),
        ));
    }
    Ok(())
}
