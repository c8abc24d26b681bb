//! Writes a finished plan to its results folder: `summary.json`, `runs.csv` (every run's per-flow
//! results, one row per run and flow), `series.csv` (every run's time series in long format, one
//! row per time, run, flow and metric, and per bottleneck queue), `series/*.csv` (the first run's
//! series, one column per flow; `series/delegation-*.csv` the Free & Stunts view of it),
//! `inputs/` (copies of the files the scenario read, such as trace CSVs),
//! `plots/*.svg` and `plots/*.pdf`, `report.html`, and with
//! `--pcap` the packet captures in `pcap/` (written by the `pcap` module).
//!
//! The folder is the lab's: it holds a `.qstp-results` marker, and a later run into it first
//! removes what an earlier run wrote there (and nothing else). A folder that exists, is not empty
//! and has no marker is refused before anything runs ([`claim`]), so no user file is replaced.

use crate::figures::{figures, group_series, point_stem};
use crate::metrics::{RunSeries, OPTIONAL_SERIES, RUN_COLUMNS};
use crate::plot::{pdf, render, render_panels, PlotError};
use crate::report::{html, RenderedFigure};
use crate::runner::PointResult;
use crate::scenario::{protocol_name, Plan};
use crate::summary::{params_label, Summary};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The folder of the packet captures in a results folder.
pub const PCAP_FOLDER: &str = "pcap";

/// Why the results could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// A file or folder could not be written.
    #[error("cannot write {path}: {error}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A chart could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// The folder holds files the lab did not write.
    #[error(
        "{path} exists and was not written by `qstp run` (no {MARKER} in it): choose another --out, or empty it"
    )]
    NotResults {
        /// The folder.
        path: PathBuf,
    },
}

/// The file that marks a folder as the lab's.
pub const MARKER: &str = ".qstp-results";

/// What the lab writes into a results folder, and removes from it before writing again.
pub const OWNED: [&str; 9] = [
    "summary.json",
    "scenario.toml",
    "inputs",
    "runs.csv",
    "series.csv",
    "report.html",
    "series",
    "plots",
    "pcap",
];

/// What the marker file says.
const MARKER_TEXT: &str =
    "Written by `qstp run`. A later run into this folder replaces summary.json, scenario.toml,\n\
     runs.csv, series.csv, report.html, inputs/, series/, plots/ and pcap/, and nothing else.\n";

/// Check that `dir` may receive results: it does not exist but can be made, is empty, or was
/// written by the lab. Call it before running anything, so that a refusal costs no work.
pub fn claim(dir: &Path) -> Result<(), OutputError> {
    let io = |error| OutputError::Io {
        path: dir.to_path_buf(),
        error,
    };
    match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => can_make(dir).map_err(io),
        Err(e) => Err(io(e)),
        Ok(mut entries) => {
            if dir.join(MARKER).is_file() || entries.next().is_none() {
                Ok(())
            } else {
                Err(OutputError::NotResults {
                    path: dir.to_path_buf(),
                })
            }
        }
    }
}

/// Whether `dir`, which does not exist, can be made: it is made, with the parents it needs, and
/// removed again, so that a run into a folder it cannot write fails before it simulates.
fn can_make(dir: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut at = dir;
    while !at.exists() {
        missing.push(at);
        match at.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => at = parent,
            _ => break,
        }
    }
    std::fs::create_dir_all(dir)?;
    // Innermost first; a folder someone filled meanwhile stays.
    for made in missing {
        let _ = std::fs::remove_dir(made);
    }
    Ok(())
}

/// Make `dir/pcap/` an empty folder for this run's packet captures, before the run: `dir` is
/// claimed ([`claim`]) and marked as the lab's, and the captures of an earlier run are removed.
/// Then write the other results with [`write_all_keeping_pcap`].
pub fn prepare_pcap(dir: &Path) -> Result<PathBuf, OutputError> {
    prepare_folder(dir, PCAP_FOLDER)
}

/// Make `dir/<name>/` an empty folder for files written during the run (`pcap/`, the testbed's
/// `commands/`): `dir` is claimed ([`claim`]) and marked as the lab's, and what an earlier run
/// left in `dir/<name>/` is removed. The lab's later writes leave the folder alone unless it is
/// one of [`OWNED`].
pub fn prepare_folder(dir: &Path, name: &str) -> Result<PathBuf, OutputError> {
    claim(dir)?;
    mkdir(dir)?;
    write(&dir.join(MARKER), MARKER_TEXT)?;
    let folder = dir.join(name);
    if folder.is_dir() {
        std::fs::remove_dir_all(&folder).map_err(|error| OutputError::Io {
            path: folder.clone(),
            error,
        })?;
    }
    mkdir(&folder)?;
    Ok(folder)
}

/// Copy the files the scenario read (trace CSVs) into `dir/inputs/`, at the paths it names them
/// by, where `reload::load` finds them. A name that leaves the scenario's folder
/// (absolute, or with `..`) is not copied: `qstp plot` then says which file it misses.
fn copy_inputs(dir: &Path, plan: &Plan) -> Result<(), OutputError> {
    let from = Path::new(&plan.file).parent().unwrap_or(Path::new("."));
    let mut names: Vec<&String> = plan
        .points
        .iter()
        .flat_map(|p| &p.scenario.inputs)
        .collect();
    names.sort();
    names.dedup();
    for name in names {
        let rel = Path::new(name);
        let inside = rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside {
            continue;
        }
        let to = dir.join("inputs").join(rel);
        if let Some(parent) = to.parent() {
            mkdir(parent)?;
        }
        std::fs::copy(from.join(rel), &to).map_err(|error| OutputError::Io { path: to, error })?;
    }
    Ok(())
}

/// Remove what an earlier run of the lab wrote in `dir` (only the names in [`OWNED`], but for
/// those in `keep`).
fn clear_owned(dir: &Path, keep: &[&str]) -> Result<(), OutputError> {
    for name in OWNED.into_iter().filter(|n| !keep.contains(n)) {
        let path = dir.join(name);
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else if path.exists() {
            std::fs::remove_file(&path)
        } else {
            Ok(())
        };
        removed.map_err(|error| OutputError::Io { path, error })?;
    }
    Ok(())
}

/// The paths written.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// `summary.json`.
    pub summary: PathBuf,
    /// `report.html` (`None`: figures were not asked for).
    pub report: Option<PathBuf>,
    /// `runs.csv`.
    pub runs: PathBuf,
    /// `series.csv`, in long format (`None`: no series were kept).
    pub long_series: Option<PathBuf>,
    /// The CSV series.
    pub series: Vec<PathBuf>,
    /// The SVG plots.
    pub plots: Vec<PathBuf>,
}

fn write(path: &Path, contents: &str) -> Result<(), OutputError> {
    std::fs::write(path, contents).map_err(|error| OutputError::Io {
        path: path.to_path_buf(),
        error,
    })
}

fn mkdir(path: &Path) -> Result<(), OutputError> {
    std::fs::create_dir_all(path).map_err(|error| OutputError::Io {
        path: path.to_path_buf(),
        error,
    })
}

/// Write every output of the plan under `dir` (removing the captures of an earlier run).
pub fn write_all(
    dir: &Path,
    plan: &Plan,
    results: &[PointResult],
    summary: &Summary,
) -> Result<Written, OutputError> {
    write_outputs(dir, plan, results, summary, &[])
}

/// [`write_all`] for a run whose packet captures are already in `dir/pcap/` ([`prepare_pcap`]).
pub fn write_all_keeping_pcap(
    dir: &Path,
    plan: &Plan,
    results: &[PointResult],
    summary: &Summary,
) -> Result<Written, OutputError> {
    write_outputs(dir, plan, results, summary, &[PCAP_FOLDER])
}

fn write_outputs(
    dir: &Path,
    plan: &Plan,
    results: &[PointResult],
    summary: &Summary,
    keep: &[&str],
) -> Result<Written, OutputError> {
    claim(dir)?;
    mkdir(dir)?;
    clear_owned(dir, keep)?;
    write(&dir.join(MARKER), MARKER_TEXT)?;
    // The scenario as run, so that `qstp plot` can redraw from this folder alone.
    write(&dir.join("scenario.toml"), &plan.source)?;
    copy_inputs(dir, plan)?;
    let keeps_series = crate::runner::series_runs(plan) != crate::runner::SeriesRuns::None;
    let series_dir = dir.join("series");
    if keeps_series {
        mkdir(&series_dir)?;
    }

    let runs_path = dir.join("runs.csv");
    write(&runs_path, &runs_csv(plan, results, summary))?;
    let long_path = keeps_series.then(|| dir.join("series.csv"));
    if let Some(path) = &long_path {
        let io = |error| OutputError::Io {
            path: path.clone(),
            error,
        };
        let file = std::fs::File::create(path).map_err(io)?;
        let mut file = std::io::BufWriter::with_capacity(1 << 20, file);
        write_long_series_csv(&mut file, plan, results).map_err(io)?;
    }

    let summary_path = dir.join("summary.json");
    let json =
        serde_json::to_string_pretty(summary).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    write(&summary_path, &(json + "\n"))?;

    let mut series = Vec::new();
    for (p, (point, result)) in plan.points.iter().zip(results).enumerate() {
        let Some(s) = result.runs.first().and_then(|r| r.series.as_ref()) else {
            continue;
        };
        let path = series_dir.join(format!("{}.csv", point_stem(summary, p)));
        let names: Vec<(String, u32)> = point
            .scenario
            .groups
            .iter()
            .map(|g| (g.name.clone(), g.flows))
            .collect();
        write(&path, &series_csv(s, &names))?;
        series.push(path);
        if let Some(d) = crate::figures::delegation::delegation_series(&point.scenario, s) {
            let path = series_dir.join(format!("delegation-{}.csv", point_stem(summary, p)));
            write(&path, &crate::figures::delegation::delegation_csv(&d))?;
            series.push(path);
        }
    }

    let (report_path, plots) = if plan.outputs.figures {
        let (report, plots) = write_figures(dir, plan, results, summary)?;
        (Some(report), plots)
    } else {
        (None, Vec::new())
    };
    Ok(Written {
        summary: summary_path,
        report: report_path,
        runs: runs_path,
        long_series: long_path,
        series,
        plots,
    })
}

/// Draw every figure of the plan into `dir/plots/` (SVG and PDF) and write `dir/report.html`,
/// replacing the figures and report already there; returns the report's path and the plots'.
pub fn write_figures(
    dir: &Path,
    plan: &Plan,
    results: &[PointResult],
    summary: &Summary,
) -> Result<(PathBuf, Vec<PathBuf>), OutputError> {
    let plots_dir = dir.join("plots");
    if plots_dir.is_dir() {
        std::fs::remove_dir_all(&plots_dir).map_err(|error| OutputError::Io {
            path: plots_dir.clone(),
            error,
        })?;
    }
    mkdir(&plots_dir)?;
    let figs = figures(plan, results, summary);
    let mut svgs = Vec::with_capacity(figs.len());
    let mut plots = Vec::new();
    for f in &figs {
        let svg = if f.panels.is_empty() {
            render(&f.chart)?
        } else {
            render_panels(&f.chart.title, &f.panels)?
        };
        let path = plots_dir.join(format!("{}.svg", f.stem));
        write(&path, &svg)?;
        plots.push(path);
        let pdf_path = plots_dir.join(format!("{}.pdf", f.stem));
        let pdf_bytes = pdf(&f.chart.title, &svg)?;
        std::fs::write(&pdf_path, pdf_bytes).map_err(|error| OutputError::Io {
            path: pdf_path.clone(),
            error,
        })?;
        plots.push(pdf_path);
        svgs.push(svg);
    }
    let rendered: Vec<RenderedFigure<'_>> = figs
        .iter()
        .zip(&svgs)
        .map(|(f, svg)| RenderedFigure {
            stem: &f.stem,
            title: &f.chart.title,
            svg,
            per_point: f.point.is_some(),
        })
        .collect();
    let report_path = dir.join("report.html");
    write(
        &report_path,
        &html(summary, &rendered, &plan.file, &plan.source),
    )?;
    Ok((report_path, plots))
}

/// A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180 §2).
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Every run's per-flow results, tidy: one row per point, run and flow.
pub fn runs_csv(plan: &Plan, results: &[PointResult], summary: &Summary) -> String {
    let mut out = String::from("point,params,run,seed,group,flow,protocol,target_bps");
    for column in RUN_COLUMNS {
        let _ = write!(out, ",{}", column.name);
    }
    out.push('\n');
    for (p, (point, result)) in plan.points.iter().zip(results).enumerate() {
        let label = field(&params_label(&summary.points[p].params));
        for (run, metrics) in result.runs.iter().enumerate() {
            for f in &metrics.flows {
                let group = &point.scenario.groups[f.group];
                let target = group.target.map_or(String::new(), |t| {
                    (t.bps() / u64::from(group.flows)).to_string()
                });
                let _ = write!(
                    out,
                    "{p},{label},{run},{seed},{group},{flow},{protocol},{target}",
                    seed = metrics.seed,
                    group = field(&group.name),
                    flow = f.flow,
                    protocol = field(&protocol_name(&group.protocol)),
                );
                for column in RUN_COLUMNS {
                    let _ = write!(out, ",{}", (column.write)(f));
                }
                out.push('\n');
            }
        }
    }
    out
}

/// Every kept run's series in long format: one row per time, point, run, flow and metric
/// (`throughput_bps` and `goodput_bps` through the 1 s time-sliding window, `jitter_ms` where the
/// bin had packets; for TCP senders `rtt_ms` (mean smoothed RTT), `cwnd_bytes` and `loss_rate`
/// (share of data packets sent again) where the bin had acknowledgements or sends, and
/// `loss_events` (entries into fast recovery and timeouts) in every bin; for qstp senders, sampled
/// at the end of each bin once the connection is established, `rate_bps` (the allowed rate X),
/// `x_recv_bps` (the latest feedback's X_recv), `loss_event_rate` (its p), `rtt_ms` (the smoothed
/// RTT) and `loss_events` (feedbacks in the bin whose p rose)), then one row
/// per time, point, run, bottleneck queue and metric (`queue_packets`, `queue_bytes`: what the
/// queue held at the end of the bin), whose `group` and `flow` are empty and whose last column,
/// `queue`, names the queue (`bottleneck`, `bottleneck/<class>`; empty on flow rows). `time_s` is
/// the end of the bin; `point` joins with `runs.csv` and the summary's `points`, where the swept
/// values are.
pub fn long_series_csv(plan: &Plan, results: &[PointResult]) -> String {
    let mut out = Vec::new();
    write_long_series_csv(&mut out, plan, results).expect("writing to memory cannot fail");
    String::from_utf8(out).expect("the rows are UTF-8")
}

/// [`long_series_csv`], written to `out` row by row (the file is large: every run's bins, flows
/// and metrics; a run of the QSTP paper's Fig. 4 writes 136 MB). Each bin's time is formatted
/// once per run rather than once per row.
pub fn write_long_series_csv(
    out: &mut impl std::io::Write,
    plan: &Plan,
    results: &[PointResult],
) -> std::io::Result<()> {
    out.write_all(b"time_s,point,run,group,flow,metric,value,queue\n")?;
    let mut line = String::new();
    let mut times: Vec<String> = Vec::new();
    for (p, (point, result)) in plan.points.iter().zip(results).enumerate() {
        for (run, metrics) in result.runs.iter().enumerate() {
            let Some(s) = &metrics.series else {
                continue;
            };
            let bin = s.bin.as_secs_f64();
            times.clear();
            let time = |times: &mut Vec<String>, i: usize| {
                while times.len() <= i {
                    times.push(format!("{:.3}", (times.len() + 1) as f64 * bin));
                }
            };
            for f in &s.flows {
                let group = field(&point.scenario.groups[f.group].name);
                let mut row = |line: &mut String, i: usize, metric: &str| {
                    time(&mut times, i);
                    line.clear();
                    let _ = write!(line, "{},{p},{run},{group},{},{metric},", times[i], f.flow);
                };
                for (metric, values) in [
                    ("throughput_bps", &f.throughput_bps),
                    ("goodput_bps", &f.goodput_bps),
                ] {
                    for (i, &v) in values.iter().enumerate() {
                        row(&mut line, i, metric);
                        push_rounded(&mut line, v);
                        line.push_str(",\n");
                        out.write_all(line.as_bytes())?;
                    }
                }
                for metric in OPTIONAL_SERIES {
                    let digits = metric.digits;
                    for (i, v) in (metric.values)(f).iter().enumerate() {
                        if let Some(v) = v {
                            row(&mut line, i, metric.name);
                            let _ = writeln!(line, "{v:.digits$},");
                            out.write_all(line.as_bytes())?;
                        }
                    }
                }
            }
            for q in &s.queues {
                let name = field(&q.name);
                for (metric, values) in [("queue_packets", &q.packets), ("queue_bytes", &q.bytes)] {
                    for (i, &v) in values.iter().enumerate() {
                        time(&mut times, i);
                        line.clear();
                        let _ = write!(line, "{},{p},{run},,,{metric},", times[i]);
                        push_rounded(&mut line, v);
                        let _ = writeln!(line, ",{name}");
                        out.write_all(line.as_bytes())?;
                    }
                }
            }
        }
    }
    out.flush()
}

/// `v` as `format!("{v:.0}")` writes it (rounded half to even, a minus sign on every negative
/// value, -0 included), by integer formatting where the value is an integer-sized finite float:
/// the float formatter's exact path cost a third of a large run's outputs.
fn push_rounded(out: &mut String, v: f64) {
    if v.is_finite() && v.abs() < 4.0e15 {
        if v.is_sign_negative() {
            out.push('-');
        }
        // Exact: below 2^52 the float's fraction is exact, and this rounds it half to even.
        let _ = write!(out, "{}", v.abs().round_ties_even() as u64);
    } else {
        let _ = write!(out, "{v:.0}");
    }
}

/// One run's series as CSV: time at the end of each bin, then per group the total throughput and
/// per flow throughput, goodput (both 1 s TSW, bit/s) and jitter (ms, empty for a bin without
/// packets).
pub fn series_csv(s: &RunSeries, groups: &[(String, u32)]) -> String {
    let mut out = String::from("time_s");
    for (g, (name, _)) in groups.iter().enumerate() {
        let _ = write!(out, ",{name}.throughput_bps");
        for f in s.flows.iter().filter(|f| f.group == g) {
            let _ = write!(
                out,
                ",{name}.{i}.throughput_bps,{name}.{i}.goodput_bps,{name}.{i}.jitter_ms",
                i = f.flow
            );
        }
    }
    out.push('\n');
    let totals: Vec<Vec<f64>> = (0..groups.len())
        .map(|g| group_series(s, g, |f| &f.throughput_bps))
        .collect();
    let bins = s
        .flows
        .iter()
        .map(|f| f.throughput_bps.len())
        .max()
        .unwrap_or(0);
    for i in 0..bins {
        let _ = write!(out, "{:.3}", (i + 1) as f64 * s.bin.as_secs_f64());
        for (g, total) in totals.iter().enumerate() {
            let _ = write!(out, ",{:.0}", total.get(i).copied().unwrap_or(0.0));
            for f in s.flows.iter().filter(|f| f.group == g) {
                let thr = f.throughput_bps.get(i).copied().unwrap_or(0.0);
                let good = f.goodput_bps.get(i).copied().unwrap_or(0.0);
                let jitter = f
                    .jitter_ms
                    .get(i)
                    .copied()
                    .flatten()
                    .map_or(String::new(), |j| format!("{j:.3}"));
                let _ = write!(out, ",{thr:.0},{good:.0},{jitter}");
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
