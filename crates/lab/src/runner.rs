//! Runs every point and run of a plan over a pool of threads, each run reduced to its metrics as
//! soon as it ends; results are the same whatever the number of threads.

use crate::metrics::{self, RunMetrics};
use crate::scenario::Plan;
use qstp_proto::Time;
use qstp_sim::{RunOutput, SimSpec};
use std::fmt::Display;
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
}

/// Simulated time between two progress reports of one run, at most.
const PROGRESS_STEP_NS: u64 = 1_000_000_000;

/// Run `plan` on `jobs` threads with `simulate` (normally `qstp_sim::run_with_progress`); the
/// first run of every point keeps its time series. On a failure, the error of the earliest failed
/// run is returned.
pub fn execute<F, E>(
    plan: &Plan,
    jobs: usize,
    simulate: F,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<PointResult>, RunError>
where
    F: Fn(&SimSpec, &mut dyn FnMut(Time)) -> Result<RunOutput, E> + Sync,
    E: Display,
{
    let tasks: Vec<(usize, u32)> = plan
        .points
        .iter()
        .enumerate()
        .flat_map(|(p, point)| (0..point.scenario.runs).map(move |r| (p, r)))
        .collect();
    let simulated_ns_total = plan
        .points
        .iter()
        .map(|p| p.scenario.duration.as_nanos() * p.scenario.runs as u64)
        .sum();
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
        if i >= tasks.len() || failed.load(Ordering::Relaxed) {
            return;
        }
        let (p, run) = tasks[i];
        let scenario = &plan.points[p].scenario;
        let spec = scenario.spec(run);
        let mut reported = 0u64;
        let mut on_time = |t: Time| {
            let now = t.as_nanos().min(spec.duration.as_nanos());
            if now >= reported + PROGRESS_STEP_NS {
                let sim =
                    simulated_done.fetch_add(now - reported, Ordering::Relaxed) + now - reported;
                reported = now;
                report(runs_done.load(Ordering::Relaxed), sim);
            }
        };
        let outcome = simulate(&spec, &mut on_time)
            .map(|out| metrics::reduce(&out, spec.seed, spec.bin, scenario.warmup, run == 0))
            .map_err(|e| RunError::Simulation {
                point: p,
                params: params_text(plan, p),
                run,
                seed: spec.seed,
                message: e.to_string(),
            });
        if outcome.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        let rest = spec.duration.as_nanos().saturating_sub(reported);
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
    let mut results: Vec<PointResult> = plan
        .points
        .iter()
        .map(|_| PointResult { runs: Vec::new() })
        .collect();
    for ((p, _), slot) in tasks.iter().zip(slots) {
        match slot {
            Some(Ok(m)) => results[*p].runs.push(m),
            Some(Err(e)) => return Err(e),
            // Not run because some run failed: that failure is further on.
            None => {}
        }
    }
    Ok(results)
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
