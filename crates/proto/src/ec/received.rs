//! The receiver's record of received packet numbers, kept as bounded disjoint ranges.
//!
//! Packet numbers are never reused (retransmissions travel in new packets, QSTP paper §4.2), so
//! this record is both the duplicate filter and the source of the SACK ranges the receiver reports.

use crate::range_set::RangeSet;

/// Ranges of received packet numbers, bounded by `max_ranges`.
#[derive(Debug, Clone)]
pub struct ReceivedPackets {
    /// The packet numbers received and still remembered (QSTP paper §4.2: the edges of intervals
    /// of correctly received contiguous packets).
    ranges: RangeSet,
    max_ranges: usize,
    /// Packet numbers below this were forgotten and read as received (too old to tell).
    forgotten_below: u64,
}

impl ReceivedPackets {
    /// An empty record keeping at most `max_ranges` ranges (at least one).
    pub fn new(max_ranges: usize) -> Self {
        Self {
            ranges: RangeSet::new(),
            max_ranges: max_ranges.max(1),
            forgotten_below: 0,
        }
    }

    /// Record a packet number; false if already received (duplicate), too old to tell, or
    /// `u64::MAX` (which no sender reaches).
    pub fn insert(&mut self, packet_number: u64) -> bool {
        if packet_number < self.forgotten_below || !self.ranges.insert_one(packet_number) {
            return false;
        }
        while self.ranges.len() > self.max_ranges {
            if let Some((_, end)) = self.ranges.pop_first() {
                self.forgotten_below = end;
            }
        }
        true
    }

    /// Whether `packet_number` was received already, or is too old to tell.
    pub fn contains(&self, packet_number: u64) -> bool {
        packet_number < self.forgotten_below || self.ranges.contains(packet_number)
    }

    /// Ranges to report, inclusive, highest first, disjoint, at most `limit`.
    pub fn ranges(&self, limit: usize) -> Vec<(u64, u64)> {
        // RFC 2018 §4: report the most recent blocks first; packet numbers grow with send time,
        // so the highest range holds the packet that triggered this acknowledgement.
        self.ranges
            .iter_rev()
            .take(limit)
            .map(|(s, e)| (s, e - 1))
            .collect()
    }

    /// The largest packet number received.
    pub fn largest(&self) -> Option<u64> {
        self.ranges.last().map(|(_, e)| e - 1)
    }

    /// Number of ranges remembered.
    pub fn range_count(&self) -> usize {
        self.ranges.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn duplicates_are_refused() {
        let mut r = ReceivedPackets::new(8);
        assert!(r.insert(5));
        assert!(!r.insert(5));
        assert!(r.insert(3));
        assert!(r.insert(4));
        assert!(!r.insert(4));
        assert_eq!(r.ranges(8), vec![(3, 5)]);
        assert_eq!(r.largest(), Some(5));
    }

    #[test]
    fn ranges_are_highest_first_and_limited() {
        let mut r = ReceivedPackets::new(8);
        for pn in [0, 1, 2, 5, 6, 9] {
            assert!(r.insert(pn));
        }
        assert_eq!(r.ranges(8), vec![(9, 9), (5, 6), (0, 2)]);
        assert_eq!(r.ranges(2), vec![(9, 9), (5, 6)]);
    }

    #[test]
    fn oldest_ranges_are_forgotten_and_become_too_old() {
        let mut r = ReceivedPackets::new(2);
        for pn in [0, 2, 4] {
            assert!(r.insert(pn));
        }
        assert_eq!(r.range_count(), 2);
        assert_eq!(r.ranges(8), vec![(4, 4), (2, 2)]);
        assert!(!r.insert(0), "forgotten range reads as too old");
        // Packet 1 lies in a gap that was known to be empty when range 0 was forgotten.
        assert!(r.insert(1));
        assert_eq!(r.ranges(8), vec![(4, 4), (1, 2)]);
    }

    #[test]
    fn the_largest_packet_numbers_do_not_overflow() {
        let mut r = ReceivedPackets::new(4);
        assert!(r.insert(u64::MAX - 1));
        assert!(r.insert(u64::MAX - 2));
        assert!(!r.insert(u64::MAX - 1));
        assert!(
            !r.insert(u64::MAX),
            "u64::MAX cannot be held, and is refused"
        );
        assert_eq!(r.ranges(4), vec![(u64::MAX - 2, u64::MAX - 1)]);
        assert_eq!(r.largest(), Some(u64::MAX - 1));
    }

    proptest! {
        /// With room for every range, the record equals the set of packet numbers inserted.
        #[test]
        fn matches_a_set(pns in proptest::collection::vec(0u64..200, 0..300)) {
            let mut r = ReceivedPackets::new(1000);
            let mut set = BTreeSet::new();
            for pn in pns {
                prop_assert_eq!(r.insert(pn), set.insert(pn));
            }
            let mut from_ranges = BTreeSet::new();
            let ranges = r.ranges(usize::MAX);
            for w in ranges.windows(2) {
                prop_assert!(w[1].1 + 1 < w[0].0, "disjoint, not adjacent, highest first");
            }
            for (s, e) in ranges {
                from_ranges.extend(s..=e);
            }
            prop_assert_eq!(from_ranges, set);
        }

        /// A bounded record never accepts a packet twice and never holds more than its bound.
        #[test]
        fn bounded_never_accepts_twice(pns in proptest::collection::vec(0u64..200, 0..300), max in 1usize..6) {
            let mut r = ReceivedPackets::new(max);
            let mut set = BTreeSet::new();
            for pn in pns {
                if r.insert(pn) {
                    prop_assert!(set.insert(pn), "packet {} accepted twice", pn);
                }
                prop_assert!(r.range_count() <= max);
            }
        }
    }
}
