//! The right-hand side of the fluid model: eqs. (5)-(15) of Free & Stunts §III-A at one instant,
//! reading the delayed terms from the stored history.

use super::history::History;
use super::model::Model;

/// The state the integrator advances.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    /// x_i, packets per second, per flow.
    pub x: Vec<f64>,
    /// b, the backlog, packets.
    pub b: f64,
    /// v, RED's average queue, packets.
    pub v: f64,
}

/// The stored past: x_i per flow and the congestion signal p at the bottleneck.
#[derive(Debug, Clone)]
pub struct Past {
    /// x_i(t) per flow.
    pub x: Vec<History>,
    /// p(t): RED's p_c together with overflow drops, the probability that a packet arriving at
    /// the bottleneck at t is dropped.
    pub p: History,
}

/// What the controller decided, held between control instants.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Control {
    /// g, the fraction of the Free's congestion signals to delegate.
    pub g: f64,
    /// The Free's last sampled throughput is above its target (reverse delegation, §II-B).
    pub free_above: bool,
}

/// The derivatives at one instant, with the by-products the recorder wants.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rates {
    /// dx_i/dt.
    pub dx: Vec<f64>,
    /// db/dt.
    pub db: f64,
    /// dv/dt.
    pub dv: f64,
    /// Per flow, the congestion signals it reacts to, per second (q(t - D_bs) x(t - r) of eq. 14).
    pub signals: Vec<f64>,
    /// Per flow, its arrival rate at the bottleneck, x_i(t - D_{s_i b}), packets per second.
    pub arrivals: Vec<f64>,
    /// The Free's signals handed to the Stunts, per second.
    pub delegated: f64,
    /// Stunt signals the Free took, per second.
    pub taken_by_free: f64,
    /// Per flow, x_i(t - r_i(t)): the rate of its returning ACKs.
    acks: Vec<f64>,
}

impl Rates {
    /// Zeroed rates for `n` flows.
    pub fn new(n: usize) -> Self {
        Rates {
            dx: vec![0.0; n],
            signals: vec![0.0; n],
            arrivals: vec![0.0; n],
            acks: vec![0.0; n],
            ..Rates::default()
        }
    }
}

/// r_i(t) = D_i + b(t) / C. Free & Stunts eq. (5).
pub fn rtt(m: &Model, i: usize, b: f64) -> f64 {
    m.flows[i].d + b / m.c
}

/// Whether flow `i` sends at `t`.
pub fn active(m: &Model, i: usize, t: f64) -> bool {
    t >= m.flows[i].start
}

/// x_i(t - D_{s_i b}): flow i's arrivals at the bottleneck at `t` (zero before it started).
pub fn arrival(m: &Model, past: &Past, s: &State, i: usize, t: f64) -> f64 {
    let f = &m.flows[i];
    // Eq. (6): D_{s_i b} = alpha_i D_i; a zero delay reads the state itself.
    let then = t - f.d_sb;
    if !active(m, i, then) {
        0.0
    } else if f.d_sb == 0.0 {
        s.x[i]
    } else {
        past.x[i].at(then)
    }
}

/// Fill `out` with the derivatives at time `t` (seconds) in state `s`.
pub fn rates(m: &Model, past: &Past, control: Control, t: f64, s: &State, out: &mut Rates) {
    let n = m.flows.len();
    // Eq. (14)'s signal arrival rate q(t - D_bs_i) x_i(t - r_i) as RED set it, and the ACK rate.
    let mut total_in = 0.0;
    for i in 0..n {
        out.arrivals[i] = arrival(m, past, s, i, t);
        total_in += out.arrivals[i];
        if !active(m, i, t) {
            out.signals[i] = 0.0;
            out.acks[i] = 0.0;
            continue;
        }
        let r = rtt(m, i, s.b);
        // Eq. (15): D_bs_i(t) = r_i(t) - D_{s_i b}.
        let d_bs = r - m.flows[i].d_sb;
        out.acks[i] = past.x[i].at(t - r);
        out.signals[i] = past.p.at(t - d_bs) * out.acks[i];
    }
    delegate(m, control, s, t, out);
    for i in 0..n {
        if !active(m, i, t) {
            out.dx[i] = 0.0;
            continue;
        }
        let (r, x, xd) = (rtt(m, i, s.b), s.x[i], out.acks[i]);
        // The signal as a fraction of the ACKs, clamped to a probability.
        let q = if xd > 0.0 {
            (out.signals[i] / xd).clamp(0.0, 1.0)
        } else {
            0.0
        };
        out.signals[i] = q * xd;
        // Free & Stunts eq. (14): additive increase of one packet per RTT per unmarked ACK,
        // halving per marked one, both clocked by x_i(t - r_i).
        out.dx[i] = xd / (r * r * x) * (1.0 - q) - x * xd * q / 2.0;
    }
    // Free & Stunts eq. (7), held at the queue's bounds: an empty queue does not drain further,
    // a full one does not grow (the excess is dropped; see `Past::p`).
    let db = total_in - m.c;
    out.db = if (s.b <= 0.0 && db < 0.0) || (s.b >= m.red.limit && db > 0.0) {
        0.0
    } else {
        db
    };
    // Free & Stunts eq. (9).
    out.dv = -m.red.beta * m.c * (s.v - s.b);
}

/// Move signals between the Free and its Stunts: Free & Stunts eqs. (10)-(12).
///
/// Eqs. (10)-(11) subtract a fraction g(t) from a probability, which is loose dimensionally: they
/// are read here as moving signals, not probability. g(t) is the fraction of the Free's congestion
/// signals delegated: the Free reacts to p_c (1 - g) of its ACKs (eq. 10), and the g p_c x_free
/// signals per second it gives up are shared evenly by the s Stunts, each seeing
/// p_c + g p_c x_free / (s x_stunt) (eq. 11); cross traffic sees p_c (eq. 12). The network sees
/// as many reactions as without delegation. As in the packet simulator (§II-B), the Free can
/// delegate only while its Stunts' windows together exceed its own; with reverse delegation on,
/// while the Free's last sample is above its target, each Stunt with a smaller window than the
/// Free's hands it all its signals.
fn delegate(m: &Model, control: Control, s: &State, t: f64, out: &mut Rates) {
    out.delegated = 0.0;
    out.taken_by_free = 0.0;
    let Some(d) = &m.delegation else { return };
    let f = d.free;
    if !active(m, f, t) {
        return;
    }
    // w_i = x_i r_i. Free & Stunts eq. (13).
    let window = |i: usize| s.x[i] * rtt(m, i, s.b);
    let stunts: Vec<usize> = d
        .stunts
        .iter()
        .copied()
        .filter(|&i| active(m, i, t))
        .collect();
    if stunts.is_empty() {
        return;
    }
    let w_free = window(f);
    let w_stunts: f64 = stunts.iter().map(|&i| window(i)).sum();
    let own_stunt_signals: Vec<f64> = stunts.iter().map(|&i| out.signals[i]).collect();
    if w_stunts > w_free && control.g > 0.0 {
        let moved = control.g.clamp(0.0, 1.0) * out.signals[f];
        out.signals[f] -= moved;
        for &i in &stunts {
            out.signals[i] += moved / stunts.len() as f64;
        }
        out.delegated = moved;
    }
    if d.spec.reverse && control.free_above {
        for (k, &i) in stunts.iter().enumerate() {
            if w_free > window(i) {
                out.signals[i] -= own_stunt_signals[k];
                out.signals[f] += own_stunt_signals[k];
                out.taken_by_free += own_stunt_signals[k];
            }
        }
    }
}
