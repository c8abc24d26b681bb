//! `protocol = "command"` groups end to end: programs in a flow's namespaces, through the router.
//! These tests need root and /dev/net/tun (and python3 for the programs); elsewhere each prints
//! why it did not run and returns.

// A test measures how soon a failing run ends, on the wall clock.
#![allow(clippy::disallowed_types)]

use qstp_lab::scenario::{parse, Overrides};
use qstp_testbed::command::Programs;
use qstp_testbed::{check_privileges, ns, run_with, Options, TestbedError, TestbedRun};
use std::path::PathBuf;

fn skip_reason() -> Option<String> {
    if let Err(e) = check_privileges() {
        return Some(e.to_string());
    }
    let python = std::process::Command::new("python3")
        .arg("-c")
        .arg("pass")
        .status();
    match python {
        Ok(s) if s.success() => None,
        _ => Some("the test programs need python3".into()),
    }
}

macro_rules! require_testbed {
    ($name:literal) => {
        if let Some(reason) = skip_reason() {
            eprintln!("SKIPPED {}: {reason}", $name);
            return;
        }
    };
}

/// A TCP receiver that counts what one sender sends, prints the count and exits.
const COUNTER: &str = "import socket\n\
s = socket.socket()\n\
s.bind(('{receiver_ip}', {port}))\n\
s.listen(1)\n\
c, _ = s.accept()\n\
n = 0\n\
while True:\n    d = c.recv(65536)\n    if not d:\n        break\n    n += len(d)\n\
print('received', n)\n";

/// A TCP sender of 2,000,000 bytes.
const SENDER: &str = "import socket\n\
s = socket.create_connection(('{receiver_ip}', {port}))\n\
s.sendall(b'x' * 2000000)\n\
s.close()\n\
print('sent from {sender_ip}')\n";

/// A scenario of one command group (its programs given to the run) beside nothing else, on a
/// 10 Mbit/s drop-tail bottleneck.
fn scenario(duration: &str) -> qstp_testbed::SimSpec {
    let text = format!(
        r#"
name = "testbed-command"
duration = "{duration}"
[bottleneck]
rate = "10M"
delay = "10ms"
queue = {{ kind = "droptail", limit = 50 }}
[[group]]
name = "C"
protocol = "command"
rtt = "40ms"
receiver = ["python3", "-c", "pass"]
sender = ["python3", "-c", "pass"]
"#
    );
    let plan = parse(&text, "test.toml", &Overrides::default()).expect("a valid scenario");
    assert!(plan.base().testbed.commands[0].is_some());
    plan.points[0].scenario.spec(0)
}

fn python(code: &str) -> Vec<String> {
    vec!["python3".into(), "-c".into(), code.into()]
}

/// Options running `receiver` and `sender` for the one group, their output under a fresh folder.
fn options(tag: &str, receiver: Vec<String>, sender: Vec<String>) -> (Options, PathBuf) {
    let prefix = format!("{}{tag}", ns::unique_prefix());
    let dir = std::env::temp_dir().join(format!("qstp-command-test-{prefix}"));
    let options = Options {
        prefix: Some(prefix),
        commands: vec![Some(Programs { receiver, sender })],
        command_dir: Some(dir.clone()),
        ..Options::default()
    };
    (options, dir)
}

fn leftovers(options: &Options) -> Vec<String> {
    let prefix = options.prefix.clone().unwrap_or_default();
    ns::list()
        .expect("ip netns list")
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

#[test]
fn a_command_flow_runs_through_the_router_and_reports_how_its_programs_ended() {
    require_testbed!("a_command_flow_runs_through_the_router");
    let (o, dir) = options("a", python(COUNTER), python(SENDER));
    let run: TestbedRun = run_with(&scenario("4s"), &o).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(leftovers(&o), Vec::<String>::new());
    let [c] = &run.report.commands[..] else {
        panic!("{:?}", run.report.commands)
    };
    assert_eq!((c.group.as_str(), c.flow), ("C", 0));
    assert!(c.completed, "{c:?}");
    let sender = c.sender.as_ref().unwrap();
    assert_eq!((sender.exit_code, sender.stopped), (Some(0), false));
    // The receiver counted every byte and ended on its own.
    assert_eq!((c.receiver.exit_code, c.receiver.stopped), (Some(0), false));
    let out = std::fs::read_to_string(&c.receiver.stdout).unwrap();
    assert_eq!(out.trim(), "received 2000000");
    assert_eq!(
        std::fs::read_to_string(&sender.stdout).unwrap().trim(),
        "sent from 10.1.0.0"
    );
    assert!(c
        .receiver
        .stdout
        .starts_with(&dir.join("C-0").display().to_string()));
    // The router counted the flow's bytes (2,000,000 bytes of payload, headers on top), and at
    // 10 Mbit/s the receiver had them after 1.6 s at the earliest (the sender's kernel may hold
    // them in its buffer while the sender has already exited).
    let bytes: u64 = run.output.flows[0].received_bytes.iter().sum();
    assert!(
        (2_000_000..2_300_000).contains(&bytes),
        "router counted {bytes} bytes"
    );
    assert!(c.receiver.seconds > 1.6, "{}", c.receiver.seconds);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failing_sender_fails_the_run_with_its_status_and_last_error_line() {
    require_testbed!("a_failing_sender_fails_the_run");
    let sender = vec![
        "sh".into(),
        "-c".into(),
        "echo 'transfer not confirmed: broken' >&2; exit 3".into(),
    ];
    let (o, dir) = options("b", python(COUNTER), sender);
    let started = std::time::Instant::now();
    let err = run_with(&scenario("20s"), &o).unwrap_err();
    // The failure ends the run at once, not at its 20 s.
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    let text = err.to_string();
    assert!(matches!(err, TestbedError::Program { .. }), "{text}");
    assert!(
        text.starts_with("group 'C' flow 0: the sender: `sh -c"),
        "{text}"
    );
    assert!(text.contains("failed (exit status 3)"), "{text}");
    assert!(text.contains("transfer not confirmed: broken"), "{text}");
    assert_eq!(leftovers(&o), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_receiver_that_never_listens_is_an_error_and_a_long_sender_is_stopped_at_the_end() {
    require_testbed!("a_receiver_that_never_listens");
    let (o, dir) = options("c", python("import sys; sys.exit(2)"), python(SENDER));
    let text = run_with(&scenario("3s"), &o).unwrap_err().to_string();
    assert!(
        text.starts_with("group 'C' flow 0: the receiver:"),
        "{text}"
    );
    assert!(
        text.contains("ended before it listened on port 4433 (exit status 2)"),
        "{text}"
    );
    assert_eq!(leftovers(&o), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();

    // A sender still running when the run ends is stopped, and reported as not completed.
    let (o, dir) = options("d", python(COUNTER), vec!["sleep".into(), "60".into()]);
    let run = run_with(&scenario("2s"), &o).unwrap_or_else(|e| panic!("{e}"));
    let c = &run.report.commands[0];
    assert!(!c.completed);
    let sender = c.sender.as_ref().unwrap();
    assert!(sender.stopped, "{sender:?}");
    assert!(
        sender.status().starts_with("stopped by the testbed"),
        "{}",
        sender.status()
    );
    assert!(c.receiver.stopped);
    assert_eq!(leftovers(&o), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}
