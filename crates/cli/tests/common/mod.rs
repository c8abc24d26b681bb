//! Helpers the CLI's tests share.

#![allow(dead_code, clippy::disallowed_types)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

pub const QSTP: &str = env!("CARGO_BIN_EXE_qstp");

/// A folder of the temporary directory for one test, removed with everything in it (and any
/// mount left on it) when dropped, so repeated test runs do not fill the disk.
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("qstp-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A new, empty folder for this test; removed when the returned guard drops.
pub fn scratch(name: &str) -> Scratch {
    let dir = scratch_path(name);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// A path in the temporary folder for this test, removed if it exists and not created; removed
/// again when the returned guard drops.
pub fn fresh(name: &str) -> Scratch {
    Scratch(scratch_path(name))
}

/// A file of the repository's `scenarios/`.
pub fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
}

/// Run `qstp` with `args`: whether it succeeded, its stdout and its stderr.
pub fn qstp(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(QSTP).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 31) ^ (i >> 9)) as u8).collect()
}

/// Wait for `child` at most `limit`, killing it after.
pub fn wait_bounded(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("process did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Start `qstp recv` (not `--once`) with `extra` flags; returns it (its stdout piped, for
/// `--json`), its address and a thread that collects the rest of its stderr.
pub fn start_server(
    out: &Path,
    extra: &[&str],
) -> (Child, String, std::thread::JoinHandle<Vec<String>>) {
    let (child, addr, stderr) = spawn_server(out, extra);
    let lines = std::thread::spawn(move || stderr.lines().map_while(Result::ok).collect());
    (child, addr, lines)
}

/// Start `qstp recv` and read its first line, the address it listens on.
fn spawn_server(out: &Path, extra: &[&str]) -> (Child, String, BufReader<ChildStderr>) {
    let mut recv = Command::new(QSTP);
    recv.args(["recv", "--listen", "127.0.0.1:0", "--out"])
        .arg(out)
        .args(extra)
        .stdout(Stdio::piped());
    spawn_announcing(&mut recv, "listening on ")
}

/// Spawn `command` with its stderr piped and read its first line, `prefix` then the address it
/// listens on; returns the child, that address and the rest of its stderr.
fn spawn_announcing(
    command: &mut Command,
    prefix: &str,
) -> (Child, String, BufReader<ChildStderr>) {
    let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .strip_prefix(prefix)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("unexpected: {line}"))
        .to_string();
    (child, addr, stderr)
}

/// Like [`start_server`], but the rest of stderr arrives line by line on a channel as printed.
pub fn start_server_streaming(
    out: &Path,
    extra: &[&str],
) -> (Child, String, std::sync::mpsc::Receiver<String>) {
    let (child, addr, stderr) = spawn_server(out, extra);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, addr, rx)
}

/// The next line from `lines` that `wanted` accepts, waiting at most `limit` in all; panics with
/// the lines seen otherwise.
pub fn wait_for_line(
    lines: &std::sync::mpsc::Receiver<String>,
    wanted: impl Fn(&str) -> bool,
    limit: Duration,
) -> String {
    let start = Instant::now();
    let mut seen = Vec::new();
    loop {
        let left = limit.saturating_sub(start.elapsed());
        match lines.recv_timeout(left) {
            Ok(line) if wanted(&line) => return line,
            Ok(line) => seen.push(line),
            Err(_) => panic!("no such line within {limit:?}; seen: {seen:?}"),
        }
    }
}

/// Start `qstp relay` on an ephemeral port in front of `server`, with `extra` flags; returns it,
/// the address it listens on (from its first line) and the rest of its stderr.
pub fn start_relay(server: &str, extra: &[&str]) -> (Child, String, BufReader<ChildStderr>) {
    let mut relay = Command::new(QSTP);
    relay
        .args(["relay", "--listen", "127.0.0.1:0", "--to", server])
        .args(extra);
    spawn_announcing(&mut relay, "relaying ")
}
