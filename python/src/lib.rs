//! `qstp._native`: the lab's scenario reader, runner, summary and output writer, for Python.
//!
//! A [`plan::Plan`] is a scenario resolved into its points; it runs on this machine's threads
//! ([`plan::Plan::execute`]) or task by task anywhere ([`plan::Plan::run_task`] gives one run's
//! metrics as JSON, [`plan::Plan::assemble`] merges them back). Either way the result is a
//! [`results::Results`]: the summary, runs, series and the writer of a results folder. Every
//! long computation runs with the GIL released. Errors are raised as the exception classes of
//! `qstp._errors`, with the messages the CLI prints.

mod errors;
mod plan;
mod results;

use pyo3::prelude::*;
use std::path::PathBuf;

/// The qstp version and git commit this module was built from, `version+commit`; a task's metrics
/// are merged only with those of the same build.
#[pyfunction]
fn build_id() -> String {
    format!(
        "{}+{}",
        qstp_lab::summary::QSTP_VERSION,
        qstp_lab::summary::GIT_COMMIT
    )
}

/// Check that `dir` may receive results (it does not exist, is empty, or was written by qstp);
/// raises `OutputError` otherwise. Call it before running, so that a refusal costs no work.
#[pyfunction]
fn claim(py: Python<'_>, dir: PathBuf) -> PyResult<()> {
    qstp_lab::output::claim(&dir).map_err(|e| errors::output(py, e))
}

/// Read a results folder written by `qstp run` (or `Results.write`) back.
#[pyfunction]
fn load_results(py: Python<'_>, dir: PathBuf) -> PyResult<results::Results> {
    match py.detach(|| qstp_lab::reload::load(&dir)) {
        Ok(loaded) => Ok(results::Results::new(
            loaded.plan,
            loaded.results,
            loaded.summary,
        )),
        Err(qstp_lab::reload::ReloadError::Scenario(e)) => Err(errors::scenario(py, &e)),
        Err(e) => Err(errors::raise(py, "LoadError", e.to_string())),
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<plan::Plan>()?;
    m.add_class::<results::Results>()?;
    m.add_function(wrap_pyfunction!(build_id, m)?)?;
    m.add_function(wrap_pyfunction!(claim, m)?)?;
    m.add_function(wrap_pyfunction!(load_results, m)?)?;
    m.add("__version__", qstp_lab::summary::QSTP_VERSION)?;
    Ok(())
}
