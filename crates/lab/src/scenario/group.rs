//! One `[[group]]` of a scenario: its flows, path, profile and what they run. What they run is
//! read by the simulator's registry of sources ([`qstp_sim::source`]), each kind from its own
//! keys.

use super::fields::{FieldResult, Fields};
use super::graph::Hosts;
use super::testbed::CommandSpec;
use qstp_proto::wire::MAX_DATAGRAM;
use qstp_proto::{Duration, Rate};
use qstp_sim::spec::source::{CbrSpec, QstpSpec, ReadContext, SourceKind};
use qstp_sim::{AccessSpec, GroupSpec, Protocol, Switching};

// The rules on these values (flow counts, RTTs, schedules, TCP options, ...) live with the spec
// types in qstp-sim (`qstp_sim::validate`): this module only reads the document, and
// `super::parse` maps what the simulator refuses to the key.

/// The protocol names a group may use, in the registry's order.
pub fn protocols() -> Vec<&'static str> {
    qstp_sim::spec::source::names()
}

/// Read one group; `packet_size` (unless the group sets its own) becomes the datagram size of
/// qstp-proto flows. In a file with `[[link]]` tables (`graph`), the group names its hosts
/// (`source`, `sink`) instead of an `rtt` and `access` links. A `protocol = "command"` group
/// also gives its programs (run by the testbed only).
pub(crate) fn group(
    mut f: Fields,
    packet_size: usize,
    graph: bool,
) -> FieldResult<(GroupSpec, Option<Hosts>, Option<CommandSpec>)> {
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
    let (protocol, command) = if f.peek("protocol").and_then(toml::Value::as_str) == Some("command")
    {
        f.take("protocol");
        if target.is_some() {
            return Err(f.error(
                "target",
                "a command group's programs choose their own rates (give them as arguments)",
            ));
        }
        // The simulator never runs it (`Plan::refuse_testbed_only`); the testbed runs the
        // programs instead. In the spec it stands as a source that sends nothing.
        let idle = CbrSpec {
            schedule: vec![(Duration::ZERO, Rate::ZERO)],
        };
        (Protocol::from(idle), Some(super::testbed::command(&mut f)?))
    } else {
        (protocol(&mut f, target, flows, packet_size)?, None)
    };
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
    Ok((group, hosts, command))
}

/// The protocol of a group and its options, read by the source kind the name picks from the
/// simulator's registry ([`Protocol::read`]).
fn protocol(
    f: &mut Fields,
    target: Option<Rate>,
    flows: u32,
    packet_size: usize,
) -> FieldResult<Protocol> {
    let name = f.str("protocol")?;
    let tfrc_names = QstpSpec::NAMES;
    for key in ["tfrc", "oscillation_prevention"] {
        if !tfrc_names.contains(&name.as_str()) && f.has(key) {
            return Err(f.error(
                key,
                format!(
                    "protocol '{name}' does not run TFRC (the key applies to {})",
                    tfrc_names.join(", ")
                ),
            ));
        }
    }
    let cx = ReadContext {
        name: &name,
        target,
        flows,
        packet_size,
    };
    Protocol::read(f, &cx)
}

/// The protocol name a group's spec was built from, for reports: TCP names its control
/// (`tcp/cubic`).
pub fn protocol_name(protocol: &Protocol) -> String {
    protocol.get().label()
}

#[cfg(test)]
mod tests {
    use super::*;
    use qstp_proto::{ErrorControl, Order, RateControl};
    use qstp_sim::spec::source::{CbrSpec, TcpSpec};
    use qstp_tcp::{CcSpec, Recovery, TcpOptions};

    fn read(text: &str) -> FieldResult<GroupSpec> {
        group(
            Fields::new("group.X", text.parse::<toml::Table>().unwrap()),
            1500,
            false,
        )
        .map(|(g, _, _)| g)
    }

    #[test]
    fn an_unknown_protocol_is_refused_with_every_name_the_registry_knows() {
        let err = read("name = \"X\"\nprotocol = \"quic\"\nrtt = \"30ms\"").unwrap_err();
        assert_eq!(err.key, "group.X.protocol");
        assert_eq!(
            err.reason,
            "'quic' is not a protocol (use tcp, tfrc, tfrc-sack, gtfrc, qstp, cbr, onoff)"
        );
        // A key of another kind is unknown to the kind the name picked.
        let err = read(
            "name = \"X\"\nprotocol = \"cbr\"\nrtt = \"30ms\"\nrate = \"1M\"\nmean_on = \"1s\"",
        )
        .unwrap_err();
        assert_eq!(err.key, "group.X.mean_on");
        assert!(err.unknown);
    }

    #[test]
    fn each_flow_of_an_aggregate_gets_its_share_of_the_target() {
        let g = read(
            "name = \"CD\"\nprotocol = \"qstp\"\nflows = 4\nrtt = \"30ms\"\ntarget = \"400k\"",
        )
        .unwrap();
        let Protocol::Qstp(QstpSpec { config, .. }) = g.protocol else {
            panic!()
        };
        assert_eq!(
            config.congestion.negotiated(),
            RateControl::Gtfrc {
                target: Rate::from_kbps(100)
            }
        );
        assert_eq!(config.max_datagram, 1500);
        assert_eq!(g.target, Some(Rate::from_kbps(400)));
    }

    #[test]
    fn partial_reliability_and_paced_messages_are_read_and_checked() {
        let base = "name = \"V\"\nprotocol = \"qstp\"\nrtt = \"40ms\"\ntarget = \"1M\"\n";
        let g = read(&format!(
            "{base}deadline = \"150ms\"\nmax_retransmissions = 2\nmessage_rate = \"1.5M\""
        ))
        .unwrap();
        let Protocol::Qstp(QstpSpec {
            config,
            message_rate,
            ..
        }) = g.protocol
        else {
            panic!()
        };
        assert_eq!(
            (config.error, config.order),
            (
                ErrorControl::SackPartial {
                    deadline: Some(qstp_proto::Duration::from_millis(150)),
                    max_retransmissions: Some(2),
                },
                Order::Unordered
            )
        );
        assert!(!config.supports_stream());
        assert_eq!(message_rate, Some(Rate::from_kbps(1500)));
        // Full reliability, unordered: messages too.
        let g = read(&format!(
            "{base}order = \"unordered\"\nmessage_rate = \"1M\""
        ))
        .unwrap();
        let Protocol::Qstp(QstpSpec { config, .. }) = g.protocol else {
            panic!()
        };
        assert_eq!(
            (config.error, config.order),
            (ErrorControl::SackFull, Order::Unordered)
        );
        // Each mistake names its key and says why.
        for (text, key, reason) in [
            (
                "message_rate = \"1M\"",
                "message_rate",
                "carries a byte stream",
            ),
            ("deadline = \"0s\"", "deadline", "must be positive"),
            ("order = \"random\"", "order", "not an order"),
            (
                "message_rate = \"0\"\norder = \"unordered\"",
                "message_rate",
                "",
            ),
        ] {
            let err = read(&format!("{base}{text}")).unwrap_err();
            assert_eq!(err.key, format!("group.X.{key}"), "{text}");
            assert!(err.reason.contains(reason), "{text}: {}", err.reason);
        }
        let err = read(
            "name = \"V\"\nprotocol = \"gtfrc\"\nrtt = \"40ms\"\ntarget = \"1M\"\ndeadline = \"100ms\"",
        )
        .unwrap_err();
        assert_eq!(err.key, "group.X.deadline");
        assert!(err.reason.contains("no error control"), "{}", err.reason);
    }

    #[test]
    fn gtfrc_is_the_gtfrc_papers_setting() {
        let g =
            read("name = \"A\"\nprotocol = \"gtfrc\"\nrtt = \"640ms\"\ntarget = \"800k\"").unwrap();
        let Protocol::Qstp(QstpSpec { config, name, .. }) = g.protocol else {
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
            Protocol::Tcp(TcpSpec {
                congestion: CcSpec::named("newreno"),
                options: TcpOptions {
                    delayed_ack: true,
                    receive_window: 20_000,
                    ..TcpOptions::default()
                }
            })
        );
        let g = read(
            "name = \"T\"\nprotocol = \"tcp\"\nrtt = \"40ms\"\ncongestion = \"Reno\"\ntcp = { initial_window = 10, delayed_ack = true, min_rto = \"1s\", sack = false }",
        )
        .unwrap();
        let Protocol::Tcp(TcpSpec {
            congestion,
            options,
        }) = &g.protocol
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
        let Protocol::Cbr(CbrSpec { schedule }) = g.protocol else {
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
    fn a_control_s_flags_read_true_or_false_and_its_counts_whole_numbers() {
        let congestion = |table: &str| {
            let g = read(&format!(
                "name = \"T\"\nprotocol = \"tcp\"\nrtt = \"40ms\"\ncongestion = {table}"
            ))?;
            let Protocol::Tcp(TcpSpec { congestion, .. }) = g.protocol else {
                panic!()
            };
            Ok::<_, super::super::fields::FieldError>(congestion.params)
        };
        let params = congestion("{ name = \"cubic\", ns3 = true, hystart = false }").unwrap();
        assert_eq!((params["ns3"], params["hystart"]), (1.0, 0.0));
        let params = congestion("{ name = \"cubic\", ns3 = 1, hystart = 0 }").unwrap();
        assert_eq!((params["ns3"], params["hystart"]), (1.0, 0.0));
        let err = congestion("{ name = \"cubic\", hystart = 0.5 }").unwrap_err();
        assert_eq!(err.key, "group.X.congestion");
        assert!(
            err.reason.contains("a flag is true or false"),
            "{}",
            err.reason
        );
        let err = congestion("{ name = \"yeah\", rho = 2.5 }").unwrap_err();
        assert!(err.reason.contains("whole number"), "{}", err.reason);
        let err = congestion("{ name = \"cubic\", beta = true }").unwrap_err();
        assert_eq!(err.key, "group.X.congestion.beta");
        assert!(err.reason.contains("expected a number"), "{}", err.reason);
    }

    #[test]
    fn the_gtfrc_rule_is_chosen_per_group() {
        use qstp_proto::config::GtfrcRule;
        let rule = |protocol: &str, extra: &str| {
            let g = read(&format!(
                "name = \"Q\"\nprotocol = \"{protocol}\"\nrtt = \"40ms\"\ntarget = \"200k\"\n{extra}"
            ))?;
            let Protocol::Qstp(QstpSpec { config, .. }) = g.protocol else {
                panic!()
            };
            let qstp_proto::Congestion::Gtfrc { rule, .. } = config.congestion else {
                panic!("gtfrc runs no gTFRC: {:?}", config.congestion)
            };
            Ok::<_, super::super::fields::FieldError>(rule)
        };
        // A gtfrc group is the gTFRC paper's agent (Fig. 1), a qstp group QSTP's (eq. (2)).
        assert_eq!(rule("gtfrc", "").unwrap(), GtfrcRule::Fig1);
        assert_eq!(rule("qstp", "").unwrap(), GtfrcRule::Qstp);
        assert_eq!(
            rule("gtfrc", "gtfrc_rule = \"qstp\"").unwrap(),
            GtfrcRule::Qstp
        );
        assert_eq!(
            rule("qstp", "gtfrc_rule = \"fig1\"").unwrap(),
            GtfrcRule::Fig1
        );
        let err = rule("gtfrc", "gtfrc_rule = \"eq3\"").unwrap_err();
        assert_eq!(err.key, "group.X.gtfrc_rule");
    }

    #[test]
    fn oscillation_prevention_is_chosen_per_tfrc_group_and_refused_elsewhere() {
        let on = |protocol: &str, extra: &str| {
            let g = read(&format!(
                "name = \"Q\"\nprotocol = \"{protocol}\"\nrtt = \"40ms\"\ntarget = \"200k\"\n{extra}"
            ))?;
            let Protocol::Qstp(QstpSpec { config, .. }) = g.protocol else {
                panic!()
            };
            Ok::<_, super::super::fields::FieldError>(config.congestion.oscillation_prevention())
        };
        for protocol in QstpSpec::NAMES {
            assert!(!on(protocol, "").unwrap());
            assert!(on(protocol, "oscillation_prevention = true").unwrap());
        }
        let err = on("gtfrc", "oscillation_prevention = 1").unwrap_err();
        assert_eq!(err.key, "group.X.oscillation_prevention");
        let err =
            read("name = \"T\"\nprotocol = \"tcp\"\nrtt = \"40ms\"\noscillation_prevention = true")
                .unwrap_err();
        assert_eq!(err.key, "group.X.oscillation_prevention");
        assert!(err.reason.contains("does not run TFRC"), "{}", err.reason);
    }

    #[test]
    fn the_tfrc_version_is_chosen_per_group_and_refused_where_no_tfrc_runs() {
        use qstp_proto::TfrcVersion;
        let version = |protocol: &str, extra: &str| {
            let g = read(&format!(
                "name = \"Q\"\nprotocol = \"{protocol}\"\nrtt = \"40ms\"\ntarget = \"200k\"\n{extra}"
            ))?;
            let Protocol::Qstp(QstpSpec { config, .. }) = g.protocol else {
                panic!()
            };
            Ok::<_, super::super::fields::FieldError>(config.congestion.tfrc_version().unwrap())
        };
        for protocol in QstpSpec::NAMES {
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
        let Protocol::Tcp(TcpSpec { options, .. }) = g.protocol else {
            panic!()
        };
        assert_eq!(options.recovery, Recovery::Prr);
        let err = tcp("tcp = { rto = \"bsd\" }").unwrap_err();
        assert_eq!(err.key, "group.X.tcp.rto");
        assert!(err.reason.contains("rfc6298 or linux"), "{}", err.reason);
        let g = tcp("tcp = { rto = \"linux\" }").unwrap();
        let Protocol::Tcp(TcpSpec { options, .. }) = g.protocol else {
            panic!()
        };
        assert_eq!(options.rto, qstp_tcp::RtoRule::Linux);
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
