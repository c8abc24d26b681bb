//! `protocol = "command"` groups: programs of the user's in a flow's two namespaces.
//!
//! Per flow, the receiver's program starts first, in the receiver's namespace (`ip netns exec`),
//! and the run waits until it listens on [`PORT`] (read from its namespace's `/proc/PID/net/udp`
//! and `tcp`). The sender's program starts at the flow's start time in the sender's namespace.
//! The router counts their packets as any flow's (the flow's addresses). When the sender exits,
//! the receiver gets [`GRACE`] to end on its own and is then stopped (SIGINT, then SIGKILL after
//! [`GRACE`]); at the run's end both are stopped alike. Each program runs in a process group of
//! its own, and everything it started is stopped with it; a program still running when its
//! [`Program`] is dropped (an error, a panic) is killed there. Standard output and error go to
//! files in the flow's folder, at most [`CAPTURE_LIMIT`] bytes each (the rest is counted and
//! dropped). A program that exits with a failure on its own fails the run, with its status and
//! the last line of its error output.

use crate::hosts::Timing;
use crate::TestbedError;
use qstp_proto::Time;
use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// The port a command group's receiver listens on (`{port}`): the qstp sinks' own, which a
/// `qstp recv` defaults to.
pub const PORT: u16 = crate::qstp::QSTP_PORT;
/// Most bytes kept of one program's standard output, and of its standard error.
pub const CAPTURE_LIMIT: u64 = 1 << 20;
/// How long a program may take to end after SIGINT before it is killed, and a receiver to end
/// on its own after its sender.
pub const GRACE: std::time::Duration = std::time::Duration::from_secs(2);
/// How long a receiver may take to listen.
pub const LISTEN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Bytes of standard error kept in memory for the report and for errors.
const TAIL: usize = 2048;
/// How often a running program is looked at.
const POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// The programs of one command group, as the scenario gives them (placeholders unexpanded).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Programs {
    /// The receiver's argv.
    pub receiver: Vec<String>,
    /// The sender's argv.
    pub sender: Vec<String>,
}

/// What a flow's placeholders stand for.
#[derive(Debug, Clone)]
pub struct Places {
    /// `{qstp}`; its folder is `{bin_dir}`.
    pub qstp: PathBuf,
    /// `{out}`: the flow's folder.
    pub out: PathBuf,
    /// `{receiver_ip}` (with [`PORT`]: `{listen}`, `{receiver}`).
    pub receiver: Ipv4Addr,
    /// `{sender_ip}`.
    pub sender: Ipv4Addr,
    /// `{seed}`.
    pub seed: u64,
    /// `{duration_s}`.
    pub duration_s: u64,
}

impl Places {
    /// `arg` with every placeholder replaced.
    pub fn expand(&self, arg: &str) -> String {
        let bin_dir = self
            .qstp
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let addr = format!("{}:{PORT}", self.receiver);
        let values = [
            ("{qstp}", self.qstp.display().to_string()),
            ("{bin_dir}", bin_dir),
            ("{listen}", addr.clone()),
            ("{receiver}", addr),
            ("{receiver_ip}", self.receiver.to_string()),
            ("{sender_ip}", self.sender.to_string()),
            ("{port}", PORT.to_string()),
            ("{out}", self.out.display().to_string()),
            ("{seed}", self.seed.to_string()),
            ("{duration_s}", self.duration_s.to_string()),
        ];
        // One pass, left to right, so that a value holding braces is never expanded again.
        let mut out = String::with_capacity(arg.len());
        let mut rest = arg;
        'scan: while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let here = &rest[open..];
            for (name, value) in &values {
                if let Some(after) = here.strip_prefix(name) {
                    out.push_str(value);
                    rest = after;
                    continue 'scan;
                }
            }
            out.push('{');
            rest = &here[1..];
        }
        out.push_str(rest);
        out
    }
}

/// How one program ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProgramReport {
    /// The command line run, placeholders expanded.
    pub argv: Vec<String>,
    /// Its exit status, if it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Whether the testbed stopped it (its sender was done, or the run ended) rather than it
    /// ending on its own.
    pub stopped: bool,
    /// Seconds from its start to its end.
    pub seconds: f64,
    /// Where its standard output went.
    pub stdout: String,
    /// Where its standard error went.
    pub stderr: String,
    /// Bytes of output beyond [`CAPTURE_LIMIT`] that were dropped (both streams).
    pub dropped_bytes: u64,
    /// The end of its standard error (at most 2 KiB).
    #[serde(skip)]
    pub stderr_tail: String,
}

impl ProgramReport {
    /// Whether it ended on its own with status 0.
    pub fn succeeded(&self) -> bool {
        !self.stopped && self.exit_code == Some(0)
    }

    /// How it ended, in words.
    pub fn status(&self) -> String {
        let how = match (self.exit_code, self.signal) {
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(s)) => format!("signal {s}"),
            (None, None) => "no status".into(),
        };
        if self.stopped {
            format!("stopped by the testbed ({how})")
        } else {
            how
        }
    }

    /// The last non-empty line of its standard error.
    pub fn last_error_line(&self) -> &str {
        self.stderr_tail
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("")
    }
}

/// One flow of a command group, as it ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CommandReport {
    /// The group.
    pub group: String,
    /// The flow, within the group.
    pub flow: u32,
    /// Whether the sender ended on its own with status 0 (a transfer it verified, for `qstp
    /// send`); false when it failed or the run ended first.
    pub completed: bool,
    /// The sender (`None`: the run ended before its start).
    pub sender: Option<ProgramReport>,
    /// The receiver.
    pub receiver: ProgramReport,
}

/// What a reader thread kept of one stream.
#[derive(Default)]
struct Captured {
    dropped: u64,
    tail: Vec<u8>,
}

/// Copy `from` into `to`, at most [`CAPTURE_LIMIT`] bytes, keeping the last [`TAIL`] in memory.
fn capture(mut from: impl Read, mut to: std::fs::File) -> Captured {
    let mut buf = vec![0u8; 16 << 10];
    let mut written = 0u64;
    let mut out = Captured::default();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let room = CAPTURE_LIMIT.saturating_sub(written).min(n as u64) as usize;
        if room > 0 && to.write_all(&buf[..room]).is_ok() {
            written += room as u64;
        }
        out.dropped += (n - room) as u64;
        out.tail.extend_from_slice(&buf[..n]);
        if out.tail.len() > TAIL {
            out.tail.drain(..out.tail.len() - TAIL);
        }
    }
    if out.dropped > 0 {
        let _ = writeln!(to, "\n[{} more bytes dropped: capture limit]", out.dropped);
    }
    out
}

/// A running program and the threads capturing its output.
pub struct Program {
    child: Child,
    argv: Vec<String>,
    started: Instant,
    readers: Vec<JoinHandle<Captured>>,
    stdout: PathBuf,
    stderr: PathBuf,
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> TestbedError {
    TestbedError::Program {
        what: what.into(),
        message: format!("{}: {e}", path.display()),
    }
}

impl Program {
    /// Start `argv` in namespace `netns`, its output into `dir/<role>.stdout` and `.stderr`.
    pub fn spawn(
        netns: &str,
        argv: Vec<String>,
        dir: &Path,
        role: &str,
    ) -> Result<Program, TestbedError> {
        use std::os::unix::process::CommandExt;
        let stdout = dir.join(format!("{role}.stdout"));
        let stderr = dir.join(format!("{role}.stderr"));
        let out_file = std::fs::File::create(&stdout).map_err(|e| io_error(role, &stdout, e))?;
        let err_file = std::fs::File::create(&stderr).map_err(|e| io_error(role, &stderr, e))?;
        let mut child = Command::new("ip")
            .args(["netns", "exec", netns])
            .args(&argv)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A group of its own: stopping it stops whatever it started too.
            .process_group(0)
            .spawn()
            .map_err(|e| TestbedError::Program {
                what: role.into(),
                message: format!(
                    "cannot start `ip netns exec {netns} {}`: {e}",
                    argv.join(" ")
                ),
            })?;
        let mut readers = Vec::new();
        if let Some(o) = child.stdout.take() {
            readers.push(std::thread::spawn(move || capture(o, out_file)));
        }
        if let Some(e) = child.stderr.take() {
            readers.push(std::thread::spawn(move || capture(e, err_file)));
        }
        Ok(Program {
            child,
            argv,
            started: Instant::now(),
            readers,
            stdout,
            stderr,
        })
    }

    /// Its status, if it has exited.
    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Send `signal` to its process group.
    fn signal(&self, signal: libc::c_int) {
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill has no memory preconditions; the group is the child's own.
            unsafe {
                libc::kill(-pid, signal);
            }
        }
    }

    /// Stop it: SIGINT (Ctrl-C, which qstp's commands answer by ending cleanly), SIGKILL after
    /// [`GRACE`].
    fn stop(&mut self) -> Option<ExitStatus> {
        if let Some(s) = self.exited() {
            return Some(s);
        }
        self.signal(libc::SIGINT);
        let until = Instant::now() + GRACE;
        while Instant::now() < until {
            if let Some(s) = self.exited() {
                return Some(s);
            }
            std::thread::sleep(POLL);
        }
        self.signal(libc::SIGKILL);
        self.child.wait().ok()
    }

    /// Its report, once it has ended with `status`.
    fn report(mut self, status: Option<ExitStatus>, stopped: bool) -> ProgramReport {
        use std::os::unix::process::ExitStatusExt;
        let seconds = self.started.elapsed().as_secs_f64();
        // Whatever it started may hold its pipes open: end the group before reading them out.
        self.signal(libc::SIGKILL);
        let mut dropped = 0;
        let mut tail = Vec::new();
        for r in self.readers.drain(..) {
            if let Ok(c) = r.join() {
                dropped += c.dropped;
                tail = c.tail;
            }
        }
        ProgramReport {
            argv: self.argv.clone(),
            exit_code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            stopped,
            seconds,
            stdout: self.stdout.display().to_string(),
            stderr: self.stderr.display().to_string(),
            dropped_bytes: dropped,
            stderr_tail: String::from_utf8_lossy(&tail).into_owned(),
        }
    }

    /// Whether a socket of its network namespace is bound to `port` (UDP) or listens on it
    /// (TCP, state 0A).
    fn listens(&self, port: u16) -> bool {
        let pid = self.child.id();
        let hex = format!(":{port:04X}");
        ["udp", "tcp"].iter().any(|proto| {
            std::fs::read_to_string(format!("/proc/{pid}/net/{proto}")).is_ok_and(|table| {
                table.lines().skip(1).any(|line| {
                    let mut fields = line.split_whitespace();
                    let local = fields.nth(1).unwrap_or("");
                    let state = fields.nth(1).unwrap_or("");
                    local.ends_with(&hex) && (*proto == "udp" || state == "0A")
                })
            })
        })
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        if self.exited().is_none() {
            self.signal(libc::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

/// One flow of a command group, ready to run.
pub struct Flow {
    /// The group's name.
    pub group: String,
    /// The flow, within the group.
    pub flow: u32,
    /// The sender's namespace.
    pub sender_ns: String,
    /// The receiver's namespace.
    pub receiver_ns: String,
    /// The programs, placeholders expanded.
    pub programs: Programs,
    /// The flow's folder (`{out}`).
    pub dir: PathBuf,
}

impl Flow {
    /// The programs of flow `flow` of `group`, placeholders expanded with `places` (whose `out`
    /// folder is created).
    pub fn new(
        group: &str,
        flow: u32,
        namespaces: (&str, &str),
        programs: &Programs,
        places: &Places,
    ) -> Result<Flow, TestbedError> {
        std::fs::create_dir_all(&places.out).map_err(|e| io_error(group, &places.out, e))?;
        let expand = |argv: &[String]| argv.iter().map(|a| places.expand(a)).collect();
        Ok(Flow {
            group: group.into(),
            flow,
            sender_ns: namespaces.0.into(),
            receiver_ns: namespaces.1.into(),
            programs: Programs {
                receiver: expand(&programs.receiver),
                sender: expand(&programs.sender),
            },
            dir: places.out.clone(),
        })
    }

    fn what(&self, role: &str) -> String {
        format!("group '{}' flow {}: the {role}", self.group, self.flow)
    }

    /// Start the receiver and wait until it listens on [`PORT`].
    pub fn start_receiver(&self, stop: &AtomicBool) -> Result<Program, TestbedError> {
        let what = self.what("receiver");
        let mut p = Program::spawn(
            &self.receiver_ns,
            self.programs.receiver.clone(),
            &self.dir,
            "receiver",
        )
        .map_err(|e| rename(e, &what))?;
        let until = Instant::now() + LISTEN_TIMEOUT;
        loop {
            if p.listens(PORT) {
                return Ok(p);
            }
            if let Some(status) = p.exited() {
                let r = p.report(Some(status), false);
                return Err(TestbedError::Program {
                    what,
                    message: format!(
                        "`{}` ended before it listened on port {PORT} ({}): {} (output in {})",
                        r.argv.join(" "),
                        r.status(),
                        r.last_error_line(),
                        r.stderr
                    ),
                });
            }
            if Instant::now() >= until
                || stop.load(Ordering::Relaxed)
                || crate::signal::interrupted()
            {
                let status = p.stop();
                let r = p.report(status, true);
                return Err(TestbedError::Program {
                    what,
                    message: format!(
                        "`{}` did not listen on port {PORT} of {} within {} s (output in {})",
                        r.argv.join(" "),
                        self.receiver_ns,
                        LISTEN_TIMEOUT.as_secs(),
                        r.stderr
                    ),
                });
            }
            std::thread::sleep(POLL);
        }
    }

    /// Run the flow on a thread of its own: the sender from `start`, until it exits or the run
    /// ends; then the receiver's end. `failed` is raised when a program fails, so that the run
    /// ends early.
    pub fn spawn(
        self,
        receiver: Program,
        start: Time,
        timing: Timing,
        stop: Arc<AtomicBool>,
        failed: Arc<AtomicBool>,
    ) -> JoinHandle<Result<CommandReport, TestbedError>> {
        std::thread::spawn(move || {
            let result = self.run(receiver, start, timing, &stop);
            if result.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            result
        })
    }

    fn run(
        self,
        mut receiver: Program,
        start: Time,
        timing: Timing,
        stop: &AtomicBool,
    ) -> Result<CommandReport, TestbedError> {
        while timing.clock.now() < start && !timing.done(stop) {
            std::thread::sleep(POLL);
        }
        let mut sender = None;
        if !timing.done(stop) {
            let p = Program::spawn(
                &self.sender_ns,
                self.programs.sender.clone(),
                &self.dir,
                "sender",
            )
            .map_err(|e| rename(e, &self.what("sender")))?;
            sender = Some(p);
        }
        // The sender runs until it exits or the run ends.
        let mut sender_end = None;
        if let Some(mut p) = sender {
            let (status, stopped) = loop {
                if let Some(s) = p.exited() {
                    break (Some(s), false);
                }
                if timing.done(stop) {
                    break (p.stop(), true);
                }
                std::thread::sleep(POLL);
            };
            sender_end = Some(p.report(status, stopped));
        }
        // A receiver that serves one transfer ends by itself soon after its sender.
        let until = Instant::now() + GRACE;
        let mut own = receiver.exited();
        while own.is_none() && Instant::now() < until && !timing.done(stop) {
            std::thread::sleep(POLL);
            own = receiver.exited();
        }
        let receiver_end = match own {
            Some(s) => receiver.report(Some(s), false),
            None => {
                let s = receiver.stop();
                receiver.report(s, true)
            }
        };
        let completed = sender_end.as_ref().is_some_and(ProgramReport::succeeded);
        for (role, r) in [
            ("sender", sender_end.as_ref()),
            ("receiver", Some(&receiver_end)),
        ] {
            let Some(r) = r else { continue };
            if !r.stopped && r.exit_code != Some(0) {
                return Err(TestbedError::Program {
                    what: self.what(role),
                    message: format!(
                        "`{}` failed ({}): {} (output in {})",
                        r.argv.join(" "),
                        r.status(),
                        r.last_error_line(),
                        r.stderr
                    ),
                });
            }
        }
        Ok(CommandReport {
            group: self.group,
            flow: self.flow,
            completed,
            sender: sender_end,
            receiver: receiver_end,
        })
    }
}

/// `e` with `what` in front, for errors that name no program yet.
fn rename(e: TestbedError, what: &str) -> TestbedError {
    match e {
        TestbedError::Program { message, .. } => TestbedError::Program {
            what: what.into(),
            message,
        },
        other => other,
    }
}

/// The flows' threads: on every way out of a run they are stopped and waited for, so that no
/// program outlives its namespaces.
pub struct Flows {
    stop: Arc<AtomicBool>,
    handles: Vec<JoinHandle<Result<CommandReport, TestbedError>>>,
}

impl Flows {
    /// No flows yet; `stop` ends them.
    pub fn new(stop: Arc<AtomicBool>) -> Flows {
        Flows {
            stop,
            handles: Vec::new(),
        }
    }

    /// Add a running flow.
    pub fn push(&mut self, h: JoinHandle<Result<CommandReport, TestbedError>>) {
        self.handles.push(h);
    }

    /// Wait for every flow (the run's stop flag raised first); each one's report or error.
    pub fn join(mut self) -> Vec<Result<CommandReport, TestbedError>> {
        self.stop.store(true, Ordering::Relaxed);
        self.handles
            .drain(..)
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(TestbedError::Host {
                        netns: "command flow".into(),
                        message: "its thread panicked".into(),
                    })
                })
            })
            .collect()
    }
}

impl Drop for Flows {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_expand_once_and_other_braces_stay() {
        let p = Places {
            qstp: PathBuf::from("/w/target/release/qstp"),
            out: PathBuf::from("/r/commands/run-0/F-0"),
            receiver: Ipv4Addr::new(10, 2, 1, 0),
            sender: Ipv4Addr::new(10, 1, 1, 0),
            seed: 7,
            duration_s: 30,
        };
        assert_eq!(
            p.expand("{bin_dir}/examples/soft_guarantee"),
            "/w/target/release/examples/soft_guarantee"
        );
        assert_eq!(p.expand("{listen}"), "10.2.1.0:4433");
        assert_eq!(p.expand("--to={receiver}"), "--to=10.2.1.0:4433");
        assert_eq!(
            p.expand("{out}/x-{seed}-{duration_s}-{sender_ip}-{receiver_ip}:{port}"),
            "/r/commands/run-0/F-0/x-7-30-10.1.1.0-10.2.1.0:4433"
        );
        assert_eq!(
            p.expand("{\"a\": {qstp}}"),
            "{\"a\": /w/target/release/qstp}"
        );
        assert_eq!(p.expand("{nothing} {"), "{nothing} {");
    }

    #[test]
    fn captures_are_bounded_and_keep_the_tail() {
        let dir = std::env::temp_dir().join(format!("qstp-capture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out");
        let big = vec![b'x'; CAPTURE_LIMIT as usize + 1000];
        let mut input = big.clone();
        input.extend_from_slice(b"\nlast line\n");
        let c = capture(&input[..], std::fs::File::create(&path).unwrap());
        assert_eq!(c.dropped, 1000 + 11);
        assert!(String::from_utf8_lossy(&c.tail).ends_with("last line\n"));
        let written = std::fs::read(&path).unwrap();
        assert!(written.starts_with(&big[..CAPTURE_LIMIT as usize]));
        assert!(String::from_utf8_lossy(&written[CAPTURE_LIMIT as usize..])
            .contains("1011 more bytes dropped"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
