//! Byte ranges for TCP: a set of disjoint `[start, end)` ranges (the receiver's out-of-order data,
//! the sender's SACKed data) and the fixed-size list of SACK blocks an ACK carries.

use std::collections::BTreeMap;

/// Most SACK blocks one ACK carries (RFC 2018 §3: at most 4 fit the option space with timestamps
/// off; 3 with timestamps).
pub const MAX_SACK_BLOCKS: usize = 4;

/// Disjoint, non-adjacent `[start, end)` ranges, merged on insertion. Every operation is
/// O(log n) plus the ranges it merges or removes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RangeSet {
    /// `start -> end`.
    map: BTreeMap<u64, u64>,
}

impl RangeSet {
    /// Add `[start, end)`; returns the merged range that now holds it.
    pub(crate) fn insert(&mut self, mut start: u64, mut end: u64) -> (u64, u64) {
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

    /// The range holding byte `at`, if any.
    pub(crate) fn containing(&self, at: u64) -> Option<(u64, u64)> {
        self.map
            .range(..=at)
            .next_back()
            .map(|(&s, &e)| (s, e))
            .filter(|&(_, e)| e > at)
    }

    /// Start of the first range starting at or after `at`.
    pub(crate) fn next_start(&self, at: u64) -> Option<u64> {
        self.map.range(at..).next().map(|(&s, _)| s)
    }

    /// Remove every byte below `at`.
    pub(crate) fn remove_below(&mut self, at: u64) {
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

    /// The lowest range, if any.
    pub(crate) fn first(&self) -> Option<(u64, u64)> {
        self.map.first_key_value().map(|(&s, &e)| (s, e))
    }

    /// Ranges from the highest down.
    pub(crate) fn iter_rev(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.iter().rev().map(|(&s, &e)| (s, e))
    }

    /// Whether the set is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Bytes in all ranges.
    pub(crate) fn bytes(&self) -> u64 {
        self.map.iter().map(|(s, e)| e - s).sum()
    }
}

/// The SACK blocks of one ACK, most recent first (RFC 2018 §4), at most [`MAX_SACK_BLOCKS`];
/// a fixed array, so that building and copying an ACK never allocates.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct SackBlocks {
    len: u8,
    blocks: [(u64, u64); MAX_SACK_BLOCKS],
}

impl SackBlocks {
    /// No blocks.
    pub const fn new() -> Self {
        SackBlocks {
            len: 0,
            blocks: [(0, 0); MAX_SACK_BLOCKS],
        }
    }

    /// Append `block`; returns false (and keeps the list) when it is full.
    pub fn push(&mut self, block: (u64, u64)) -> bool {
        match self.blocks.get_mut(usize::from(self.len)) {
            Some(slot) => {
                *slot = block;
                self.len += 1;
                true
            }
            None => false,
        }
    }

    /// Remove every block.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// The blocks, most recent first.
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..usize::from(self.len)]
    }
}

impl std::ops::Deref for SackBlocks {
    type Target = [(u64, u64)];
    fn deref(&self) -> &[(u64, u64)] {
        self.as_slice()
    }
}

impl std::fmt::Debug for SackBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<const N: usize> PartialEq<[(u64, u64); N]> for SackBlocks {
    fn eq(&self, other: &[(u64, u64); N]) -> bool {
        self.as_slice() == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_when_they_touch_or_overlap() {
        let mut r = RangeSet::default();
        assert_eq!(r.insert(10, 20), (10, 20));
        assert_eq!(r.insert(30, 40), (30, 40));
        assert_eq!(r.insert(20, 25), (10, 25));
        assert_eq!(r.insert(24, 30), (10, 40));
        assert_eq!(r.insert(50, 60), (50, 60));
        assert_eq!(r.bytes(), 40);
        assert_eq!(r.containing(39), Some((10, 40)));
        assert_eq!(r.containing(40), None);
        assert_eq!(r.next_start(41), Some(50));
        r.remove_below(15);
        assert_eq!(r.first(), Some((15, 40)));
        r.remove_below(55);
        assert_eq!(r.iter_rev().collect::<Vec<_>>(), [(55, 60)]);
    }

    #[test]
    fn sack_blocks_hold_at_most_four() {
        let mut b = SackBlocks::new();
        for i in 0..4 {
            assert!(b.push((i, i + 1)));
        }
        assert!(!b.push((9, 10)));
        assert_eq!(b, [(0, 1), (1, 2), (2, 3), (3, 4)]);
        b.clear();
        assert!(b.is_empty());
    }
}
