//! `qstp fluid`: solve a scenario's Free & Stunts fluid model (Free & Stunts paper §III)
//! instead of simulating packets; the same outputs as `qstp run`, with `"fluid_model": true` and
//! the solver's settings in summary.json. With `--compare-with`, a `qstp run` results folder of
//! the same scenario is drawn on one chart with the fluid solution.

use anyhow::Context as _;
use qstp_fluid::{solve, FluidParams};
use qstp_lab::fluid_figure::{comparison, curves, mean_after};
use qstp_lab::runner::{execute, PointResult};
use qstp_lab::scenario::{load, Overrides, Plan};
use qstp_lab::{output, summary};
use qstp_proto::Duration;
use qstp_sim::SimSpec;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// summary.json of a fluid run: the lab's keys, then what says it was the fluid model.
#[derive(serde::Serialize)]
struct FluidSummary<'a> {
    #[serde(flatten)]
    summary: &'a summary::Summary,
    /// Always true: these numbers come from the fluid model, not the packet simulator.
    fluid_model: bool,
    /// The solver's settings of the first point.
    fluid: FluidRecord,
}

/// The solver's settings, as a scenario writes them.
#[derive(serde::Serialize)]
struct FluidRecord {
    step: String,
    margin: bool,
}

/// Arguments of `qstp fluid`.
#[derive(clap::Args)]
pub struct FluidArgs {
    /// The scenario file (TOML): a dumbbell with a RED bottleneck and TCP groups, optionally a
    /// [delegation] and a [fluid] table.
    pub scenario: PathBuf,
    /// Folder for summary.json, series/, plots/ and report.html [default: results/<scenario name>-fluid/].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The integration step, e.g. 500us, instead of the file's `fluid.step`.
    #[arg(long, value_parser = crate::run::parse_duration)]
    pub step: Option<Duration>,
    /// Simulated time, e.g. 60s, instead of the file's; the warm-up is scaled alike.
    #[arg(long, value_parser = crate::run::parse_duration)]
    pub duration: Option<Duration>,
    /// Hand the controller the trace itself, as the packet simulator (the Free aims at 1.33 T),
    /// instead of the file's `fluid.margin`.
    #[arg(long)]
    pub margin: Option<bool>,
    /// A `qstp run` results folder of the same scenario: draw both on plots/fluid-vs-packet.svg.
    #[arg(long, value_name = "DIR")]
    pub compare_with: Option<PathBuf>,
}

/// The solver's settings for `spec`: those of the point it belongs to.
fn params_of<'a>(plan: &'a Plan, spec: &SimSpec) -> Option<&'a FluidParams> {
    plan.points
        .iter()
        .find(|p| {
            let mut own = p.scenario.spec(0);
            own.seed = spec.seed;
            own == *spec
        })
        .map(|p| &p.scenario.fluid)
}

/// Run `qstp fluid`.
pub fn main(args: FluidArgs) -> anyhow::Result<()> {
    // The model has no randomness: one run per point.
    let overrides = Overrides {
        runs: Some(1),
        seed: None,
        duration: args.duration,
    };
    let mut plan = load(&args.scenario, &overrides)?;
    plan.refuse_testbed_only()?;
    for point in &mut plan.points {
        let params = &mut point.scenario.fluid;
        params.step = args.step.unwrap_or(params.step);
        params.margin = args.margin.unwrap_or(params.margin);
    }
    // Every point is checked before anything is written.
    for point in &plan.points {
        qstp_fluid::Model::new(&point.scenario.spec(0), &point.scenario.fluid)
            .with_context(|| format!("{}", args.scenario.display()))?;
    }
    let base = plan.base();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("{}-fluid", base.name)));
    output::claim(&out)?;
    for warning in plan.warnings() {
        eprintln!("warning: {}: {warning}", args.scenario.display());
    }
    eprintln!(
        "{}: {} point(s) of {:.0} s, fluid model at a {} step",
        base.name,
        plan.points.len(),
        base.duration.as_secs_f64(),
        base.fluid.step
    );
    let started = Instant::now();
    let results = execute(
        &plan,
        1,
        |spec: &SimSpec,
         progress: &mut dyn FnMut(qstp_proto::Time) -> std::ops::ControlFlow<()>| {
            let params = params_of(&plan, spec).copied().unwrap_or_default();
            solve(spec, &params, &mut |t| {
                let _ = progress(t);
            })
        },
        &|_| {},
    )
    .context("fluid model failed")?;
    let wall_s = started.elapsed().as_secs_f64();

    let summary = summary::build(&plan, &results, &overrides);
    let written = output::write_all(&out, &plan, &results, &summary)?;
    let json = serde_json::to_string_pretty(&FluidSummary {
        summary: &summary,
        fluid_model: true,
        fluid: FluidRecord {
            step: base.fluid.step.to_string(),
            margin: base.fluid.margin,
        },
    })? + "\n";
    std::fs::write(&written.summary, json)
        .with_context(|| format!("cannot write {}", written.summary.display()))?;

    print!("{}", summary::text_table(&summary));
    println!(
        "\n{:.0} s of fluid model in {:.2} s wall-clock",
        summary.simulated_s, wall_s
    );
    if let Some(dir) = &args.compare_with {
        let path = compare(&args.scenario, &plan, &results, dir, &out)?;
        println!("compare: {}", path.display());
    }
    println!("summary: {}", written.summary.display());
    if let Some(report) = &written.report {
        println!("report:  {}", report.display());
    }
    Ok(())
}

/// Draw the first point's fluid solution against the first run of `dir`'s first point (its
/// scenario's files, such as a trace, read beside `file`) into
/// `out/plots/fluid-vs-packet.svg`, and print both models' means after the warm-up.
fn compare(
    file: &Path,
    plan: &Plan,
    results: &[PointResult],
    dir: &Path,
    out: &Path,
) -> anyhow::Result<PathBuf> {
    let loaded = qstp_lab::reload::load_resolving(dir, file)
        .with_context(|| format!("--compare-with {}", dir.display()))?;
    let scenario = &plan.base();
    let packet_scenario = &loaded.plan.base();
    if packet_scenario.name != scenario.name {
        anyhow::bail!(
            "--compare-with {}: it holds scenario '{}', not '{}'",
            dir.display(),
            packet_scenario.name,
            scenario.name
        );
    }
    let series = |r: &[PointResult]| {
        r.first()
            .and_then(|p| p.runs.first())
            .and_then(|r| r.series.clone())
    };
    let (Some(fluid_series), Some(packet_series)) = (series(results), series(&loaded.results))
    else {
        anyhow::bail!("--compare-with {}: no series to compare", dir.display());
    };
    let (Some(fluid), Some(packet)) = (
        curves(scenario, &fluid_series),
        curves(packet_scenario, &packet_series),
    ) else {
        anyhow::bail!("--compare-with: the scenario has no [delegation] group to compare");
    };
    let warmup = scenario.warmup.as_secs_f64();
    let chart = comparison(&scenario.name, &fluid, &packet, warmup);
    let svg = qstp_lab::plot::render(&chart)?;
    let path = out.join("plots").join("fluid-vs-packet.svg");
    std::fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    println!("\nmeans after the warm-up, packets/s    fluid   packet");
    for (name, f, p) in [
        ("Free", &fluid.free, &packet.free),
        ("Free's target", &fluid.target, &packet.target),
        ("mean Stunt", &fluid.stunt, &packet.stunt),
        ("mean cross", &fluid.cross, &packet.cross),
    ] {
        let show =
            |c: &[(f64, f64)]| mean_after(c, warmup).map_or("-".into(), |v| format!("{v:.1}"));
        println!("  {name:<34} {:>7} {:>8}", show(f), show(p));
    }
    Ok(path)
}
