//! The TFRC throughput equation (RFC 5348 §3.1).
//!
//! RFC 5348 §3.1 gives, in bytes per second,
//!
//! ```text
//! X = s / (R*sqrt(2*b*p/3) + t_RTO * (3*sqrt(3*b*p/8) * p * (1 + 32*p^2)))
//! ```
//!
//! With b = 1 and t_RTO = 4R (RFC 5348 §3.1 recommendations; QSTP paper eq. (1)) the denominator
//! factors into R * f(p) with
//!
//! ```text
//! f(p) = sqrt(2p/3) + 4 * 3*sqrt(3p/8) * p * (1 + 32p^2)
//!      = sqrt(2p/3) + 12*sqrt(3p/8) * p * (1 + 32p^2)
//! ```
//!
//! so X = s / (R * f(p)); `f` is the normalised form whose values the tests check against a
//! published lookup table.

/// The equation's loss factor f(p), so that X = s / (R * f(p)) (RFC 5348 §3.1, b = 1, t_RTO = 4R).
pub fn loss_factor(p: f64) -> f64 {
    let p = p.clamp(0.0, 1.0);
    (2.0 * p / 3.0).sqrt() + 12.0 * (3.0 * p / 8.0).sqrt() * p * (1.0 + 32.0 * p * p)
}

/// RFC 5348 §3.1 throughput equation, bytes/s, with t_RTO = 4R.
///
/// `p` is clamped to [0, 1]; a zero `p`, RTT or segment size, or a NaN input, gives zero (no
/// equation rate exists before the first loss event).
pub fn throughput(segment_size: f64, rtt_secs: f64, p: f64) -> f64 {
    if !(segment_size > 0.0 && rtt_secs > 0.0 && p > 0.0) {
        return 0.0;
    }
    let x = segment_size / (rtt_secs * loss_factor(p));
    if x.is_finite() {
        x
    } else {
        0.0
    }
}

/// The synthetic first loss interval, in packets: the one whose loss event rate makes the equation
/// give the receive rate `x_recv` (RFC 5348 §6.3.1), or X_target = s / (2R) when no receive rate
/// is measured yet (`x_recv` not positive).
pub fn first_loss_interval(segment_size: f64, rtt_secs: f64, x_recv: f64) -> f64 {
    let x_target = if x_recv > 0.0 {
        x_recv
    } else {
        segment_size / (2.0 * rtt_secs)
    };
    1.0 / loss_event_rate_for(segment_size, rtt_secs, x_target)
}

/// The loss event rate p for which the equation gives `rate` bytes/s (RFC 5348 §6.3.1 inversion).
///
/// Found by bisection; 1 if `rate` is at or below the p = 1 rate, or an input is not positive.
pub fn loss_event_rate_for(segment_size: f64, rtt_secs: f64, rate: f64) -> f64 {
    if !(segment_size > 0.0 && rtt_secs > 0.0 && rate > 0.0) {
        return 1.0;
    }
    // The equation is strictly decreasing in p, so bisect on [lo, hi].
    let (mut lo, mut hi) = (1e-12_f64, 1.0_f64);
    if throughput(segment_size, rtt_secs, hi) >= rate {
        return 1.0;
    }
    if throughput(segment_size, rtt_secs, lo) <= rate {
        return lo;
    }
    for _ in 0..100 {
        let mid = (lo * hi).sqrt();
        if throughput(segment_size, rtt_secs, mid) > rate {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        ((a - b) / b).abs() <= rel
    }

    #[test]
    fn loss_factor_matches_the_published_table() {
        // Values of the same normalisation f(p) from the Linux CCID3 lookup table.
        assert!(
            close(loss_factor(0.0001), 8172e-6, 1e-4),
            "{}",
            loss_factor(0.0001)
        );
        assert!(
            close(loss_factor(0.05), 0.271305, 1e-5),
            "{}",
            loss_factor(0.05)
        );
        assert!(
            close(loss_factor(1.0), 243.315981, 1e-7),
            "{}",
            loss_factor(1.0)
        );
    }

    #[test]
    fn throughput_is_s_over_r_times_f() {
        for p in [0.0001, 0.003, 0.05, 0.3, 1.0] {
            let x = throughput(1460.0, 0.1, p);
            assert!(close(x, 1460.0 / (0.1 * loss_factor(p)), 1e-12));
        }
    }

    #[test]
    fn throughput_matches_hand_computed_values() {
        // s = 1460 B, R = 100 ms. p = 0.01: sqrt(0.02/3) = 0.0816497,
        // 12*sqrt(0.00375)*0.01*(1 + 0.0032) = 0.0073720, f = 0.0890216,
        // X = 1460 / (0.1 * 0.0890216) = 164005 B/s.
        assert!(close(throughput(1460.0, 0.1, 0.01), 164_005.0, 1e-5));
        // p = 0.1: f = 0.2581989 + 12*0.1936492*0.1*1.32 = 0.5649392, X = 25843.5 B/s.
        assert!(close(throughput(1460.0, 0.1, 0.1), 25_843.5, 1e-5));
        // p = 1: f = 243.316, X = 60.004 B/s.
        assert!(close(throughput(1460.0, 0.1, 1.0), 60.0043, 1e-5));
    }

    #[test]
    fn no_rate_without_loss_or_rtt() {
        assert_eq!(throughput(1460.0, 0.1, 0.0), 0.0);
        assert_eq!(throughput(1460.0, 0.0, 0.1), 0.0);
        assert_eq!(throughput(1460.0, 0.1, f64::NAN), 0.0);
    }

    #[test]
    fn inversion_recovers_p() {
        for p in [1e-5, 0.001, 0.02, 0.4] {
            let x = throughput(1000.0, 0.05, p);
            let back = loss_event_rate_for(1000.0, 0.05, x);
            assert!(close(back, p, 1e-6), "{p} -> {back}");
        }
        assert_eq!(loss_event_rate_for(1000.0, 0.05, 1.0), 1.0);
    }
}
