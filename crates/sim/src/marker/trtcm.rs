//! Two rate three colour marker, RFC 2698, colour-blind mode.

use super::bucket::{Bucket, Refill};
use super::Marker;
use crate::spec::Color;
use qstp_proto::{Rate, Time};
use rand::RngCore;

/// A peak bucket P (PIR, PBS) and a committed bucket C (CIR, CBS), each filled at its own rate.
#[derive(Debug, Clone)]
pub struct Trtcm {
    peak_refill: Refill,
    peak: Bucket,
    committed_refill: Refill,
    committed: Bucket,
}

impl Trtcm {
    /// A marker with committed rate and burst `cir`, `cbs` and peak rate and burst `pir`, `pbs`.
    pub fn new(cir: Rate, cbs: u64, pir: Rate, pbs: u64) -> Self {
        // RFC 2698 §3.1: both buckets are initially full.
        Trtcm {
            peak_refill: Refill::new(pir),
            peak: Bucket::full(pbs),
            committed_refill: Refill::new(cir),
            committed: Bucket::full(cbs),
        }
    }
}

impl Marker for Trtcm {
    fn mark(&mut self, now: Time, size: usize, _rng: &mut dyn RngCore) -> Color {
        // RFC 2698 §3.1: each bucket grows at its rate up to its burst size.
        self.peak.fill(self.peak_refill.since_last(now));
        self.committed.fill(self.committed_refill.since_last(now));
        // RFC 2698 §3.2, colour-blind mode.
        if !self.peak.has(size) {
            Color::Red
        } else if !self.committed.has(size) {
            self.peak.take(size);
            Color::Yellow
        } else {
            self.peak.take(size);
            self.committed.take(size);
            Color::Green
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_clock::at;
    use super::*;
    use qstp_proto::Duration;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use Color::*;

    #[test]
    fn hand_computed_sequence() {
        // CIR 1000 B/s, CBS 1000 B; PIR 2000 B/s, PBS 2000 B; packets of 500 B.
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut m = Trtcm::new(Rate::from_bps(8_000), 1_000, Rate::from_bps(16_000), 2_000);
        let mut mark = |ms| m.mark(at(ms), 500, &mut rng);
        // Two green (C empties, P 2000 -> 1000), two yellow (P -> 0), then red.
        assert_eq!(
            [mark(0), mark(0), mark(0), mark(0), mark(0)],
            [Green, Green, Yellow, Yellow, Red]
        );
        // At 250 ms: P holds 500, C 250: yellow, P back to 0.
        assert_eq!(mark(250), Yellow);
        // At 500 ms: P 500, C 500: green.
        assert_eq!(mark(500), Green);
        // Red packets take no tokens: at 500 ms, P is empty, red; at 750 ms P 500, C 250: yellow.
        assert_eq!([mark(500), mark(750)], [Red, Yellow]);
    }

    #[test]
    fn long_run_shares_follow_the_two_rates() {
        // 3000 B/s offered against CIR 1000 B/s and PIR 2000 B/s: 1/3 green, 1/3 yellow, 1/3 red.
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        // Buckets deeper than a packet, so that no token is lost to the cap in steady state.
        let mut m = Trtcm::new(Rate::from_bps(8_000), 3_000, Rate::from_bps(16_000), 3_000);
        let mut counts = [0u32; 3];
        for i in 0..30_000u64 {
            let now = Time::ZERO + Duration::from_micros(333_334) * i;
            counts[m.mark(now, 1000, &mut rng) as usize] += 1;
        }
        for c in counts {
            assert!(c.abs_diff(10_000) < 50, "{counts:?}");
        }
    }
}
