//! `qstp papers`: run every scenario the papers' claims name and write the table of the papers'
//! numbers beside the lab's (`validation/papers.md`).

use anyhow::Context as _;
use qstp_lab::papers::{self, Settings};
use qstp_lab::scenario::Overrides;
use qstp_proto::Duration;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Arguments of `qstp papers`.
#[derive(clap::Args)]
pub struct PapersArgs {
    /// The claims transcribed from the papers.
    #[arg(long, default_value = "validation/paper-claims.toml")]
    pub claims: PathBuf,
    /// The folder of the scenario files the claims name.
    #[arg(long, default_value = "scenarios")]
    pub scenarios: PathBuf,
    /// The Markdown table to write.
    #[arg(long, default_value = "validation/papers.md")]
    pub out: PathBuf,
    /// ns-2.35's values of the same quantities (written by validation/ns2/run_table.sh).
    #[arg(long, default_value = "validation/ns2/table.md")]
    pub ns2_table: PathBuf,
    /// Also write each claim's verdict, one `id verdict` line each, to this file.
    #[arg(long)]
    pub verdicts: Option<PathBuf>,
    /// Replace the output files if they exist.
    #[arg(long)]
    pub force: bool,
    /// Runs per sweep point, instead of each file's `runs`.
    #[arg(long)]
    pub runs: Option<u32>,
    /// Simulated time per run, instead of each file's (the warm-up is scaled alike).
    #[arg(long, value_parser = crate::run::parse_duration)]
    pub duration: Option<Duration>,
    /// Worker threads [default: the available cores].
    #[arg(long)]
    pub jobs: Option<usize>,
}

/// Run `qstp papers`.
pub fn main(args: PapersArgs) -> anyhow::Result<()> {
    // Refuse to replace a file before any work.
    for path in std::iter::once(&args.out).chain(args.verdicts.as_ref()) {
        if path.exists() && !args.force {
            anyhow::bail!("{} exists; give --force to replace it", path.display());
        }
    }
    let claims = papers::claims::load(&args.claims)?;
    let ns2 = papers::Ns2Table::load(&args.ns2_table)?;
    let overrides = Overrides {
        runs: args.runs,
        seed: None,
        duration: args.duration,
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let names = papers::scenario_names(&claims);
    eprintln!(
        "{} claims over {} scenarios, on {jobs} thread(s)",
        claims.claims.len(),
        names.len()
    );
    let started = std::sync::Mutex::new(String::new());
    let on_progress = |name: &str, _| {
        let mut last = started.lock().unwrap_or_else(|e| e.into_inner());
        if *last != name {
            eprintln!("  running {name}");
            *last = name.to_string();
        }
    };
    let runs = papers::run_scenarios(&claims, &args.scenarios, &overrides, jobs, &on_progress)?;
    let rows = papers::evaluate_all(&claims, &runs)?;
    let mut command = String::from("qstp papers");
    if let Some(r) = args.runs {
        command.push_str(&format!(" --runs {r}"));
    }
    if let Some(d) = args.duration {
        command.push_str(&format!(" --duration {d}"));
    }
    let settings = Settings {
        command,
        claims_file: args.claims.display().to_string(),
        ns2,
        ns2_file: args.ns2_table.display().to_string(),
    };
    let text = papers::render(&claims, &runs, &rows, &settings)?;
    write(&args.out, &text)?;
    if let Some(path) = &args.verdicts {
        write(path, &papers::verdict_lines(&rows))?;
    }
    let count = |w: &str| {
        rows.iter()
            .filter(|r| r.outcome.verdict.word() == w)
            .count()
    };
    println!(
        "{} statements: {} agree, {} disagree, {} not measured",
        rows.len(),
        count("agree"),
        count("disagree"),
        count("not-measured")
    );
    println!("table: {}", args.out.display());
    Ok(())
}

/// Write through a temporary file in the same folder, renamed into place once complete.
fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let name = path
        .file_name()
        .context("the output path names no file")?
        .to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let mut file =
        std::fs::File::create(&tmp).with_context(|| format!("cannot write {}", tmp.display()))?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
