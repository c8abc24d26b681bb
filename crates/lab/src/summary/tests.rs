use super::*;
use crate::runner::execute;
use crate::scenario::{parse, Overrides};
use crate::testkit::{fake, PLAN};

fn summary() -> Summary {
    let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
    let results = execute(&plan, 2, fake, &|_| {}).unwrap();
    build(&plan, &results, &Overrides::default())
}

#[test]
fn the_summary_has_the_documented_shape() {
    let json = serde_json::to_value(summary()).unwrap();
    for key in [
        "scenario",
        "qstp_version",
        "git_commit",
        "overrides",
        "seed",
        "runs",
        "simulated_s",
        "events",
        "points",
    ] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    assert_eq!(json["scenario"], "t");
    assert_eq!(
        (json["seed"].as_u64(), json["runs"].as_u64()),
        (Some(5), Some(3))
    );
    assert_eq!(json["simulated_s"], 60.0);
    assert_eq!(json["events"], 60);
    let points = json["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    assert_eq!(points[1]["params"]["group.B.flows"], 2);
    let flow = &points[1]["flows"][1];
    for key in [
        "group",
        "protocol",
        "flows",
        "target_bps",
        "throughput_bps",
        "goodput_bps",
        "jitter_ms",
    ] {
        assert!(flow.get(key).is_some(), "missing flows[].{key}");
    }
    for key in ["mean", "min", "max", "std"] {
        assert!(
            flow["throughput_bps"].get(key).is_some(),
            "missing throughput_bps.{key}"
        );
    }
    assert_eq!(
        (
            flow["group"].as_str(),
            flow["protocol"].as_str(),
            flow["flows"].as_u64()
        ),
        (Some("B"), Some("tcp/newreno"), Some(2))
    );
    assert_eq!(points[0]["flows"][0]["target_bps"], 500_000);
    let queue = &points[0]["queues"][0];
    assert_eq!(queue["name"], "bottleneck");
    for side in ["in_profile", "out_profile"] {
        for key in ["packets", "ldrops", "edrops"] {
            assert!(queue[side].get(key).is_some(), "missing {side}.{key}");
        }
    }
    for key in ["mean", "p50", "p95", "p99"] {
        assert!(
            queue["sojourn_ms"][key]["mean"].is_f64(),
            "missing sojourn_ms.{key}"
        );
    }
}

#[test]
fn statistics_run_across_runs_and_flows() {
    let s = summary();
    // Point 1, group B (index 1), 2 flows, seeds 5..=7: flow f of run with seed s gets
    // s*1000 + 100 + f bytes per second.
    let b = &s.points[1].flows[1];
    let per_flow: Vec<f64> = [5u64, 6, 7]
        .iter()
        .flat_map(|s| [0u64, 1].map(|f| ((s * 1000 + 100 + f) * 8) as f64))
        .collect();
    assert_eq!(b.throughput_bps.n, 6);
    assert_eq!(b.throughput_bps.min, per_flow[0]);
    assert_eq!(b.throughput_bps.max, per_flow[5]);
    assert!((b.throughput_bps.mean - per_flow.iter().sum::<f64>() / 6.0).abs() < 1e-9);
    assert_eq!(b.aggregate_bps.n, 3);
    assert_eq!(b.aggregate_bps.min, per_flow[0] + per_flow[1]);
    assert!(b.fairness.unwrap() > 0.99);
    assert_eq!(s.points[0].flows[1].fairness, None, "one flow: no fairness");
    assert_eq!(b.jitter_ms.unwrap().mean, 1.0);
    // Group B has no target, so no scenario-wide target fairness.
    assert_eq!(s.points[1].target_fairness, None);
}

#[test]
fn queue_counters_split_into_in_and_out_profile() {
    let q = &summary().points[0].queues[0];
    // Green 100 + seed (seeds 5, 6, 7: mean 106); out = yellow + red = 50.
    assert_eq!(q.in_profile.packets, 106.0);
    assert_eq!(q.out_profile.packets, 50.0);
    assert_eq!((q.out_profile.ldrops, q.out_profile.edrops), (6.0, 8.0));
    assert!((q.in_profile.share - 106.0 / 156.0).abs() < 1e-12);
    assert!((q.out_profile.edrop_rate - 8.0 / 50.0).abs() < 1e-12);
    // Yellow keeps its own counts: 10 packets, 2 ldrops, 3 edrops per run.
    assert_eq!(
        (q.yellow.packets, q.yellow.ldrops, q.yellow.edrops),
        (10.0, 2.0, 3.0)
    );
    // Each run's sojourn times (the fake run: 100 packets, mean 10 ms, p50 8, p95 30, p99 50),
    // one sample per run.
    let soj = q.sojourn_ms.as_ref().unwrap();
    assert_eq!(soj.mean.n, 3);
    assert_eq!(
        (soj.mean.mean, soj.p50.mean, soj.p95.mean, soj.p99.mean),
        (10.0, 8.0, 30.0, 50.0)
    );
    assert_eq!(soj.packets, 100.0);
}

#[test]
fn the_text_table_lists_every_point_and_group() {
    let t = text_table(&summary());
    assert!(t.lines().next().unwrap().contains("thr mean"));
    assert_eq!(t.lines().filter(|l| l.contains(" qstp ")).count(), 2, "{t}");
    assert!(t.contains("B.flows=2"), "{t}");
    // Group A, point 0: seeds 5..=7 give 5000, 6000, 7000 B/s: a mean of 48 kbit/s, 10% of 500k.
    let a = t.lines().find(|l| l.contains(" qstp ")).unwrap();
    assert!(a.contains("48.0") && a.trim_end().ends_with("10%"), "{a}");
    assert!(t.contains("queue bottleneck: in 106 pkts"), "{t}");
    assert!(
        t.contains("edrops 8); sojourn 10.00 ms, p95 30.00, p99 50.00\n"),
        "{t}"
    );
    assert!(t.contains("sojourn: time from arrival"), "{t}");
    // Labels are whole, columns say what they are, and a legend explains them.
    assert!(t.lines().next().unwrap().ends_with("thr/target"), "{t}");
    assert!(
        t.contains("ldrops: dropped because the queue was full"),
        "{t}"
    );
    assert!(t.contains("jitter: mean IPDV"), "{t}");
}

#[test]
fn the_same_inputs_give_a_byte_identical_summary_whatever_ran_the_tasks() {
    let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
    let one_thread = execute(&plan, 1, fake, &|_| {}).unwrap();
    let three_threads = execute(&plan, 3, fake, &|_| {}).unwrap();
    let again = parse(PLAN, "elsewhere/t.toml", &Overrides::default()).unwrap();
    let json = |plan: &crate::scenario::Plan, results: &[crate::runner::PointResult]| {
        serde_json::to_string_pretty(&build(plan, results, &Overrides::default())).unwrap()
    };
    let a = json(&plan, &one_thread);
    assert_eq!(a, json(&plan, &three_threads));
    assert_eq!(a, json(&again, &three_threads), "no path in the summary");
    assert!(!a.contains("wall") && !a.contains("t.toml"));
}

#[test]
fn the_summary_records_version_commit_overrides_and_confidence_intervals() {
    let overrides = Overrides {
        runs: Some(2),
        seed: Some(11),
        duration: None,
    };
    let plan = parse(PLAN, "t.toml", &overrides).unwrap();
    let results = execute(&plan, 1, fake, &|_| {}).unwrap();
    let json = serde_json::to_value(build(&plan, &results, &overrides)).unwrap();
    assert_eq!(json["qstp_version"], env!("CARGO_PKG_VERSION"));
    assert!(!json["git_commit"].as_str().unwrap().is_empty());
    assert_eq!(json["overrides"]["runs"], 2);
    assert_eq!(json["overrides"]["seed"], 11);
    assert!(json["overrides"]["duration_s"].is_null());
    // Two runs of two B flows: four samples of per-flow throughput, so t(0.975, 3) = 3.182.
    let thr = &json["points"][1]["flows"][1]["throughput_bps"];
    let (std, n) = (thr["std"].as_f64().unwrap(), thr["n"].as_f64().unwrap());
    assert_eq!(n, 4.0);
    let ci = thr["ci95"].as_f64().unwrap();
    assert!(ci > 0.0 && (ci - 3.182 * std / 2.0).abs() < 1e-9, "{thr}");
}

#[test]
fn sweep_labels_are_whole_and_comma_separated() {
    let mut params = serde_json::Map::new();
    params.insert("group.AB.protocol".into(), "tfrc-sack".into());
    params.insert("group.CD.flows+group.CD.target".into(), 20.into());
    assert_eq!(params_label(&params), "AB.protocol=tfrc-sack, CD.flows=20");
    // Keys joined with ',' show each with its own value.
    let mut zipped = serde_json::Map::new();
    zipped.insert(
        "bottleneck.rate,group.X.flows".into(),
        serde_json::json!(["40M", 10]),
    );
    assert_eq!(params_label(&zipped), "bottleneck.rate=40M, X.flows=10");
    let long = "x".repeat(60);
    params.insert("group.EF.protocol".into(), long.clone().into());
    let s = summary();
    let mut s2 = s.clone();
    s2.points[0].params = params.clone();
    let t = text_table(&s2);
    assert!(
        t.contains(&format!("EF.protocol={long}")),
        "never cut mid-value: {t}"
    );
}

#[test]
fn efficiency_fairness_and_performance_follow_the_papers_definitions() {
    let s = summary();
    let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
    let results = execute(&plan, 2, fake, &|_| {}).unwrap();
    // Point 1: flows A/0, B/0 and B/1 in each run; E = sum q_i / C, F = Jain over them.
    let capacity = 1e6;
    let mut e = Vec::new();
    let mut f = Vec::new();
    for run in &results[1].runs {
        let q: Vec<f64> = run.flows.iter().map(|x| x.throughput_bps).collect();
        e.push(q.iter().sum::<f64>() / capacity);
        let (sum, squares) = (q.iter().sum::<f64>(), q.iter().map(|v| v * v).sum::<f64>());
        f.push(sum * sum / (q.len() as f64 * squares));
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let m = s.points[1].metrics.as_ref().unwrap();
    assert!((m.efficiency.mean - mean(&e)).abs() < 1e-12);
    assert!((m.jain.mean - mean(&f)).abs() < 1e-12);
    let p = m.performance["0.2"];
    assert!((p - (0.2 * mean(&e) + 0.8 * mean(&f))).abs() < 1e-12);
    assert_eq!(
        m.performance.keys().collect::<Vec<_>>(),
        ["0.2", "0.5", "0.8"]
    );
    assert!(text_table(&s).contains("performance a=0.2"));
}

#[test]
fn a_column_that_asks_for_it_is_summed_up_by_name_over_the_flows_with_a_value() {
    const COLUMNS: &[RunColumn] = &[
        RunColumn {
            name: "resent_share",
            always: false,
            write: |_| String::new(),
            read: |_, _| true,
            summary: Some(|f| {
                (f.packets_sent > 0).then(|| f.packets_retransmitted as f64 / f.packets_sent as f64)
            }),
        },
        RunColumn {
            name: "written_only",
            always: false,
            write: |_| String::new(),
            read: |_, _| true,
            summary: None,
        },
    ];
    let flow = |sent, resent| FlowRun {
        packets_sent: sent,
        packets_retransmitted: resent,
        ..FlowRun::default()
    };
    let flows = [flow(10, 1), flow(0, 0), flow(20, 6)];
    let stats = column_stats(COLUMNS, flows.iter());
    assert_eq!(stats.keys().collect::<Vec<_>>(), ["resent_share"]);
    let share = &stats["resent_share"];
    assert_eq!(share.n, 2, "the flow without a value is no sample");
    assert!((share.mean - 0.2).abs() < 1e-12, "{share:?}");
    assert!((share.min - 0.1).abs() < 1e-12 && (share.max - 0.3).abs() < 1e-12);
    // The older columns each have a field of their own in the summary; the delays are under
    // `metrics`, over every flow of every run.
    let json = serde_json::to_value(summary()).unwrap();
    let group = &json["points"][0]["flows"][0];
    assert!(
        group.get("throughput_bps").is_some() && group["metrics"].get("throughput_bps").is_none()
    );
    assert_eq!(group["metrics"]["delay_p99_ms"]["mean"], 30.0);
    // Group A carries messages: 10 written a bin, 9 delivered, over bins 2-7 (the warm-up's end
    // to 2 s before the end); group B (TCP) has none.
    let delivered = group["metrics"]["messages_delivered"]["mean"]
        .as_f64()
        .unwrap();
    let expired = group["metrics"]["messages_expired"]["mean"]
        .as_f64()
        .unwrap();
    assert!((delivered - 0.9).abs() < 1e-12 && (expired - 0.1).abs() < 1e-12);
    assert!(json["points"][0]["flows"][1]["metrics"]
        .get("messages_delivered")
        .is_none());
    assert_eq!(
        group["metrics"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        [
            "delay_mean_ms",
            "delay_p50_ms",
            "delay_p95_ms",
            "delay_p99_ms",
            "messages_delivered",
            "messages_expired",
            "rtt_mean_ms",
            "rtt_p50_ms",
            "rtt_p95_ms",
            "rtt_p99_ms"
        ]
    );
}
