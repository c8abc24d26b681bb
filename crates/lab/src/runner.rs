//! The runner, cut in two so that work can be spread anywhere: a plan is a list of [`Task`]s (one
//! run of one sweep point), [`run_task`] turns one task into its [`RunMetrics`] (a pure function
//! of the plan and the task: the seed is part of it), and [`assemble`] puts finished tasks back in
//! plan order, whatever thread, process or host ran them and in whatever order they came back.
//! [`execute`] is the local scheduler on top: a pool of threads on this machine.

use crate::metrics::{self, RunMetrics};
use crate::scenario::Plan;
use qstp_proto::Time;
use qstp_sim::{RunOutput, SimSpec};
use serde::{Deserialize, Serialize};
use std::fmt::Display;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// How far the work has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Runs finished.
    pub runs_done: u64,
    /// Runs in the plan.
    pub runs_total: u64,
    /// Simulated nanoseconds covered so far, over all runs.
    pub simulated_ns_done: u64,
    /// Simulated nanoseconds the plan asks for.
    pub simulated_ns_total: u64,
}

/// One unit of work: run number `run` of sweep point `point`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Task {
    /// Index of the sweep point in the plan.
    pub point: usize,
    /// Index of the run at that point (its seed is the point's seed plus `run`).
    pub run: u32,
}

/// The runs of one point, in run order.
#[derive(Debug, Clone, PartialEq)]
pub struct PointResult {
    /// One per run; run `i` has seed `seed + i`.
    pub runs: Vec<RunMetrics>,
}

/// Why a plan could not be run to the end.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The simulator refused or failed a run.
    #[error("point {point} [{params}], run {run} (seed {seed}): {message}")]
    Simulation {
        /// Index of the sweep point.
        point: usize,
        /// The point's swept values.
        params: String,
        /// Index of the run.
        run: u32,
        /// The run's seed.
        seed: u64,
        /// The simulator's error.
        message: String,
    },
    /// A task names a point or run the plan does not have.
    #[error("task {task:?} is not part of this plan")]
    UnknownTask {
        /// The task.
        task: Task,
    },
    /// The same task was handed in twice.
    #[error("task {task:?} was handed in twice")]
    DuplicateTask {
        /// The task.
        task: Task,
    },
    /// A task of the plan never came back.
    #[error("task {task:?} has no result")]
    MissingTask {
        /// The first task missing.
        task: Task,
    },
}

pub use crate::scenario::{series_runs, SeriesRuns, MAX_SERIES_VALUES};

/// Simulated time between two progress reports of one run, at most.
const PROGRESS_STEP_NS: u64 = 1_000_000_000;

/// Every task of `plan`, points in order, runs in order.
pub fn tasks(plan: &Plan) -> Vec<Task> {
    plan.points
        .iter()
        .enumerate()
        .flat_map(|(point, p)| (0..p.scenario.runs).map(move |run| Task { point, run }))
        .collect()
}

/// Simulated nanoseconds the whole plan asks for.
pub fn simulated_ns_total(plan: &Plan) -> u64 {
    plan.points
        .iter()
        .map(|p| p.scenario.duration.as_nanos() * u64::from(p.scenario.runs))
        .sum()
}

/// Run one task with `simulate` (normally `qstp_sim::run_with_progress`), calling `on_time` with
/// the simulated time as it goes; the task keeps its time series as [`series_runs`] says. The
/// result depends on the plan and the task only.
pub fn run_task<F, E>(
    plan: &Plan,
    task: Task,
    simulate: F,
    on_time: &mut dyn FnMut(Time) -> ControlFlow<()>,
) -> Result<RunMetrics, RunError>
where
    F: Fn(&SimSpec, &mut dyn FnMut(Time) -> ControlFlow<()>) -> Result<RunOutput, E>,
    E: Display,
{
    let Some(point) = plan.points.get(task.point) else {
        return Err(RunError::UnknownTask { task });
    };
    let scenario = &point.scenario;
    if task.run >= scenario.runs {
        return Err(RunError::UnknownTask { task });
    }
    let spec = scenario.spec(task.run);
    let keep_series = match series_runs(plan) {
        SeriesRuns::All => true,
        SeriesRuns::First => task.run == 0,
        SeriesRuns::None => false,
    };
    simulate(&spec, on_time)
        .map(|out| metrics::reduce(&out, spec.seed, spec.bin, scenario.warmup, keep_series))
        .map_err(|e| RunError::Simulation {
            point: task.point,
            params: params_text(plan, task.point),
            run: task.run,
            seed: spec.seed,
            message: e.to_string(),
        })
}

/// Put finished tasks back in plan order: every task of the plan exactly once, from anywhere.
pub fn assemble(
    plan: &Plan,
    done: impl IntoIterator<Item = (Task, RunMetrics)>,
) -> Result<Vec<PointResult>, RunError> {
    let mut slots: Vec<Vec<Option<RunMetrics>>> = plan
        .points
        .iter()
        .map(|p| (0..p.scenario.runs).map(|_| None).collect())
        .collect();
    for (task, metrics) in done {
        let slot = slots
            .get_mut(task.point)
            .and_then(|runs| runs.get_mut(task.run as usize))
            .ok_or(RunError::UnknownTask { task })?;
        if slot.replace(metrics).is_some() {
            return Err(RunError::DuplicateTask { task });
        }
    }
    slots
        .into_iter()
        .enumerate()
        .map(|(point, runs)| {
            let runs = runs
                .into_iter()
                .enumerate()
                .map(|(run, m)| {
                    m.ok_or(RunError::MissingTask {
                        task: Task {
                            point,
                            run: run as u32,
                        },
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(PointResult { runs })
        })
        .collect()
}

/// Run `plan` on `jobs` threads of this machine with `simulate`. On a failure, the error of the
/// earliest failed task (in plan order) is returned and no further task is started.
pub fn execute<F, E>(
    plan: &Plan,
    jobs: usize,
    simulate: F,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<PointResult>, RunError>
where
    F: Fn(&SimSpec, &mut dyn FnMut(Time) -> ControlFlow<()>) -> Result<RunOutput, E> + Sync,
    E: Display,
{
    execute_tasks(
        plan,
        jobs,
        |_, spec, on_time| simulate(spec, on_time),
        progress,
    )
}

/// [`execute`] with a `simulate` that is also told which task it runs (to capture the packets of
/// some runs only, say).
pub fn execute_tasks<F, E>(
    plan: &Plan,
    jobs: usize,
    simulate: F,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<PointResult>, RunError>
where
    F: Fn(Task, &SimSpec, &mut dyn FnMut(Time) -> ControlFlow<()>) -> Result<RunOutput, E> + Sync,
    E: Display,
{
    let never = AtomicBool::new(false);
    execute_until(plan, jobs, simulate, progress, &never).map(|finished| finished.results)
}

/// What [`execute_until`] finished: every point, or those whose every run ended before it was
/// stopped.
#[derive(Debug)]
pub struct Finished {
    /// The plan cut to the finished points (the whole plan unless stopped).
    pub plan: Plan,
    /// Their results, in plan order.
    pub results: Vec<PointResult>,
    /// Whether `stop` cut the execution short.
    pub stopped: bool,
}

/// [`execute_tasks`] until `stop` becomes true (Ctrl-C): then no run starts, the runs under way
/// stop at their next simulated second, and the points whose every run had finished are
/// returned.
pub fn execute_until<F, E>(
    plan: &Plan,
    jobs: usize,
    simulate: F,
    progress: &(dyn Fn(Progress) + Sync),
    stop: &AtomicBool,
) -> Result<Finished, RunError>
where
    F: Fn(Task, &SimSpec, &mut dyn FnMut(Time) -> ControlFlow<()>) -> Result<RunOutput, E> + Sync,
    E: Display,
{
    let tasks = tasks(plan);
    let simulated_ns_total = simulated_ns_total(plan);
    let runs_total = tasks.len() as u64;
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let runs_done = AtomicU64::new(0);
    let simulated_done = AtomicU64::new(0);
    let slots: Mutex<Vec<Option<Result<RunMetrics, RunError>>>> =
        Mutex::new((0..tasks.len()).map(|_| None).collect());
    let report = |runs: u64, sim: u64| {
        progress(Progress {
            runs_done: runs,
            runs_total,
            simulated_ns_done: sim,
            simulated_ns_total,
        })
    };

    let worker = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= tasks.len() || failed.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
            return;
        }
        let task = tasks[i];
        let duration_ns = plan.points[task.point].scenario.duration.as_nanos();
        let mut reported = 0u64;
        let mut on_time = |t: Time| {
            if stop.load(Ordering::Relaxed) {
                return ControlFlow::Break(());
            }
            let now = t.as_nanos().min(duration_ns);
            if now >= reported + PROGRESS_STEP_NS {
                let sim =
                    simulated_done.fetch_add(now - reported, Ordering::Relaxed) + now - reported;
                reported = now;
                report(runs_done.load(Ordering::Relaxed), sim);
            }
            ControlFlow::Continue(())
        };
        let outcome = run_task(
            plan,
            task,
            |spec: &SimSpec, on_time: &mut dyn FnMut(Time) -> ControlFlow<()>| {
                simulate(task, spec, on_time)
            },
            &mut on_time,
        );
        if outcome.is_err() && stop.load(Ordering::Relaxed) {
            // Stopped, not failed: the run left no result.
            return;
        }
        if outcome.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        let rest = duration_ns.saturating_sub(reported);
        let sim = simulated_done.fetch_add(rest, Ordering::Relaxed) + rest;
        let runs = runs_done.fetch_add(1, Ordering::Relaxed) + 1;
        report(runs, sim);
        slots.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(outcome);
    };
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, tasks.len().max(1)) {
            s.spawn(worker);
        }
    });

    let slots = slots.into_inner().unwrap_or_else(|e| e.into_inner());
    let stopped = stop.load(Ordering::Relaxed);
    let mut done = Vec::with_capacity(tasks.len());
    for (task, slot) in tasks.into_iter().zip(slots) {
        match slot {
            Some(Ok(m)) => done.push((task, m)),
            Some(Err(e)) => return Err(e),
            // Not run because a task failed (that failure comes further on in plan order), or
            // because the execution was stopped.
            None => {}
        }
    }
    if !stopped {
        return Ok(Finished {
            plan: plan.clone(),
            results: assemble(plan, done)?,
            stopped,
        });
    }
    // Keep the points whose every run finished, renumbered in plan order.
    let mut runs_done = vec![0u32; plan.points.len()];
    for (task, _) in &done {
        runs_done[task.point] += 1;
    }
    let kept: Vec<usize> = (0..plan.points.len())
        .filter(|&p| runs_done[p] == plan.points[p].scenario.runs)
        .collect();
    let mut cut = plan.clone();
    cut.points = kept.iter().map(|&p| plan.points[p].clone()).collect();
    let done = done.into_iter().filter_map(|(task, m)| {
        let point = kept.iter().position(|&p| p == task.point)?;
        Some((Task { point, ..task }, m))
    });
    let results = assemble(&cut, done)?;
    Ok(Finished {
        plan: cut,
        results,
        stopped,
    })
}

/// The swept values of point `p`, as `key=value, ...`.
pub fn params_text(plan: &Plan, p: usize) -> String {
    plan.points[p]
        .params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;
