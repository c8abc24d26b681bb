//! The retransmission timeout estimator of RFC 6298, or Linux's.

use super::config::RtoRule;
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
    rule: RtoRule,
    linux: LinuxVariance,
    /// Measurements folded in so far, and the last one (what the lab's RTT percentiles count).
    samples: u64,
    latest: Duration,
}

/// Linux's variance state (net/ipv4/tcp_input.c `tcp_rtt_estimator`), in nanoseconds.
#[derive(Debug, Clone, Copy, Default)]
struct LinuxVariance {
    /// `mdev_us`: the mean deviation, times 4.
    mdev: u64,
    /// `mdev_max_us`: the largest `mdev` of the round trip under way, at least min_rto.
    mdev_max: u64,
    /// `rttvar_us`: what the RTO adds to SRTT.
    rttvar: u64,
    /// `rtt_seq`: the round trip ends when snd_una passes it.
    rtt_seq: u64,
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
            rule: RtoRule::Rfc6298,
            linux: LinuxVariance::default(),
            samples: 0,
            latest: Duration::ZERO,
        }
    }

    /// Measurements taken so far and the latest (zero before the first).
    pub fn latest(&self) -> (u64, Duration) {
        (self.samples, self.latest)
    }

    /// The same with the RTO rule `rule`.
    pub fn with_rule(mut self, rule: RtoRule) -> Self {
        self.rule = rule;
        self
    }

    /// Fold in an RTT measurement taken when the cumulative ACK point was `snd_una` and the next
    /// new byte `snd_nxt` (Linux's rule ends its round trips by them; RFC 6298's ignores them).
    pub fn sample_acked(&mut self, r: Duration, snd_una: u64, snd_nxt: u64) {
        self.samples += 1;
        self.latest = r;
        match self.rule {
            RtoRule::Rfc6298 => self.sample_rfc6298(r),
            RtoRule::Linux => self.sample_linux(r, snd_una, snd_nxt),
        }
    }

    /// Linux's estimator (net/ipv4/tcp_input.c `tcp_rtt_estimator`, `__tcp_set_rto`).
    fn sample_linux(&mut self, r: Duration, snd_una: u64, snd_nxt: u64) {
        let m = r.as_nanos().max(1);
        let min_rto = self.min_rto.as_nanos();
        let v = &mut self.linux;
        match self.srtt {
            None => {
                // "make sure rto = 3*rtt": mdev = 2m (x4), RTTVAR at least min_rto.
                self.srtt = Some(Duration::from_nanos(m));
                v.mdev = 2 * m;
                v.rttvar = v.mdev.max(min_rto);
                v.mdev_max = v.rttvar;
                v.rtt_seq = snd_nxt;
            }
            Some(srtt) => {
                let srtt = srtt.as_nanos();
                // SRTT <- 7/8 SRTT + 1/8 m.
                self.srtt = Some(Duration::from_nanos(if m >= srtt {
                    srtt + (m - srtt) / 8
                } else {
                    srtt - (srtt - m) / 8
                }));
                // mdev <- 3/4 mdev + |err| (x4 units), except that an RTT falling by more than
                // mdev/4 raises mdev only by an eighth of the excess (Linux's Eifel-like damping).
                let err = m.abs_diff(srtt);
                let quarter = v.mdev / 4;
                v.mdev = if err >= quarter {
                    let grow = err - quarter;
                    v.mdev + if m < srtt { grow / 8 } else { grow }
                } else {
                    v.mdev - (quarter - err)
                };
                if v.mdev > v.mdev_max {
                    v.mdev_max = v.mdev;
                    v.rttvar = v.rttvar.max(v.mdev_max);
                }
                // Once per round trip: RTTVAR decays a quarter of the way to the round's
                // largest deviation, and the next round's starts at min_rto.
                if snd_una > v.rtt_seq {
                    if v.mdev_max < v.rttvar {
                        v.rttvar -= (v.rttvar - v.mdev_max) / 4;
                    }
                    v.rtt_seq = snd_nxt;
                    v.mdev_max = min_rto;
                }
            }
        }
        self.min_rtt = Some(self.min_rtt.map_or(r, |x| x.min(r)));
        // __tcp_set_rto: RTO = SRTT + RTTVAR.
        self.rto = self.srtt.unwrap_or(r) + Duration::from_nanos(v.rttvar);
        self.backoff = 0;
    }

    /// RFC 6298's estimator, whatever the rule (the caller applies Karn's rule, RFC 6298 §3);
    /// [`RttEstimator::sample_acked`] is the way in, which follows the rule.
    fn sample_rfc6298(&mut self, r: Duration) {
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
    fn linux_adds_a_min_rto_floored_variance_to_srtt() {
        let mut e = RttEstimator::new(ms(1000), ms(200), ms(60_000)).with_rule(RtoRule::Linux);
        // First sample 100 ms: RTTVAR = max(2 x 100, 200) = 200, RTO = 300 (RFC 6298: 300 too).
        e.sample_acked(ms(100), 0, 10);
        assert_eq!(e.rto(), ms(300));
        // Steady 100 ms samples: the deviation decays, RTTVAR stays at the 200 ms floor, so the
        // RTO stays SRTT + 200 ms, where RFC 6298 would fall to its floor of max(SRTT, 200).
        let mut rfc = RttEstimator::new(ms(1000), ms(200), ms(60_000));
        rfc.sample_rfc6298(ms(100));
        for i in 1..50u64 {
            e.sample_acked(ms(100), 10 * i + 1, 10 * i + 10);
            rfc.sample_rfc6298(ms(100));
        }
        assert_eq!(e.rto(), ms(300));
        assert_eq!(rfc.rto(), ms(200));
        // A jump to 300 ms: err 200 ms, mdev (x4) grows to about 200 ms... and more: RTTVAR
        // follows the largest deviation of the round, above the floor.
        e.sample_acked(ms(300), 600, 610);
        let jumped = e.rto();
        assert!(jumped > ms(125 + 200), "{jumped:?}");
    }

    #[test]
    fn linux_damps_a_falling_rtt_and_decays_once_a_round() {
        let mut e = RttEstimator::new(ms(1000), ms(10), ms(60_000)).with_rule(RtoRule::Linux);
        e.sample_acked(ms(100), 0, 10);
        // mdev (x4) = 200 ms, RTTVAR 200 ms.
        // A sample 80 ms below SRTT (above mdev/4 = 50): mdev grows by (80 - 50) / 8 only.
        e.sample_acked(ms(20), 5, 10);
        assert_eq!(e.linux.mdev, ms(200).as_nanos() + ms(30).as_nanos() / 8);
        // Same round (snd_una 5 is not past rtt_seq 10): RTTVAR rose with mdev_max, no decay.
        assert_eq!(e.linux.rttvar, e.linux.mdev);
        // Small errors shrink mdev. The round ends (snd_una 11 passed 10) with its largest
        // deviation equal to RTTVAR: nothing to decay; the next round's largest starts at min_rto.
        let before = e.linux.rttvar;
        e.sample_acked(ms(90), 11, 20);
        assert!(e.linux.mdev < before);
        assert_eq!(e.linux.rttvar, before);
        assert_eq!(e.linux.mdev_max, ms(10).as_nanos());
        // That round's largest deviation is below RTTVAR: at its end RTTVAR decays a quarter of
        // the way down to it.
        e.sample_acked(ms(90), 21, 30);
        let largest = e.linux.mdev;
        assert_eq!(e.linux.rttvar, before - (before - largest) / 4);
    }

    #[test]
    fn first_sample_sets_srtt_and_half_rttvar() {
        let mut e = RttEstimator::new(ms(1000), ms(200), ms(60_000));
        assert_eq!(e.rto(), ms(1000));
        e.sample_rfc6298(ms(100));
        assert_eq!(e.srtt(), ms(100));
        // RTO = 100 + 4 * 50 = 300 ms.
        assert_eq!(e.rto(), ms(300));
    }

    #[test]
    fn later_samples_are_smoothed() {
        let mut e = RttEstimator::new(ms(1000), ms(10), ms(60_000));
        e.sample_rfc6298(ms(100));
        e.sample_rfc6298(ms(200));
        // RTTVAR = 3/4 * 50 + 1/4 * 100 = 62.5; SRTT = 7/8 * 100 + 1/8 * 200 = 112.5.
        assert_eq!(e.srtt(), Duration::from_micros(112_500));
        assert_eq!(e.rto(), Duration::from_micros(112_500 + 250_000));
        assert_eq!(e.min_rtt(), ms(100));
    }

    #[test]
    fn min_rto_floors_and_backoff_doubles_up_to_max() {
        let mut e = RttEstimator::new(ms(1000), ms(1000), ms(60_000));
        e.sample_rfc6298(ms(10));
        assert_eq!(e.rto(), ms(1000));
        let mut seen = vec![];
        for _ in 0..8 {
            e.back_off();
            seen.push(e.rto().as_millis());
        }
        assert_eq!(seen, [2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000]);
        e.sample_rfc6298(ms(10));
        assert_eq!(e.rto(), ms(1000));
    }
}
