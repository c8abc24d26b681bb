//! Network namespaces and their cleanup.
//!
//! Every namespace of a run is named `<prefix>-<role>`, where the prefix holds the process id and
//! a per-process counter ([`unique_prefix`]): two runs, in one process or in two, never collide.
//! A [`Namespaces`] guard remembers what it created and removes it when dropped (on success, on
//! error and on panic alike); devices live inside the namespaces (veth pairs are created with
//! both ends already in place, TUN devices in the router's), so removing the namespaces removes
//! every device with them and nothing is ever left in the caller's namespace.

use crate::TestbedError;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Runs started by this process so far (the second half of a namespace prefix).
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A prefix no other run shares: `qtb<pid>x<n>`.
pub fn unique_prefix() -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("qtb{}x{n}", std::process::id())
}

/// Run `ip` with `args`; an error carries its stderr.
pub fn ip(args: &[&str]) -> Result<(), TestbedError> {
    run("ip", args)
}

/// Run `program` with `args`, waiting for it; an error carries the command line and its stderr.
pub fn run(program: &str, args: &[&str]) -> Result<(), TestbedError> {
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| TestbedError::Command {
            command: format!("{program} {}", args.join(" ")),
            message: e.to_string(),
        })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(TestbedError::Command {
            command: format!("{program} {}", args.join(" ")),
            message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        })
    }
}

/// The names of the namespaces that exist now (`ip netns list`).
pub fn list() -> Result<Vec<String>, TestbedError> {
    let output = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map_err(|e| TestbedError::Command {
            command: "ip netns list".into(),
            message: e.to_string(),
        })?;
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect())
}

/// Delete the namespaces of testbed runs whose process no longer exists (one killed with SIGKILL
/// could not clean up): names `qtb<pid>x...` whose `<pid>` has no `/proc/<pid>`. Returns the
/// names deleted.
pub fn remove_stale() -> Result<Vec<String>, TestbedError> {
    let mut removed = Vec::new();
    for name in list()? {
        let Some(pid) = name
            .strip_prefix("qtb")
            .and_then(|rest| rest.split_once('x'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            ip(&["netns", "del", &name])?;
            removed.push(name);
        }
    }
    Ok(removed)
}

/// The namespaces one run created; dropping it deletes them all (and with them their devices).
#[derive(Debug)]
pub struct Namespaces {
    prefix: String,
    created: Vec<String>,
}

impl Namespaces {
    /// A guard for namespaces named `<prefix>-...`.
    pub fn new(prefix: String) -> Self {
        Namespaces {
            prefix,
            created: Vec::new(),
        }
    }

    /// The prefix of every namespace this guard creates.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Create the namespace `<prefix>-<role>` with its loopback up; returns its name.
    pub fn create(&mut self, role: &str) -> Result<String, TestbedError> {
        let name = format!("{}-{role}", self.prefix);
        ip(&["netns", "add", &name])?;
        self.created.push(name.clone());
        ip(&["-n", &name, "link", "set", "lo", "up"])?;
        Ok(name)
    }

    /// Delete every namespace created so far (the most recent first); errors are ignored, as a
    /// namespace already gone is what was wanted.
    pub fn remove_all(&mut self) {
        while let Some(name) = self.created.pop() {
            let _ = ip(&["netns", "del", &name]);
        }
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        self.remove_all();
    }
}

/// Move the calling thread into the namespace `name` (only this thread: `setns(2)` changes the
/// caller's network namespace, and later sockets and TUN devices it opens live there). Call it
/// on a thread of its own.
pub fn enter(name: &str) -> Result<(), TestbedError> {
    let path = format!("/run/netns/{name}");
    let file = File::open(&path).map_err(|e| TestbedError::Namespace {
        name: name.to_string(),
        message: e.to_string(),
    })?;
    // SAFETY: setns(2) on a valid open namespace file descriptor; it changes only this thread.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(TestbedError::Namespace {
            name: name.to_string(),
            message: std::io::Error::last_os_error().to_string(),
        });
    }
    Ok(())
}

/// Set sysctls (`key=value`) inside the namespace `name`.
pub fn sysctl(name: &str, settings: &[String]) -> Result<(), TestbedError> {
    let mut args = vec!["netns", "exec", name, "sysctl", "-q", "-w"];
    args.extend(settings.iter().map(String::as_str));
    ip(&args)
}
