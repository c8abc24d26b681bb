//! Sets of byte ranges within one message, kept sorted, disjoint and merged.

/// Add `start..end` to `ranges` (sorted, disjoint, `(start, end)` exclusive), merging every range
/// it overlaps or touches.
pub(crate) fn insert_range(ranges: &mut Vec<(u32, u32)>, start: u32, end: u32) {
    let (mut start, mut end) = (start, end);
    ranges.retain(|&(s, e)| {
        if e < start || s > end {
            true
        } else {
            start = start.min(s);
            end = end.max(e);
            false
        }
    });
    let at = ranges.partition_point(|&(s, _)| s < start);
    ranges.insert(at, (start, end));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touching_and_overlapping_ranges_merge_and_others_stay_sorted() {
        let mut ranges = Vec::new();
        insert_range(&mut ranges, 10, 20);
        insert_range(&mut ranges, 0, 5);
        insert_range(&mut ranges, 30, 40);
        assert_eq!(ranges, [(0, 5), (10, 20), (30, 40)]);
        insert_range(&mut ranges, 5, 10);
        assert_eq!(ranges, [(0, 20), (30, 40)]);
        insert_range(&mut ranges, 15, 35);
        assert_eq!(ranges, [(0, 40)]);
    }
}
