use super::*;
use qstp_dataplane::marker::{MarkerSpec, SrtcmSpec, TokenBucketSpec};
use qstp_dataplane::queue::{CbqClass, CbqSpec, QueueSpec, RedParams, RedSpec};
use qstp_proto::{Rate, RateControl};
use qstp_sim::spec::source::{Protocol, QstpSpec, TcpSpec};

const FIG4: &str = r#"
name = "qstp-fig4"
description = "One flow vs a 15-flow TCP aggregate"
duration = "180s"
warmup = "30s"
runs = 10
seed = 1
packet_size = 1500
[bottleneck]
rate = "1000k"
queue = { kind = "rio", limit = 50, in = [20, 40, 0.02], out = [10, 20, 0.1] }
[[group]]
name = "AB"
protocol = "qstp"
flows = 1
rtt = "30ms"
target = "500k"
marker = { kind = "token-bucket", rate = "500k", bucket = 10000 }
[[group]]
name = "CD"
protocol = "tcp"
flows = 15
rtt = "30ms"
marker = { kind = "token-bucket", rate = "300k", bucket = 10000 }
[sweep]
"group.AB.protocol" = ["tcp", "tfrc-sack", "qstp"]
"#;

pub(super) fn plan(text: &str) -> Result<Plan, ScenarioError> {
    parse(text, "test.toml", &Overrides::default())
}

/// The brief's example with one line replaced.
fn fig4_with(old: &str, new: &str) -> String {
    assert!(FIG4.contains(old), "{old}");
    FIG4.replacen(old, new, 1)
}

pub(super) fn expect_invalid(text: &str, key: &str, reason: &str) {
    match plan(text) {
        Err(e @ ScenarioError::Invalid { .. }) => {
            assert_eq!(e.key(), Some(key), "{e}");
            let shown = e.to_string();
            assert!(shown.starts_with("test.toml: "), "{shown}");
            assert!(shown.contains(reason), "{shown}");
        }
        other => panic!("expected an invalid {key}, got {other:?}"),
    }
}

#[test]
fn reads_the_fig4_scenario_into_three_points() {
    let p = plan(FIG4).unwrap();
    assert_eq!(p.sweep_keys, vec!["group.AB.protocol".to_string()]);
    assert_eq!(p.points.len(), 3);
    assert_eq!(p.total_runs(), 30);
    let names: Vec<String> = p
        .points
        .iter()
        .map(|pt| protocol_name(&pt.scenario.groups[0].protocol))
        .collect();
    assert_eq!(names, ["tcp/newreno", "tfrc-sack", "qstp"]);
    let s = &p.points[2].scenario;
    assert_eq!(
        (s.duration, s.warmup, s.runs, s.seed),
        (Duration::from_secs(180), Duration::from_secs(30), 10, 1)
    );
    let Protocol::Qstp(QstpSpec { config, .. }) = &s.groups[0].protocol else {
        panic!()
    };
    assert_eq!(
        config.congestion.negotiated(),
        RateControl::Gtfrc {
            target: Rate::from_kbps(500)
        }
    );
    assert_eq!(s.groups[1].flows, 15);
    assert_eq!(
        s.groups[1].marker,
        Some(MarkerSpec::TokenBucket(TokenBucketSpec {
            rate: Rate::from_kbps(300),
            bucket: 10_000
        }))
    );
    let spec = s.spec(3);
    assert_eq!(spec.seed, 4);
    assert_eq!(spec.bin, Duration::from_millis(100));
    assert_eq!(spec.groups.len(), 2);
}

#[test]
fn overrides_replace_runs_seed_and_duration_and_scale_the_warmup() {
    let o = Overrides {
        runs: Some(2),
        seed: Some(7),
        duration: Some(Duration::from_secs(18)),
    };
    let p = parse(FIG4, "f", &o).unwrap();
    let s = p.base();
    assert_eq!(
        (s.runs, s.seed, s.duration, s.warmup),
        (2, 7, Duration::from_secs(18), Duration::from_secs(3))
    );
    for (secs, warmup_ms) in [(90, 15_000), (60, 10_000), (100, 16_667), (7, 1_167)] {
        let o = Overrides {
            duration: Some(Duration::from_secs(secs)),
            ..Default::default()
        };
        let s = parse(FIG4, "f", &o).unwrap().points[0].scenario.clone();
        assert_eq!(
            (s.duration, s.warmup),
            (Duration::from_secs(secs), Duration::from_millis(warmup_ms))
        );
    }
}

#[test]
fn an_unknown_key_is_named() {
    let err = plan(&fig4_with(
        "rtt = \"30ms\"\ntarget",
        "rtt = \"30ms\"\nspeed = 3\ntarget",
    ))
    .unwrap_err();
    assert!(
        matches!(&err, ScenarioError::UnknownKey { key, .. } if key == "group.AB.speed"),
        "{err}"
    );
    assert_eq!(err.to_string(), "test.toml: group.AB.speed: unknown key");
    let err = plan(&format!("colour = 1\n{FIG4}")).unwrap_err();
    assert_eq!(err.key(), Some("colour"));
}

#[test]
fn a_wrong_unit_is_refused() {
    expect_invalid(
        &fig4_with("rtt = \"30ms\"", "rtt = \"30\""),
        "group.AB.rtt",
        "no unit",
    );
    expect_invalid(
        &fig4_with("rate = \"1000k\"", "rate = \"1000 parsecs\""),
        "bottleneck.rate",
        "unknown unit",
    );
}

#[test]
fn ns2s_header_only_first_segment_and_a_handshake_are_refused_together() {
    let tcp = |keys: &str| {
        ONE_RULE.replacen(
            "protocol = \"cbr\"\nrate = \"200k\"",
            &format!("protocol = \"tcp\"\ntcp = {{ {keys} }}"),
            1,
        )
    };
    expect_invalid(
        &tcp("handshake = true, ns2_syn = true"),
        "group.A.tcp.ns2_syn",
        "exclude each other",
    );
    assert!(plan(&tcp("ns2_syn = true")).is_ok());
}

#[test]
fn ns2s_scoreboard_clearing_is_a_tcp_setting() {
    let tcp = |keys: &str| {
        ONE_RULE.replacen(
            "protocol = \"cbr\"\nrate = \"200k\"",
            &format!("protocol = \"tcp\"\ntcp = {{ {keys} }}"),
            1,
        )
    };
    let spec = plan(&tcp("ns2_clear_scoreboard = true")).expect("a valid setting");
    let text = format!("{spec:?}");
    assert!(text.contains("ns2_clear_scoreboard: true"), "{text}");
    expect_invalid(
        &tcp("ns2_clear_scoreboard = 1"),
        "group.A.tcp.ns2_clear_scoreboard",
        "",
    );
}

#[test]
fn a_negative_rate_is_refused() {
    expect_invalid(
        &fig4_with("target = \"500k\"", "target = \"-500k\""),
        "group.AB.target",
        "negative",
    );
}

#[test]
fn rio_with_min_above_max_is_refused() {
    expect_invalid(
        &fig4_with("out = [10, 20, 0.1]", "out = [30, 20, 0.1]"),
        "bottleneck.queue.out",
        "out curve needs 0 <= min_th (30) <= max_th (20)",
    );
}

#[test]
fn a_sweep_over_a_missing_key_is_refused() {
    expect_invalid(
        &fig4_with("\"group.AB.protocol\"", "\"group.XY.protocol\""),
        "sweep.group.XY.protocol",
        "no element named 'XY'",
    );
    expect_invalid(
        &fig4_with("\"group.AB.protocol\"", "\"group.AB.protocl\""),
        "sweep.group.AB.protocl",
        "no such key",
    );
    expect_invalid(
        &fig4_with("\"group.AB.protocol\"", "\"link.rate\""),
        "sweep.link.rate",
        "does not exist",
    );
}

#[test]
fn a_swept_value_is_validated_like_a_written_one() {
    expect_invalid(
        &fig4_with("[\"tcp\", \"tfrc-sack\", \"qstp\"]", "[\"tcp\", \"quic\"]"),
        "group.AB.protocol",
        "not a protocol",
    );
}

#[test]
fn a_duplicate_group_name_is_refused() {
    expect_invalid(
        &fig4_with("name = \"CD\"", "name = \"AB\""),
        "group.AB.name",
        "two groups have this name",
    );
}

#[test]
fn other_cross_checks_name_their_key() {
    expect_invalid(
        &fig4_with("warmup = \"30s\"", "warmup = \"200s\""),
        "warmup",
        "shorter than the duration",
    );
    expect_invalid(&fig4_with("runs = 10", "runs = 0"), "runs", "outside");
    expect_invalid(
        &fig4_with("packet_size = 1500", "packet_size = 10"),
        "packet_size",
        "TCP needs more than 40 bytes",
    );
    let cbq = fig4_with(
        "queue = { kind = \"rio\", limit = 50, in = [20, 40, 0.02], out = [10, 20, 0.1] }",
        "queue = { kind = \"cbq\", classes = [{ name = \"pipe\", rate = \"300k\", groups = [\"ZZ\"], limit = 50 }] }",
    );
    expect_invalid(
        &cbq,
        "bottleneck.queue.classes.pipe.groups",
        "lists 'ZZ', which is not a group of the run",
    );
}

#[test]
fn syntax_errors_and_missing_files_name_the_file() {
    let err = plan("name = ").unwrap_err();
    assert!(matches!(err, ScenarioError::Syntax { .. }));
    assert!(err.to_string().starts_with("test.toml: not valid TOML"));
    let err = load(Path::new("/nonexistent/x.toml"), &Overrides::default()).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("/nonexistent/x.toml: cannot read"));
}

#[test]
fn the_scenario_files_of_the_repository_load() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let plan = load(&path, &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
            let expected_points = match plan.base().name.as_str() {
                "qstp-fig5" => 60,
                "qstp-fig4" => 3,
                // The RFC 3448 twins sweep TFRC/SACK and QSTP only (TCP runs no TFRC).
                "qstp-fig5-rfc3448" => 40,
                "qstp-fig4-rfc3448" => 2,
                "hstcp-qos" => 9 * 9,
                // gTFRC paper Fig. 8: two TCP flows, nothing to sweep.
                "gtfrc-fig8a" | "gtfrc-fig8b" => 1,
                // Free & Stunts: 2 topologies x 3 traces; 15 Stunt counts x 2 cross traffics;
                // 3 Stunt counts; 6 numbers of switched cross flows.
                "fs-fig4" => 6,
                "fs-fig5" => 30,
                "fs-fig6" => 3,
                "fs-fig7" => 6,
                "fs-fluid-fig3" => 1,
                // AF over ATM: 3 RTTs; 9 SCR0 values; 6 MBS0 values.
                "atm-fig2" => 3,
                "atm-fig3" | "atm-fig4" => 9,
                "atm-fig5" => 6,
                _ => 2,
            };
            assert_eq!(plan.points.len(), expected_points, "{}", path.display());
            if plan.base().name.ends_with("-rfc3448") {
                // The key reaches the flow's configuration at every point of the sweep.
                for point in &plan.points {
                    let qstp_sim::Protocol::Qstp(QstpSpec { config, .. }) =
                        &point.scenario.groups[0].protocol
                    else {
                        panic!("{}: group AB runs no TFRC", path.display())
                    };
                    assert_eq!(
                        config.congestion.tfrc_version(),
                        Some(qstp_proto::TfrcVersion::Rfc3448)
                    );
                }
            }
            assert_eq!(
                plan.base().name,
                path.file_stem().unwrap().to_str().unwrap(),
                "name matches the file"
            );
            seen += 1;
        }
    }
    assert!(seen >= 7, "only {seen} scenario files");
}

#[test]
fn keys_joined_with_plus_move_together() {
    let text = fig4_with(
        "\"group.AB.protocol\" = [\"tcp\", \"tfrc-sack\", \"qstp\"]",
        "\"group.AB.protocol+group.CD.protocol\" = [\"tcp\", \"tfrc\"]\n\"group.CD.flows\" = [1, 2]",
    )
    .replace("name = \"CD\"", "name = \"CD\"\ntarget = \"300k\"");
    let p = plan(&text).unwrap();
    assert_eq!(p.points.len(), 4);
    let last = &p.points[3].scenario;
    assert_eq!(protocol_name(&last.groups[0].protocol), "tfrc");
    assert_eq!(protocol_name(&last.groups[1].protocol), "tfrc");
    assert_eq!(last.groups[1].flows, 2);
    assert_eq!(p.points[1].params[1].1.as_integer(), Some(2));
}

#[test]
fn legal_but_doubtful_settings_are_warned_about() {
    let text = FIG4.replace("target = \"500k\"", "target = \"5M\"");
    let p = plan(&text).unwrap();
    let w = p.warnings();
    assert!(
        w.iter()
            .any(|l| l.starts_with("group.AB.target:") && l.contains("cannot be met")),
        "{w:?}"
    );
    assert!(plan(FIG4).unwrap().warnings().is_empty());
}

#[test]
fn a_group_no_cbq_class_names_is_warned_about() {
    let text = FIG4.replace(
        "queue = { kind = \"rio\", limit = 50, in = [20, 40, 0.02], out = [10, 20, 0.1] }",
        "queue = { kind = \"cbq\", classes = [{ name = \"pipe\", rate = \"300k\", limit = 20, groups = [\"AB\"] }, { name = \"rest\", rate = \"700k\", limit = 20, groups = [] }] }",
    );
    let w = plan(&text).unwrap().warnings();
    assert_eq!(
        w,
        ["group.CD: in no CBQ class, so its packets go to the last class, 'rest'"]
    );
}

#[test]
fn start_spread_is_read_per_group() {
    let text = FIG4.replace("name = \"CD\"", "name = \"CD\"\nstart_spread = \"0s\"");
    let p = plan(&text).unwrap();
    let groups = &p.points[0].scenario.groups;
    assert_eq!(groups[0].start_spread, None);
    assert_eq!(groups[1].start_spread, Some(Duration::ZERO));
}

/// A one-group scenario for the checks that used to be written twice.
const ONE_RULE: &str = r#"
name = "one-rule"
duration = "1s"
[bottleneck]
rate = "1M"
queue = { kind = "droptail", limit = 50 }
[[group]]
name = "A"
protocol = "cbr"
rate = "200k"
rtt = "20ms"
"#;

/// One rule that the lab and the simulator used to hold in two copies that disagreed: the
/// scenario text that exercises it, the same change made to a `SimSpec` directly, and where
/// both must now refuse it (`None`: both accept it).
struct OneRule {
    what: &'static str,
    old: &'static str,
    new: &'static str,
    change: fn(&mut qstp_sim::SimSpec),
    refused_at: Option<(&'static str, IsExpected)>,
}

/// Whether the simulator's error is the one expected.
type IsExpected = fn(&qstp_sim::SimError) -> bool;

fn one_rule_cases() -> Vec<OneRule> {
    use qstp_dataplane::queue::QueueSpecError;
    use qstp_sim::error::ComponentError;
    use qstp_sim::SimError;
    use qstp_tcp::{CcSpec, TcpConfigError, TcpOptions};
    let queue_line = "queue = { kind = \"droptail\", limit = 50 }";
    vec![
        OneRule {
            // Floyd & Jacobson §4: equal thresholds and max_p = 0 give a step curve (the lab
            // refused both, the simulator took them).
            what: "RED with min_th = max_th and max_p = 0",
            old: queue_line,
            new: "queue = { kind = \"red\", limit = 50, curve = [20, 20, 0.0] }",
            change: |s| {
                s.bottleneck_mut().unwrap().queue = QueueSpec::Red(RedSpec {
                    limit: 50,
                    params: RedParams {
                        min_th: 20.0,
                        max_th: 20.0,
                        max_p: 0.0,
                    },
                    weight: qstp_dataplane::queue::DEFAULT_QUEUE_WEIGHT,
                    wait: false,
                    ecn: false,
                })
            },
            refused_at: None,
        },
        OneRule {
            // RFC 2697 §2: one of CBS and EBS must be larger than 0; EBS = 0 alone is allowed
            // (the lab refused it).
            what: "srTCM with EBS = 0",
            old: "rtt = \"20ms\"",
            new: "rtt = \"20ms\"\nmarker = { kind = \"srtcm\", cir = \"100k\", cbs = 3000, ebs = 0 }",
            change: |s| {
                s.groups[0].marker = Some(MarkerSpec::Srtcm(SrtcmSpec {
                    cir: Rate::from_kbps(100),
                    cbs: 3000,
                    ebs: 0,
                    mode: qstp_dataplane::marker::ColorMode::Blind,
                }))
            },
            refused_at: None,
        },
        OneRule {
            // QSTP paper §5.4: a borrowing class of rate 0 lives on idle capacity (the lab
            // refused any class of rate 0).
            what: "a borrowing CBQ class of rate 0",
            old: queue_line,
            new: "queue = { kind = \"cbq\", classes = [{ name = \"a\", rate = \"300k\", groups = [\"A\"], limit = 50 }, { name = \"be\", rate = \"0bps\", borrow = true, limit = 50 }] }",
            change: |s| {
                s.bottleneck_mut().unwrap().queue = QueueSpec::Cbq(CbqSpec {
                    classes: vec![
                        CbqClass {
                            name: "a".into(),
                            rate: Rate::from_kbps(300),
                            borrow: false,
                            groups: vec!["A".into()],
                            limit: 50,
                        },
                        CbqClass {
                            name: "be".into(),
                            rate: Rate::ZERO,
                            borrow: true,
                            groups: vec![],
                            limit: 50,
                        },
                    ],
                })
            },
            refused_at: None,
        },
        OneRule {
            what: "a CBQ class of rate 0 that may not borrow",
            old: queue_line,
            new: "queue = { kind = \"cbq\", classes = [{ name = \"a\", rate = \"300k\", groups = [\"A\"], limit = 50 }, { name = \"be\", rate = \"0bps\", limit = 50 }] }",
            change: |s| {
                s.bottleneck_mut().unwrap().queue = QueueSpec::Cbq(CbqSpec {
                    classes: vec![
                        CbqClass {
                            name: "a".into(),
                            rate: Rate::from_kbps(300),
                            borrow: false,
                            groups: vec!["A".into()],
                            limit: 50,
                        },
                        CbqClass {
                            name: "be".into(),
                            rate: Rate::ZERO,
                            borrow: false,
                            groups: vec![],
                            limit: 50,
                        },
                    ],
                })
            },
            refused_at: Some(("bottleneck.queue.classes.be.rate", |e| {
                matches!(e, SimError::Component { error: ComponentError::Queue(QueueSpecError::StarvedClass(c)), .. } if c == "be")
            })),
        },
        OneRule {
            // The flow limit is the simulator's address space, 65,536 in all (the lab allowed
            // 10,000 per group, so 7 groups of 10,000 passed it).
            what: "10,001 flows in one group",
            old: "rtt = \"20ms\"",
            new: "rtt = \"20ms\"\nflows = 10001",
            change: |s| s.groups[0].flows = 10_001,
            refused_at: None,
        },
        OneRule {
            what: "70,000 flows",
            old: "rtt = \"20ms\"",
            new: "rtt = \"20ms\"\nflows = 70000",
            change: |s| s.groups[0].flows = 70_000,
            refused_at: Some(("group", |e| matches!(e, SimError::TooManyFlows { flows: 70_000, .. }))),
        },
        OneRule {
            // The bin limit bounds the memory of all series, bins times flows (the lab bounded
            // bins per flow at 10 million, above the simulator's 8 Mi entries in all).
            what: "10 million bins of one flow",
            old: "duration = \"1s\"",
            new: "duration = \"1000s\"\nbin = \"100us\"",
            change: |s| {
                s.duration = qstp_proto::Duration::from_secs(1000);
                s.bin = qstp_proto::Duration::from_micros(100);
            },
            refused_at: Some(("bin", |e| matches!(e, SimError::TooManyBins { .. }))),
        },
        OneRule {
            // The queue limit (the simulator had no upper bound).
            what: "a queue of 100,001 packets",
            old: queue_line,
            new: "queue = { kind = \"droptail\", limit = 100001 }",
            change: |s| s.bottleneck_mut().unwrap().queue = QueueSpec::drop_tail(100_001),
            refused_at: Some(("bottleneck.queue.limit", |e| {
                matches!(e, SimError::Component { error: ComponentError::Queue(QueueSpecError::BadLimit { limit: 100_001, .. }), .. })
            })),
        },
        OneRule {
            // A max_th the queue can never reach (the simulator took it).
            what: "a RED max_th above the limit",
            old: queue_line,
            new: "queue = { kind = \"red\", limit = 50, curve = [20, 60, 0.1] }",
            change: |s| {
                s.bottleneck_mut().unwrap().queue = QueueSpec::Red(RedSpec {
                    limit: 50,
                    params: RedParams {
                        min_th: 20.0,
                        max_th: 60.0,
                        max_p: 0.1,
                    },
                    weight: qstp_dataplane::queue::DEFAULT_QUEUE_WEIGHT,
                    wait: false,
                    ecn: false,
                })
            },
            refused_at: Some(("bottleneck.queue.curve", |e| {
                matches!(e, SimError::Component { error: ComponentError::Queue(QueueSpecError::ThresholdAboveLimit { .. }), .. })
            })),
        },
        OneRule {
            // The packet size bound is the protocol's (the lab asked qstp's 256-byte minimum of
            // UDP sources too).
            what: "200-byte CBR packets",
            old: "duration = \"1s\"",
            new: "duration = \"1s\"\npacket_size = 200",
            change: |s| s.packet_size = 200,
            refused_at: None,
        },
        OneRule {
            // The warm-up bound (the simulator did not check it).
            what: "a warm-up as long as the run",
            old: "duration = \"1s\"",
            new: "duration = \"1s\"\nwarmup = \"1s\"",
            change: |s| s.warmup = qstp_proto::Duration::from_secs(1),
            refused_at: Some(("warmup", |e| matches!(e, SimError::Invalid { key, .. } if key == "warmup"))),
        },
        OneRule {
            // A receive window below one segment (the lab refused only 0; the simulator failed
            // the flow's build with a string).
            what: "a TCP receive window below one segment",
            old: "protocol = \"cbr\"\nrate = \"200k\"",
            new: "protocol = \"tcp\"\ntcp = { window = 1000 }",
            change: |s| {
                s.groups[0].protocol = Protocol::Tcp(TcpSpec {
                    congestion: CcSpec::named("newreno"),
                    options: TcpOptions {
                        receive_window: 1000,
                        ..TcpOptions::default()
                    },
                })
            },
            refused_at: Some(("group.A.tcp.window", |e| {
                matches!(e, SimError::Component { error: ComponentError::Tcp(TcpConfigError::WindowBelowMss { window: 1000, .. }), .. })
            })),
        },
    ]
}

#[test]
fn each_rule_that_had_two_copies_is_one_rule_for_the_lab_and_the_simulator() {
    let base = plan(ONE_RULE).unwrap().base().spec(0);
    for case in one_rule_cases() {
        let text = ONE_RULE.replacen(case.old, case.new, 1);
        assert_ne!(text, ONE_RULE, "{}", case.what);
        let loaded = plan(&text);
        let mut spec = base.clone();
        (case.change)(&mut spec);
        if let Ok(p) = &loaded {
            // The document and the direct spec describe the same run.
            assert_eq!(p.base().spec(0), spec, "{}", case.what);
        }
        match case.refused_at {
            None => {
                assert!(loaded.is_ok(), "{}: {:?}", case.what, loaded.err());
                let ran = qstp_sim::run(&spec);
                assert!(ran.is_ok(), "{}: {:?}", case.what, ran.err());
            }
            Some((key, expected)) => {
                let err = loaded.unwrap_err();
                assert_eq!(err.key(), Some(key), "{}: {err}", case.what);
                let err = qstp_sim::run(&spec).unwrap_err();
                assert!(expected(&err), "{}: {err:?}", case.what);
            }
        }
    }
}

#[test]
fn specs_of_the_repository_scenarios_survive_a_json_round_trip() {
    // The specs travel (to Python, to Ray workers) as JSON: each point of each scenario file
    // must come back equal, floats, u64::MAX windows and all.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut kinds = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().map_or(true, |e| e != "toml") {
            continue;
        }
        let plan = load(&path, &Overrides::default()).unwrap_or_else(|e| panic!("{e}"));
        for point in &plan.points {
            let spec = point.scenario.spec(3);
            let json = serde_json::to_string(&spec).unwrap();
            let back: qstp_sim::SimSpec = serde_json::from_str(&json)
                .unwrap_or_else(|e| panic!("{}: {e}\n{json}", path.display()));
            assert_eq!(back, spec, "{}", path.display());
            let value: serde_json::Value = serde_json::from_str(&json).unwrap();
            kinds.insert(value["topology"]["bottleneck"]["queue"]["kind"].to_string());
            for g in value["groups"].as_array().unwrap() {
                kinds.insert(g["protocol"]["kind"].to_string());
                kinds.insert(g["marker"]["kind"].to_string());
            }
        }
    }
    // The tags are the scenario format's kind names.
    for kind in ["\"rio\"", "\"tcp\"", "\"qstp\"", "\"token-bucket\""] {
        assert!(kinds.contains(kind), "{kind} not in {kinds:?}");
    }
}

const ATM: &str = r#"
name = "atm"
duration = "10s"
packet_size = 8232
[bottleneck]
rate = "149.76M"
delay = "10ms"
atm = { buffer = 10000, scd = 0.9, shaping = "35M" }
[[group]]
name = "AF"
protocol = "tcp"
flows = 2
rtt = "80ms"
marker = { kind = "gcra", pcr = "149.76M", cdvt = "3us", scr = "18.72M", mbs = 8256 }
[[group]]
name = "DF"
protocol = "tcp"
flows = 2
rtt = "80ms"
"#;

#[test]
fn reads_an_atm_trunk_with_its_defaults() {
    let p = plan(ATM).unwrap();
    let atm = p.base().bottleneck().atm.clone().unwrap();
    assert_eq!(atm.buffer, 10_000);
    assert_eq!(atm.scd, 0.9);
    assert_eq!(
        atm.service,
        qstp_dataplane::atm::Service::Weighted { af: 1, df: 1 }
    );
    assert_eq!(atm.shaping, Some(Rate::from_kbps(35_000)));
    assert_eq!(atm.probe, Some(qstp_dataplane::atm::DEFAULT_PROBE));
    assert_eq!((atm.epd, atm.ppd, atm.hosts), (None, false, None));
    let text = ATM.replace(
        "shaping = \"35M\" }",
        "service = \"priority\", probe = false, epd = 0.5, ppd = true, hosts = [[0, 1], [1, 0]] }",
    );
    let atm = plan(&text)
        .unwrap()
        .base()
        .bottleneck()
        .atm
        .clone()
        .unwrap();
    assert_eq!(atm.service, qstp_dataplane::atm::Service::Priority);
    assert_eq!((atm.probe, atm.epd, atm.ppd), (None, Some(0.5), true));
    assert_eq!(atm.hosts, Some(vec![vec![0, 1], vec![1, 0]]));
}

#[test]
fn bad_atm_settings_are_refused_by_key() {
    let key = |old: &str, new: &str| {
        assert!(ATM.contains(old), "{old}");
        plan(&ATM.replacen(old, new, 1))
            .unwrap_err()
            .key()
            .map(str::to_string)
    };
    let atm = "atm = { buffer = 10000, scd = 0.9, shaping = \"35M\" }";
    // AF-over-ATM paper §3.2 and the issue's list: an SCD threshold outside (0, 1], an SCR above the PCR, an MBS
    // of zero, a VP without VCs.
    assert_eq!(
        key("scd = 0.9", "scd = 1.2").as_deref(),
        Some("bottleneck.atm.scd")
    );
    assert_eq!(
        key("scd = 0.9", "scd = 0").as_deref(),
        Some("bottleneck.atm.scd")
    );
    assert_eq!(
        key("scr = \"18.72M\"", "scr = \"200M\"").as_deref(),
        Some("group.AF.marker.scr")
    );
    assert_eq!(
        key("mbs = 8256", "mbs = 0").as_deref(),
        Some("group.AF.marker.mbs")
    );
    let err = plan(&ATM.replacen(
        "name = \"DF\"\nprotocol = \"tcp\"\nflows = 2",
        "name = \"DF\"\nprotocol = \"tcp\"\nflows = 0",
        1,
    ))
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("group.DF.flows") && err.contains("VP"),
        "{err}"
    );
    assert_eq!(
        key("buffer = 10000", "buffer = 0").as_deref(),
        Some("bottleneck.atm.buffer")
    );
    assert_eq!(
        key(atm, "atm = { service = \"round-robin\" }").as_deref(),
        Some("bottleneck.atm.service")
    );
    assert_eq!(
        key(atm, "atm = { service = \"fifo\", weights = [1, 2] }").as_deref(),
        Some("bottleneck.atm.weights")
    );
    assert_eq!(
        key(atm, "atm = { hosts = [[0, 1]] }").as_deref(),
        Some("bottleneck.atm.hosts")
    );
    assert_eq!(
        key(atm, "atm = {}\nqueue = { kind = \"droptail\", limit = 5 }").as_deref(),
        Some("bottleneck.queue")
    );
    assert_eq!(
        key(
            "marker = { kind = \"gcra\", pcr = \"149.76M\", cdvt = \"3us\", scr = \"18.72M\", mbs = 8256 }",
            "marker = { kind = \"token-bucket\", rate = \"1M\", bucket = 1000 }"
        )
        .as_deref(),
        Some("group.AF.marker")
    );
}
