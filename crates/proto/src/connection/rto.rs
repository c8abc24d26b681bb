//! The retransmission timeout of RFC 6298: SRTT + 4 RTTVAR, never below a configured minimum.

use crate::time::Duration;

/// RFC 6298 §2.1: RTO before any RTT measurement.
const INITIAL_RTO: Duration = Duration::from_secs(1);

/// RTT smoothing state (RFC 6298 §2), in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RtoEstimator {
    /// SRTT and RTTVAR once a measurement was made.
    smoothed: Option<(u64, u64)>,
}

impl RtoEstimator {
    /// Take one RTT measurement (RFC 6298 §2.2, §2.3).
    pub(crate) fn on_sample(&mut self, sample: Duration) {
        let r = sample.as_micros().max(1);
        self.smoothed = Some(match self.smoothed {
            // RFC 6298 §2.2: SRTT = R, RTTVAR = R / 2.
            None => (r, r / 2),
            // RFC 6298 §2.3: beta = 1/4, alpha = 1/8; RTTVAR is updated first, from the old SRTT.
            Some((srtt, rttvar)) => {
                let rttvar = (3 * rttvar + srtt.abs_diff(r)) / 4;
                let srtt = (7 * srtt + r) / 8;
                (srtt, rttvar)
            }
        });
    }

    /// RTO = SRTT + max(G, 4 RTTVAR) (RFC 6298 §2.3, G one microsecond), at least `min_rto`
    /// (RFC 6298 §2.4), 1 s before any measurement (§2.1).
    pub(crate) fn rto(&self, min_rto: Duration) -> Duration {
        match self.smoothed {
            None => INITIAL_RTO.max(min_rto),
            Some((srtt, rttvar)) => {
                Duration::from_micros(srtt.saturating_add((4 * rttvar).max(1))).max(min_rto)
            }
        }
    }

    /// The probe timeout of RFC 9002 §6.2.1: SRTT + max(4 RTTVAR, 1 ms) + the peer's largest
    /// acknowledgement delay, here one SRTT (feedback comes once per RTT, RFC 5348 §6.2); before
    /// any measurement, four times `initial_rtt` (RFC 9002 §6.2.2: SRTT = initial RTT, RTTVAR half).
    pub(crate) fn pto(&self, initial_rtt: Duration) -> Duration {
        match self.smoothed {
            None => initial_rtt.saturating_mul(4),
            Some((srtt, rttvar)) => Duration::from_micros(
                srtt.saturating_mul(2)
                    .saturating_add((4 * rttvar).max(1_000)),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn follows_rfc_6298() {
        let mut e = RtoEstimator::default();
        assert_eq!(e.rto(ms(1)), ms(1000), "1 s before any measurement");
        e.on_sample(ms(100));
        // SRTT 100, RTTVAR 50: 100 + 200.
        assert_eq!(e.rto(ms(1)), ms(300));
        e.on_sample(ms(200));
        // RTTVAR = 3/4 * 50 + 1/4 * 100 = 62.5; SRTT = 7/8 * 100 + 1/8 * 200 = 112.5.
        assert_eq!(e.rto(ms(1)), Duration::from_micros(112_500 + 250_000));
        // The minimum wins over a small estimate.
        assert_eq!(e.rto(ms(1000)), ms(1000));
    }

    #[test]
    fn a_steady_rtt_converges_to_srtt_plus_a_small_variance() {
        let mut e = RtoEstimator::default();
        for _ in 0..200 {
            e.on_sample(ms(50));
        }
        let rto = e.rto(Duration::from_micros(1));
        assert!(rto >= ms(50) && rto < ms(51), "{rto:?}");
    }
}
