//! Single rate three colour marker, RFC 2697, colour-blind mode.

use super::bucket::{Bucket, Refill};
use super::Marker;
use crate::spec::Color;
use qstp_proto::{Rate, Time};
use rand::RngCore;

/// Two buckets filled at one rate (CIR): C up to CBS, and E, which takes what overflows C, up to EBS.
#[derive(Debug, Clone)]
pub struct Srtcm {
    refill: Refill,
    committed: Bucket,
    excess: Bucket,
}

impl Srtcm {
    /// A marker with committed rate `cir` and burst sizes `cbs` and `ebs`, bytes.
    pub fn new(cir: Rate, cbs: u64, ebs: u64) -> Self {
        // RFC 2697 §3.1: both buckets are initially full.
        Srtcm {
            refill: Refill::new(cir),
            committed: Bucket::full(cbs),
            excess: Bucket::full(ebs),
        }
    }
}

impl Marker for Srtcm {
    fn mark(&mut self, now: Time, size: usize, _rng: &mut dyn RngCore) -> Color {
        // RFC 2697 §3.1: tokens go to C while C is below CBS, else to E while E is below EBS.
        let overflow = self.committed.fill(self.refill.since_last(now));
        self.excess.fill(overflow);
        // RFC 2697 §3.2, colour-blind mode.
        if self.committed.has(size) {
            self.committed.take(size);
            Color::Green
        } else if self.excess.has(size) {
            self.excess.take(size);
            Color::Yellow
        } else {
            Color::Red
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_clock::at;
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use Color::*;

    #[test]
    fn hand_computed_sequence() {
        // CIR 8 kbit/s = 1000 B/s, CBS = EBS = 1000 B, packets of 500 B.
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut m = Srtcm::new(Rate::from_bps(8_000), 1_000, 1_000);
        let mut mark = |ms| m.mark(at(ms), 500, &mut rng);
        // Full buckets: two green (C 1000 -> 0), two yellow (E 1000 -> 0), then red.
        assert_eq!(
            [mark(0), mark(0), mark(0), mark(0), mark(0)],
            [Green, Green, Yellow, Yellow, Red]
        );
        // 250 ms later C holds 250 B: not enough, E empty: red.
        assert_eq!(mark(250), Red);
        // At 500 ms C holds 500 B: green.
        assert_eq!(mark(500), Green);
        // 1.5 s later 1500 B arrived: C fills to 1000, the 500 B overflow goes to E.
        assert_eq!(
            [mark(2000), mark(2000), mark(2000), mark(2000)],
            [Green, Green, Yellow, Red]
        );
    }

    #[test]
    fn excess_only_fills_once_committed_is_full() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut m = Srtcm::new(Rate::from_bps(8_000), 1_000, 1_000);
        // Empty both buckets.
        for _ in 0..4 {
            m.mark(at(0), 500, &mut rng);
        }
        // After 900 ms C holds 900 B and E still nothing: a 950 B packet is red, a 900 B green.
        assert_eq!(m.mark(at(900), 950, &mut rng), Red);
        assert_eq!(m.mark(at(900), 900, &mut rng), Green);
    }
}
