//! `qstp`: run lab scenarios, send and receive files over QSTP.
//!
//! The one binary of the project: `qstp run` drives `qstp-lab` (and through it the simulator),
//! `qstp send`, `qstp recv` and `qstp relay` drive `qstp-net`. It holds argument parsing, progress display and
//! exit codes only; protocol, simulation and measurement logic live in the library crates, which
//! never depend on it.

// This crate lives in real time: it reads the clock, and its maps keyed by peer address want
// RandomState's protection against chosen keys. The workspace's determinism bans (clippy.toml)
// are for the protocol core and the simulator.
#![allow(clippy::disallowed_types)]

use clap::{Parser, Subcommand};

// `Cli::parse` is replaced by `parse()`, which adds the registry's help text.

mod capture;
mod choose;
mod fluid;
mod papers;
mod partial;
mod plot;
mod psk;
mod recv;
mod relay;
mod run;
mod send;
mod sink;
mod testbed;
mod wire_args;

/// QSTP: QoS-aware transport, and the lab that proves it.
#[derive(Parser)]
#[command(name = "qstp", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a simulation scenario: every sweep point and run, then a summary, plots and a report.
    Run(run::RunArgs),
    /// Name the best TCP congestion control for a number of flows and a weight between
    /// efficiency and fairness, from a sweep's results (the high-speed TCP paper's tool).
    Choose(choose::ChooseArgs),
    /// Draw a results folder's figures and report again from its saved data, without simulating.
    Plot(plot::PlotArgs),
    /// Hold every number the QSTP and gTFRC papers state against the lab's (validation/papers.md).
    Papers(papers::PapersArgs),
    /// Send a file (or stdin) to a `qstp recv`.
    Send(send::SendArgs),
    /// Receive files sent with `qstp send`.
    Recv(recv::RecvArgs),
    /// Relay UDP between one client and one server through a bottleneck, with delay, loss,
    /// duplication and reordering (seeded), printing each second what it forwarded and dropped.
    Relay(relay::RelayArgs),
    /// Run a scenario on Linux network namespaces with real kernel TCP, through a router that
    /// runs the simulator's bottleneck in real time (needs root and /dev/net/tun).
    Testbed(testbed::TestbedArgs),
    /// Solve a scenario's Free & Stunts fluid model (RED bottleneck, TCP groups) instead of
    /// simulating packets; the same outputs as `qstp run`.
    Fluid(fluid::FluidArgs),
}

/// The command line, with `qstp run --help` listing the simulator's congestion controls.
fn parse() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let command =
        Cli::command().mut_subcommand("run", |c| c.after_long_help(run::congestion_help()));
    Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit())
}

/// The lab's commands print their tables to standard output: when its reader goes away
/// (`qstp run X | head`) they end quietly, by SIGPIPE's default action, as other command-line
/// tools do, instead of Rust's panic on the failed print. The network commands keep Rust's
/// default (SIGPIPE ignored), so that a write to a closed socket is an error they report.
fn end_quietly_on_broken_pipe() {
    // SAFETY: sets a signal's disposition at start-up, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> std::process::ExitCode {
    let cli = parse();
    if matches!(
        cli.command,
        Command::Run(_)
            | Command::Plot(_)
            | Command::Choose(_)
            | Command::Papers(_)
            | Command::Fluid(_)
    ) {
        end_quietly_on_broken_pipe();
    }
    let result = match cli.command {
        Command::Run(args) => run::main(args),
        Command::Plot(args) => plot::main(args),
        Command::Choose(args) => choose::main(args),
        Command::Papers(args) => papers::main(args),
        Command::Send(args) => send::main(args),
        Command::Recv(args) => recv::main(args),
        Command::Relay(args) => relay::main(args),
        Command::Testbed(args) => testbed::main(args),
        Command::Fluid(args) => fluid::main(args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("qstp: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
