//! Writes a finished plan to its results folder: `summary.json`, `series/*.csv`, `plots/*.svg` and
//! `report.html`.

use crate::figures::{figures, group_series, point_stem};
use crate::metrics::RunSeries;
use crate::plot::{render, PlotError};
use crate::report::{html, RenderedFigure};
use crate::runner::PointResult;
use crate::scenario::Plan;
use crate::summary::Summary;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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
}

/// The paths written.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// `summary.json`.
    pub summary: PathBuf,
    /// `report.html`.
    pub report: PathBuf,
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

/// Write every output of the plan under `dir`.
pub fn write_all(
    dir: &Path,
    plan: &Plan,
    results: &[PointResult],
    summary: &Summary,
) -> Result<Written, OutputError> {
    let series_dir = dir.join("series");
    let plots_dir = dir.join("plots");
    mkdir(&series_dir)?;
    mkdir(&plots_dir)?;

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
    }

    let figs = figures(plan, results, summary);
    let mut svgs = Vec::with_capacity(figs.len());
    let mut plots = Vec::new();
    for f in &figs {
        let svg = render(&f.chart)?;
        let path = plots_dir.join(format!("{}.svg", f.stem));
        write(&path, &svg)?;
        plots.push(path);
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
    Ok(Written {
        summary: summary_path,
        report: report_path,
        series,
        plots,
    })
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
