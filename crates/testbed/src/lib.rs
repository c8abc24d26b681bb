//! `qstp-testbed`: the lab's scenarios on real Linux network namespaces, with real kernel TCP.
//!
//! [`run`] takes the very [`SimSpec`] the simulator would run and builds the scenario's dumbbell
//! on this host instead: a namespace per sender host and per receiver host, joined by veth pairs
//! to a router namespace whose packets pass through TUN devices into a router of ours
//! ([`router`]). The router runs the bottleneck with the simulator's own code (its queue
//! disciplines, edge markers, loss models and sans-IO [`qstp_dataplane::link::Link`]) on a monotonic
//! nanosecond clock, and measures how late each packet left against its schedule. Groups of
//! `protocol = "tcp"` run kernel TCP (a bulk sender and a sink of ours, the group's congestion
//! control chosen with `TCP_CONGESTION`); `qstp`, `tfrc-sack`, `tfrc` and `gtfrc` groups run
//! qstp-net endpoints with the group's composition and target ([`qstp`]); `cbr` and `onoff`
//! groups are UDP sources following their rate schedule ([`udp`]); the flows of a group the
//! scenario gives as `protocol = "command"` run the user's programs in their namespaces
//! ([`command`]). A `[delegation]` table of qstp
//! groups runs the Free and its Stunts as connections of one qstp-net endpoint in one namespace,
//! formed into a `qstp_net::Group` ([`delegation`]; TCP groups are refused). Every namespace, and with
//! it every device, is removed when the run ends, on error, on panic and on Ctrl-C
//! ([`ns::Namespaces`], [`signal`]). It needs root (CAP_NET_ADMIN) and `/dev/net/tun`
//! ([`check_privileges`]). What it returns is a [`qstp_sim::RunOutput`], so the lab turns it
//! into the same summary, series and report as a simulation, plus a [`RunReport`] of the
//! router's accuracy and the hosts' TCP settings.

// This crate lives in real time: it reads the clock.
#![allow(clippy::disallowed_types)]

pub mod command;
pub mod delegation;
pub mod flows;
pub mod hosts;
pub mod lines;
pub mod ns;
pub mod packet;
pub mod qstp;
pub mod router;
mod run;
pub mod setup;
pub mod signal;
pub mod tun;
pub mod udp;

pub use run::{
    check, ignored_settings, run, run_with, Classification, DirectionReport, Options, RouterReport,
    RunReport, TestbedRun,
};

/// Why a testbed run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    /// Not root, or no `/dev/net/tun`.
    #[error("{0}")]
    Privileges(String),
    /// The scenario asks for what the testbed cannot do (yet).
    #[error("{0}")]
    Unsupported(String),
    /// A command (`ip`, `sysctl`) failed.
    #[error("`{command}` failed: {message}")]
    Command {
        /// The command line.
        command: String,
        /// Its error output.
        message: String,
    },
    /// A namespace could not be entered.
    #[error("namespace {name}: {message}")]
    Namespace {
        /// The namespace.
        name: String,
        /// Why.
        message: String,
    },
    /// A TUN device could not be created.
    #[error("TUN device {name}: {message}")]
    Tun {
        /// The device.
        name: String,
        /// Why.
        message: String,
    },
    /// A host's sender or sink failed.
    #[error("host {netns}: {message}")]
    Host {
        /// The host's namespace (or address).
        netns: String,
        /// Why.
        message: String,
    },
    /// A program of a `protocol = "command"` group failed, or could not start or listen.
    #[error("{what}: {message}")]
    Program {
        /// Which program (group, flow, role).
        what: String,
        /// What happened.
        message: String,
    },
    /// Something the kernel handed back could not be read.
    #[error("cannot decode: {0}")]
    Decode(String),
    /// Ctrl-C (SIGINT or SIGTERM) stopped the run.
    #[error("interrupted")]
    Interrupted,
    /// A test hook: setup was made to fail on purpose.
    #[error("setup failed on purpose (test hook)")]
    Injected,
}

/// Whether this process may build a testbed: root (CAP_NET_ADMIN) and `/dev/net/tun`; the error
/// is one line saying what is missing.
pub fn check_privileges() -> Result<(), TestbedError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(TestbedError::Privileges(
            "the testbed needs root (CAP_NET_ADMIN, to create network namespaces): run it with sudo".into(),
        ));
    }
    let tun = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun");
    if let Err(e) = tun {
        return Err(TestbedError::Privileges(format!(
            "the testbed needs /dev/net/tun ({e}): load the tun module or run where it exists"
        )));
    }
    Ok(())
}

pub use qstp_sim::SimSpec;
