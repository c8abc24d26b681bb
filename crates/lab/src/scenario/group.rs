//! One `[[group]]` of a scenario: its flows, path, profile and what they run.
//!
//! Protocol names map to compositions: `qstp` is `Config::qstp(g)` (gTFRC + SACK + ordered),
//! `tfrc-sack` and `tfrc` are the presets of the same names, `gtfrc` is gTFRC with no error control
//! and unordered delivery (the setting of the gTFRC paper's ns-2 runs). When a group of several
//! flows has a target, each flow's floor g is `target / flows`: the target is the aggregate's.

use super::fields::{duration, rate, FieldResult, Fields};
use super::graph::Hosts;
use qstp_proto::config::MAX_DATAGRAM;
use qstp_proto::{Config, Duration, ErrorControl, Order, Preset, Rate, RateControl};
use qstp_sim::tcp::{self, CcSpec, Recovery, TcpOptions};
use qstp_sim::{AccessSpec, GroupSpec, Protocol, Switching};
use toml::Value;

// The rules on these values (flow counts, RTTs, schedules, TCP options, ...) live with the spec
// types in qstp-sim (`qstp_sim::validate`): this module only reads the document, and
// `super::parse` maps what the simulator refuses to the key.

/// Mean on and off periods of on/off sources when the file gives none.
const DEFAULT_ON_OFF: Duration = Duration::from_secs(1);

/// The protocol names a group may use.
pub const PROTOCOLS: [&str; 7] = ["tcp", "tfrc", "tfrc-sack", "gtfrc", "qstp", "cbr", "onoff"];
/// The protocols that run TFRC, and so take the `tfrc` key.
pub const TFRC_PROTOCOLS: [&str; 4] = ["tfrc", "tfrc-sack", "gtfrc", "qstp"];

/// Read one group; `packet_size` (unless the group sets its own) becomes the datagram size of
/// qstp-proto flows. In a file with `[[link]]` tables (`graph`), the group names its hosts
/// (`source`, `sink`) instead of an `rtt` and `access` links.
pub(crate) fn group(
    mut f: Fields,
    packet_size: usize,
    graph: bool,
) -> FieldResult<(GroupSpec, Option<Hosts>)> {
    let name = f.str("name")?;
    if name.is_empty() || name.contains('.') {
        return Err(f.error("name", "a group name must be non-empty and contain no '.'"));
    }
    let flows = f.opt_u64("flows")?.unwrap_or(1);
    let flows =
        u32::try_from(flows).map_err(|_| f.error("flows", format!("{flows} is too large")))?;
    let (rtt, hosts) = if graph {
        for key in ["rtt", "access"] {
            if f.has(key) {
                return Err(f.error(
                    key,
                    "with [[link]] tables, the links' delays and rates make each flow's path",
                ));
            }
        }
        let hosts = Hosts {
            source: f.str("source")?,
            sink: f.str("sink")?,
        };
        (Duration::ZERO, Some(hosts))
    } else {
        for key in ["source", "sink"] {
            if f.has(key) {
                return Err(f.error(
                    key,
                    "hosts are named only in a network of [[link]] tables (this file has a [bottleneck])",
                ));
            }
        }
        (f.duration("rtt")?, None)
    };
    let own_size = f.opt_u64("packet_size")?;
    if let Some(size) = own_size {
        if !(1..=MAX_DATAGRAM as u64).contains(&size) {
            return Err(f.error(
                "packet_size",
                format!("{size} is outside 1..={MAX_DATAGRAM} bytes"),
            ));
        }
    }
    let packet_size = own_size.map_or(packet_size, |s| s as usize);
    let target = f.opt_rate("target")?;
    let marker = f
        .opt_table("marker")?
        .map(super::network::marker)
        .transpose()?;
    let start = f.opt_duration("start")?.unwrap_or(Duration::ZERO);
    let start_spread = f.opt_duration("start_spread")?;
    let access = match f.opt_table("access")? {
        None => None,
        Some(mut a) => {
            let rate = a.rate("rate")?;
            let delay = a.opt_duration("delay")?.unwrap_or(Duration::ZERO);
            a.finish()?;
            Some(AccessSpec { rate, delay })
        }
    };
    let onoff = match f.opt_table("onoff")? {
        None => None,
        Some(mut t) => {
            let switching = Switching {
                on: t.duration("on")?,
                off: t.duration("off")?,
                random: t.opt_bool("random")?.unwrap_or(false),
                flows: t
                    .opt_u64("flows")?
                    .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
            };
            t.finish()?;
            Some(switching)
        }
    };
    let protocol = protocol(&mut f, target, flows, packet_size)?;
    f.finish()?;
    let group = GroupSpec {
        name,
        protocol,
        flows,
        rtt,
        target,
        marker,
        start,
        start_spread,
        access,
        packet_size: own_size.map(|s| s as usize),
        onoff,
    };
    Ok((group, hosts))
}

/// The protocol of a group and its options.
fn protocol(
    f: &mut Fields,
    target: Option<Rate>,
    flows: u32,
    packet_size: usize,
) -> FieldResult<Protocol> {
    let name = f.str("protocol")?;
    let per_flow = target.map(|t| Rate::from_bps(t.bps() / u64::from(flows.max(1))));
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
    if !TFRC_PROTOCOLS.contains(&name.as_str()) && f.has("tfrc") {
        return Err(f.error(
            "tfrc",
            format!(
                "protocol '{name}' does not run TFRC (the key applies to {})",
                TFRC_PROTOCOLS.join(", ")
            ),
        ));
    }
    Ok(match name.as_str() {
        "tcp" => Protocol::Tcp {
            congestion: congestion(f)?,
            options: tcp_options(f)?,
        },
        "tfrc" => {
            let mut c = config(Config::preset(Preset::Tfrc, Rate::ZERO));
            c.tfrc = tfrc_version(f)?;
            Protocol::Qstp { name, config: c }
        }
        "tfrc-sack" => {
            let mut c = config(Config::preset(Preset::TfrcSack, Rate::ZERO));
            c.tfrc = tfrc_version(f)?;
            Protocol::Qstp { name, config: c }
        }
        "qstp" => {
            let g = needs_target(f)?;
            let mut c = config(Config::qstp(g));
            c.gtfrc_rule = gtfrc_rule(f)?;
            c.tfrc = tfrc_version(f)?;
            Protocol::Qstp { name, config: c }
        }
        "gtfrc" => {
            // gTFRC paper §4: ns-2 TFRC agents, so no repair and no ordering.
            let g = needs_target(f)?;
            let mut c = config(Config::qstp(g));
            c.gtfrc_rule = gtfrc_rule(f)?;
            c.tfrc = tfrc_version(f)?;
            c.congestion = RateControl::Gtfrc { target: g };
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

/// `tfrc = "rfc5348"` (the default) or `"rfc3448"`: which RFC the TFRC sender follows.
fn tfrc_version(f: &mut Fields) -> FieldResult<qstp_proto::TfrcVersion> {
    match f.opt_str("tfrc")? {
        None => Ok(Default::default()),
        Some(name) => name.parse().map_err(|_| {
            f.error(
                "tfrc",
                format!("unknown TFRC version '{name}' (use rfc5348 or rfc3448)"),
            )
        }),
    }
}

/// `gtfrc_rule = "qstp"` (QSTP paper eq. (2), the default) or `"fig1"` (gTFRC paper Fig. 1).
fn gtfrc_rule(f: &mut Fields) -> FieldResult<qstp_proto::config::GtfrcRule> {
    match f.opt_str("gtfrc_rule")? {
        None => Ok(Default::default()),
        Some(name) => name.parse().map_err(|_| {
            f.error(
                "gtfrc_rule",
                format!("unknown rule '{name}' (use qstp, QSTP paper eq. (2), or fig1, gTFRC paper Fig. 1)"),
            )
        }),
    }
}

/// `congestion = "cubic"` or `congestion = { name = "cubic", beta = 0.7, c = 0.4 }`, checked
/// against the simulator's registry (names, parameters, ranges) as the file is read.
fn congestion(f: &mut Fields) -> FieldResult<CcSpec> {
    let spec = match f.take("congestion") {
        None => CcSpec::named("newreno"),
        Some(Value::String(name)) => CcSpec::named(name),
        Some(Value::Table(table)) => {
            let mut t = Fields::new(f.key("congestion"), table);
            let name = t.str("name")?;
            let mut spec = CcSpec::named(name);
            let keys: Vec<String> = t.keys();
            for key in keys {
                let value = t.opt_f64(&key)?.expect("key listed above");
                spec.params.insert(key, value);
            }
            spec
        }
        Some(other) => {
            return Err(f.error(
                "congestion",
                format!(
                    "expected a name or a table, found {} (known: {})",
                    other.type_str(),
                    tcp::known_names().join(", ")
                ),
            ))
        }
    };
    spec.validate()
        .map_err(|e| f.error("congestion", e.to_string()))?;
    Ok(spec)
}

/// TCP settings: `tcp = { initial_window, delayed_ack, min_rto, sack, window, recovery }`; `delayed_ack`
/// and `window` may also sit in the group itself (the older spelling).
fn tcp_options(f: &mut Fields) -> FieldResult<TcpOptions> {
    let mut o = TcpOptions::default();
    let mut table = f.opt_table("tcp")?;
    for key in ["delayed_ack", "window"] {
        if table.as_ref().is_some_and(|t| t.has(key)) && f.has(key) {
            return Err(f.error(key, format!("given twice: here and in tcp.{key}")));
        }
    }
    let mut read = |t: &mut Fields, nested: bool| -> FieldResult<()> {
        if let Some(v) = t.opt_bool("delayed_ack")? {
            o.delayed_ack = v;
        }
        if let Some(w) = t.opt_u64("window")? {
            o.receive_window = w;
        }
        if nested {
            if let Some(iw) = t.opt_u64("initial_window")? {
                o.initial_window = u32::try_from(iw)
                    .map_err(|_| t.error("initial_window", format!("{iw} is too large")))?;
            }
            if let Some(rto) = t.opt_duration("min_rto")? {
                o.min_rto = rto;
            }
            if let Some(sack) = t.opt_bool("sack")? {
                o.sack = sack;
            }
            match t.opt_str("recovery")?.as_deref() {
                None => {}
                Some("rfc6675") => o.recovery = Recovery::Rfc6675,
                Some("prr") => o.recovery = Recovery::Prr,
                Some(other) => {
                    return Err(t.error(
                        "recovery",
                        format!("'{other}' is not a recovery (use rfc6675 or prr, RFC 6937)"),
                    ))
                }
            }
        }
        Ok(())
    };
    read(f, false)?;
    if let Some(t) = table.as_mut() {
        read(t, true)?;
    }
    if let Some(t) = table {
        t.finish()?;
    }
    Ok(o)
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
                out.push((from, r));
            }
            Ok(out)
        }
    }
}

/// The protocol name a group's spec was built from, for reports: TCP names its control
/// (`tcp/cubic`).
pub fn protocol_name(protocol: &Protocol) -> String {
    match protocol {
        Protocol::Tcp { congestion, .. } => format!(
            "tcp/{}",
            congestion.canonical_name().unwrap_or(&congestion.name)
        ),
        Protocol::Qstp { name, .. } => name.clone(),
        Protocol::Cbr { .. } => "cbr".into(),
        Protocol::OnOff { .. } => "onoff".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> FieldResult<GroupSpec> {
        group(
            Fields::new("group.X", text.parse::<toml::Table>().unwrap()),
            1500,
            false,
        )
        .map(|(g, _)| g)
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
            RateControl::Gtfrc {
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
                congestion: CcSpec::named("newreno"),
                options: TcpOptions {
                    delayed_ack: true,
                    receive_window: 20_000,
                    ..TcpOptions::default()
                }
            }
        );
        let g = read(
            "name = \"T\"\nprotocol = \"tcp\"\nrtt = \"40ms\"\ncongestion = \"Reno\"\ntcp = { initial_window = 10, delayed_ack = true, min_rto = \"1s\", sack = false }",
        )
        .unwrap();
        let Protocol::Tcp {
            congestion,
            options,
        } = &g.protocol
        else {
            panic!()
        };
        assert_eq!(protocol_name(&g.protocol), "tcp/newreno");
        assert_eq!(congestion.name, "Reno");
        assert_eq!(
            (
                options.initial_window,
                options.delayed_ack,
                options.min_rto,
                options.sack
            ),
            (10, true, Duration::from_secs(1), false)
        );
        assert_eq!(options.receive_window, u64::MAX);
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
        let err = read("name = \"U\"\nprotocol = \"cbr\"\nrtt = \"30ms\"\nschedule = [[\"10s\"]]")
            .unwrap_err();
        assert!(
            err.reason.contains("expected [\"from\", \"rate\"]"),
            "{}",
            err.reason
        );
    }

    #[test]
    fn the_gtfrc_rule_is_chosen_per_group() {
        use qstp_proto::config::GtfrcRule;
        let rule = |extra: &str| {
            let g = read(&format!(
                "name = \"Q\"\nprotocol = \"gtfrc\"\nrtt = \"40ms\"\ntarget = \"200k\"\n{extra}"
            ))?;
            let Protocol::Qstp { config, .. } = g.protocol else {
                panic!()
            };
            Ok::<_, super::super::fields::FieldError>(config.gtfrc_rule)
        };
        assert_eq!(rule("").unwrap(), GtfrcRule::Qstp);
        assert_eq!(rule("gtfrc_rule = \"fig1\"").unwrap(), GtfrcRule::Fig1);
        let err = rule("gtfrc_rule = \"eq3\"").unwrap_err();
        assert_eq!(err.key, "group.X.gtfrc_rule");
    }

    #[test]
    fn the_tfrc_version_is_chosen_per_group_and_refused_where_no_tfrc_runs() {
        use qstp_proto::TfrcVersion;
        let version = |protocol: &str, extra: &str| {
            let g = read(&format!(
                "name = \"Q\"\nprotocol = \"{protocol}\"\nrtt = \"40ms\"\ntarget = \"200k\"\n{extra}"
            ))?;
            let Protocol::Qstp { config, .. } = g.protocol else {
                panic!()
            };
            Ok::<_, super::super::fields::FieldError>(config.tfrc)
        };
        for protocol in TFRC_PROTOCOLS {
            assert_eq!(version(protocol, "").unwrap(), TfrcVersion::Rfc5348);
            assert_eq!(
                version(protocol, "tfrc = \"rfc3448\"").unwrap(),
                TfrcVersion::Rfc3448
            );
        }
        let err = version("qstp", "tfrc = \"rfc793\"").unwrap_err();
        assert_eq!(err.key, "group.X.tfrc");
        assert!(
            err.reason.contains("use rfc5348 or rfc3448"),
            "{}",
            err.reason
        );
        let err = version("qstp", "tfrcc = \"rfc3448\"").unwrap_err();
        assert_eq!(err.reason, "unknown key (did you mean tfrc?)");
        let err = read("name = \"T\"\nprotocol = \"tcp\"\nrtt = \"40ms\"\ntfrc = \"rfc3448\"")
            .unwrap_err();
        assert_eq!(err.key, "group.X.tfrc");
        assert!(err.reason.contains("does not run TFRC"), "{}", err.reason);
        let err = read(
            "name = \"U\"\nprotocol = \"cbr\"\nrtt = \"30ms\"\nrate = \"300k\"\ntfrc = \"rfc3448\"",
        )
        .unwrap_err();
        assert!(err.reason.contains("does not run TFRC"), "{}", err.reason);
    }

    #[test]
    fn congestion_controls_and_tcp_options_are_checked_as_the_file_is_read() {
        let tcp = |extra: &str| {
            read(&format!(
                "name = \"T\"\nprotocol = \"tcp\"\nrtt = \"40ms\"\n{extra}"
            ))
        };
        let err = tcp("congestion = \"warp\"").unwrap_err();
        assert_eq!(err.key, "group.X.congestion");
        assert!(err.reason.contains("known: newreno"), "{}", err.reason);
        let err = tcp("congestion = { name = \"newreno\", beta = 0.5 }").unwrap_err();
        assert_eq!(
            err.reason,
            "newreno has no parameter 'beta' (it takes none)"
        );
        let err = tcp("congestion = 3").unwrap_err();
        assert!(err.reason.starts_with("expected a name or a table"));
        let err = tcp("window = 1000\ntcp = { window = 2000 }").unwrap_err();
        assert_eq!(err.key, "group.X.window");
        let err = tcp("tcp = { initial_window = -1 }").unwrap_err();
        assert_eq!(err.key, "group.X.tcp.initial_window");
        let err = tcp("tcp = { recovery = \"fast\" }").unwrap_err();
        assert_eq!(err.key, "group.X.tcp.recovery");
        let g = tcp("tcp = { recovery = \"prr\" }").unwrap();
        let Protocol::Tcp { options, .. } = g.protocol else {
            panic!()
        };
        assert_eq!(options.recovery, Recovery::Prr);
        let err = tcp("tcp = { nagle = true }").unwrap_err();
        assert_eq!((err.key.as_str(), err.unknown), ("group.X.tcp.nagle", true));
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
