//! A scenario resolved into its points, and the three ways to run it: all at once on this
//! machine's threads, or one task at a time (anywhere) and then merged.

use crate::errors;
use crate::results::Results;
use pyo3::prelude::*;
use qstp_lab::metrics::RunMetrics;
use qstp_lab::runner::{self, Progress, Task};
use qstp_lab::scenario::{self, Overrides};
use qstp_proto::Duration;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};

/// How often the calling thread wakes, while threads run, to show progress and see Ctrl-C.
const POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// A scenario resolved into its sweep points, with the overrides it was read with.
#[pyclass(frozen, module = "qstp._native")]
pub struct Plan {
    plan: scenario::Plan,
    overrides: Overrides,
    /// The duration override as given, so that a worker reads the scenario exactly alike.
    duration: Option<String>,
}

fn overrides(
    py: Python<'_>,
    runs: Option<u32>,
    seed: Option<u64>,
    duration: Option<&str>,
) -> PyResult<Overrides> {
    let duration = duration
        .map(|text| {
            Duration::parse(text).map_err(|e| {
                errors::override_value(py, "duration", format!("duration '{text}': {e}"))
            })
        })
        .transpose()?;
    Ok(Overrides {
        runs,
        seed,
        duration,
    })
}

impl Plan {
    fn task(&self, py: Python<'_>, point: usize, run: u32) -> PyResult<Task> {
        let task = Task { point, run };
        match self.plan.points.get(point) {
            Some(p) if run < p.scenario.runs => Ok(task),
            _ => Err(errors::raise(
                py,
                "RunError",
                runner::RunError::UnknownTask { task }.to_string(),
            )),
        }
    }
}

#[pymethods]
impl Plan {
    /// Resolve scenario text; `file` names it in error messages.
    #[staticmethod]
    #[pyo3(signature = (text, file, runs=None, seed=None, duration=None))]
    fn parse(
        py: Python<'_>,
        text: &str,
        file: &str,
        runs: Option<u32>,
        seed: Option<u64>,
        duration: Option<&str>,
    ) -> PyResult<Plan> {
        let o = overrides(py, runs, seed, duration)?;
        let plan = scenario::parse(text, file, &o).map_err(|e| errors::scenario(py, &e))?;
        Ok(Plan {
            plan,
            overrides: o,
            duration: duration.map(str::to_string),
        })
    }

    /// Read and resolve a scenario file.
    #[staticmethod]
    #[pyo3(signature = (path, runs=None, seed=None, duration=None))]
    fn load(
        py: Python<'_>,
        path: PathBuf,
        runs: Option<u32>,
        seed: Option<u64>,
        duration: Option<&str>,
    ) -> PyResult<Plan> {
        let o = overrides(py, runs, seed, duration)?;
        let plan = scenario::load(&path, &o).map_err(|e| errors::scenario(py, &e))?;
        // A command group runs programs on the testbed only: nothing here could simulate it.
        plan.refuse_testbed_only()
            .map_err(|e| errors::scenario(py, &e))?;
        Ok(Plan {
            plan,
            overrides: o,
            duration: duration.map(str::to_string),
        })
    }

    /// The scenario's name.
    #[getter]
    fn name(&self) -> &str {
        &self.plan.base().name
    }

    /// Where the scenario came from, as error messages name it.
    #[getter]
    fn file(&self) -> &str {
        &self.plan.file
    }

    /// The scenario text, as written.
    #[getter]
    fn source(&self) -> &str {
        &self.plan.source
    }

    /// The overrides, as `(runs, seed, duration)`.
    #[getter]
    fn overrides(&self) -> (Option<u32>, Option<u64>, Option<String>) {
        (
            self.overrides.runs,
            self.overrides.seed,
            self.duration.clone(),
        )
    }

    /// The swept keys, in order.
    #[getter]
    fn sweep_keys(&self) -> Vec<String> {
        self.plan.sweep_keys.clone()
    }

    /// Number of sweep points.
    #[getter]
    fn points(&self) -> usize {
        self.plan.points.len()
    }

    /// Simulated seconds the whole plan asks for.
    #[getter]
    fn simulated_s(&self) -> f64 {
        runner::simulated_ns_total(&self.plan) as f64 / 1e9
    }

    /// Every task as `(point, run)`, points in order, runs in order.
    fn tasks(&self) -> Vec<(usize, u32)> {
        runner::tasks(&self.plan)
            .into_iter()
            .map(|t| (t.point, t.run))
            .collect()
    }

    /// Run one task (the GIL released) and return its metrics as JSON, for `assemble`.
    fn run_task(&self, py: Python<'_>, point: usize, run: u32) -> PyResult<String> {
        let task = self.task(py, point, run)?;
        let plan = &self.plan;
        let metrics = py
            .detach(|| {
                runner::run_task(plan, task, qstp_lab::simulate, &mut |_| {
                    std::ops::ControlFlow::Continue(())
                })
            })
            .map_err(|e| errors::raise(py, "RunError", e.to_string()))?;
        serde_json::to_string(&metrics).map_err(|e| errors::raise(py, "RunError", e.to_string()))
    }

    /// Merge finished tasks, `(point, run, metrics JSON)` in any order, into the plan's results.
    fn assemble(&self, py: Python<'_>, done: Vec<(usize, u32, String)>) -> PyResult<Results> {
        let mut tasks = Vec::with_capacity(done.len());
        for (point, run, json) in done {
            let task = Task { point, run };
            let metrics: RunMetrics = serde_json::from_str(&json).map_err(|e| {
                errors::raise(
                    py,
                    "RunError",
                    format!("task {task:?}: its metrics do not read back: {e}"),
                )
            })?;
            tasks.push((task, metrics));
        }
        let plan = &self.plan;
        let results = runner::assemble(plan, tasks)
            .map_err(|e| errors::raise(py, "RunError", e.to_string()))?;
        Ok(self.finish(results))
    }

    /// Run every task on `jobs` threads of this machine, the GIL released. `progress`, if given,
    /// is called on this thread as `progress(runs_done, runs_total, simulated_s_done,
    /// simulated_s_total)`. On Ctrl-C no further run starts, the runs under way finish, and
    /// `KeyboardInterrupt` is raised.
    #[pyo3(signature = (jobs, progress=None))]
    fn execute(
        &self,
        py: Python<'_>,
        jobs: usize,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Results> {
        let plan = &self.plan;
        let latest: Mutex<Option<Progress>> = Mutex::new(None);
        let stop = AtomicBool::new(false);
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let (outcome, interrupted) = py.detach(|| {
            // Moved in: a receiver may not be shared between threads.
            let done_rx = done_rx;
            std::thread::scope(|s| {
                let worker = s.spawn(|| {
                    let simulate = |spec: &qstp_sim::SimSpec,
                                    on_time: &mut dyn FnMut(
                        qstp_proto::Time,
                    )
                        -> std::ops::ControlFlow<()>| {
                        if stop.load(Ordering::Relaxed) {
                            return Err("interrupted".to_string());
                        }
                        qstp_lab::simulate(spec, on_time).map_err(|e| e.to_string())
                    };
                    let on_progress = |p: Progress| {
                        *latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
                    };
                    let outcome = runner::execute(plan, jobs, simulate, &on_progress);
                    let _ = done_tx.send(());
                    outcome
                });
                let mut interrupted: Option<PyErr> = None;
                loop {
                    let finished = !matches!(
                        done_rx.recv_timeout(POLL),
                        Err(mpsc::RecvTimeoutError::Timeout)
                    );
                    let p = latest.lock().unwrap_or_else(|e| e.into_inner()).take();
                    if interrupted.is_none() {
                        let shown = Python::attach(|py| {
                            py.check_signals()?;
                            match (&progress, p) {
                                (Some(f), Some(p)) => f
                                    .call1(
                                        py,
                                        (
                                            p.runs_done,
                                            p.runs_total,
                                            p.simulated_ns_done as f64 / 1e9,
                                            p.simulated_ns_total as f64 / 1e9,
                                        ),
                                    )
                                    .map(drop),
                                _ => Ok(()),
                            }
                        });
                        if let Err(e) = shown {
                            stop.store(true, Ordering::Relaxed);
                            interrupted = Some(e);
                        }
                    }
                    if finished {
                        break;
                    }
                }
                let outcome = worker.join().unwrap_or_else(|panic| {
                    std::panic::resume_unwind(panic);
                });
                (outcome, interrupted)
            })
        });
        if let Some(e) = interrupted {
            return Err(e);
        }
        let results = outcome.map_err(|e| errors::raise(py, "RunError", e.to_string()))?;
        Ok(self.finish(results))
    }
}

impl Plan {
    fn finish(&self, results: Vec<runner::PointResult>) -> Results {
        let summary = qstp_lab::summary::build(&self.plan, &results, &self.overrides);
        Results::new(self.plan.clone(), results, summary)
    }
}
