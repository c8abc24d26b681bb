//! How well a throughput matched its trace: the paper's V+, V-, V* and delta
//! (Free & Stunts paper §III, eqs. 16-19).

/// The matching metrics of one run, over sampled throughputs `x_i` against targets `T_i`
/// (bit/s; variances in (bit/s)^2).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Matching {
    /// Eq. (16): mean squared error over the samples above target; 0 when none is.
    pub v_plus: f64,
    /// Eq. (17): mean squared error over the samples below target; 0 when none is.
    pub v_minus: f64,
    /// Eq. (18): delta x the mean squared error over the samples off target.
    pub v_star: f64,
    /// Eq. (19): max(V+, V-) / min(V+, V-), at least 1; `None` when one side has no sample or
    /// a zero variance (the ratio is then undefined, and V* is the plain mean squared error).
    pub delta: Option<f64>,
    /// Mean of the targets over the samples, bit/s.
    pub target_mean_bps: f64,
}

/// The metrics of `samples`, `(x_i, T_i)` pairs; `None` without samples.
///
/// Samples exactly on target count in neither C+ nor C- (eqs. 16-17 take x_i > T_i and
/// x_i < T_i) and add nothing to the sum of eq. (18).
pub fn matching(samples: &[(f64, f64)]) -> Option<Matching> {
    if samples.is_empty() {
        return None;
    }
    let (mut above, mut below) = ((0.0, 0u64), (0.0, 0u64));
    for &(x, t) in samples {
        let e = (x - t) * (x - t);
        if x > t {
            above = (above.0 + e, above.1 + 1);
        } else if x < t {
            below = (below.0 + e, below.1 + 1);
        }
    }
    let mean = |(sum, n): (f64, u64)| if n == 0 { 0.0 } else { sum / n as f64 };
    let (v_plus, v_minus) = (mean(above), mean(below));
    // Eq. (19).
    let delta = (v_plus > 0.0 && v_minus > 0.0).then(|| v_plus.max(v_minus) / v_plus.min(v_minus));
    // Eq. (18).
    let off = mean((above.0 + below.0, above.1 + below.1));
    Some(Matching {
        v_plus,
        v_minus,
        v_star: delta.unwrap_or(1.0) * off,
        delta,
        target_mean_bps: samples.iter().map(|s| s.1).sum::<f64>() / samples.len() as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_variances() {
        // Above by 1 and 3, below by 2, one sample on target.
        let m = matching(&[(11.0, 10.0), (13.0, 10.0), (8.0, 10.0), (10.0, 10.0)]).unwrap();
        assert_eq!(m.v_plus, 5.0); // (1 + 9) / 2
        assert_eq!(m.v_minus, 4.0); // 4 / 1
        assert_eq!(m.delta, Some(1.25));
        assert!((m.v_star - 1.25 * 14.0 / 3.0).abs() < 1e-12);
        assert_eq!(m.target_mean_bps, 10.0);
        // A biased matching weighs more than a balanced one of the same squared error.
        let balanced = matching(&[(12.0, 10.0), (8.0, 10.0)]).unwrap();
        let biased = matching(&[(11.0, 10.0), (7.17, 10.0)]).unwrap();
        assert_eq!(balanced.delta, Some(1.0));
        assert!(biased.v_star > balanced.v_star);
        // One-sided: delta undefined, V* the plain mean squared error.
        let high = matching(&[(12.0, 10.0), (14.0, 10.0)]).unwrap();
        assert_eq!((high.delta, high.v_minus, high.v_star), (None, 0.0, 10.0));
        assert!(matching(&[]).is_none());
    }
}
