//! The papers' results, on short runs of the repository's scenario files.
//!
//! Each test loads a file from `scenarios/`, shortens it (fewer runs, sometimes fewer sweep values
//! or a shorter duration; the files keep the papers' settings) and asserts the paper's qualitative
//! result on the means after the warm-up.

use qstp_lab::runner::execute;
use qstp_lab::scenario::{parse, Overrides};
use qstp_lab::summary::{build, GroupSummary, PointSummary, Summary};
use qstp_proto::Duration;
use std::path::Path;
use toml::{Table, Value};

/// Threads for the tests: the machine's, at most two.
fn jobs() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(2)
}

/// Load `scenarios/<name>.toml`, let `edit` change the document, apply `overrides`, run it.
fn run(name: &str, overrides: Overrides, edit: impl FnOnce(&mut Table)) -> Summary {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(format!("{name}.toml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut doc: Table = text.parse().unwrap();
    edit(&mut doc);
    let plan = parse(
        &toml::to_string(&doc).unwrap(),
        &path.display().to_string(),
        &overrides,
    )
    .unwrap();
    let results =
        execute(&plan, jobs(), qstp_lab::simulate, &|_| {}).unwrap_or_else(|e| panic!("{e}"));
    build(&plan, &results, &Overrides::default())
}

fn set_sweep(doc: &mut Table, key: &str, values: Vec<Value>) {
    doc["sweep"]
        .as_table_mut()
        .unwrap()
        .insert(key.to_string(), Value::Array(values));
}

fn group<'a>(point: &'a PointSummary, name: &str) -> &'a GroupSummary {
    point.flows.iter().find(|g| g.group == name).unwrap()
}

fn point<'a>(s: &'a Summary, key: &str, value: &str) -> &'a PointSummary {
    s.points
        .iter()
        .find(|p| p.params[key].as_str() == Some(value))
        .unwrap()
}

fn kbps(v: f64) -> String {
    format!("{:.1} kbit/s", v / 1e3)
}

/// QSTP paper Fig. 4: the single flow's mean (target 500 kbit/s) against 15 TCP micro-flows, per
/// protocol, over 2 runs of 90 s (warm-up 15 s).
fn fig4_means() -> (f64, f64, f64, String) {
    let s = run(
        "qstp-fig4",
        Overrides {
            runs: Some(2),
            duration: Some(Duration::from_secs(90)),
            ..Default::default()
        },
        |_| {},
    );
    let mean = |proto: &str| {
        group(point(&s, "group.AB.protocol", proto), "AB")
            .aggregate_bps
            .mean
    };
    let (tcp, tfrc_sack, qstp) = (mean("tcp"), mean("tfrc-sack"), mean("qstp"));
    let shown = format!(
        "tcp {}, tfrc-sack {}, qstp {}",
        kbps(tcp),
        kbps(tfrc_sack),
        kbps(qstp)
    );
    (tcp, tfrc_sack, qstp, shown)
}

#[test]
fn qstp_holds_its_target_in_fig4_where_tcp_falls_short() {
    let (tcp, _, qstp, shown) = fig4_means();
    // The paper states no number ("the TCP flow does not reach its target rate"): reaching means
    // within 5% of the target, as validation/paper-claims.toml reads every such claim. The lab's
    // SACK TCP gets 93% here (2 runs of 90 s), and 94% over the scenario's runs
    // (validation/papers.md); 89% there before the ACKs of a spurious retransmission's copies
    // stopped counting as duplicate ACKs (RFC 6675 §2).
    assert!(qstp >= 0.95 * 500_000.0, "QSTP holds 500k: {shown}");
    assert!(tcp < 0.95 * 500_000.0, "TCP falls short of 500k: {shown}");
}

// QSTP paper Fig. 4(b), §5.2 says TFRC/SACK "does not reach its target rate either". This lab does
// not reproduce that with the testbed's RIO-C core (ALTQ's RIO couples the out-profile average to
// all packets): in-profile packets are protected, TFRC/SACK loses only its own excess (p ~ 1.2%,
// R ~ 0.21 s with the queue), and RFC 5348's equation then allows ~500-570k, so it sits at its
// target (measured 101%). The paper's testbed ran a Java TFRC over ALTQ and dummynet, whose
// transients the simulation does not model. What holds here, asserted below: QSTP never does
// worse than TFRC/SACK, and with RIO-D in the core both TCP and TFRC/SACK fall far short while
// QSTP comes close to its target.

#[test]
fn qstp_never_gets_less_than_tfrc_sack_in_fig4() {
    let (_, tfrc_sack, qstp, shown) = fig4_means();
    assert!(qstp >= 0.98 * tfrc_sack, "QSTP at least TFRC/SACK: {shown}");
}

#[test]
fn with_rio_d_only_qstp_comes_close_to_its_target_in_fig4() {
    let overrides = Overrides {
        runs: Some(2),
        duration: Some(Duration::from_secs(90)),
        ..Default::default()
    };
    let s = run("qstp-fig4", overrides, |doc| {
        let queue = doc["bottleneck"]["queue"].as_table_mut().unwrap();
        queue.insert("mode".into(), Value::String("rio-d".into()));
    });
    let mean = |proto: &str| {
        group(point(&s, "group.AB.protocol", proto), "AB")
            .aggregate_bps
            .mean
    };
    let (tcp, tfrc_sack, qstp) = (mean("tcp"), mean("tfrc-sack"), mean("qstp"));
    let shown = format!(
        "tcp {}, tfrc-sack {}, qstp {}",
        kbps(tcp),
        kbps(tfrc_sack),
        kbps(qstp)
    );
    assert!(
        tcp < 0.6 * 500_000.0,
        "TCP falls far short of 500k: {shown}"
    );
    assert!(
        tfrc_sack < 0.6 * 500_000.0,
        "TFRC/SACK falls far short of 500k: {shown}"
    );
    assert!(
        qstp >= 0.85 * 500_000.0,
        "QSTP comes close to 500k: {shown}"
    );
    assert!(
        qstp >= 1.5 * tfrc_sack,
        "QSTP well above TFRC/SACK: {shown}"
    );
}

/// QSTP paper Fig. 5: the single flow (400k) against n TCP micro-flows (400k), per protocol and n,
/// over 2 runs of 60 s, n in {1, 10, 20}: `(protocol, n, mean, min)` and a printable table.
fn fig5_means() -> (Vec<(String, i64, f64, f64)>, String) {
    let s = run(
        "qstp-fig5",
        Overrides {
            runs: Some(2),
            duration: Some(Duration::from_secs(60)),
            ..Default::default()
        },
        |doc| {
            set_sweep(
                doc,
                "group.CD.flows",
                vec![Value::Integer(1), Value::Integer(10), Value::Integer(20)],
            );
        },
    );
    let mut rows = Vec::new();
    let mut shown = String::new();
    for p in &s.points {
        let proto = p.params["group.AB.protocol"].as_str().unwrap().to_string();
        let n = p.params["group.CD.flows"].as_i64().unwrap();
        let ab = group(p, "AB").aggregate_bps;
        shown.push_str(&format!(
            "{proto} n={n}: {} (min {})\n",
            kbps(ab.mean),
            kbps(ab.min)
        ));
        rows.push((proto, n, ab.mean, ab.min));
    }
    (rows, shown)
}

#[test]
fn qstp_holds_its_target_across_fig5_where_tcp_falls_short() {
    // With n = 1 both sides are alike (same target and RTT; TCP against TCP) and share evenly, so
    // "falls short" is asserted for the larger aggregates only: below the 400k target, as the
    // paper says. Not by a margin: the lab's TCP falls short by a few percent (validation/papers.md
    // counts that as a disagreement), ns-2's by about a tenth (validation/ns2/table.md).
    let (rows, shown) = fig5_means();
    for (proto, n, mean, _) in &rows {
        match proto.as_str() {
            "qstp" => assert!(
                *mean >= 0.95 * 400_000.0,
                "QSTP holds 400k at n={n}:\n{shown}"
            ),
            "tcp" if *n >= 10 => assert!(
                *mean < 400_000.0,
                "TCP falls short of 400k at n={n}:\n{shown}"
            ),
            _ => {}
        }
    }
}

#[test]
fn qstp_never_gets_less_than_tfrc_sack_across_fig5() {
    // QSTP paper Fig. 5(b) has TFRC/SACK "in the same order of magnitude than TCP"; here, with the
    // RIO-C core, it stays near its target (see the note above the fig4 tests). QSTP never does
    // worse than it.
    let (rows, shown) = fig5_means();
    for (proto, n, mean, _) in &rows {
        if proto == "tfrc-sack" {
            let qstp = rows
                .iter()
                .find(|(p, m, _, _)| p == "qstp" && m == n)
                .map(|r| r.2)
                .unwrap();
            assert!(
                qstp >= 0.98 * mean,
                "QSTP at least TFRC/SACK at n={n}:\n{shown}"
            );
        }
    }
}

#[test]
fn gtfrc_reaches_800k_in_gtfrc_fig4_where_tfrc_does_not() {
    // gTFRC paper Fig. 4: 800k at 640 ms vs 200k at 40 ms, exactly provisioned. 2 runs of 100 s.
    let s = run(
        "gtfrc-fig4",
        Overrides {
            runs: Some(2),
            ..Default::default()
        },
        |_| {},
    );
    let key = "group.A.protocol+group.B.protocol";
    let tfrc = group(point(&s, key, "tfrc"), "A").aggregate_bps.mean;
    let gtfrc = group(point(&s, key, "gtfrc"), "A").aggregate_bps.mean;
    let shown = format!("tfrc {}, gtfrc {}", kbps(tfrc), kbps(gtfrc));
    assert!(gtfrc >= 0.95 * 800_000.0, "gTFRC reaches 800k: {shown}");
    assert!(tfrc < 0.9 * 800_000.0, "TFRC does not: {shown}");
}

#[test]
fn tcp_gets_the_same_throughput_beside_tfrc_or_gtfrc_in_gtfrc_table4() {
    // gTFRC paper Table 4: one TCP (400k) vs four TFRC or gTFRC flows; 413.50 vs 415.92 kbit/s.
    // 3 runs of 100 s.
    let s = run(
        "gtfrc-table4",
        Overrides {
            runs: Some(3),
            ..Default::default()
        },
        |_| {},
    );
    let key = "group.R200.protocol+group.R100.protocol+group.R50a.protocol+group.R50b.protocol";
    let with_tfrc = group(point(&s, key, "tfrc"), "TCP400").aggregate_bps.mean;
    let with_gtfrc = group(point(&s, key, "gtfrc"), "TCP400").aggregate_bps.mean;
    let shown = format!(
        "TCP beside TFRC {}, beside gTFRC {}",
        kbps(with_tfrc),
        kbps(with_gtfrc)
    );
    assert!(
        (with_gtfrc - with_tfrc).abs() <= 0.10 * with_tfrc,
        "within 10%: {shown}"
    );
}

#[test]
fn results_do_not_depend_on_the_number_of_threads() {
    let o = || Overrides {
        runs: Some(2),
        duration: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/qstp-fig4.toml");
    let plan = qstp_lab::scenario::load(&path, &o()).unwrap();
    let one = execute(&plan, 1, qstp_lab::simulate, &|_| {}).unwrap();
    let two = execute(&plan, 2, qstp_lab::simulate, &|_| {}).unwrap();
    assert_eq!(one, two);
    assert_eq!(
        build(&plan, &one, &Overrides::default()),
        build(&plan, &two, &Overrides::default())
    );
    assert!(one.iter().all(|p| p.runs.iter().all(|r| r.events > 0)));
}

/// The Free's matching metrics in a Free & Stunts summary point.
fn free_matching(point: &PointSummary) -> qstp_sim::delegation::Matching {
    group(point, "F")
        .matching
        .expect("the Free has matching metrics")
}

fn int_point<'a>(s: &'a Summary, key: &str, value: i64) -> &'a PointSummary {
    s.points
        .iter()
        .find(|p| p.params[key].as_i64() == Some(value))
        .unwrap()
}

/// Free & Stunts Fig. 4 (80 Mbit/s, 16 of 20 cross flows switched on and off, the step trace):
/// with the PI controller and 10 Stunts the Free matches its trace with a V* at least 4 times
/// lower than the same connection without delegation (120 s, one run each). The run is cut in
/// the file, so that the scenario's 20 s warm-up stays whole (a `duration` override would scale
/// it to 8 s, and the Free's start, above its target while its losses go to the Stunts, would
/// count).
#[test]
fn free_and_stunts_match_the_trace_far_better_than_the_free_alone() {
    let s = run(
        "fs-fig4",
        Overrides {
            runs: Some(1),
            ..Default::default()
        },
        |doc| {
            doc.insert("duration".into(), Value::String("120s".into()));
            let sweep = doc["sweep"].as_table_mut().unwrap();
            sweep.clear();
            sweep.insert(
                "delegation.controller.kind".into(),
                Value::Array(vec!["none".into(), "pi".into()]),
            );
            // The paper's middle panel: 80 Mbit/s, 20 cross flows (16 of them switched).
            let point: Value = Value::Array(vec!["80M".into(), 20.into(), 16.into()]);
            sweep.insert(
                "bottleneck.rate,group.X.flows,group.X.onoff.flows".into(),
                Value::Array(vec![point]),
            );
        },
    );
    let alone = free_matching(point(&s, "delegation.controller.kind", "none"));
    let pi = free_matching(point(&s, "delegation.controller.kind", "pi"));
    assert!(
        pi.v_star * 4.0 <= alone.v_star,
        "V* with delegation {:.3e}, without {:.3e} (bit/s)^2",
        pi.v_star,
        alone.v_star
    );
}

/// Free & Stunts Fig. 5, non-random cross traffic: V* has an interior optimum in the number of
/// Stunts, lower at 6 Stunts than at 2 (too few to take the Free's reductions) and at 20 (a
/// bottleneck congested into timeouts). 150 s, one run per point, as the paper's points.
#[test]
fn free_and_stunts_have_an_interior_optimum_in_the_number_of_stunts() {
    let s = run(
        "fs-fig5",
        Overrides {
            duration: Some(Duration::from_secs(150)),
            ..Default::default()
        },
        |doc| {
            set_sweep(doc, "group.S.flows", vec![2.into(), 6.into(), 20.into()]);
            set_sweep(doc, "group.X.onoff.flows", vec![0.into()]);
        },
    );
    let v = |n: i64| free_matching(int_point(&s, "group.S.flows", n)).v_star;
    let (few, mid, many) = (v(2), v(6), v(20));
    assert!(
        mid < few && mid < many,
        "V* at 2, 6, 20 Stunts: {few:.3e}, {mid:.3e}, {many:.3e} (bit/s)^2"
    );
}

/// The AF-over-ATM paper's Fig. 2 scenario at one RTT, shortened to 60 s.
fn atm_fig2(rtt: &str) -> PointSummary {
    let s = run(
        "atm-fig2",
        Overrides {
            duration: Some(Duration::from_secs(60)),
            ..Default::default()
        },
        |doc| {
            let sweep = doc["sweep"].as_table_mut().unwrap();
            let key = sweep.keys().next().unwrap().clone();
            sweep.insert(key, Value::Array(vec![Value::String(rtt.into())]));
        },
    );
    s.points.into_iter().next().unwrap()
}

/// Per-connection goodput of the AF and of the DF groups, means, bit/s.
fn atm_means(p: &PointSummary) -> (f64, f64) {
    let mean = |phb: &str| {
        let groups: Vec<&GroupSummary> = p
            .flows
            .iter()
            .filter(|g| g.phb.as_deref() == Some(phb))
            .collect();
        groups.iter().map(|g| g.goodput_bps.mean).sum::<f64>() / groups.len() as f64
    };
    (mean("af"), mean("df"))
}

#[test]
fn af_over_atm_gives_each_phb_close_to_the_papers_estimate_at_80ms() {
    let p = atm_fig2("80ms");
    let (af, df) = atm_means(&p);
    // 003 §4.1: estimates 4.91 (AF) and 2.10 (DF) Mbit/s per connection, "almost close" to the
    // measurements. The lab computes them from the same assumptions.
    let estimate = |name: &str| group(&p, name).estimate_bps.unwrap();
    assert!((estimate("AF1") / 1e4).round() == 491.0 && (estimate("DF3") / 1e4).round() == 210.0);
    assert!(
        af > 0.85 * estimate("AF1") && af < estimate("AF1"),
        "AF {}",
        kbps(af)
    );
    assert!(
        (df - estimate("DF1")).abs() < 0.15 * estimate("DF1"),
        "DF {}",
        kbps(df)
    );
    // Queueing delay of the probes (the paper's ping): AF mean 0 ms (max 7), DF mean 8 (max 48).
    let delay = |name: &str| group(&p, name).atm.unwrap();
    for name in ["AF1", "AF2"] {
        let d = delay(name);
        assert!(d.queueing_delay_ms.unwrap() < 2.0, "{name}: {d:?}");
        assert!(d.queueing_delay_max_ms.unwrap() < 10.0, "{name}: {d:?}");
    }
    for name in ["DF1", "DF4"] {
        let d = delay(name);
        assert!(d.queueing_delay_ms.unwrap() > 5.0, "{name}: {d:?}");
        let max = d.queueing_delay_max_ms.unwrap();
        assert!((35.0..70.0).contains(&max), "{name}: {d:?}");
    }
}

#[test]
fn af_over_atm_still_differentiates_at_20ms_and_no_longer_at_160ms() {
    // 003 §4.1: "in the case of 20ms RTT (heavy congestion), the similar results of throughput
    // ... but, in the case of 160ms RTT (no congestion), the no differentiation".
    let (af, df) = atm_means(&atm_fig2("20ms"));
    assert!(af > 2.0 * df, "AF {} DF {}", kbps(af), kbps(df));
    let (af, df) = atm_means(&atm_fig2("160ms"));
    assert!(
        (af - df).abs() < 0.03 * df,
        "AF {} DF {}",
        kbps(af),
        kbps(df)
    );
}

#[test]
fn the_mbs0_of_an_af_pvp_does_not_change_its_throughput() {
    // 003 §4.2.2 (Fig. 5): "changing MBS0 values have no effect on the differentiation".
    let s = run(
        "atm-fig5",
        Overrides {
            duration: Some(Duration::from_secs(40)),
            ..Default::default()
        },
        |doc| {
            set_sweep(
                doc,
                "group.AF2.marker.mbs",
                vec![Value::Integer(1032), Value::Integer(33024)],
            )
        },
    );
    let af2: Vec<f64> = s
        .points
        .iter()
        .map(|p| group(p, "AF2").aggregate_bps.mean)
        .collect();
    let df1 = group(&s.points[0], "DF1").aggregate_bps.mean;
    assert!((af2[0] - af2[1]).abs() < 0.05 * af2[1], "{af2:?}");
    assert!(af2[0] > 1.5 * df1, "AF2 {af2:?} DF1 {}", kbps(df1));
}

#[test]
fn with_one_shared_buffer_an_af_pvp_gets_more_the_higher_its_scr0() {
    // 003 §4.2.1 (Fig. 3): AF2's share grows with its SCR0. With the weighted service the lab
    // uses by default the AF buffer never fills at RTT 80 ms (the 48-kbyte windows cap AF below
    // its half of the trunk), so SCR0 changes nothing there (docs/atm.md); with one buffer and
    // one SCD threshold for both PHBs, AF2's tagged cells meet the DF backlog and SCR0 counts.
    let s = run(
        "atm-fig3",
        Overrides {
            duration: Some(Duration::from_secs(40)),
            ..Default::default()
        },
        |doc| {
            let atm = doc["bottleneck"]["atm"].as_table_mut().unwrap();
            atm.insert("service".into(), Value::String("shared".into()));
            atm.remove("weights");
            set_sweep(
                doc,
                "group.AF2.marker.scr",
                vec![Value::String("2M".into()), Value::String("18.72M".into())],
            )
        },
    );
    let af2: Vec<f64> = s
        .points
        .iter()
        .map(|p| group(p, "AF2").aggregate_bps.mean)
        .collect();
    assert!(af2[1] > 2.0 * af2[0], "AF2 at 2M and 18.72M: {af2:?}");
}
