//! `qstp run`: run a scenario file's every point and run, show progress, write the results.

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use qstp_lab::runner::{execute_until, Finished, Progress};
use qstp_lab::scenario::{load, Overrides};
use qstp_lab::{output, summary};
use qstp_proto::Duration;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Arguments of `qstp run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The scenario file (TOML), e.g. scenarios/qstp-fig4.toml.
    pub scenario: PathBuf,
    /// Folder for summary.json, series/, plots/ and report.html [default: results/<scenario name>/].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Runs per sweep point, instead of the file's `runs`.
    #[arg(long)]
    pub runs: Option<u32>,
    /// Seed of the first run, instead of the file's `seed` (run i uses seed + i).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Simulated time per run, e.g. 60s, instead of the file's; the warm-up is scaled alike.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Worker threads [default: the available cores].
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Capture the packets entering this link onto the wire (`bottleneck`, or a flow's
    /// `access/GROUP/FLOW` or `sink/GROUP/FLOW`; in a file of `[[link]]` tables, a link's name or
    /// `NAME.reverse`) in the first run of each point, into
    /// pcap/<point>.pcap (raw IPv4, for Wireshark or tcpdump).
    #[arg(long, value_name = "LINK")]
    pub pcap: Option<String>,
    /// Most packets captured per pcap file; later packets are left out.
    #[arg(long, value_name = "PACKETS", default_value_t = qstp_lab::pcap::DEFAULT_LIMIT, requires = "pcap")]
    pub pcap_limit: u64,
    /// Which runs keep their time series (series.csv, series/ and the per-flow figures): every
    /// run, the first of each point, or none [default: every run's if they fit about 4 M
    /// values, else the first's].
    #[arg(long, value_name = "RUNS", value_enum)]
    pub series: Option<SeriesChoice>,
    /// Keep no time series (`--series none`): the summary, runs.csv and the figures over points
    /// only.
    #[arg(long, conflicts_with = "series")]
    pub no_series: bool,
    /// Draw no figures and write no report.html (`qstp plot DIR` draws them from the folder
    /// later).
    #[arg(long)]
    pub no_plots: bool,
}

/// `--series`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SeriesChoice {
    /// Every run.
    All,
    /// The first run of each point.
    First,
    /// None.
    None,
}

impl SeriesChoice {
    fn runs(self) -> qstp_lab::runner::SeriesRuns {
        match self {
            SeriesChoice::All => qstp_lab::runner::SeriesRuns::All,
            SeriesChoice::First => qstp_lab::runner::SeriesRuns::First,
            SeriesChoice::None => qstp_lab::runner::SeriesRuns::None,
        }
    }
}

/// The TCP congestion controls, sources, queues, markers and loss models a scenario may name,
/// with their parameters, from the simulator's registries (for `qstp run --help`).
pub fn congestion_help() -> String {
    let mut out = String::from(
        "Scenario keys: docs/scenarios.md. TCP congestion controls of a tcp group\n\
         (congestion = \"NAME\" or congestion = { name = \"NAME\", PARAM = VALUE, .. }):\n",
    );
    for entry in qstp_tcp::REGISTRY {
        let aliases = if entry.aliases.is_empty() {
            String::new()
        } else {
            format!(" (also {})", entry.aliases.join(", "))
        };
        out.push_str(&format!("  {}{aliases}: {}\n", entry.name, entry.doc));
        for p in entry.params {
            out.push_str(&format!(
                "      {} = {} ({}; {})\n",
                p.name,
                p.default_text(),
                p.doc,
                p.values_text()
            ));
        }
    }
    out.push_str("What a group runs (protocol = \"NAME\"):\n");
    for (names, doc) in qstp_sim::Protocol::KINDS {
        out.push_str(&format!("  {}: {doc}\n", names.join(" | ")));
    }
    out.push_str(
        "TCP options: tcp = { initial_window = 2, delayed_ack = false, min_rto = \"200ms\", sack = true, window = BYTES, recovery = \"rfc6675\" | \"prr\" | \"prr-ns3\" }\n\
         \x20 (\"prr-ns3\": ns-3 3.44's PRR and socket rules, for comparisons with ns-3: the bytes in flight a control reduces from are the pipe, not FlightSize; docs/scenarios.md)\n\
         Access links: access = { rate = \"1G\", delay = \"1ms\" }\n",
    );
    // The simulator's registries of queues, markers and loss models, with their keys.
    for (title, kinds) in [
        (
            "Queues (queue = { kind = \"NAME\", .. })",
            qstp_dataplane::queue::QueueSpec::KINDS,
        ),
        (
            "Markers of a group (marker = { kind = \"NAME\", .. })",
            qstp_dataplane::marker::MarkerSpec::KINDS,
        ),
        (
            "Loss models of a link (loss = { kind = \"NAME\", .. })",
            qstp_dataplane::loss::LossSpec::KINDS,
        ),
    ] {
        out.push_str(title);
        out.push_str(":\n");
        for (name, doc) in kinds {
            out.push_str(&format!("  {name}: {doc}\n"));
        }
    }
    out
}

/// A command-line duration (`30s`, `500ms`), for clap.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    Duration::parse(text).map_err(|e| e.to_string())
}

/// Run `qstp run`.
pub fn main(args: RunArgs) -> anyhow::Result<()> {
    run(args, true).map(|_| ())
}

/// Run the scenario and write its results; returns the results folder. Without `report`, the
/// table and the list of files written are left out (the progress bar still shows).
pub fn run(args: RunArgs, report: bool) -> anyhow::Result<PathBuf> {
    let overrides = Overrides {
        runs: args.runs,
        seed: args.seed,
        duration: args.duration,
    };
    let mut plan = load(&args.scenario, &overrides)?;
    plan.refuse_testbed_only()?;
    plan.outputs.series = if args.no_series {
        Some(qstp_lab::runner::SeriesRuns::None)
    } else {
        args.series.map(SeriesChoice::runs)
    };
    plan.outputs.figures = !args.no_plots;
    let base = plan.base();
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(&base.name));
    // Refuse a folder of someone else's files, or a link the topology lacks, before any work.
    output::claim(&out)?;
    if let Some(link) = &args.pcap {
        qstp_lab::pcap::check_link(&plan, link).map_err(anyhow::Error::msg)?;
    }
    for warning in plan.warnings() {
        eprintln!("warning: {}: {warning}", args.scenario.display());
    }
    eprintln!(
        "{}: {} point(s) x {} run(s) of {:.0} s simulated, on {jobs} thread(s)",
        base.name,
        plan.points.len(),
        base.runs,
        base.duration.as_secs_f64()
    );

    let bar = ProgressBar::new(1);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40.cyan/blue} {percent:>3}% simulated  {msg}  eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let on_progress = |p: Progress| {
        bar.set_length(p.simulated_ns_total / 1_000_000);
        bar.set_position(p.simulated_ns_done / 1_000_000);
        bar.set_message(format!("runs {}/{}", p.runs_done, p.runs_total));
    };
    let started = Instant::now();
    let points_total = plan.points.len();
    let finished = match &args.pcap {
        None => {
            catch_interrupt();
            let simulate = |_: qstp_lab::runner::Task,
                            spec: &qstp_sim::SimSpec,
                            on_time: &mut dyn FnMut(
                qstp_proto::Time,
            ) -> std::ops::ControlFlow<()>| {
                qstp_lab::simulate(spec, on_time)
            };
            execute_until(&plan, jobs, simulate, &on_progress, &INTERRUPTED)
                .map_err(anyhow::Error::from)
        }
        Some(link) => {
            qstp_lab::pcap::execute_captured(&plan, jobs, &out, link, args.pcap_limit, &on_progress)
                .map(|results| Finished {
                    plan: plan.clone(),
                    results,
                    stopped: false,
                })
                .map_err(anyhow::Error::from)
        }
    };
    bar.finish_and_clear();
    let Finished {
        plan,
        results,
        stopped,
    } = finished.context("simulation failed")?;
    if stopped && plan.points.is_empty() {
        eprintln!("interrupted before any point finished: nothing written");
        std::process::exit(130);
    }
    let wall_s = started.elapsed().as_secs_f64();

    let writing = Instant::now();
    let summary = summary::build(&plan, &results, &overrides);
    let written = if args.pcap.is_some() {
        output::write_all_keeping_pcap(&out, &plan, &results, &summary)?
    } else {
        output::write_all(&out, &plan, &results, &summary)?
    };
    let writing_s = writing.elapsed().as_secs_f64();
    if stopped {
        // Said before anything else: the folder holds part of the sweep.
        eprintln!(
            "interrupted: the {} of {points_total} point(s) whose every run had finished are written to {}; the others were stopped",
            plan.points.len(),
            out.display()
        );
    }
    if !report {
        eprintln!("results: {}", out.display());
        if stopped {
            std::process::exit(130);
        }
        return Ok(out);
    }
    print!("{}", summary::text_table(&summary));
    if let qstp_sim::spec::Topology::Graph(graph) = &base.topology {
        // The high-speed TCP paper's E assumes every flow shares one bottleneck.
        println!(
            "E in a [[link]] graph: all flows' throughput over the rate of link `{}`, whose queue \
             is recorded; flows that do not cross it can make E exceed 1.",
            graph.links[graph.bottleneck].name
        );
    }
    // Sub-second spans in milliseconds, so that a fast run never reads "0.0 s".
    let span = |s: f64| {
        if s < 1.0 {
            format!("{:.0} ms", s * 1e3)
        } else {
            format!("{s:.1} s")
        }
    };
    println!(
        "\n{:.0} s simulated, {} events, in {} wall-clock ({:.0}x real time); the outputs took {} more{}",
        summary.simulated_s,
        summary.events,
        span(wall_s),
        summary.simulated_s / wall_s.max(1e-9),
        span(writing_s),
        if written.report.is_some() {
            " (`--series none --no-plots` skips series and figures)"
        } else {
            ""
        }
    );
    println!("summary: {}", written.summary.display());
    match &written.report {
        Some(report) => println!("report:  {}", report.display()),
        None => println!(
            "report:  none (--no-plots; `qstp plot {}` draws it)",
            out.display()
        ),
    }
    println!(
        "runs:    {} (every run's per-flow results)",
        written.runs.display()
    );
    match &written.long_series {
        Some(long) => {
            println!(
                "series:  {} (long format, {})",
                long.display(),
                match qstp_lab::runner::series_runs(&plan) {
                    qstp_lab::runner::SeriesRuns::All => "every run",
                    qstp_lab::runner::SeriesRuns::First if args.series.is_some() =>
                        "the first run of each point, as asked",
                    _ => "the first run of each point: every run's would not fit the bound",
                }
            );
            println!(
                "wide:    {} file(s) in {} (the first run's series, a column per flow)",
                written.series.len(),
                out.join("series").display()
            );
        }
        None => println!("series:  none (--series none)"),
    }
    if written.report.is_some() {
        println!(
            "plots:   {} file(s) in {}",
            written.plots.len(),
            out.join("plots").display()
        );
    }
    if let Some(link) = &args.pcap {
        println!(
            "pcap:    {} file(s) in {} (link {link}, the first run of each point, at most {} packets each)",
            plan.points.len(),
            out.join(qstp_lab::output::PCAP_FOLDER).display(),
            args.pcap_limit
        );
    }
    if stopped {
        // The shell's convention for a command ended by Ctrl-C.
        std::process::exit(130);
    }
    Ok(out)
}

/// Set by the first Ctrl-C (SIGINT) of `qstp run`: no run starts any more, the runs under way
/// stop at their next simulated second, and the finished points are written.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    // A second Ctrl-C ends the process at once, SIGINT's default action (signal() is
    // async-signal-safe, POSIX.1-2017 §2.4.3).
    // SAFETY: restoring a signal's default disposition from its handler.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}

/// Catch the first Ctrl-C (see [`INTERRUPTED`]).
fn catch_interrupt() {
    // SAFETY: the handler only stores to an atomic and calls signal(), both async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}
