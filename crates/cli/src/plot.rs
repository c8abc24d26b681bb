//! `qstp plot`: draw a results folder's figures and report again from its saved data.

use anyhow::Context as _;
use qstp_lab::output::write_figures;
use qstp_lab::reload::load;
use std::path::PathBuf;

/// Arguments of `qstp plot`.
#[derive(clap::Args)]
pub struct PlotArgs {
    /// A folder written by `qstp run` (it holds summary.json, scenario.toml, runs.csv and
    /// series.csv).
    pub results: PathBuf,
}

/// Run `qstp plot`: replaces the folder's plots/ and report.html, nothing else.
pub fn main(args: PlotArgs) -> anyhow::Result<()> {
    let loaded = load(&args.results)
        .with_context(|| format!("cannot read results from {}", args.results.display()))?;
    let (report, plots) = write_figures(
        &args.results,
        &loaded.plan,
        &loaded.results,
        &loaded.summary,
    )?;
    println!("report:  {}", report.display());
    println!(
        "plots:   {} file(s) in {}",
        plots.len(),
        args.results.join("plots").display()
    );
    Ok(())
}
