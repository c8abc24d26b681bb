//! A finished plan: its summary, its runs and series, and the writer of its results folder.

use crate::errors;
use pyo3::prelude::*;
use qstp_lab::output;
use qstp_lab::runner::PointResult;
use qstp_lab::scenario::Plan;
use qstp_lab::summary::{self, Summary};
use std::path::PathBuf;

/// The results of a plan, from a run or read back from a results folder.
#[pyclass(frozen, module = "qstp._native")]
pub struct Results {
    plan: Plan,
    results: Vec<PointResult>,
    summary: Summary,
}

impl Results {
    pub fn new(plan: Plan, results: Vec<PointResult>, summary: Summary) -> Self {
        Results {
            plan,
            results,
            summary,
        }
    }
}

#[pymethods]
impl Results {
    /// summary.json's text, byte for byte as `qstp run` writes it.
    fn summary_json(&self, py: Python<'_>) -> PyResult<String> {
        serde_json::to_string_pretty(&self.summary)
            .map(|json| json + "\n")
            .map_err(|e| errors::raise(py, "OutputError", e.to_string()))
    }

    /// The table `qstp run` prints.
    fn text_table(&self) -> String {
        summary::text_table(&self.summary)
    }

    /// runs.csv's text: one row per point, run and flow.
    fn runs_csv(&self, py: Python<'_>) -> String {
        py.detach(|| output::runs_csv(&self.plan, &self.results, &self.summary))
    }

    /// series.csv's text: every kept series in long format, one row per time, point, run, flow
    /// and metric.
    fn series_csv(&self, py: Python<'_>) -> String {
        py.detach(|| output::long_series_csv(&self.plan, &self.results))
    }

    /// The scenario text the results came from.
    #[getter]
    fn source(&self) -> &str {
        &self.plan.source
    }

    /// Write the results folder (summary.json, scenario.toml, runs.csv, series.csv, series/,
    /// plots/, report.html) as `qstp run` does; returns the path of report.html (`None` when
    /// the plan draws no figures).
    fn write(&self, py: Python<'_>, out: PathBuf) -> PyResult<Option<PathBuf>> {
        py.detach(|| output::write_all(&out, &self.plan, &self.results, &self.summary))
            .map(|written| written.report)
            .map_err(|e| errors::output(py, e))
    }
}
