//! One `[[group]]` of a scenario: its flows, path, profile and what they run.
//!
//! Protocol names map to compositions: `qstp` is `Config::qstp(g)` (gTFRC + SACK + ordered),
//! `tfrc-sack` and `tfrc` are the presets of the same names, `gtfrc` is gTFRC with no error control
//! and unordered delivery (the setting of the gTFRC paper's ns-2 runs). When a group of several
//! flows has a target, each flow's floor g is `target / flows`: the target is the aggregate's.

use super::fields::{duration, rate, FieldResult, Fields};
use qstp_proto::{Config, CongestionControl, Duration, ErrorControl, Order, Preset, Rate};
use qstp_sim::{GroupSpec, Protocol};
use toml::Value;

/// Most flows in one group: a bound on the simulator's state.
const MAX_FLOWS: u64 = 10_000;
/// Receiver window of TCP flows when the file gives none: large enough (256 KiB) not to limit a
/// 1 Mbit/s path even at 640 ms RTT; the papers do not give one.
const DEFAULT_TCP_WINDOW: u64 = 256 * 1024;
/// Mean on and off periods of on/off sources when the file gives none.
const DEFAULT_ON_OFF: Duration = Duration::from_secs(1);

/// The protocol names a group may use.
pub const PROTOCOLS: [&str; 7] = ["tcp", "tfrc", "tfrc-sack", "gtfrc", "qstp", "cbr", "onoff"];

/// Read one group; `packet_size` becomes the datagram size of qstp-proto flows.
pub(crate) fn group(mut f: Fields, packet_size: usize) -> FieldResult<GroupSpec> {
    let name = f.str("name")?;
    if name.is_empty() || name.contains('.') {
        return Err(f.error("name", "a group name must be non-empty and contain no '.'"));
    }
    let flows = f.opt_u64("flows")?.unwrap_or(1);
    if flows == 0 || flows > MAX_FLOWS {
        return Err(f.error("flows", format!("{flows} is outside 1..={MAX_FLOWS}")));
    }
    let rtt = f.duration("rtt")?;
    if rtt.is_zero() {
        return Err(f.error("rtt", "must be positive"));
    }
    let target = f.opt_rate("target")?;
    let marker = f
        .opt_table("marker")?
        .map(super::network::marker)
        .transpose()?;
    let start = f.opt_duration("start")?.unwrap_or(Duration::ZERO);
    let protocol = protocol(&mut f, target, flows as u32, packet_size)?;
    f.finish()?;
    Ok(GroupSpec {
        name,
        protocol,
        flows: flows as u32,
        rtt,
        target,
        marker,
        start,
    })
}

/// The protocol of a group and its options.
fn protocol(
    f: &mut Fields,
    target: Option<Rate>,
    flows: u32,
    packet_size: usize,
) -> FieldResult<Protocol> {
    let name = f.str("protocol")?;
    let per_flow = target.map(|t| Rate::from_bps(t.bps() / flows as u64));
    let needs_target = |f: &Fields| {
        per_flow.ok_or_else(|| {
            f.error(
                "target",
                format!("protocol '{name}' needs a target rate (its floor g)"),
            )
        })
    };
    let config = |mut config: Config| {
        config.max_datagram = packet_size;
        config
    };
    Ok(match name.as_str() {
        "tcp" => Protocol::Tcp {
            congestion: f.opt_str("congestion")?.unwrap_or_else(|| "newreno".into()),
            delayed_ack: f.opt_bool("delayed_ack")?.unwrap_or(false),
            receive_window: match f.opt_u64("window")? {
                Some(0) => return Err(f.error("window", "must be positive")),
                Some(w) => w,
                None => DEFAULT_TCP_WINDOW,
            },
        },
        "tfrc" => Protocol::Qstp {
            name,
            config: config(Config::preset(Preset::Tfrc, Rate::ZERO)),
        },
        "tfrc-sack" => Protocol::Qstp {
            name,
            config: config(Config::preset(Preset::TfrcSack, Rate::ZERO)),
        },
        "qstp" => {
            let g = needs_target(f)?;
            Protocol::Qstp {
                name,
                config: config(Config::qstp(g)),
            }
        }
        "gtfrc" => {
            // gTFRC paper §4: ns-2 TFRC agents, so no repair and no ordering.
            let g = needs_target(f)?;
            let mut c = config(Config::qstp(g));
            c.congestion = CongestionControl::Gtfrc { target: g };
            c.error = ErrorControl::None;
            c.order = Order::Unordered;
            Protocol::Qstp { name, config: c }
        }
        "cbr" => Protocol::Cbr {
            schedule: schedule(f)?,
        },
        "onoff" => {
            let schedule = schedule(f)?;
            let mean_on = f.opt_duration("mean_on")?.unwrap_or(DEFAULT_ON_OFF);
            let mean_off = f.opt_duration("mean_off")?.unwrap_or(DEFAULT_ON_OFF);
            if mean_on.is_zero() {
                return Err(f.error("mean_on", "must be positive"));
            }
            Protocol::OnOff {
                schedule,
                mean_on,
                mean_off,
            }
        }
        other => {
            return Err(f.error(
                "protocol",
                format!("'{other}' is not a protocol (use {})", PROTOCOLS.join(", ")),
            ));
        }
    })
}

/// A rate schedule: `rate = "300k"`, or `schedule = [["0s", "300k"], ["60s", "1000k"], ...]`.
fn schedule(f: &mut Fields) -> FieldResult<Vec<(Duration, Rate)>> {
    let single = f.opt_rate("rate")?;
    let steps = f.opt_array("schedule")?;
    match (single, steps) {
        (Some(_), Some(_)) => Err(f.error("schedule", "give either rate or schedule, not both")),
        (None, None) => Err(f.error("schedule", "missing (give rate = \"300k\" or a schedule)")),
        (Some(r), None) => Ok(vec![(Duration::ZERO, r)]),
        (None, Some(items)) => {
            let mut out: Vec<(Duration, Rate)> = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let bad = |reason: String| f.error("schedule", format!("step {i}: {reason}"));
                let Value::Array(pair) = item else {
                    return Err(bad("expected [\"from\", \"rate\"]".into()));
                };
                if pair.len() != 2 {
                    return Err(bad("expected [\"from\", \"rate\"]".into()));
                }
                let from = duration(&pair[0]).map_err(bad)?;
                let r = rate(&pair[1]).map_err(bad)?;
                if i == 0 && !from.is_zero() {
                    return Err(bad("the first step must start at 0s".into()));
                }
                if out.last().is_some_and(|&(prev, _)| prev >= from) {
                    return Err(bad("steps must be in increasing time order".into()));
                }
                out.push((from, r));
            }
            if out.is_empty() {
                return Err(f.error("schedule", "needs at least one step"));
            }
            Ok(out)
        }
    }
}

/// The protocol name a group's spec was built from (for reports).
pub fn protocol_name(protocol: &Protocol) -> &str {
    match protocol {
        Protocol::Tcp { .. } => "tcp",
        Protocol::Qstp { name, .. } => name,
        Protocol::Cbr { .. } => "cbr",
        Protocol::OnOff { .. } => "onoff",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> FieldResult<GroupSpec> {
        group(
            Fields::new("group.X", text.parse::<toml::Table>().unwrap()),
            1500,
        )
    }

    #[test]
    fn each_flow_of_an_aggregate_gets_its_share_of_the_target() {
        let g = read(
            "name = \"CD\"\nprotocol = \"qstp\"\nflows = 4\nrtt = \"30ms\"\ntarget = \"400k\"",
        )
        .unwrap();
        let Protocol::Qstp { config, .. } = g.protocol else {
            panic!()
        };
        assert_eq!(
            config.congestion,
            CongestionControl::Gtfrc {
                target: Rate::from_kbps(100)
            }
        );
        assert_eq!(config.max_datagram, 1500);
        assert_eq!(g.target, Some(Rate::from_kbps(400)));
    }

    #[test]
    fn gtfrc_is_the_gtfrc_papers_setting() {
        let g =
            read("name = \"A\"\nprotocol = \"gtfrc\"\nrtt = \"640ms\"\ntarget = \"800k\"").unwrap();
        let Protocol::Qstp { config, name } = g.protocol else {
            panic!()
        };
        assert_eq!(name, "gtfrc");
        assert_eq!(
            (config.error, config.order),
            (ErrorControl::None, Order::Unordered)
        );
        assert_eq!(config.congestion.target(), Rate::from_kbps(800));
        let err = read("name = \"A\"\nprotocol = \"qstp\"\nrtt = \"640ms\"").unwrap_err();
        assert_eq!(err.key, "group.X.target");
    }

    #[test]
    fn reads_tcp_options_and_cbr_schedules() {
        let g = read(
            "name = \"T\"\nprotocol = \"tcp\"\nrtt = \"40ms\"\ndelayed_ack = true\nwindow = 20000",
        )
        .unwrap();
        assert_eq!(
            g.protocol,
            Protocol::Tcp {
                congestion: "newreno".into(),
                delayed_ack: true,
                receive_window: 20_000
            }
        );
        let g = read(
            "name = \"U\"\nprotocol = \"cbr\"\nrtt = \"30ms\"\nschedule = [[\"0s\", \"300k\"], [\"60s\", \"1000k\"], [\"120s\", \"300k\"]]",
        )
        .unwrap();
        let Protocol::Cbr { schedule } = g.protocol else {
            panic!()
        };
        assert_eq!(
            schedule[1],
            (Duration::from_secs(60), Rate::from_kbps(1000))
        );
        let err = read(
            "name = \"U\"\nprotocol = \"cbr\"\nrtt = \"30ms\"\nschedule = [[\"10s\", \"300k\"]]",
        )
        .unwrap_err();
        assert!(err.reason.contains("start at 0s"));
    }

    #[test]
    fn unknown_protocols_and_keys_are_refused() {
        assert_eq!(
            read("name = \"A\"\nprotocol = \"quic\"\nrtt = \"1s\"")
                .unwrap_err()
                .key,
            "group.X.protocol"
        );
        let err = read("name = \"A\"\nprotocol = \"tcp\"\nrtt = \"1s\"\ncolour = 1").unwrap_err();
        assert!(err.unknown);
        assert_eq!(err.key, "group.X.colour");
    }
}
