//! Reassembly of the ordered byte stream within a bounded window.
//!
//! Every buffered byte lies in `[read offset, read offset + window)`, so the bytes held are bounded
//! by the window the receiver advertises; duplicates (retransmissions of data that did arrive) are
//! dropped. Adjacent pieces are merged into one segment as they arrive, and the number of segments
//! is capped ([`StreamReassembler::max_segments`]): a peer sending tiny pieces with gaps between
//! them is refused beyond the cap (its sender sends them again), so the bookkeeping stays within a
//! fixed share of the window.

use std::collections::{BTreeMap, VecDeque};

use super::DeliveryError;

/// Window bytes per segment allowed beyond the base allowance.
const WINDOW_PER_SEGMENT: usize = 128;

/// Segments always allowed, whatever the window.
const BASE_SEGMENTS: usize = 64;

/// Bytes counted per segment for the map's node and the allocator, beyond the entry itself.
const SEGMENT_OVERHEAD: usize = 32;

/// Out-of-order stream bytes held until they can be read in order.
#[derive(Clone, Debug)]
pub struct StreamReassembler {
    window: usize,
    /// Offset of the next byte the application reads.
    read_offset: u64,
    /// Received bytes at or above `read_offset`, keyed by offset; disjoint and never adjacent.
    segments: BTreeMap<u64, VecDeque<u8>>,
    /// End of the bytes received contiguously from the start of the stream.
    contiguous_end: u64,
    /// Stream length, once a fin arrived.
    final_size: Option<u64>,
    /// Most segments held (the in-order head may exceed it by one).
    max_segments: usize,
    /// Pieces refused because they would have exceeded `max_segments`.
    refused: u64,
}

impl StreamReassembler {
    /// An empty reassembler accepting bytes up to `window` beyond the read offset.
    pub fn new(window: usize) -> Self {
        Self {
            window,
            read_offset: 0,
            segments: BTreeMap::new(),
            contiguous_end: 0,
            final_size: None,
            max_segments: BASE_SEGMENTS + window / WINDOW_PER_SEGMENT,
            refused: 0,
        }
    }

    /// Buffer bytes at `offset`; beyond the advertised window -> Err; duplicates ignored.
    ///
    /// Returns how many new bytes were buffered. Data that would need a new segment beyond
    /// [`StreamReassembler::max_segments`] is refused with [`DeliveryError::Full`] unless it
    /// continues the in-order bytes.
    pub fn insert(&mut self, offset: u64, data: &[u8], fin: bool) -> Result<usize, DeliveryError> {
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or(DeliveryError::BeyondWindow)?;
        if end > self.max_data() {
            return Err(DeliveryError::BeyondWindow);
        }
        if let Some(size) = self.final_size {
            if end > size || (fin && end != size) {
                return Err(DeliveryError::Inconsistent(
                    "stream data beyond its final size",
                ));
            }
        } else if fin && end < self.highest_received() {
            return Err(DeliveryError::Inconsistent(
                "fin below data already received",
            ));
        }
        let pieces = self.gaps(offset, end);
        let new_segments = pieces
            .iter()
            .filter(|&&(s, e)| !self.ends_at(s) && !self.segments.contains_key(&e))
            .count();
        if new_segments > 0
            && offset > self.contiguous_end
            && self.segments.len() + new_segments > self.max_segments
        {
            self.refused += 1;
            return Err(DeliveryError::Full);
        }
        if fin {
            self.final_size = Some(end);
        }
        let mut added = 0;
        for (s, e) in pieces {
            let slice = &data[(s - offset) as usize..(e - offset) as usize];
            added += slice.len();
            self.put(s, slice);
        }
        // Adjacent pieces are merged, so the in-order bytes are the one segment at the read offset.
        self.contiguous_end = match self.segments.first_key_value() {
            Some((&s, seg)) if s == self.read_offset => s + seg.len() as u64,
            _ => self.read_offset,
        };
        Ok(added)
    }

    /// The parts of `[offset, end)` not yet held, as `(start, end)` pairs in order.
    fn gaps(&self, offset: u64, end: u64) -> Vec<(u64, u64)> {
        let mut cursor = offset.max(self.read_offset);
        let mut pieces = Vec::new();
        if cursor >= end {
            return pieces;
        }
        if let Some((&s, seg)) = self.segments.range(..=cursor).next_back() {
            cursor = cursor.max(s + seg.len() as u64);
        }
        if cursor >= end {
            return pieces;
        }
        for (&s, seg) in self.segments.range(cursor..end) {
            if s > cursor {
                pieces.push((cursor, s));
            }
            cursor = cursor.max(s + seg.len() as u64);
        }
        if cursor < end {
            pieces.push((cursor, end));
        }
        pieces
    }

    /// Whether a held segment ends exactly at `at`.
    fn ends_at(&self, at: u64) -> bool {
        self.segments
            .range(..at)
            .next_back()
            .is_some_and(|(&s, seg)| s + seg.len() as u64 == at)
    }

    /// Hold `bytes` at `start` (a gap), merged with the segments it touches; the smaller side is
    /// copied into the larger, so each byte is copied a logarithmic number of times at most.
    fn put(&mut self, start: u64, bytes: &[u8]) {
        let end = start + bytes.len() as u64;
        let predecessor = match self.segments.range(..start).next_back() {
            Some((&s, seg)) if s + seg.len() as u64 == start => Some(s),
            _ => None,
        };
        let mut merged = match predecessor.and_then(|s| self.segments.remove(&s)) {
            Some(mut seg) => {
                seg.extend(bytes);
                seg
            }
            None => bytes.iter().copied().collect(),
        };
        let merged_start = predecessor.unwrap_or(start);
        if let Some(mut follower) = self.segments.remove(&end) {
            if follower.len() > merged.len() {
                for &b in merged.iter().rev() {
                    follower.push_front(b);
                }
                merged = follower;
            } else {
                merged.extend(follower);
            }
        }
        self.segments.insert(merged_start, merged);
    }

    fn highest_received(&self) -> u64 {
        self.segments
            .last_key_value()
            .map_or(self.read_offset, |(&s, seg)| s + seg.len() as u64)
    }

    /// Read in-order bytes into `buf`; returns how many.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        let Some(mut entry) = self.segments.first_entry() else {
            return 0;
        };
        if *entry.key() != self.read_offset {
            return 0;
        }
        let seg = entry.get_mut();
        let take = seg.len().min(buf.len());
        // Two slice copies (the deque's halves), not a byte at a time.
        let (front, back) = seg.as_slices();
        let first = front.len().min(take);
        buf[..first].copy_from_slice(&front[..first]);
        buf[first..take].copy_from_slice(&back[..take - first]);
        seg.drain(..take);
        self.read_offset += take as u64;
        let rest = entry.remove();
        if !rest.is_empty() {
            self.segments.insert(self.read_offset, rest);
        }
        take
    }

    /// In-order bytes ready to read.
    pub fn readable(&self) -> usize {
        (self.contiguous_end - self.read_offset) as usize
    }

    /// Fin received and everything read.
    pub fn is_finished(&self) -> bool {
        self.final_size == Some(self.read_offset)
    }

    /// Read offset + window: what to advertise.
    pub fn max_data(&self) -> u64 {
        self.read_offset.saturating_add(self.window as u64)
    }

    /// Bytes read by the application so far.
    pub fn read_offset(&self) -> u64 {
        self.read_offset
    }

    /// Bytes buffered (in order or not).
    pub fn buffered(&self) -> usize {
        self.segments.values().map(VecDeque::len).sum()
    }

    /// Segments held (adjacent pieces count as one).
    pub fn segments(&self) -> usize {
        self.segments.len()
    }

    /// Most segments held before out-of-order data is refused (the in-order head may add one).
    pub fn max_segments(&self) -> usize {
        self.max_segments
    }

    /// Pieces refused because they would have exceeded [`StreamReassembler::max_segments`].
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// An estimate of the heap memory held: segment allocations plus a map entry per segment.
    pub fn memory(&self) -> usize {
        let per_entry = std::mem::size_of::<(u64, VecDeque<u8>)>() + SEGMENT_OVERHEAD;
        self.segments
            .values()
            .map(VecDeque::capacity)
            .sum::<usize>()
            + self.segments.len() * per_entry
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(r: &mut StreamReassembler) -> Vec<u8> {
        let mut buf = vec![0; 1000];
        let n = r.read(&mut buf);
        buf.truncate(n);
        buf
    }

    #[test]
    fn reassembles_out_of_order() {
        let mut r = StreamReassembler::new(100);
        assert_eq!(r.insert(5, b"fghij", false), Ok(5));
        assert_eq!(r.readable(), 0);
        assert_eq!(r.insert(0, b"abcde", false), Ok(5));
        assert_eq!(r.readable(), 10);
        assert_eq!(read_all(&mut r), b"abcdefghij");
    }

    #[test]
    fn reads_in_pieces_across_the_deques_wrap_keep_the_byte_order() {
        // Interleaved small reads and writes make the held segment's deque wrap around.
        let stream: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut r = StreamReassembler::new(600);
        let (mut written, mut out) = (0, Vec::new());
        let mut buf = [0u8; 97];
        while out.len() < stream.len() {
            let room = (r.max_data() as usize).min(stream.len()) - written;
            let n = room.min(130);
            r.insert(written as u64, &stream[written..written + n], false)
                .unwrap();
            written += n;
            let got = r.read(&mut buf);
            out.extend_from_slice(&buf[..got]);
        }
        assert_eq!(out, stream);
    }

    #[test]
    fn duplicates_and_overlaps_are_ignored() {
        let mut r = StreamReassembler::new(100);
        r.insert(0, b"abcd", false).unwrap();
        r.insert(8, b"ijkl", false).unwrap();
        assert_eq!(r.insert(0, b"abcd", false), Ok(0));
        assert_eq!(
            r.insert(2, b"cdefghijklmn", false),
            Ok(6),
            "only the gaps are new"
        );
        assert_eq!(r.buffered(), 14);
        assert_eq!(read_all(&mut r), b"abcdefghijklmn");
        assert_eq!(r.insert(3, b"defg", false), Ok(0), "below the read offset");
    }

    #[test]
    fn window_overflow_is_refused() {
        let mut r = StreamReassembler::new(10);
        assert_eq!(
            r.insert(5, b"123456", false),
            Err(DeliveryError::BeyondWindow)
        );
        assert_eq!(
            r.insert(u64::MAX, b"x", false),
            Err(DeliveryError::BeyondWindow)
        );
        assert_eq!(r.insert(0, b"0123456789", false), Ok(10));
        assert_eq!(r.insert(10, b"a", false), Err(DeliveryError::BeyondWindow));
        let mut buf = [0; 4];
        r.read(&mut buf);
        assert_eq!(r.max_data(), 14, "reading opens the window");
        assert_eq!(r.insert(10, b"abcd", false), Ok(4));
    }

    #[test]
    fn partial_reads_keep_the_rest() {
        let mut r = StreamReassembler::new(100);
        r.insert(0, b"hello world", false).unwrap();
        let mut buf = [0; 5];
        assert_eq!(r.read(&mut buf), 5);
        assert_eq!(&buf, b"hello");
        assert_eq!(r.readable(), 6);
        assert_eq!(read_all(&mut r), b" world");
    }

    #[test]
    fn fin_finishes_after_everything_is_read() {
        let mut r = StreamReassembler::new(100);
        r.insert(3, b"def", true).unwrap();
        assert!(!r.is_finished());
        assert_eq!(
            r.insert(6, b"x", false),
            Err(DeliveryError::Inconsistent(
                "stream data beyond its final size"
            ))
        );
        r.insert(0, b"abc", false).unwrap();
        assert!(!r.is_finished());
        assert_eq!(read_all(&mut r), b"abcdef");
        assert!(r.is_finished());
    }

    #[test]
    fn adjacent_pieces_merge_into_one_segment() {
        let mut r = StreamReassembler::new(1000);
        for i in (10..20u8).rev() {
            r.insert(u64::from(i), &[i], false).unwrap();
        }
        assert_eq!(
            r.segments(),
            1,
            "ten adjacent bytes arriving backwards are one segment"
        );
        r.insert(5, &[5], false).unwrap();
        r.insert(0, &[0, 1, 2, 3, 4], false).unwrap();
        r.insert(6, &[6, 7, 8, 9], false).unwrap();
        assert_eq!(r.segments(), 1);
        assert_eq!(read_all(&mut r), (0..20).collect::<Vec<u8>>());
    }

    #[test]
    fn tiny_out_of_order_pieces_stay_within_the_memory_bound() {
        let window = 64 * 1024;
        let mut r = StreamReassembler::new(window);
        // A peer sends every other byte, one per packet: nothing can merge.
        for offset in (1..window as u64).step_by(2) {
            let _ = r.insert(offset, &[offset as u8], false);
        }
        assert!(
            r.segments() <= r.max_segments(),
            "{} segments",
            r.segments()
        );
        assert_eq!(r.max_segments(), 64 + window / 128);
        assert!(r.refused() > 0, "pieces beyond the cap are refused");
        // Stated bound: the window's bytes plus at most 2x the window for bookkeeping.
        assert!(
            r.memory() <= 3 * window,
            "memory {} for a window of {window}",
            r.memory()
        );
        // The byte the reader waits for is always taken in, and fills the gaps as they come.
        for offset in (0..window as u64).step_by(2) {
            r.insert(offset, &[offset as u8], false).unwrap();
            let _ = r.insert(offset + 1, &[(offset + 1) as u8], false);
        }
        assert_eq!(r.readable(), window);
        assert_eq!(r.segments(), 1);
        let mut buf = vec![0; window];
        assert_eq!(r.read(&mut buf), window);
        assert!(buf.iter().enumerate().all(|(i, &b)| b == i as u8));
    }

    #[test]
    fn a_refused_fin_is_not_remembered() {
        let mut r = StreamReassembler::new(1024);
        for offset in (1..400u64).step_by(2) {
            let _ = r.insert(offset, b"x", false);
        }
        assert_eq!(r.insert(1000, b"end", true), Err(DeliveryError::Full));
        assert_eq!(
            r.insert(1000, b"end!", true),
            Err(DeliveryError::Full),
            "a different fin is refused for space, not as inconsistent"
        );
    }

    #[test]
    fn conflicting_fin_is_refused() {
        let mut r = StreamReassembler::new(100);
        r.insert(0, b"abcdef", false).unwrap();
        assert!(matches!(
            r.insert(0, b"abc", true),
            Err(DeliveryError::Inconsistent(_))
        ));
        r.insert(6, b"", true).unwrap();
        assert!(matches!(
            r.insert(6, b"g", true),
            Err(DeliveryError::Inconsistent(_))
        ));
    }
}
