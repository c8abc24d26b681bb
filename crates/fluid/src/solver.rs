//! The integrator: Heun's method (explicit trapezoidal rule) at a fixed step over the delay
//! equations, with the Free & Stunts controller run at its control instants.

use super::equations::{self, Control, Past, Rates, State};
use super::history::History;
use super::model::Model;
use super::FluidParams;
use qstp_proto::{Duration, Rate};
use qstp_sim::delegation::controller::MARGIN;
use qstp_sim::delegation::Controller;
use qstp_sim::error::SimError;

/// Most values the histories may hold together (8 bytes each): 64 Mi, 512 MiB.
const MAX_HISTORY_VALUES: u64 = 64 << 20;

/// What one step did, averaged over it (the trapezoid of its two stages), per second.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRates {
    /// Per flow, packets per second leaving the bottleneck towards its receiver.
    pub departures: Vec<f64>,
    /// Per flow, packets per second it sends.
    pub sent: Vec<f64>,
    /// Per flow, packets per second dropped at the bottleneck.
    pub dropped: Vec<f64>,
    /// Per flow, congestion signals per second it reacts to.
    pub signals: Vec<f64>,
    /// Packets per second arriving at the bottleneck.
    pub arrivals: f64,
    /// RED's early drops, per second.
    pub early: f64,
    /// Overflow drops, per second.
    pub overflow: f64,
    /// The Free's signals delegated, per second.
    pub delegated: f64,
    /// Stunt signals the Free took, per second.
    pub taken_by_free: f64,
}

/// The model being solved.
#[derive(Debug)]
pub struct Solver<'a> {
    m: &'a Model,
    /// The step, seconds.
    h: f64,
    step_ns: u64,
    /// Steps done.
    n: u64,
    state: State,
    past: Past,
    control: Control,
    controller: Option<Controller>,
    /// The controller's targets are divided by this (1, or MARGIN when `margin` is off).
    unmargin: f64,
    period_ns: u64,
    next_control_ns: u64,
    /// The Free's packets received since the last control instant.
    free_received: f64,
    /// The control samples: the Free's throughput against the trace, bit/s.
    pub samples: Vec<(f64, f64)>,
    max_samples: usize,
    k1: Rates,
    k2: Rates,
    /// The result of the last step.
    pub last: StepRates,
}

impl<'a> Solver<'a> {
    /// A solver of `m` for a run of `duration`; x_i starts at its initial window over its base
    /// RTT, b = v = 0, and every quantity held its initial value before time zero.
    pub fn new(m: &'a Model, params: &FluidParams, duration: Duration) -> Result<Self, SimError> {
        let h = params.step.as_secs_f64();
        let n = m.flows.len();
        // The furthest back a delayed term reads: the longest RTT with a full queue.
        let reach = m.flows.iter().map(|f| f.d).fold(0.0, f64::max) + m.red.limit / m.c;
        let capacity = (reach / h).ceil() as u64 + 3;
        if capacity.saturating_mul(n as u64 + 1) > MAX_HISTORY_VALUES {
            return Err(SimError::Invalid {
                key: "fluid.step".into(),
                reason: format!(
                    "{} keeps {capacity} steps of history for each of {} quantities, more than \
                     {MAX_HISTORY_VALUES} values: use a longer step",
                    params.step,
                    n + 1
                ),
            });
        }
        let capacity = capacity as usize;
        let x0: Vec<f64> = m.flows.iter().map(|f| f.w0 / f.d).collect();
        let past = Past {
            x: x0
                .iter()
                .map(|&x| History::new(capacity, h, 0.0, x))
                .collect(),
            p: History::new(capacity, h, 0.0, 0.0),
        };
        let delegation = m.delegation.as_ref();
        let period_ns = delegation.map_or(u64::MAX, |d| d.spec.period.as_nanos().max(1));
        let zeros = vec![0.0; n];
        Ok(Solver {
            m,
            h,
            step_ns: params.step.as_nanos(),
            n: 0,
            state: State {
                x: x0,
                b: 0.0,
                v: 0.0,
            },
            past,
            control: Control::default(),
            controller: delegation.map(|d| Controller::new(d.spec.controller)),
            unmargin: if params.margin { 1.0 } else { MARGIN },
            period_ns,
            next_control_ns: period_ns,
            free_received: 0.0,
            samples: Vec::new(),
            max_samples: (duration.as_nanos() / period_ns).min(1 << 20) as usize,
            k1: Rates::new(n),
            k2: Rates::new(n),
            last: StepRates {
                departures: zeros.clone(),
                sent: zeros.clone(),
                dropped: zeros.clone(),
                signals: zeros,
                arrivals: 0.0,
                early: 0.0,
                overflow: 0.0,
                delegated: 0.0,
                taken_by_free: 0.0,
            },
        })
    }

    /// The state now.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The time now, nanoseconds.
    pub fn now_ns(&self) -> u64 {
        self.n * self.step_ns
    }

    /// The delegation fraction the controller gave last.
    pub fn g(&self) -> f64 {
        self.control.g
    }

    /// Advance one step: Heun's predictor (an Euler step) and corrector (the mean of the slopes at
    /// both ends). The delayed terms are read from history; with every delay at least the step,
    /// both stages read only steps already taken.
    pub fn step(&mut self) {
        let (m, h) = (self.m, self.h);
        let t = self.n as f64 * h;
        equations::rates(m, &self.past, self.control, t, &self.state, &mut self.k1);
        let predicted = self.advanced(&self.state, &self.k1, h, t + h);
        equations::rates(m, &self.past, self.control, t + h, &predicted, &mut self.k2);
        let mut next = self.state.clone();
        for i in 0..next.x.len() {
            next.x[i] += h / 2.0 * (self.k1.dx[i] + self.k2.dx[i]);
        }
        next.b += h / 2.0 * (self.k1.db + self.k2.db);
        next.v += h / 2.0 * (self.k1.dv + self.k2.dv);
        self.state = self.clamped(next, t + h);
        self.n += 1;
        for (i, x) in self.state.x.iter().enumerate() {
            self.past.x[i].push(*x);
        }
        // The signal of the packets arriving now: RED's p_c (eq. 8) and, when the queue is full
        // and filling, the share of arrivals that finds no room.
        let arrivals: f64 = (0..m.flows.len())
            .map(|i| equations::arrival(m, &self.past, &self.state, i, t + h))
            .sum();
        let early = m.red.p(self.state.v);
        let overflow = if self.state.b >= m.red.limit && arrivals > m.c {
            1.0 - m.c / arrivals
        } else {
            0.0
        };
        self.past.p.push(1.0 - (1.0 - early) * (1.0 - overflow));
        self.record(early, overflow);
        self.control();
    }

    /// `s` moved by `h` along `k`, clamped.
    fn advanced(&self, s: &State, k: &Rates, h: f64, t: f64) -> State {
        let mut next = s.clone();
        for (x, dx) in next.x.iter_mut().zip(&k.dx) {
            *x += h * dx;
        }
        next.b += h * k.db;
        next.v += h * k.dv;
        self.clamped(next, t)
    }

    /// The state kept within what it can be: a window of at least one packet (TCP never sends
    /// less than one packet per RTT), a backlog within the queue, a non-negative average.
    fn clamped(&self, mut s: State, t: f64) -> State {
        s.b = s.b.clamp(0.0, self.m.red.limit);
        s.v = s.v.max(0.0);
        for (i, x) in s.x.iter_mut().enumerate() {
            let f = &self.m.flows[i];
            *x = if equations::active(self.m, i, t) {
                x.max(1.0 / equations::rtt(self.m, i, s.b))
            } else {
                f.w0 / f.d
            };
        }
        s
    }

    /// The step's rates: the mean of both stages' by-products. Of each flow's arrivals, the
    /// dropped share is lost; the rest leaves at C in proportion to the admitted arrivals while
    /// the queue holds packets or the link is saturated, as it arrives otherwise.
    fn record(&mut self, early: f64, overflow: f64) {
        let (k1, k2, out) = (&self.k1, &self.k2, &mut self.last);
        let mean = |a: f64, b: f64| (a + b) / 2.0;
        let lost = 1.0 - (1.0 - early) * (1.0 - overflow);
        out.arrivals = 0.0;
        let mut admitted = 0.0;
        for i in 0..out.departures.len() {
            let a = mean(k1.arrivals[i], k2.arrivals[i]);
            out.arrivals += a;
            out.dropped[i] = a * lost;
            out.departures[i] = a - out.dropped[i];
            admitted += out.departures[i];
            out.signals[i] = mean(k1.signals[i], k2.signals[i]);
            out.sent[i] = self.state.x[i];
        }
        let c = self.m.c;
        if admitted > 0.0 && (self.state.b > 0.0 || admitted > c) {
            for dep in &mut out.departures {
                *dep *= c / admitted;
            }
        }
        out.early = out.arrivals * early;
        out.overflow = out.arrivals * (lost - early);
        out.delegated = mean(k1.delegated, k2.delegated);
        out.taken_by_free = mean(k1.taken_by_free, k2.taken_by_free);
        if let Some(d) = &self.m.delegation {
            self.free_received += out.departures[d.free] * self.h;
        }
    }

    /// The control instants due by now (Free & Stunts Fig. 2): sample the Free's throughput over
    /// the last period and run the controller.
    fn control(&mut self) {
        let (Some(d), Some(controller)) = (&self.m.delegation, &mut self.controller) else {
            return;
        };
        let payload_bits = self.m.payload_bytes * 8.0;
        let now = self.n * self.step_ns;
        while now >= self.next_control_ns {
            let at = Duration::from_nanos(self.next_control_ns);
            let x = self.free_received * payload_bits / d.spec.period.as_secs_f64();
            self.free_received = 0.0;
            let target = d.spec.trace.at(at);
            let goal = Rate::from_bps((target.bps() as f64 / self.unmargin).round() as u64);
            self.control.g =
                controller.update(Rate::from_bps(x.round() as u64), goal, payload_bits as u64);
            self.control.free_above = x > target.bps() as f64;
            if self.samples.len() < self.max_samples {
                self.samples.push((x, target.bps() as f64));
            }
            self.next_control_ns = self.next_control_ns.saturating_add(self.period_ns);
        }
    }
}
