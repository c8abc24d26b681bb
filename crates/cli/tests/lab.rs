//! `qstp run` and `qstp plot` as a user runs them.

use std::path::{Path, PathBuf};
use std::process::Command;

const QSTP: &str = env!("CARGO_BIN_EXE_qstp");

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("qstp-cli-lab-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
}

fn qstp(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(QSTP).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn run_writes_the_results_and_plot_redraws_them_without_simulating() {
    let out = scratch("plot");
    let file = scenario("qstp-fig4.toml");
    let (ok, stdout, stderr) = qstp(&[
        "run",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--runs",
        "2",
        "--duration",
        "10s",
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("thr/target"), "{stdout}");
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
    let out = scratch("foreign");
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
