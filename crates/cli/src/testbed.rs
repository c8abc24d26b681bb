//! `qstp testbed`: a scenario file on Linux network namespaces with real kernel TCP, through a
//! router running the simulator's own bottleneck code; the same outputs as `qstp run`, and in
//! summary.json `"testbed": true` and each run's router accuracy and hosts' TCP settings (and,
//! with a `[delegation]` table, what the group did). The programs of `protocol = "command"`
//! groups write their output under `<out>/commands/run-<n>/<group>-<flow>/`.

use anyhow::Context as _;
use qstp_lab::runner::{execute, Progress};
use qstp_lab::scenario::{load, Classify, Overrides};
use qstp_lab::{output, summary};
use qstp_proto::Duration;
use std::path::PathBuf;
use std::sync::Mutex;

/// summary.json of a testbed run: the lab's keys, then `testbed` and `testbed_runs`.
#[derive(serde::Serialize)]
struct TestbedSummary<'a> {
    #[serde(flatten)]
    summary: &'a summary::Summary,
    /// Always true: these numbers come from the testbed, not the simulator.
    testbed: bool,
    /// Per run, in plan order: the router's accuracy and the hosts' TCP settings.
    testbed_runs: &'a [qstp_testbed::RunReport],
}

/// Arguments of `qstp testbed`.
#[derive(clap::Args)]
pub struct TestbedArgs {
    /// The scenario file (TOML): a dumbbell, without access links.
    pub scenario: PathBuf,
    /// Folder for summary.json, series/, plots/ and report.html [default: results/<scenario name>-testbed/].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Runs per sweep point, instead of the file's `runs` (they run one after another).
    #[arg(long)]
    pub runs: Option<u32>,
    /// Seed of the first run, instead of the file's `seed` (markers, loss models, start times).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Wall-clock time per run, e.g. 30s, instead of the file's; the warm-up is scaled alike.
    #[arg(long, value_parser = crate::run::parse_duration)]
    pub duration: Option<Duration>,
}

/// Run `qstp testbed`.
pub fn main(args: TestbedArgs) -> anyhow::Result<()> {
    // Without root or /dev/net/tun: one line (main prints it) and exit 1.
    qstp_testbed::check_privileges()?;
    let overrides = Overrides {
        runs: args.runs,
        seed: args.seed,
        duration: args.duration,
    };
    let plan = load(&args.scenario, &overrides)?;
    let base = plan.base();
    // `[testbed]` is the same for every point: the runner hands the run its simulation only.
    if let Some(p) = plan
        .points
        .iter()
        .find(|p| p.scenario.testbed != base.testbed)
    {
        anyhow::bail!(
            "{}: testbed: the [testbed] table cannot be swept (point {:?} differs)",
            args.scenario.display(),
            p.params
        );
    }
    let options = qstp_testbed::Options {
        classification: qstp_testbed::Classification {
            by_dscp: base.testbed.classify == Classify::Dscp,
            dscp: base.testbed.dscp.clone(),
        },
        host_sysctl: base
            .testbed
            .sysctl
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect(),
        commands: base
            .testbed
            .commands
            .iter()
            .map(|c| {
                c.as_ref().map(|c| qstp_testbed::command::Programs {
                    receiver: c.receiver.clone(),
                    sender: c.sender.clone(),
                })
            })
            .collect(),
        qstp: Some(std::env::current_exe().context("cannot find the qstp binary for {qstp}")?),
        ..qstp_testbed::Options::default()
    };
    // Every point is checked before anything is created.
    for point in &plan.points {
        qstp_testbed::check(&point.scenario.spec(0))
            .with_context(|| format!("{}", args.scenario.display()))?;
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("{}-testbed", base.name)));
    output::claim(&out)?;
    // Command groups' programs write under <out>/commands/, emptied of an earlier run's.
    let has_commands = options.commands.iter().any(Option::is_some);
    let commands_dir = if has_commands {
        output::prepare_folder(&out, "commands")?
    } else {
        out.join("commands")
    };
    let mut warnings = plan.warnings();
    for point in &plan.points {
        for w in qstp_testbed::ignored_settings(&point.scenario.spec(0)) {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
    }
    for warning in warnings {
        eprintln!("warning: {}: {warning}", args.scenario.display());
    }
    let total = plan.total_runs();
    eprintln!(
        "{}: {} point(s) x {} run(s) of {:.0} s on the testbed, one after another (~{:.0} s)",
        base.name,
        plan.points.len(),
        base.runs,
        base.duration.as_secs_f64(),
        base.duration.as_secs_f64() * total as f64
    );
    for name in qstp_testbed::ns::remove_stale()? {
        eprintln!("removed namespace {name}, left by a testbed run that was killed");
    }
    qstp_testbed::signal::install();
    let reports = Mutex::new(Vec::new());
    let run_index = std::sync::atomic::AtomicUsize::new(0);
    let on_progress = |p: Progress| {
        if p.runs_done > 0 {
            eprintln!("run {}/{} done", p.runs_done, p.runs_total);
        }
    };
    let results = execute(
        &plan,
        1,
        |spec: &qstp_sim::SimSpec,
         _: &mut dyn FnMut(qstp_proto::Time) -> std::ops::ControlFlow<()>| {
            let n = run_index.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let mut options = options.clone();
            if has_commands {
                options.command_dir = Some(commands_dir.join(format!("run-{n}")));
            }
            let run = qstp_testbed::run_with(spec, &options)?;
            reports
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(run.report);
            Ok::<_, qstp_testbed::TestbedError>(run.output)
        },
        &on_progress,
    )
    .context("testbed run failed")?;
    let reports = reports.into_inner().unwrap_or_else(|e| e.into_inner());

    let mut summary = summary::build(&plan, &results, &overrides);
    // A command group's spec is a stand-in that sends nothing: name what ran instead.
    for point in &mut summary.points {
        for g in &mut point.flows {
            let index = base.groups.iter().position(|s| s.name == g.group);
            if index.is_some_and(|i| base.testbed.commands.get(i).is_some_and(Option::is_some)) {
                g.protocol = "command".into();
            }
        }
    }
    let written = output::write_all(&out, &plan, &results, &summary)?;
    // The lab's summary (its keys in its order), then what says it was the testbed and how well
    // the router kept time.
    let json = serde_json::to_string_pretty(&TestbedSummary {
        summary: &summary,
        testbed: true,
        testbed_runs: &reports,
    })? + "\n";
    std::fs::write(&written.summary, json)
        .with_context(|| format!("cannot write {}", written.summary.display()))?;

    print!("{}", summary::text_table(&summary));
    println!(
        "\nrouter: edge markers by {}",
        if options.classification.by_dscp {
            "DSCP (the code point each group's senders set)"
        } else {
            "flow (each packet's addresses)"
        }
    );
    println!("\nrouter (forward, through the bottleneck): departure error against schedule");
    for (i, r) in reports.iter().enumerate() {
        let f = &r.router.forward;
        println!(
            "  run {i} (seed {}): {} packets, p50 {:.0} us, p99 {:.0} us, max {:.0} us; {} later than {:.0} ms, {} dropped by the kernel before the router read them",
            r.seed,
            f.packets,
            f.departure_error_p50_ns as f64 / 1e3,
            f.departure_error_p99_ns as f64 / 1e3,
            f.departure_error_max_ns as f64 / 1e3,
            f.late,
            f.late_threshold_ns as f64 / 1e6,
            f.kernel_drops + f.overrun
        );
    }
    // A `[delegation]` group: when it formed and who reacted to the Free's loss events.
    for (i, r) in reports.iter().enumerate() {
        if let Some(d) = &r.delegation {
            println!(
                "group {} + {} Stunts ('{}'), run {i}: formed at {}; loss events delegated {}, reacted to by the Free {}, taken by the Free {}",
                d.free,
                d.members_stunts,
                d.stunts,
                d.formed_at_s
                    .map_or("never".to_string(), |t| format!("{t:.2} s")),
                d.delegated,
                d.reacted,
                d.taken_by_free
            );
        }
    }
    // Command groups: how each flow's programs ended, and where their output is.
    for (i, r) in reports.iter().enumerate() {
        for c in &r.commands {
            let sender = c.sender.as_ref().map_or_else(
                || "never started (the run ended first)".to_string(),
                |s| format!("{} after {:.1} s", s.status(), s.seconds),
            );
            println!(
                "group {} flow {}, run {i}: {}; sender {sender}, receiver {}; output in {}",
                c.group,
                c.flow,
                if c.completed {
                    "completed"
                } else {
                    "NOT completed"
                },
                c.receiver.status(),
                std::path::Path::new(&c.receiver.stdout)
                    .parent()
                    .map_or(String::new(), |p| p.display().to_string())
            );
        }
    }
    println!("summary: {}", written.summary.display());
    if let Some(report) = &written.report {
        println!("report:  {}", report.display());
    }
    Ok(())
}
