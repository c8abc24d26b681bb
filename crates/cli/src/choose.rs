//! `qstp choose`: the high-speed TCP paper's tool of choice over a finished sweep.

use anyhow::Context as _;
use qstp_lab::choose::{choose, flow_counts, Choice};
use qstp_lab::summary::{Summary, PERFORMANCE_WEIGHTS};
use std::path::{Path, PathBuf};

/// Arguments of `qstp choose`.
#[derive(clap::Args)]
pub struct ChooseArgs {
    /// A folder written by `qstp run` over a sweep of congestion controls and flow counts (such
    /// as `scenarios/hstcp-qos.toml`'s), or a scenario file to run first (into results/<name>).
    pub results: PathBuf,
    /// Number of flows to choose for (default: every number in the results).
    #[arg(long)]
    pub flows: Option<u32>,
    /// Weight a of efficiency against fairness, in [0, 1]: performance = a E + (1 - a) F
    /// (default: 0.2, 0.5 and 0.8, the paper's).
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Print JSON: one object for one (flows, alpha), else an array of them.
    #[arg(long)]
    pub json: bool,
}

/// Run `qstp choose`.
pub fn main(args: ChooseArgs) -> anyhow::Result<()> {
    let dir = if args.results.extension().is_some_and(|e| e == "toml") {
        crate::run::run(
            crate::run::RunArgs {
                scenario: args.results.clone(),
                out: None,
                runs: None,
                seed: None,
                duration: None,
                jobs: None,
                pcap: None,
                pcap_limit: qstp_lab::pcap::DEFAULT_LIMIT,
                series: None,
                no_series: false,
                no_plots: false,
            },
            false,
        )?
    } else {
        args.results.clone()
    };
    let summary = read_summary(&dir)?;
    let flows = match args.flows {
        Some(n) => vec![n],
        None => flow_counts(&summary),
    };
    let alphas = match args.alpha {
        Some(a) => vec![a],
        None => PERFORMANCE_WEIGHTS.to_vec(),
    };
    let mut choices: Vec<Choice> = Vec::new();
    for &n in &flows {
        for &a in &alphas {
            choices.push(choose(&summary, n, a)?);
        }
    }
    if args.json {
        let text = if choices.len() == 1 {
            serde_json::to_string_pretty(&choices[0])?
        } else {
            serde_json::to_string_pretty(&choices)?
        };
        println!("{text}");
    } else {
        print!("{}", table(&choices));
    }
    Ok(())
}

fn read_summary(dir: &Path) -> anyhow::Result<Summary> {
    let path = dir.join("summary.json");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read {} (is it a `qstp run` results folder?)",
            path.display()
        )
    })?;
    serde_json::from_str(&text).with_context(|| format!("{} is not a qstp summary", path.display()))
}

/// One line per (flows, a): the best control, then the ranking with performance, E and F.
fn table(choices: &[Choice]) -> String {
    let mut out = String::from("flows  alpha  best         ranking (performance = a E + (1 - a) F; E efficiency; F Jain)\n");
    for c in choices {
        let ranking: Vec<String> = c
            .ranking
            .iter()
            .map(|r| {
                format!(
                    "{} {:.3} (E {:.3}, F {:.3})",
                    r.congestion, r.performance, r.efficiency, r.jain
                )
            })
            .collect();
        out.push_str(&format!(
            "{:>5}  {:>5}  {:<11}  {}\n",
            c.flows,
            c.alpha,
            c.best,
            ranking.join(", ")
        ));
    }
    out
}
