//! The retransmission timeout estimator of RFC 6298.

use qstp_proto::Duration;

/// Clock granularity G of RFC 6298 §2 (the simulator's clock is exact; this keeps RTO above SRTT
/// when RTTVAR is zero).
const CLOCK_GRANULARITY: Duration = Duration::from_millis(1);

/// SRTT, RTTVAR and the (backed-off) RTO.
#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    min_rtt: Option<Duration>,
    rto: Duration,
    backoff: u32,
    min_rto: Duration,
    max_rto: Duration,
}

impl RttEstimator {
    /// An estimator before any sample, with RTO bounds.
    pub fn new(initial_rto: Duration, min_rto: Duration, max_rto: Duration) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            min_rtt: None,
            rto: initial_rto,
            backoff: 0,
            min_rto,
            max_rto,
        }
    }

    /// Fold in an RTT measurement (the caller applies Karn's rule, RFC 6298 §3).
    pub fn sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                // RFC 6298 §2.2: SRTT <- R, RTTVAR <- R/2.
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                // RFC 6298 §2.3: RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'|; SRTT <- 7/8 SRTT + 1/8 R'.
                let delta = if srtt > r { srtt - r } else { r - srtt };
                self.rttvar =
                    Duration::from_nanos((3 * self.rttvar.as_nanos() + delta.as_nanos()) / 4);
                self.srtt = Some(Duration::from_nanos(
                    (7 * srtt.as_nanos() + r.as_nanos()) / 8,
                ));
            }
        }
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        // RFC 6298 §2.2-2.3: RTO <- SRTT + max(G, K * RTTVAR), K = 4.
        let srtt = self.srtt.unwrap_or(r);
        self.rto = srtt + CLOCK_GRANULARITY.max(self.rttvar * 4);
        // A new sample from a segment sent once ends the backoff (RFC 6298 §5.7 with Karn's rule).
        self.backoff = 0;
    }

    /// The retransmission timeout now in force, bounded and backed off.
    pub fn rto(&self) -> Duration {
        // RFC 6298 §2.4-2.5: clamp to [min_rto, max_rto]; §5.5: double on each expiry.
        let base = self.rto.max(self.min_rto);
        let backed_off = base.saturating_mul(1u64 << self.backoff.min(32));
        backed_off.min(self.max_rto)
    }

    /// The timer expired: double the RTO (RFC 6298 §5.5).
    pub fn back_off(&mut self) {
        if self.rto() < self.max_rto {
            self.backoff += 1;
        }
    }

    /// Smoothed RTT, or zero before any sample.
    pub fn srtt(&self) -> Duration {
        self.srtt.unwrap_or(Duration::ZERO)
    }

    /// Smallest RTT seen, or zero before any sample.
    pub fn min_rtt(&self) -> Duration {
        self.min_rtt.unwrap_or(Duration::ZERO)
    }

    /// How many times the RTO has been doubled since the last sample.
    pub fn backoff(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn first_sample_sets_srtt_and_half_rttvar() {
        let mut e = RttEstimator::new(ms(1000), ms(200), ms(60_000));
        assert_eq!(e.rto(), ms(1000));
        e.sample(ms(100));
        assert_eq!(e.srtt(), ms(100));
        // RTO = 100 + 4 * 50 = 300 ms.
        assert_eq!(e.rto(), ms(300));
    }

    #[test]
    fn later_samples_are_smoothed() {
        let mut e = RttEstimator::new(ms(1000), ms(10), ms(60_000));
        e.sample(ms(100));
        e.sample(ms(200));
        // RTTVAR = 3/4 * 50 + 1/4 * 100 = 62.5; SRTT = 7/8 * 100 + 1/8 * 200 = 112.5.
        assert_eq!(e.srtt(), Duration::from_micros(112_500));
        assert_eq!(e.rto(), Duration::from_micros(112_500 + 250_000));
        assert_eq!(e.min_rtt(), ms(100));
    }

    #[test]
    fn min_rto_floors_and_backoff_doubles_up_to_max() {
        let mut e = RttEstimator::new(ms(1000), ms(1000), ms(60_000));
        e.sample(ms(10));
        assert_eq!(e.rto(), ms(1000));
        let mut seen = vec![];
        for _ in 0..8 {
            e.back_off();
            seen.push(e.rto().as_millis());
        }
        assert_eq!(seen, [2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000]);
        e.sample(ms(10));
        assert_eq!(e.rto(), ms(1000));
    }
}
