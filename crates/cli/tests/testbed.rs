//! `qstp testbed` as a user runs it: a run cut short by Ctrl-C leaves no namespace behind, and a
//! finished one writes a summary that says it was the testbed. Needs root and /dev/net/tun;
//! elsewhere each test prints why it did not run and returns.

// The test waits on the wall clock for the run to set up.
#![allow(clippy::disallowed_types)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const QSTP: &str = env!("CARGO_BIN_EXE_qstp");

fn skip_reason() -> Option<String> {
    qstp_testbed::check_privileges()
        .err()
        .map(|e| e.to_string())
}

mod common;
use common::fresh as scratch;

/// `qstp testbed FILE --out OUT`, to be run.
fn testbed(file: &std::path::Path, out: &std::path::Path) -> Command {
    let mut command = Command::new(QSTP);
    command.arg("testbed").arg(file).arg("--out").arg(out);
    command
}

/// A scenario of one reno flow (unmarked: red) and a CBR flow (within its token bucket: green)
/// through 10 Mbit/s.
fn scenario(dir: &std::path::Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("scenario.toml");
    std::fs::write(
        &path,
        r#"
name = "cli-testbed"
duration = "20s"
warmup = "0s"
[bottleneck]
rate = "10M"
delay = "5ms"
queue = { kind = "droptail", limit = 30 }
[[group]]
name = "T"
protocol = "tcp"
rtt = "20ms"
congestion = "reno"
[[group]]
name = "U"
protocol = "cbr"
rtt = "20ms"
rate = "1M"
marker = { kind = "token-bucket", rate = "2M", bucket = 10000 }
"#,
    )
    .unwrap();
    path
}

/// The namespaces of the run of process `pid`.
fn namespaces_of(pid: u32) -> Vec<String> {
    let prefix = format!("qtb{pid}x");
    qstp_testbed::ns::list()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

#[test]
fn ctrl_c_stops_the_run_and_removes_every_namespace() {
    if let Some(reason) = skip_reason() {
        eprintln!("SKIPPED ctrl_c_stops_the_run_and_removes_every_namespace: {reason}");
        return;
    }
    let dir = scratch("ctrl-c");
    let file = scenario(&dir);
    let out = dir.join("out");
    let child = testbed(&file, &out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Wait until its namespaces exist (the router's and both hosts' of both flows: 5).
    let started = Instant::now();
    while namespaces_of(pid).len() < 5 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(namespaces_of(pid).len(), 5, "the run set up its namespaces");
    std::thread::sleep(Duration::from_millis(500));
    let killed = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
    assert!(!out.join("summary.json").exists(), "nothing written");
}

#[test]
fn a_finished_run_writes_a_summary_that_says_it_was_the_testbed() {
    if let Some(reason) = skip_reason() {
        eprintln!("SKIPPED a_finished_run_writes_a_summary_that_says_it_was_the_testbed: {reason}");
        return;
    }
    let dir = scratch("summary");
    let file = scenario(&dir);
    let out = dir.join("out");
    let output = testbed(&file, &out)
        .args(["--duration", "2s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let text = std::fs::read_to_string(out.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(summary["testbed"], true);
    let run = &summary["testbed_runs"][0];
    assert!(
        run["router"]["forward"]["packets"].as_u64().unwrap() > 100,
        "{run}"
    );
    assert_eq!(run["groups"][0]["congestion"], "reno");
    assert!(
        run["groups"][1]["congestion"].is_null(),
        "the cbr group has none"
    );
    // The CBR flow got about its 1 Mbit/s through (it is not congested: TCP fills the rest).
    let groups = &summary["points"][0]["flows"];
    let cbr = groups[1]["aggregate_bps"]["mean"].as_f64().unwrap();
    assert!((0.8e6..1.1e6).contains(&cbr), "cbr {cbr}");
    // The router's marker coloured the CBR packets green; the unmarked TCP packets are red.
    let queue = &summary["points"][0]["queues"][0];
    let green = queue["in_profile"]["packets"].as_f64().unwrap();
    let red = queue["out_profile"]["packets"].as_f64().unwrap();
    assert!(green > 100.0 && red > 100.0, "{queue}");
    // A second run into the folder it wrote is allowed, as for `qstp run`.
    assert!(out.join(".qstp-results").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A command group: the real `qstp recv --once` and `qstp send` of a file between the
/// namespaces, beside one reno flow.
fn command_scenario(dir: &std::path::Path, file: &std::path::Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("command.toml");
    std::fs::write(
        &path,
        format!(
            r#"
name = "cli-testbed-command"
duration = "12s"
warmup = "0s"
[bottleneck]
rate = "10M"
delay = "5ms"
queue = {{ kind = "droptail", limit = 30 }}
[[group]]
name = "T"
protocol = "tcp"
rtt = "20ms"
congestion = "reno"
[[group]]
name = "Q"
protocol = "command"
rtt = "20ms"
receiver = ["{{qstp}}", "recv", "--listen", "{{listen}}", "--out", "{{out}}/received/", "--once"]
sender = ["{{qstp}}", "send", "{}", "--to", "{{receiver}}", "--soft-target", "2M", "--stunts", "2", "--stats-json", "{{out}}/send.json"]
"#,
            file.display()
        ),
    )
    .unwrap();
    path
}

#[test]
fn qstp_send_with_a_soft_target_runs_between_namespaces_and_the_lab_refuses_the_file() {
    let dir = scratch("command");
    let file = dir.join("payload.bin");
    std::fs::create_dir_all(&*dir).unwrap();
    let bytes: Vec<u8> = (0..2_000_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    std::fs::write(&file, &bytes).unwrap();
    let scenario = command_scenario(&dir, &file);
    // The lab cannot simulate programs: it says so, naming file and key, before anything runs.
    let out = Command::new(QSTP)
        .args(["run", scenario.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("command.toml: group.Q.protocol: \"command\" runs programs"),
        "{err}"
    );
    if let Some(reason) = skip_reason() {
        eprintln!("SKIPPED qstp_send_with_a_soft_target_runs_between_namespaces: {reason}");
        return;
    }
    let results = dir.join("out");
    let out = testbed(&scenario, &results).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("group Q flow 0, run 0: completed; sender exit status 0"),
        "{stdout}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("summary.json")).unwrap())
            .unwrap();
    let c = &summary["testbed_runs"][0]["commands"][0];
    assert_eq!(c["completed"], true, "{c}");
    let q = summary["points"][0]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "Q")
        .unwrap();
    assert_eq!(q["protocol"], "command");
    // The file arrived whole, verified, and its sender ran a group with 2 Stunts.
    let flow = results.join("commands/run-0/Q-0");
    assert_eq!(
        std::fs::read(flow.join("received/payload.bin")).unwrap(),
        bytes
    );
    let send: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(flow.join("send.json")).unwrap()).unwrap();
    assert_eq!(send["verified"], true);
    assert_eq!(send["soft_target"]["stunts"], 2);
    assert_eq!(send["bytes"], 2_000_000);
}
