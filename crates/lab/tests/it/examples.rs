//! Every file in scenarios/examples runs, and together they show every queue, marker, loss model
//! and protocol the lab has.

use qstp_lab::runner::execute;
use qstp_lab::scenario::{load, protocol_name, Overrides};
use qstp_lab::summary::build;
use qstp_proto::Duration;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

/// The variant name of a spec value, from its Debug text (`Rio { .. }` gives `Rio`).
fn variant(debug: String) -> String {
    debug
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn every_example_runs_and_every_flow_moves_data() {
    let overrides = Overrides {
        runs: Some(1),
        duration: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let files = examples();
    assert!(files.len() >= 4, "{files:?}");
    for file in files {
        let plan = load(&file, &overrides).unwrap_or_else(|e| panic!("{e}"));
        let results = execute(&plan, 2, qstp_lab::simulate, &|_| {})
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let summary = build(&plan, &results, &overrides);
        for point in &summary.points {
            for g in &point.flows {
                assert!(
                    g.throughput_bps.mean > 0.0,
                    "{}: group {} moved nothing",
                    file.display(),
                    g.group
                );
            }
        }
    }
}

#[test]
fn the_examples_show_every_kind_at_least_once() {
    let (mut queues, mut markers, mut losses, mut protocols) = (
        BTreeSet::new(),
        BTreeSet::new(),
        BTreeSet::new(),
        BTreeSet::new(),
    );
    for file in examples() {
        let plan = load(&file, &Overrides::default()).unwrap();
        for point in &plan.points {
            let s = &point.scenario;
            queues.insert(variant(format!("{:?}", s.bottleneck().queue)));
            if let Some(loss) = &s.bottleneck().loss {
                losses.insert(variant(format!("{loss:?}")));
            }
            for g in &s.groups {
                if let Some(m) = &g.marker {
                    markers.insert(variant(format!("{m:?}")));
                }
                protocols.insert(protocol_name(&g.protocol).to_string());
            }
        }
    }
    let set = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(
        queues,
        set(&["Cbq", "CoDel", "DropTail", "FqCoDel", "Pie", "Red", "Rio"])
    );
    assert_eq!(
        markers,
        set(&["Srtcm", "TokenBucket", "Trtcm", "Tsw2", "Tsw3"])
    );
    assert_eq!(losses, set(&["Bernoulli", "GilbertElliott"]));
    let base = |p: &String| p.split('/').next().unwrap_or(p).to_string();
    assert_eq!(
        protocols.iter().map(base).collect::<BTreeSet<_>>(),
        set(&qstp_lab::scenario::protocols())
    );
}

#[test]
fn a_scenario_runs_bbr_and_vegas_by_name_and_refuses_their_unknown_parameters() {
    let dir = std::env::temp_dir().join(format!("qstp-bbr-vegas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = |congestion: &str| {
        format!(
            "name = \"bbr-vegas\"\nduration = \"5s\"\nwarmup = \"1s\"\n\
             [bottleneck]\nrate = \"10M\"\ndelay = \"10ms\"\nqueue = {{ kind = \"droptail\", limit = 50 }}\n\
             [[group]]\nname = \"B\"\nprotocol = \"tcp\"\ncongestion = \"bbr\"\nrtt = \"40ms\"\n\
             [[group]]\nname = \"V\"\nprotocol = \"tcp\"\ncongestion = {congestion}\nrtt = \"40ms\"\n"
        )
    };
    let good = dir.join("good.toml");
    std::fs::write(&good, scenario("{ name = \"vegas\", alpha = 1, beta = 3 }")).unwrap();
    let overrides = Overrides::default();
    let plan = load(&good, &overrides).unwrap_or_else(|e| panic!("{e}"));
    let results = execute(&plan, 1, qstp_lab::simulate, &|_| {}).unwrap();
    let summary = build(&plan, &results, &overrides);
    for g in &summary.points[0].flows {
        assert!(
            g.throughput_bps.mean > 0.0,
            "group {} moved nothing",
            g.group
        );
    }
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, scenario("{ name = \"vegas\", delta = 1 }")).unwrap();
    let err = load(&bad, &overrides).unwrap_err().to_string();
    assert!(err.contains("vegas has no parameter 'delta'"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
