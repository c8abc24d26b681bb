//! `qstp fluid` as a user runs it: the paper's Fig. 3 scenario solved, compared with a packet run
//! of the same file, and what it cannot solve refused before anything is written.

mod common;

use common::{fresh, qstp, scenario};

#[test]
fn fluid_writes_the_lab_outputs_and_draws_itself_against_the_packet_run() {
    let (fluid, packet) = (fresh("fluid"), fresh("packet"));
    let file = scenario("fs-fluid-fig3.toml");
    let file = file.to_str().unwrap();
    let (ok, _, stderr) = qstp(&[
        "run",
        file,
        "--out",
        packet.to_str().unwrap(),
        "--duration",
        "10s",
    ]);
    assert!(ok, "{stderr}");
    let (ok, stdout, stderr) = qstp(&[
        "fluid",
        file,
        "--out",
        fluid.to_str().unwrap(),
        "--duration",
        "10s",
        "--compare-with",
        packet.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("means after the warm-up"), "{stdout}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fluid.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["fluid_model"], true);
    assert_eq!(summary["fluid"]["step"], "1ms");
    let free = &summary["points"][0]["flows"][0];
    assert_eq!(free["group"], "F");
    assert!(free["matching"]["v_star"].as_f64().unwrap() > 0.0, "{free}");
    assert!(
        free["goodput_bps"]["mean"].as_f64().unwrap() > 0.0,
        "{free}"
    );
    let svg = std::fs::read_to_string(fluid.join("plots/fluid-vs-packet.svg")).unwrap();
    assert!(svg.contains("Free, packet") && svg.contains("Free, fluid"));
    // Asked again, it replaces its own folder, and the same inputs give a byte-identical summary
    // (no wall-clock time in it).
    let again = || {
        let (ok, _, stderr) = qstp(&[
            "fluid",
            file,
            "--out",
            fluid.to_str().unwrap(),
            "--duration",
            "5s",
        ]);
        assert!(ok, "{stderr}");
        std::fs::read(fluid.join("summary.json")).unwrap()
    };
    let first = again();
    assert!(
        first == again(),
        "two solutions of one scenario wrote different summaries"
    );
    let _ = std::fs::remove_dir_all(&fluid);
    let _ = std::fs::remove_dir_all(&packet);
}

#[test]
fn fluid_refuses_what_it_cannot_solve_naming_the_key() {
    let out = fresh("refused");
    let file = scenario("fs-fluid-fig3.toml");
    let file = file.to_str().unwrap();
    let (ok, _, stderr) = qstp(&[
        "fluid",
        file,
        "--out",
        out.to_str().unwrap(),
        "--step",
        "50ms",
    ]);
    assert!(!ok);
    assert!(stderr.contains("fluid.step"), "{stderr}");
    assert!(!out.exists(), "nothing is written");
    // A drop-tail bottleneck.
    let text = std::fs::read_to_string(file).unwrap().replace(
        r#"kind = "red", limit = 45, curve = [11.25, 45, 0.1], weight = 0.002"#,
        r#"kind = "droptail", limit = 45"#,
    );
    let dir = fresh("droptail");
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("fs-fluid-fig3.toml");
    std::fs::write(&copy, text).unwrap();
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    std::fs::copy(
        scenario("traces/fs-fluid-fig3.csv"),
        dir.join("traces/fs-fluid-fig3.csv"),
    )
    .unwrap();
    let (ok, _, stderr) = qstp(&[
        "fluid",
        copy.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(stderr.contains("bottleneck.queue"), "{stderr}");
    // A folder of someone else's files is not replaced.
    let foreign = fresh("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let (ok, _, _) = qstp(&["fluid", file, "--out", foreign.to_str().unwrap()]);
    assert!(!ok);
    assert_eq!(
        std::fs::read_to_string(foreign.join("notes.txt")).unwrap(),
        "mine"
    );
    for d in [dir, foreign] {
        let _ = std::fs::remove_dir_all(d);
    }
}
