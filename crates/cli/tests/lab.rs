//! `qstp run` and `qstp plot` as a user runs them.

mod common;

use common::{fresh, qstp, scenario};

/// `qstp run` of the shipped scenario `name` into `out` with `runs` runs of `duration` and
/// `extra` flags: (success, stdout, stderr).
fn run(
    name: &str,
    out: &std::path::Path,
    runs: &str,
    duration: &str,
    extra: &[&str],
) -> (bool, String, String) {
    let file = scenario(name);
    let mut args = vec![
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--runs",
        runs,
        "--duration",
        duration,
    ];
    args.extend_from_slice(extra);
    qstp(&args)
}

#[test]
fn run_writes_the_results_and_plot_redraws_them_without_simulating() {
    let out = fresh("plot");
    let (ok, stdout, stderr) = run("qstp-fig4.toml", &out, "2", "10s", &[]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("thr/target"), "{stdout}");
    // The split between simulating and writing, and how to skip the writing.
    assert!(
        stdout.contains("the outputs took") && stdout.contains("--series none --no-plots"),
        "{stdout}"
    );
    for name in [
        "summary.json",
        "scenario.toml",
        "runs.csv",
        "series.csv",
        "report.html",
    ] {
        assert!(out.join(name).is_file(), "{name} missing");
    }
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    std::fs::remove_dir_all(out.join("plots")).unwrap();
    std::fs::remove_file(out.join("report.html")).unwrap();

    let (ok, stdout, stderr) = qstp(&["plot", out.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("report:"), "{stdout}");
    assert!(out.join("report.html").is_file());
    assert!(out.join("plots").join("throughput-panels.svg").is_file());
    assert!(out.join("plots").join("throughput-panels.pdf").is_file());
    assert_eq!(
        std::fs::read_to_string(out.join("summary.json")).unwrap(),
        summary,
        "plot leaves the data alone"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn run_refuses_a_folder_it_did_not_write_before_simulating() {
    let out = fresh("foreign");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("thesis.tex"), "precious").unwrap();
    let file = scenario("qstp-fig4.toml");
    let (ok, _, stderr) = qstp(&[
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("was not written by `qstp run`"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(out.join("thesis.tex")).unwrap(),
        "precious"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn choose_ranks_the_controls_of_a_sweep_per_flow_count_and_weight() {
    let out = fresh("choose");
    std::fs::create_dir_all(&out).unwrap();
    let file = out.join("sweep.toml");
    std::fs::write(
        &file,
        r#"name = "choose-test"
duration = "5s"
runs = 2
[bottleneck]
rate = "20M"
delay = "10ms"
queue = { kind = "droptail", limit = 50 }
[[group]]
name = "S"
protocol = "tcp"
rtt = "40ms"
access = { rate = "100M", delay = "1ms" }
[sweep]
"group.S.congestion" = ["newreno", "cubic"]
"group.S.flows" = [1, 3]
"#,
    )
    .unwrap();
    let results = out.join("results");
    let (ok, _, stderr) = qstp(&[
        "run",
        file.to_str().unwrap(),
        "--out",
        results.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    // The paper's Figs. 3-7: efficiency, fairness and performance against the number of flows.
    for stem in [
        "efficiency-vs-flows",
        "jain-vs-flows",
        "performance-0.5-vs-flows",
    ] {
        assert!(
            results.join("plots").join(format!("{stem}.svg")).is_file(),
            "{stem}"
        );
    }
    // Figs. 8-19: each flow's throughput, RTT and loss rate over time, per point.
    let per_flow = std::fs::read_dir(results.join("plots"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("flows-p") && name.ends_with(".svg")
        })
        .count();
    assert_eq!(per_flow, 4);
    let series = std::fs::read_to_string(results.join("series.csv")).unwrap();
    for metric in [",rtt_ms,", ",cwnd_bytes,", ",loss_rate,", ",loss_events,"] {
        assert!(series.contains(metric), "{metric}");
    }
    let dir = results.to_str().unwrap();
    let (ok, stdout, stderr) = qstp(&["choose", dir, "--flows", "3", "--alpha", "0.5", "--json"]);
    assert!(ok, "{stderr}");
    let choice: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (choice["flows"].as_u64(), choice["alpha"].as_f64()),
        (Some(3), Some(0.5))
    );
    let ranking = choice["ranking"].as_array().unwrap();
    let names: Vec<&str> = ranking
        .iter()
        .map(|r| r["congestion"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2);
    assert!(
        names.contains(&"newreno") && names.contains(&"cubic"),
        "{names:?}"
    );
    assert_eq!(choice["best"], ranking[0]["congestion"]);
    let perf = |r: &serde_json::Value| r["performance"].as_f64().unwrap();
    assert!(perf(&ranking[0]) >= perf(&ranking[1]));
    let (e, f) = (
        ranking[0]["efficiency"].as_f64().unwrap(),
        ranking[0]["jain"].as_f64().unwrap(),
    );
    assert!((perf(&ranking[0]) - (0.5 * e + 0.5 * f)).abs() < 1e-12);
    assert!(e > 0.3 && e <= 1.05 && f > 0.3 && f <= 1.0, "{e} {f}");

    // Without --flows and --alpha: every flow count times the paper's three weights.
    let (ok, stdout, _) = qstp(&["choose", dir]);
    assert!(ok);
    assert_eq!(stdout.lines().count(), 1 + 2 * 3, "{stdout}");

    let (ok, _, stderr) = qstp(&["choose", dir, "--flows", "7"]);
    assert!(!ok);
    assert!(
        stderr.contains("no point of the results has 7 flows (they have: 1, 3)"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn run_help_lists_every_congestion_control_and_its_parameters() {
    let (ok, stdout, _) = qstp(&["run", "--help"]);
    assert!(ok);
    for name in ["newreno", "cubic", "illinois", "yeah", "compound"] {
        assert!(
            stdout.contains(&format!("  {name}")),
            "{name} missing:\n{stdout}"
        );
    }
    // Each parameter with its kind: flags as true or false, counts as whole numbers.
    assert!(stdout.contains("fast_convergence = true ("), "{stdout}");
    assert!(stdout.contains("; true or false)"), "{stdout}");
    assert!(stdout.contains("ai_cnt = 100 ("), "{stdout}");
    assert!(stdout.contains("; a whole number, 1 to "), "{stdout}");
    assert!(stdout.contains("access = { rate"), "{stdout}");
    // The registry of sources, every name of each kind on one line.
    assert!(
        stdout.contains("  tfrc | tfrc-sack | gtfrc | qstp: "),
        "{stdout}"
    );
    assert!(stdout.contains("  onoff: on/off UDP"), "{stdout}");
}

#[test]
fn run_into_a_closed_pipe_ends_quietly() {
    // `qstp run X | head`: the reader is gone before the table is printed. The run ends without
    // a panic's message (Rust's default is a panic on the failed print).
    use std::process::{Command, Stdio};
    let out = fresh("pipe");
    let file = scenario("qstp-fig4.toml");
    let mut child = Command::new(common::QSTP)
        .args([
            "run",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--runs",
            "1",
            "--duration",
            "5s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn run_into_a_folder_it_cannot_make_fails_before_simulating() {
    // /proc takes no new folders, even from root: the refusal comes before the run's header
    // line, that is before any simulated second, and leaves nothing behind.
    let file = scenario("qstp-fig4.toml");
    let (ok, _, stderr) = qstp(&[
        "run",
        file.to_str().unwrap(),
        "--out",
        "/proc/qstp-no-such/results",
        "--runs",
        "1",
        "--duration",
        "5s",
    ]);
    assert!(!ok);
    assert!(stderr.contains("/proc/qstp-no-such/results"), "{stderr}");
    assert!(!stderr.contains("point(s)"), "simulated first: {stderr}");
    // A folder it can make is checked by making and removing it: a run refused after the
    // check (here for a link the topology lacks) leaves neither it nor its missing parents.
    let base = fresh("made-late");
    let out = base.join("deeper");
    let (ok, _, stderr) = qstp(&[
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--pcap",
        "no-such-link",
    ]);
    assert!(!ok);
    assert!(stderr.contains("no-such-link"), "{stderr}");
    assert!(!out.parent().unwrap().exists());
}

#[test]
fn one_run_has_no_interval_and_series_and_plots_are_left_out_when_asked() {
    let out = fresh("lean");
    let (ok, stdout, stderr) = run(
        "hstcp-qos.toml",
        &out,
        "1",
        "5s",
        &["--no-series", "--no-plots"],
    );
    assert!(ok, "{stderr}");
    // One run: the 95% interval is undefined, so no ± is printed and summary.json says null.
    let e_line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("E "))
        .expect("an E line");
    assert!(!e_line.contains('±'), "{e_line}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let point = &summary["points"][0];
    assert!(point["metrics"]["efficiency"]["ci95"].is_null(), "{point}");
    assert!(point["flows"][0]["throughput_bps"]["ci95"].is_null());
    assert_eq!(summary["series_runs"], "none");
    for name in ["series.csv", "series", "plots", "report.html"] {
        assert!(!out.join(name).exists(), "{name} was written");
    }
    assert!(stdout.contains("series:  none"), "{stdout}");
    // The figures come later from the folder alone.
    let (ok, _, stderr) = qstp(&["plot", out.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(out.join("report.html").is_file());
    let _ = std::fs::remove_dir_all(&out);

    // Two runs keep only the first run's series when asked.
    let out = fresh("first-series");
    let (ok, _, stderr) = run(
        "qstp-fig4.toml",
        &out,
        "2",
        "5s",
        &["--series", "first", "--no-plots"],
    );
    assert!(ok, "{stderr}");
    let long = std::fs::read_to_string(out.join("series.csv")).unwrap();
    assert!(long
        .lines()
        .skip(1)
        .all(|l| l.split(',').nth(2) == Some("0")));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
#[allow(clippy::disallowed_types)] // wall-clock time is what the test bounds
fn ctrl_c_writes_the_finished_points_and_says_so() {
    let out = fresh("interrupted");
    let file = scenario("hstcp-qos.toml");
    let child = std::process::Command::new(common::QSTP)
        .args([
            "run",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args([
            "--runs",
            "1",
            "--duration",
            "60s",
            "--jobs",
            "1",
            "--no-plots",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // 81 points of about a second each: a few are done after 4 s.
    std::thread::sleep(std::time::Duration::from_secs(4));
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let stopped = std::time::Instant::now();
    let output = child.wait_with_output().unwrap();
    assert!(
        stopped.elapsed() < std::time::Duration::from_secs(10),
        "the run under way did not stop"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let written = summary["points"].as_array().unwrap().len();
    assert!((1..81).contains(&written), "{written} points written");
    assert!(
        stderr.contains(&format!("interrupted: the {written} of 81 point(s)")),
        "{stderr}"
    );
    // What was written is whole: one row per flow of each point's run.
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    let flows: u64 = summary["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["flows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| g["flows"].as_u64().unwrap())
                .sum::<u64>()
        })
        .sum();
    assert_eq!(runs.lines().count() as u64 - 1, flows);
    let _ = std::fs::remove_dir_all(&out);
}
