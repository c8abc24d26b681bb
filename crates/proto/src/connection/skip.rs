//! Skipped packet numbers (RFC 9000 §21.4): now and then the sender leaves a packet number unused
//! and flags the next packet so an honest receiver knows. A peer that acknowledges a skipped
//! number acknowledges what it never received: an optimistic acknowledgement, which would make the
//! sender outrun the path. The connection closes on it.

use std::collections::VecDeque;

/// Fewest packets between two skips.
const MIN_GAP: u64 = 1024;

/// The gap is drawn from `MIN_GAP..MIN_GAP + GAP_SPAN`.
const GAP_SPAN: u64 = 3072;

/// Skipped numbers remembered (older ones are far below anything a feedback still acknowledges).
const REMEMBERED: usize = 16;

/// Which packet numbers the sender skips, and which it skipped.
#[derive(Debug, Clone)]
pub(crate) struct Skips {
    /// xorshift64 state, seeded by the endpoint's generator (the core draws no randomness).
    state: u64,
    /// The next packet number to leave unused.
    next_at: u64,
    /// The latest skipped numbers, oldest first.
    recent: VecDeque<u64>,
}

impl Skips {
    /// Skips drawn from `seed` (any value; zero is mapped to a fixed non-zero state).
    pub(crate) fn new(seed: u64) -> Self {
        let mut skips = Skips {
            state: seed | 1,
            next_at: 0,
            recent: VecDeque::with_capacity(REMEMBERED),
        };
        skips.next_at = skips.gap();
        skips
    }

    fn gap(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        MIN_GAP + self.state % GAP_SPAN
    }

    /// The number the next packet takes instead of `next`, and whether `next` was skipped.
    pub(crate) fn number_for(&mut self, next: u64) -> (u64, bool) {
        if next != self.next_at {
            return (next, false);
        }
        if self.recent.len() == REMEMBERED {
            self.recent.pop_front();
        }
        self.recent.push_back(next);
        self.next_at = next + 1 + self.gap();
        (next + 1, true)
    }

    /// Whether `number` is the next one to be left unused.
    pub(crate) fn skips(&self, number: u64) -> bool {
        number == self.next_at
    }

    /// A skipped number that `ranges` (inclusive pairs) acknowledge, if any.
    pub(crate) fn acknowledged(&self, ranges: &[(u64, u64)]) -> Option<u64> {
        self.recent
            .iter()
            .copied()
            .find(|&n| ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_skipped_now_and_then_and_remembered() {
        let mut skips = Skips::new(42);
        let mut next = 0;
        let mut skipped = Vec::new();
        for _ in 0..20_000 {
            let (number, was) = skips.number_for(next);
            if was {
                skipped.push(number - 1);
            }
            next = number + 1;
        }
        assert!((4..=20).contains(&skipped.len()), "{skipped:?}");
        assert!(skipped.windows(2).all(|w| w[1] - w[0] > MIN_GAP));
        let last = *skipped.last().unwrap();
        assert_eq!(skips.acknowledged(&[(last + 1, last + 5)]), None);
        assert_eq!(skips.acknowledged(&[(last - 3, last + 5)]), Some(last));
        assert_eq!(skips.acknowledged(&[(0, 1)]), None);
    }
}
