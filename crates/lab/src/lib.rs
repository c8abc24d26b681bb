//! `qstp-lab`: runs qstp simulation scenarios and measures what the papers measure.
//!
//! It reads scenario files (TOML, with sweeps), runs every point and run of the simulator in
//! parallel, reduces each run to the papers' metrics (throughput at the receiver through a 1 s
//! time-sliding window, goodput, jitter, per-colour queue statistics), and writes a summary, time
//! series, plots and an HTML report. It depends on `qstp-sim` and `qstp-proto`, never on the CLI
//! or the real network.

pub mod metrics;
pub mod runner;
pub mod scenario;

/// The simulator's entry point, as the runner calls it.
pub use qstp_sim::run_with_progress as simulate;
pub mod choose;
pub mod figures;
pub mod fluid_figure;
pub mod output;
pub mod papers;
pub mod pcap;
pub mod plot;
pub mod reload;
pub mod report;
pub mod summary;

#[cfg(test)]
mod testkit;
