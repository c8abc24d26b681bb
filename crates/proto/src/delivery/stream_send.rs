//! The bounded send buffer of the ordered byte stream.
//!
//! Bytes stay buffered from `write` until acknowledged, so a chunk declared lost can be copied
//! again into a new packet (QSTP paper §4.4: the retransmission buffer).

use crate::range_set::RangeSet;
use std::collections::VecDeque;

/// Bytes written and not yet acknowledged, in a bounded ring.
#[derive(Clone, Debug)]
pub struct StreamSendBuffer {
    capacity: usize,
    /// Bytes from `acked_prefix` to the write end.
    data: VecDeque<u8>,
    /// Every byte below this offset is acknowledged and freed.
    acked_prefix: u64,
    /// Next offset never sent.
    next_unsent: u64,
    /// Acknowledged ranges above the prefix, start -> end (exclusive), disjoint.
    acked_above: RangeSet,
    finished: bool,
    fin_sent: bool,
    fin_acked: bool,
}

impl StreamSendBuffer {
    /// An empty buffer holding at most `capacity` unacknowledged bytes.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            data: VecDeque::new(),
            acked_prefix: 0,
            next_unsent: 0,
            acked_above: RangeSet::new(),
            finished: false,
            fin_sent: false,
            fin_acked: false,
        }
    }

    fn write_end(&self) -> u64 {
        self.acked_prefix + self.data.len() as u64
    }

    /// Append bytes; returns how many were accepted (none once finished).
    pub fn write(&mut self, data: &[u8]) -> usize {
        if self.finished {
            return 0;
        }
        let n = data.len().min(self.free_space());
        self.data.extend(&data[..n]);
        n
    }

    /// Mark the end of the stream.
    pub fn finish(&mut self) {
        self.finished = true;
    }

    /// Whether `finish` was called.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Bytes `write` would accept now.
    pub fn free_space(&self) -> usize {
        self.capacity.saturating_sub(self.data.len())
    }

    /// Whether never-sent bytes or an unsent fin remain.
    pub fn has_unsent(&self) -> bool {
        self.next_unsent < self.write_end() || (self.finished && !self.fin_sent)
    }

    /// Next never-sent bytes, at most `max_len`, below `max_data`; appends them to `out`; marks sent.
    ///
    /// Returns the chunk's offset and whether it carries the fin; a fin with no bytes is a chunk too.
    pub fn next_unsent(
        &mut self,
        max_len: usize,
        max_data: u64,
        out: &mut Vec<u8>,
    ) -> Option<(u64, bool)> {
        let end = self.write_end();
        let allowed = max_data.min(end).saturating_sub(self.next_unsent);
        let len = (max_len as u64).min(allowed);
        let offset = self.next_unsent;
        let reaches_end = offset + len == end;
        let fin = self.finished && !self.fin_sent && reaches_end;
        if len == 0 && !fin {
            return None;
        }
        self.copy_out(offset, len, out);
        self.next_unsent += len;
        if fin {
            self.fin_sent = true;
        }
        Some((offset, fin))
    }

    fn copy_out(&self, offset: u64, len: u64, out: &mut Vec<u8>) {
        let start = (offset - self.acked_prefix) as usize;
        let end = start + len as usize;
        let (front, back) = self.data.as_slices();
        if end <= front.len() {
            out.extend_from_slice(&front[start..end]);
        } else if start >= front.len() {
            out.extend_from_slice(&back[start - front.len()..end - front.len()]);
        } else {
            out.extend_from_slice(&front[start..]);
            out.extend_from_slice(&back[..end - front.len()]);
        }
    }

    /// Copy a previously sent range for retransmission; false if it is already acknowledged.
    ///
    /// A zero-length range stands for a lone fin: it is acknowledged once the fin is.
    pub fn copy_range(&self, offset: u64, len: u32, out: &mut Vec<u8>) -> bool {
        let end = offset.saturating_add(u64::from(len));
        if len == 0 {
            return self.fin_sent && !self.fin_acked;
        }
        // Chunks are retransmitted whole, so the prefix never ends inside one.
        if offset < self.acked_prefix || end > self.next_unsent {
            return false;
        }
        if self.acked_above.contains_range(offset, end) {
            return false;
        }
        self.copy_out(offset, u64::from(len), out);
        true
    }

    /// Record an acknowledged range; frees the acknowledged prefix.
    pub fn on_acked(&mut self, offset: u64, len: u32, fin: bool) {
        let end = offset.saturating_add(u64::from(len)).min(self.next_unsent);
        if fin && self.fin_sent && end == self.write_end() {
            self.fin_acked = true;
        }
        let start = offset.max(self.acked_prefix);
        if start >= end {
            return;
        }
        let (start, end) = self.acked_above.insert(start, end);
        if start == self.acked_prefix {
            // The prefix grew: free it, and keep only what lies above it.
            let freed = (end - self.acked_prefix) as usize;
            self.data.drain(..freed);
            self.acked_prefix = end;
            self.acked_above.remove_below(end);
        }
    }

    /// The peer confirmed it read the whole finished stream (its graceful close): count every byte
    /// acknowledged, even if the last acknowledgements were lost. Returns false, changing nothing,
    /// when the stream is not finished or not wholly sent, since then no peer can have read it all.
    pub fn on_all_delivered(&mut self) -> bool {
        if !self.finished || !self.fin_sent || self.next_unsent != self.write_end() {
            return false;
        }
        self.acked_prefix = self.write_end();
        self.data.clear();
        self.acked_above = RangeSet::new();
        self.fin_acked = true;
        true
    }

    /// Finished and everything acknowledged.
    pub fn all_acked(&self) -> bool {
        self.finished && self.fin_acked && self.data.is_empty()
    }

    /// Length of the acknowledged prefix.
    pub fn acked_bytes(&self) -> u64 {
        self.acked_prefix
    }

    /// Bytes written so far (the stream length once finished).
    pub fn written_bytes(&self) -> u64 {
        self.write_end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_delivered_needs_the_whole_finished_stream_sent() {
        let mut b = StreamSendBuffer::new(1000);
        b.write(&[7u8; 300]);
        let mut out = Vec::new();
        assert!(!b.on_all_delivered(), "not finished");
        b.finish();
        assert!(b.next_unsent(100, u64::MAX, &mut out).is_some());
        assert!(!b.on_all_delivered(), "not wholly sent");
        while b.next_unsent(100, u64::MAX, &mut out).is_some() {}
        b.on_acked(0, 100, false);
        assert!(b.on_all_delivered());
        assert!(b.all_acked());
        assert_eq!(b.acked_bytes(), 300);
    }

    #[test]
    fn write_is_bounded_by_capacity() {
        let mut b = StreamSendBuffer::new(10);
        assert_eq!(b.write(&[1; 7]), 7);
        assert_eq!(b.write(&[2; 7]), 3);
        assert_eq!(b.free_space(), 0);
        assert_eq!(b.write(&[3]), 0);
    }

    #[test]
    fn sends_in_order_within_max_data() {
        let mut b = StreamSendBuffer::new(100);
        b.write(&(0..20).collect::<Vec<u8>>());
        let mut out = Vec::new();
        assert_eq!(b.next_unsent(8, 100, &mut out), Some((0, false)));
        assert_eq!(out, (0..8).collect::<Vec<u8>>());
        out.clear();
        assert_eq!(b.next_unsent(8, 12, &mut out), Some((8, false)));
        assert_eq!(
            out,
            (8..12).collect::<Vec<u8>>(),
            "flow control stops at max_data"
        );
        assert_eq!(b.next_unsent(8, 12, &mut out), None);
    }

    #[test]
    fn fin_rides_on_the_last_chunk_or_alone() {
        let mut b = StreamSendBuffer::new(100);
        b.write(b"abc");
        b.finish();
        let mut out = Vec::new();
        assert_eq!(b.next_unsent(10, 100, &mut out), Some((0, true)));
        assert_eq!(b.next_unsent(10, 100, &mut out), None);

        let mut b = StreamSendBuffer::new(100);
        b.write(b"abc");
        b.next_unsent(10, 100, &mut out);
        b.finish();
        out.clear();
        assert_eq!(b.next_unsent(10, 100, &mut out), Some((3, true)));
        assert!(out.is_empty());
        assert!(b.copy_range(3, 0, &mut out), "a lone fin can be sent again");
        b.on_acked(0, 3, false);
        assert!(!b.all_acked());
        b.on_acked(3, 0, true);
        assert!(b.all_acked());
        assert!(!b.copy_range(3, 0, &mut out));
    }

    #[test]
    fn out_of_order_acks_free_the_prefix_when_it_closes() {
        let mut b = StreamSendBuffer::new(30);
        b.write(&[7; 30]);
        let mut out = Vec::new();
        for _ in 0..3 {
            b.next_unsent(10, 100, &mut out);
        }
        b.on_acked(10, 10, false);
        assert_eq!(b.acked_bytes(), 0);
        assert_eq!(b.free_space(), 0);
        assert!(
            !b.copy_range(10, 10, &mut out),
            "acknowledged above the prefix"
        );
        out.clear();
        assert!(b.copy_range(0, 10, &mut out));
        assert_eq!(out, vec![7; 10]);
        b.on_acked(0, 10, false);
        assert_eq!(b.acked_bytes(), 20);
        assert_eq!(b.free_space(), 20);
        assert!(!b.copy_range(0, 10, &mut out));
        b.on_acked(0, 10, false);
        assert_eq!(
            b.acked_bytes(),
            20,
            "a duplicate acknowledgement changes nothing"
        );
    }

    #[test]
    fn copy_range_reads_across_the_ring_wrap() {
        let mut b = StreamSendBuffer::new(8);
        let mut out = Vec::new();
        b.write(&[0, 1, 2, 3, 4, 5]);
        b.next_unsent(6, 100, &mut out);
        b.on_acked(0, 4, false);
        b.write(&[6, 7, 8, 9, 10, 11]);
        out.clear();
        assert_eq!(b.next_unsent(8, 100, &mut out), Some((6, false)));
        assert_eq!(out, vec![6, 7, 8, 9, 10, 11]);
        out.clear();
        assert!(b.copy_range(4, 6, &mut out));
        assert_eq!(out, vec![4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn never_sent_range_cannot_be_copied() {
        let mut b = StreamSendBuffer::new(8);
        b.write(&[1; 8]);
        let mut out = Vec::new();
        assert!(!b.copy_range(0, 4, &mut out));
        assert!(out.is_empty());
    }
}
