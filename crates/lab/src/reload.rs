//! Reads a results folder written by `qstp run` back into the plan, the per-run results and the
//! summary, so that its figures and report can be drawn again (`qstp plot`) without simulating.
//!
//! What comes back is what the folder holds: `scenario.toml` (re-read with the overrides recorded
//! in `summary.json`), `runs.csv` (each run's per-flow means) and `series.csv` (the series of the
//! runs it kept). Queue counters and event counts are in the summary only.

use crate::metrics::{
    FlowRun, FlowSeries, QueueLength, RunMetrics, RunSeries, OPTIONAL_SERIES, RUN_COLUMNS,
};
use crate::runner::PointResult;
use crate::scenario::{parse, Overrides, Plan, ScenarioError};
use crate::summary::Summary;
use qstp_proto::Duration;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a results folder could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    /// A file could not be read.
    #[error("cannot read {path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// summary.json is not a summary.
    #[error("{path} is not a qstp summary: {error}")]
    Summary {
        /// The file.
        path: PathBuf,
        /// What the JSON parser said.
        error: serde_json::Error,
    },
    /// scenario.toml no longer reads.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A CSV file is malformed.
    #[error("{path}, line {line}: {reason}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// The line (1 is the header).
        line: u64,
        /// What is wrong.
        reason: String,
    },
    /// The files disagree with each other.
    #[error("{dir}: {reason}")]
    Mismatch {
        /// The folder.
        dir: PathBuf,
        /// What disagrees.
        reason: String,
    },
}

/// A results folder, read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The plan, from scenario.toml and the recorded overrides.
    pub plan: Plan,
    /// Per point, its runs: per-flow means, and the series where kept.
    pub results: Vec<PointResult>,
    /// summary.json.
    pub summary: Summary,
}

fn read(path: &Path) -> Result<String, ReloadError> {
    std::fs::read_to_string(path).map_err(|error| ReloadError::Io {
        path: path.to_path_buf(),
        error,
    })
}

/// Read the results folder `dir`.
pub fn load(dir: &Path) -> Result<Loaded, ReloadError> {
    // The files the scenario names were copied into `inputs/` at the paths it names them by.
    load_resolving(dir, &dir.join("inputs").join("scenario.toml"))
}

/// [`load`], with the files the scenario names (a trace's CSV) found beside `scenario`, the
/// file the folder's scenario.toml was copied from, instead of in `dir`.
pub fn load_resolving(dir: &Path, scenario: &Path) -> Result<Loaded, ReloadError> {
    let summary_path = dir.join("summary.json");
    let summary: Summary =
        serde_json::from_str(&read(&summary_path)?).map_err(|error| ReloadError::Summary {
            path: summary_path.clone(),
            error,
        })?;
    let scenario_path = dir.join("scenario.toml");
    let overrides = Overrides {
        runs: summary.overrides.runs,
        seed: summary.overrides.seed,
        duration: summary
            .overrides
            .duration_s
            .map(|s| Duration::from_nanos((s * 1e9).round() as u64)),
    };
    let mut plan = parse(
        &read(&scenario_path)?,
        &scenario.display().to_string(),
        &overrides,
    )?;
    plan.outputs.series = Some(summary.series_runs);
    let mismatch = |reason: String| ReloadError::Mismatch {
        dir: dir.to_path_buf(),
        reason,
    };
    if plan.points.len() != summary.points.len() {
        return Err(mismatch(format!(
            "scenario.toml gives {} point(s), summary.json has {}",
            plan.points.len(),
            summary.points.len()
        )));
    }
    let mut results: Vec<PointResult> = plan
        .points
        .iter()
        .map(|p| PointResult {
            runs: (0..p.scenario.runs)
                .map(|run| RunMetrics {
                    seed: p.scenario.seed.wrapping_add(u64::from(run)),
                    events: 0,
                    simulated: p.scenario.duration,
                    flows: Vec::new(),
                    queues: Vec::new(),
                    sojourn: Vec::new(),
                    series: None,
                    matching: None,
                    signals: None,
                    atm: None,
                })
                .collect(),
        })
        .collect();
    read_runs(&dir.join("runs.csv"), &plan, &mut results)?;
    // A run that kept no series (`qstp run --series none`) wrote no series.csv.
    if summary.series_runs != crate::runner::SeriesRuns::None {
        read_series(&dir.join("series.csv"), &plan, &mut results)?;
    }
    Ok(Loaded {
        plan,
        results,
        summary,
    })
}

/// The group index of `name` at point `p`.
fn group_index(plan: &Plan, p: usize, name: &str) -> Option<usize> {
    plan.points[p]
        .scenario
        .groups
        .iter()
        .position(|g| g.name == name)
}

fn csv_error(path: &Path, line: u64, reason: impl Into<String>) -> ReloadError {
    ReloadError::Csv {
        path: path.to_path_buf(),
        line,
        reason: reason.into(),
    }
}

/// The records of a CSV file with the header `expected` (its first columns).
fn records(path: &Path, expected: &[&str]) -> Result<Vec<csv::StringRecord>, ReloadError> {
    let text = read(path)?;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| csv_error(path, 1, e.to_string()))?
        .clone();
    if header
        .iter()
        .take(expected.len())
        .ne(expected.iter().copied())
    {
        return Err(csv_error(
            path,
            1,
            format!("expected the columns {}", expected.join(",")),
        ));
    }
    reader
        .records()
        .enumerate()
        .map(|(i, r)| r.map_err(|e| csv_error(path, i as u64 + 2, e.to_string())))
        .collect()
}

/// A field of `record`, parsed.
fn field<T: std::str::FromStr>(
    path: &Path,
    line: u64,
    record: &csv::StringRecord,
    column: usize,
    name: &str,
) -> Result<T, ReloadError> {
    record
        .get(column)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| csv_error(path, line, format!("bad or missing {name}")))
}

fn read_runs(path: &Path, plan: &Plan, results: &mut [PointResult]) -> Result<(), ReloadError> {
    const FIXED: [&str; 8] = [
        "point",
        "params",
        "run",
        "seed",
        "group",
        "flow",
        "protocol",
        "target_bps",
    ];
    let mut columns = FIXED.to_vec();
    columns.extend(RUN_COLUMNS.iter().take_while(|c| c.always).map(|c| c.name));
    for (i, r) in records(path, &columns)?.iter().enumerate() {
        let line = i as u64 + 2;
        let p: usize = field(path, line, r, 0, "point")?;
        let run: usize = field(path, line, r, 2, "run")?;
        let metrics = results
            .get_mut(p)
            .and_then(|pr| pr.runs.get_mut(run))
            .ok_or_else(|| csv_error(path, line, format!("no run {run} at point {p}")))?;
        let group = group_index(plan, p, &r[4])
            .ok_or_else(|| csv_error(path, line, format!("no group '{}'", &r[4])))?;
        metrics.seed = field(path, line, r, 3, "seed")?;
        let mut flow = FlowRun {
            group,
            flow: field(path, line, r, 5, "flow")?,
            ..FlowRun::default()
        };
        for (k, column) in RUN_COLUMNS.iter().enumerate() {
            if !(column.read)(&mut flow, r.get(FIXED.len() + k)) {
                return Err(csv_error(
                    path,
                    line,
                    format!("bad or missing {}", column.name),
                ));
            }
        }
        metrics.flows.push(flow);
    }
    Ok(())
}

fn read_series(path: &Path, plan: &Plan, results: &mut [PointResult]) -> Result<(), ReloadError> {
    // (point, run) -> (group, flow) -> series.
    let mut kept: BTreeMap<(usize, usize), BTreeMap<(usize, u32), FlowSeries>> = BTreeMap::new();
    // (point, run) -> queues in the order first seen.
    let mut queues: BTreeMap<(usize, usize), Vec<QueueLength>> = BTreeMap::new();
    // Files written before the `queue` column have seven columns and flow rows only.
    let columns = ["time_s", "point", "run", "group", "flow", "metric", "value"];
    for (i, r) in records(path, &columns)?.iter().enumerate() {
        let line = i as u64 + 2;
        let time: f64 = field(path, line, r, 0, "time_s")?;
        let p: usize = field(path, line, r, 1, "point")?;
        let run: usize = field(path, line, r, 2, "run")?;
        let value: f64 = field(path, line, r, 6, "value")?;
        let scenario = &plan
            .points
            .get(p)
            .ok_or_else(|| csv_error(path, line, format!("no point {p}")))?
            .scenario;
        let bins = scenario
            .duration
            .as_nanos()
            .div_ceil(scenario.bin.as_nanos().max(1)) as usize;
        let bin = ((time / scenario.bin.as_secs_f64()).round() as usize)
            .checked_sub(1)
            .filter(|&b| b < bins)
            .ok_or_else(|| csv_error(path, line, format!("time {time} s is outside the run")))?;
        if let Some(name) = r.get(7).filter(|q| !q.is_empty()) {
            let list = queues.entry((p, run)).or_default();
            let index = match list.iter().position(|q| q.name == name) {
                Some(index) => index,
                None => {
                    list.push(QueueLength {
                        name: name.to_string(),
                        packets: vec![0.0; bins],
                        bytes: vec![0.0; bins],
                    });
                    list.len() - 1
                }
            };
            match &r[5] {
                "queue_packets" => list[index].packets[bin] = value,
                "queue_bytes" => list[index].bytes[bin] = value,
                other => {
                    return Err(csv_error(
                        path,
                        line,
                        format!("unknown queue metric '{other}'"),
                    ))
                }
            }
            continue;
        }
        let flow: u32 = field(path, line, r, 4, "flow")?;
        let group = group_index(plan, p, &r[3])
            .ok_or_else(|| csv_error(path, line, format!("no group '{}'", &r[3])))?;
        let series = kept
            .entry((p, run))
            .or_default()
            .entry((group, flow))
            .or_insert_with(|| {
                let mut s = FlowSeries {
                    group,
                    flow,
                    throughput_bps: vec![0.0; bins],
                    goodput_bps: vec![0.0; bins],
                    ..FlowSeries::default()
                };
                for metric in OPTIONAL_SERIES.iter().filter(|m| m.every_flow) {
                    *(metric.values_mut)(&mut s) = vec![None; bins];
                }
                s
            });
        match &r[5] {
            "throughput_bps" => series.throughput_bps[bin] = value,
            "goodput_bps" => series.goodput_bps[bin] = value,
            name => {
                let Some(metric) = OPTIONAL_SERIES.iter().find(|m| m.name == name) else {
                    return Err(csv_error(path, line, format!("unknown metric '{name}'")));
                };
                // Sender series exist only for the flows whose senders report them.
                let values = (metric.values_mut)(series);
                if values.is_empty() {
                    values.resize(bins, None);
                }
                values[bin] = Some(value);
            }
        }
    }
    for ((p, run), flows) in kept {
        let metrics = results
            .get_mut(p)
            .and_then(|pr| pr.runs.get_mut(run))
            .ok_or_else(|| csv_error(path, 0, format!("no run {run} at point {p}")))?;
        metrics.series = Some(RunSeries {
            bin: plan.points[p].scenario.bin,
            flows: flows.into_values().collect(),
            queues: queues.remove(&(p, run)).unwrap_or_default(),
        });
    }
    if let Some(((p, run), _)) = queues.into_iter().next() {
        return Err(csv_error(
            path,
            0,
            format!("queue rows for run {run} at point {p}, which has no flow rows"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
