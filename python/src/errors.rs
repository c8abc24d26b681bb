//! The lab's errors as the Python exceptions of `qstp._errors`, with the CLI's messages.

use pyo3::call::PyCallArgs;
use pyo3::prelude::*;
use qstp_lab::output::OutputError;
use qstp_lab::scenario::ScenarioError;

/// The exception `qstp._errors.<class>(*args)`.
fn build<'py>(py: Python<'py>, class: &str, args: impl PyCallArgs<'py>) -> PyErr {
    let made = py
        .import("qstp._errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1(args));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(e) => e,
    }
}

/// `qstp._errors.<class>(message)`.
pub fn raise(py: Python<'_>, class: &str, message: String) -> PyErr {
    build(py, class, (message,))
}

/// `ScenarioError(message, key)`: the message as the CLI prints it, the dotted key if any.
pub fn scenario(py: Python<'_>, e: &ScenarioError) -> PyErr {
    build(
        py,
        "ScenarioError",
        (e.to_string(), e.key().map(str::to_string)),
    )
}

/// `ScenarioError` about an override given to `run` (no file holds it).
pub fn override_value(py: Python<'_>, key: &str, message: String) -> PyErr {
    build(py, "ScenarioError", (message, key.to_string()))
}

/// `OutputError(message)`.
pub fn output(py: Python<'_>, e: OutputError) -> PyErr {
    raise(py, "OutputError", e.to_string())
}
