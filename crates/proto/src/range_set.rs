//! A set of `u64` as disjoint half-open ranges: the one range set of the project. The receiver's
//! packet-number record, the stream's acknowledged bytes, a message's acknowledged or received
//! pieces, and the simulator's TCP scoreboard and reassembly all keep their ranges in it.

use std::collections::BTreeMap;

/// Disjoint, non-adjacent `[start, end)` ranges, merged on insertion. Every operation is
/// O(log n) plus the ranges it merges or removes. `u64::MAX` itself can never be held (it would
/// need an end of 2^64).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// `start -> end`.
    map: BTreeMap<u64, u64>,
}

impl RangeSet {
    /// An empty set.
    #[inline]
    pub fn new() -> Self {
        Self::default()
    }

    /// Add `[start, end)`; returns the merged range that now holds it. An empty range adds
    /// nothing and is returned as it is.
    #[inline]
    pub fn insert(&mut self, mut start: u64, mut end: u64) -> (u64, u64) {
        if start >= end {
            return (start, end);
        }
        // Merge with a range starting at or before `start` that reaches it.
        if let Some((&s, &e)) = self.map.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
                self.map.remove(&s);
            }
        }
        // Merge every range starting inside `[start, end]`.
        while let Some((&s, &e)) = self.map.range(start..=end).next() {
            end = end.max(e);
            self.map.remove(&s);
        }
        self.map.insert(start, end);
        (start, end)
    }

    /// Add the single value `x`; false if it was there already (or is `u64::MAX`).
    #[inline]
    pub fn insert_one(&mut self, x: u64) -> bool {
        if x == u64::MAX || self.contains(x) {
            return false;
        }
        self.insert(x, x + 1);
        true
    }

    /// The range holding `at`, if any.
    #[inline]
    pub fn containing(&self, at: u64) -> Option<(u64, u64)> {
        self.map
            .range(..=at)
            .next_back()
            .map(|(&s, &e)| (s, e))
            .filter(|&(_, e)| e > at)
    }

    /// Whether `at` is in the set.
    #[inline]
    pub fn contains(&self, at: u64) -> bool {
        self.containing(at).is_some()
    }

    /// Whether the whole of `[start, end)` is in the set (an empty range always is).
    #[inline]
    pub fn contains_range(&self, start: u64, end: u64) -> bool {
        start >= end || self.containing(start).is_some_and(|(_, e)| e >= end)
    }

    /// Whether `[start, end)` overlaps or touches a range of the set (so inserting it opens no
    /// new range).
    #[inline]
    pub fn touches(&self, start: u64, end: u64) -> bool {
        self.map
            .range(..=end)
            .next_back()
            .is_some_and(|(_, &e)| e >= start)
    }

    /// Whether the set is exactly the one range `[start, end)`.
    #[inline]
    pub fn is_exactly(&self, start: u64, end: u64) -> bool {
        self.map.len() == 1 && self.first() == Some((start, end))
    }

    /// Start of the first range starting at or after `at`.
    #[inline]
    pub fn next_start(&self, at: u64) -> Option<u64> {
        self.map.range(at..).next().map(|(&s, _)| s)
    }

    /// Remove every value below `at`.
    #[inline]
    pub fn remove_below(&mut self, at: u64) {
        while let Some((&s, &e)) = self.map.first_key_value() {
            if s >= at {
                break;
            }
            self.map.remove(&s);
            if e > at {
                self.map.insert(at, e);
                break;
            }
        }
    }

    /// Remove and return the lowest range.
    #[inline]
    pub fn pop_first(&mut self) -> Option<(u64, u64)> {
        self.map.pop_first()
    }

    /// The lowest range, if any.
    #[inline]
    pub fn first(&self) -> Option<(u64, u64)> {
        self.map.first_key_value().map(|(&s, &e)| (s, e))
    }

    /// The highest range, if any.
    #[inline]
    pub fn last(&self) -> Option<(u64, u64)> {
        self.map.last_key_value().map(|(&s, &e)| (s, e))
    }

    /// Ranges from the lowest up.
    #[inline]
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        self.map.iter().map(|(&s, &e)| (s, e))
    }

    /// Ranges from the highest down.
    #[inline]
    pub fn iter_rev(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.iter().rev()
    }

    /// Number of ranges.
    #[inline]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of values in all ranges.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.map.iter().map(|(s, e)| e - s).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn touching_and_overlapping_ranges_merge_and_others_stay_apart() {
        let mut r = RangeSet::new();
        assert_eq!(r.insert(10, 20), (10, 20));
        assert_eq!(r.insert(0, 5), (0, 5));
        assert_eq!(r.insert(30, 40), (30, 40));
        assert_eq!(r.iter().collect::<Vec<_>>(), [(0, 5), (10, 20), (30, 40)]);
        assert_eq!(r.insert(5, 10), (0, 20), "touching on both sides");
        assert_eq!(r.insert(15, 35), (0, 40), "overlapping");
        assert_eq!(r.len(), 1);
        assert_eq!(r.bytes(), 40);
        assert_eq!(r.insert(50, 50), (50, 50), "an empty range adds nothing");
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn lookups_and_removal_below() {
        let mut r = RangeSet::new();
        r.insert(10, 20);
        r.insert(30, 40);
        assert_eq!(r.containing(10), Some((10, 20)));
        assert_eq!(r.containing(20), None);
        assert!(r.contains_range(12, 20) && !r.contains_range(12, 21) && r.contains_range(25, 25));
        assert!(r.touches(20, 25) && r.touches(25, 30) && r.touches(5, 10) && !r.touches(21, 29));
        assert!(!r.is_exactly(10, 20));
        assert_eq!(r.next_start(11), Some(30));
        assert_eq!(r.next_start(41), None);
        r.remove_below(15);
        assert_eq!(r.first(), Some((15, 20)));
        r.remove_below(35);
        assert_eq!(r.iter().collect::<Vec<_>>(), [(35, 40)]);
        assert_eq!(r.last(), Some((35, 40)));
        assert_eq!(r.pop_first(), Some((35, 40)));
        assert!(r.is_empty());
    }

    #[test]
    fn single_values_report_duplicates_and_the_top_value_is_refused() {
        let mut r = RangeSet::new();
        assert!(r.insert_one(u64::MAX - 1));
        assert!(!r.insert_one(u64::MAX - 1));
        assert!(!r.insert_one(u64::MAX));
        assert_eq!(r.first(), Some((u64::MAX - 1, u64::MAX)));
    }

    proptest! {
        /// The set holds exactly the values inserted, as disjoint, non-adjacent sorted ranges.
        #[test]
        fn matches_a_set(ranges in proptest::collection::vec((0u64..300, 0u64..20), 0..60), cut in 0u64..320) {
            let mut r = RangeSet::new();
            let mut set = BTreeSet::new();
            for (s, len) in ranges {
                let (ms, me) = r.insert(s, s + len);
                prop_assert!(ms <= s && s + len <= me || len == 0);
                set.extend(s..s + len);
            }
            let listed: Vec<_> = r.iter().collect();
            for w in listed.windows(2) {
                prop_assert!(w[0].1 < w[1].0, "disjoint and not adjacent: {:?}", w);
            }
            let from_ranges: BTreeSet<u64> = listed.iter().flat_map(|&(s, e)| s..e).collect();
            prop_assert_eq!(&from_ranges, &set);
            for x in 0..320 {
                prop_assert_eq!(r.contains(x), set.contains(&x));
            }
            r.remove_below(cut);
            let kept: BTreeSet<u64> = r.iter().flat_map(|(s, e)| s..e).collect();
            prop_assert_eq!(kept, set.range(cut..).copied().collect::<BTreeSet<_>>());
        }
    }
}
