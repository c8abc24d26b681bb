//! The preprocessor of the Free & Stunts architecture (Free & Stunts paper §II-A): it checks
//! that a trace can be followed and, where it cannot, makes the closest trace that can, saying
//! what it changed at each point.

use super::trace::{Trace, TracePoint};
use crate::{Duration, Rate};

/// What the preprocessor knows of the Free connection and its Stunts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Feasibility {
    /// Round-trip time of the Free connection.
    pub rtt: Duration,
    /// Bits of one segment (the unit of the window's growth of one segment per RTT).
    pub segment_bits: u64,
    /// Number of Stunt connections, s.
    pub stunts: u32,
    /// Expected throughput of one Stunt connection, x̄_s (e.g. the fair share C / m).
    pub stunt_rate: Rate,
}

/// Why one point of a trace was lowered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum Check {
    /// Eq. (1): faster growth than one segment per RTT allows.
    Slope,
    /// Eq. (2): more than the Stunts can give, s x x̄_s.
    Region,
}

/// One point the preprocessor changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Change {
    /// Index of the point in the trace.
    pub index: usize,
    /// Its time.
    pub at: Duration,
    /// What the trace asked for.
    pub asked: Rate,
    /// What the feasible trace asks for.
    pub feasible: Rate,
    /// The check that lowered it (the region check when both did).
    pub check: Check,
}

/// The feasible trace closest to `trace` from below, and the points it changed.
///
/// Both checks bound the trace from above, so the preprocessor lowers points and never raises
/// one: a request the application did not make is not "closer" to it (the paper does not say
/// how it builds its closest feasible trace; this is the choice that never asks the network for
/// more than the application did). Going forward, each point is capped by the region bound
/// (eq. 2) and by the slope bound from the previous feasible point (eq. 1: T_j <= T_i + (j - i) /
/// RTT^2 in segments per second, i.e. + (j - i) x segment_bits / RTT^2 in bit/s).
pub fn preprocess(trace: &Trace, f: &Feasibility) -> (Trace, Vec<Change>) {
    // Eq. (2): T_i <= s x x̄_s.
    let region = u64::from(f.stunts).saturating_mul(f.stunt_rate.bps());
    let rtt = u128::from(f.rtt.as_nanos().max(1));
    let mut changes = Vec::new();
    let mut out: Vec<TracePoint> = Vec::with_capacity(trace.points().len());
    for (index, p) in trace.points().iter().enumerate() {
        let slope = out.last().map(|prev| {
            let dt = u128::from(p.at.as_nanos() - prev.at.as_nanos());
            // Eq. (1), in bit/s: dt x segment_bits / RTT^2, exact in nanoseconds.
            let growth = dt * u128::from(f.segment_bits) * 1_000_000_000 / (rtt * rtt);
            prev.rate
                .bps()
                .saturating_add(u64::try_from(growth).unwrap_or(u64::MAX))
        });
        let mut rate = p.rate.bps();
        let mut check = None;
        if let Some(bound) = slope.filter(|&b| rate > b) {
            rate = bound;
            check = Some(Check::Slope);
        }
        if rate > region {
            rate = region;
            check = Some(Check::Region);
        }
        if let Some(check) = check {
            changes.push(Change {
                index,
                at: p.at,
                asked: p.rate,
                feasible: Rate::from_bps(rate),
                check,
            });
        }
        out.push(TracePoint {
            at: p.at,
            rate: Rate::from_bps(rate),
        });
    }
    let feasible = Trace::new(out).expect("same times as a valid trace");
    (feasible, changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feasibility(stunts: u32, stunt_mbps: u64) -> Feasibility {
        Feasibility {
            rtt: Duration::from_millis(100),
            segment_bits: 12_000,
            stunts,
            stunt_rate: Rate::from_mbps(stunt_mbps),
        }
    }

    #[test]
    fn a_step_too_steep_for_one_segment_per_rtt_becomes_a_ramp() {
        // 12 kbit per segment, RTT 100 ms: the throughput can grow by 12000 / 0.01 = 1.2 Mbit/s
        // per second.
        let m = Rate::from_mbps;
        let s = Duration::from_secs;
        let trace = Trace::step(
            &[s(0), s(10), s(11), s(12), s(20)],
            &[m(2), m(2), m(8), m(8), m(8)],
        )
        .unwrap();
        let (feasible, changes) = preprocess(&trace, &feasibility(10, 5));
        let bps: Vec<u64> = feasible.points().iter().map(|p| p.rate.bps()).collect();
        assert_eq!(bps, [2_000_000, 2_000_000, 3_200_000, 4_400_000, 8_000_000]);
        assert_eq!(changes.len(), 2);
        assert_eq!((changes[0].index, changes[0].check), (2, Check::Slope));
        assert_eq!(changes[1].asked, m(8));
        // Decreases are always feasible.
        let down = Trace::step(&[s(0), s(1)], &[m(8), m(1)]).unwrap();
        assert!(preprocess(&down, &feasibility(10, 5)).1.is_empty());
    }

    #[test]
    fn the_stunts_bound_what_the_free_may_ask() {
        let m = Rate::from_mbps;
        let trace = Trace::step(&[Duration::ZERO], &[m(30)]).unwrap();
        let (feasible, changes) = preprocess(&trace, &feasibility(2, 5));
        assert_eq!(feasible.at(Duration::ZERO), m(10));
        assert_eq!(changes[0].check, Check::Region);
    }
}
