//! The nonlinear fluid model of the Free & Stunts paper (§III, eqs. 5-15): m TCP
//! flows as rates x_i(t) through one RED bottleneck of capacity C, with the Free's congestion
//! signals delegated to its Stunts by the same [`Controller`](qstp_sim::delegation::Controller) the
//! packet simulator runs. [`solve`] turns a [`SimSpec`] into a [`RunOutput`], so the lab's
//! summaries, series, plots and reports work on it unchanged.
//!
//! What a spec must be: a dumbbell whose bottleneck queue is RED (B_min, B_max, P_max = its
//! `curve`, beta = its `weight`, the backlog bounded by its `limit`), with no random loss, and TCP
//! groups only, all with the scenario's packet size; C in packets per second is the bottleneck
//! rate over that size. Anything else is refused naming its key.
//!
//! Interpretation:
//! - D_i is the group's base `rtt`; alpha_i D_i (eq. 6) is the sender's access delay of the
//!   dumbbell (`rtt / 2` less the bottleneck's and the receiver's one-way delays), derived, not a
//!   fixed 0.5.
//! - g(t) is the fraction of the Free's signals delegated ([`equations`] explains eqs. 10-12 as
//!   moving signals between flows, clamped to probabilities).
//! - RED drops every packet once v >= B_max, and a full queue drops the excess; both are the
//!   signal p(t) the flows see after D_bs_i (eq. 15).
//! - A window never falls below one packet: x_i >= 1 / r_i.
//! - Initial conditions: each flow starts (at its group's `start`, without the packet
//!   simulator's seeded spread) at its TCP initial window per base RTT, x_i = w0 / D_i, having
//!   held that rate before; b = v = 0 and p = 0 before time zero. There is no slow start
//!   (the model's assumption 1), so the first seconds differ from the packet simulator's.
//! - The controller samples the Free's received payload throughput every `period`, as the packet
//!   simulator's host does, and is handed T / 1.33 instead of T (unless `margin = true`): eqs.
//!   3-4 aim a packet flow's sawtooth peak at 1.33 T so that its mean is T, while a fluid rate
//!   is already the mean, which a PI controller would otherwise settle at 1.33 T.
//! - Reverse delegation follows the packet simulator: while the Free's last sample is above T,
//!   every Stunt whose window is below the Free's hands it all its signals.
//!
//! Integrator: Heun's method (explicit trapezoidal rule) at a fixed step, with the delayed terms
//! x_i(t - r_i(t)), x_i(t - D_{s_i b}) and p(t - D_bs_i(t)) read by linear interpolation from a
//! bounded ring buffer of past steps ([`history`]). It is second order for smooth stretches and
//! stays explicit as long as every delay is at least the step, which is why a longer step is
//! refused; at 1 ms against delays of tens of ms and RED's 1 / (beta C) time constant, halving
//! the step changes the results by little (the tests check it). A fixed step keeps the output
//! bins, the control instants and the history's ring aligned.
//!
//! Output: per flow, the packets leaving the bottleneck (arrivals less the dropped share, sharing
//! C in proportion while the queue is busy; the propagation after the bottleneck is not added),
//! sent, dropped, the signals it reacted to, its RTT and window; the queue's backlog b(t) at the
//! end of each bin and its arrival and drop counters after the warm-up (as red: best effort);
//! the delegation's samples. Jitter is zero.

pub mod equations;
pub mod history;
pub mod model;
mod output;
pub mod solver;

pub use model::Model;

use qstp_proto::{Duration, Time};
use qstp_sim::error::SimError;
use qstp_sim::output::RunOutput;
use qstp_sim::spec::SimSpec;

/// The step when a scenario gives none.
pub const DEFAULT_STEP: Duration = Duration::from_millis(1);

/// How to solve: the scenario's `[fluid]` table.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FluidParams {
    /// The integrator's fixed step; at most the model's smallest delay.
    pub step: Duration,
    /// Hand the controller the trace itself (true, as the packet simulator: it aims at 1.33 T)
    /// or T / 1.33 (false, the default: a fluid rate has no sawtooth to average).
    pub margin: bool,
}

impl Default for FluidParams {
    fn default() -> Self {
        FluidParams {
            step: DEFAULT_STEP,
            margin: false,
        }
    }
}

/// Solve the fluid model of `spec`, reporting the simulated time reached about every second.
pub fn solve(
    spec: &SimSpec,
    params: &FluidParams,
    progress: &mut dyn FnMut(Time),
) -> Result<RunOutput, SimError> {
    let model = Model::new(spec, params)?;
    let mut solver = solver::Solver::new(&model, params, spec.duration)?;
    let mut recorder = output::Recorder::new(&model, spec);
    let step_ns = params.step.as_nanos();
    let steps = spec.duration.as_nanos().div_ceil(step_ns);
    let h = params.step.as_secs_f64();
    let mut next_report = 1_000_000_000u64;
    for _ in 0..steps {
        solver.step();
        recorder.add(&model, &solver, h);
        if solver.now_ns() >= next_report {
            progress(Time::from_nanos(solver.now_ns()));
            next_report = next_report.saturating_add(1_000_000_000);
        }
    }
    let period = model.delegation.as_ref().map(|d| d.spec.period);
    let samples = std::mem::take(&mut solver.samples);
    Ok(recorder.finish(&model, spec, samples, period))
}
