//! Reassembly of the ordered byte stream within a bounded window.
//!
//! Every buffered byte lies in `[read offset, read offset + window)`, so memory is bounded by the
//! window the receiver advertises; duplicates (retransmissions of data that did arrive) are dropped.

use std::collections::BTreeMap;

use super::DeliveryError;

/// Out-of-order stream bytes held until they can be read in order.
#[derive(Debug)]
pub struct StreamReassembler {
    window: usize,
    /// Offset of the next byte the application reads.
    read_offset: u64,
    /// Received bytes at or above `read_offset`, keyed by offset; disjoint.
    segments: BTreeMap<u64, Vec<u8>>,
    /// End of the bytes received contiguously from the start of the stream.
    contiguous_end: u64,
    /// Stream length, once a fin arrived.
    final_size: Option<u64>,
}

impl StreamReassembler {
    /// An empty reassembler accepting bytes up to `window` beyond the read offset.
    pub fn new(window: usize) -> Self {
        Self { window, read_offset: 0, segments: BTreeMap::new(), contiguous_end: 0, final_size: None }
    }

    /// Buffer bytes at `offset`; beyond the advertised window -> Err; duplicates ignored.
    ///
    /// Returns how many new bytes were buffered.
    pub fn insert(&mut self, offset: u64, data: &[u8], fin: bool) -> Result<usize, DeliveryError> {
        let end = offset.checked_add(data.len() as u64).ok_or(DeliveryError::BeyondWindow)?;
        if end > self.max_data() {
            return Err(DeliveryError::BeyondWindow);
        }
        if let Some(size) = self.final_size {
            if end > size || (fin && end != size) {
                return Err(DeliveryError::Inconsistent("stream data beyond its final size"));
            }
        } else if fin {
            if end < self.highest_received() {
                return Err(DeliveryError::Inconsistent("fin below data already received"));
            }
            self.final_size = Some(end);
        }
        let mut cursor = offset.max(self.read_offset);
        if cursor >= end {
            return Ok(0);
        }
        if let Some((&s, seg)) = self.segments.range(..=cursor).next_back() {
            cursor = cursor.max(s + seg.len() as u64);
        }
        let mut pieces = Vec::new();
        for (&s, seg) in self.segments.range(cursor..end) {
            if s > cursor {
                pieces.push((cursor, s));
            }
            cursor = cursor.max(s + seg.len() as u64);
        }
        if cursor < end {
            pieces.push((cursor, end));
        }
        let mut added = 0;
        for (s, e) in pieces {
            let slice = &data[(s - offset) as usize..(e - offset) as usize];
            added += slice.len();
            self.segments.insert(s, slice.to_vec());
        }
        while let Some(seg) = self.segments.get(&self.contiguous_end) {
            self.contiguous_end += seg.len() as u64;
        }
        Ok(added)
    }

    fn highest_received(&self) -> u64 {
        self.segments.last_key_value().map_or(self.read_offset, |(&s, seg)| s + seg.len() as u64)
    }

    /// Read in-order bytes into `buf`; returns how many.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        let mut n = 0;
        while n < buf.len() {
            let Some(mut entry) = self.segments.first_entry() else { break };
            if *entry.key() != self.read_offset {
                break;
            }
            let seg = entry.get_mut();
            let take = seg.len().min(buf.len() - n);
            buf[n..n + take].copy_from_slice(&seg[..take]);
            n += take;
            self.read_offset += take as u64;
            if take == seg.len() {
                entry.remove();
            } else {
                let rest = seg.split_off(take);
                entry.remove();
                self.segments.insert(self.read_offset, rest);
            }
        }
        n
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
        self.segments.values().map(Vec::len).sum()
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
    fn duplicates_and_overlaps_are_ignored() {
        let mut r = StreamReassembler::new(100);
        r.insert(0, b"abcd", false).unwrap();
        r.insert(8, b"ijkl", false).unwrap();
        assert_eq!(r.insert(0, b"abcd", false), Ok(0));
        assert_eq!(r.insert(2, b"cdefghijklmn", false), Ok(6), "only the gaps are new");
        assert_eq!(r.buffered(), 14);
        assert_eq!(read_all(&mut r), b"abcdefghijklmn");
        assert_eq!(r.insert(3, b"defg", false), Ok(0), "below the read offset");
    }

    #[test]
    fn window_overflow_is_refused() {
        let mut r = StreamReassembler::new(10);
        assert_eq!(r.insert(5, b"123456", false), Err(DeliveryError::BeyondWindow));
        assert_eq!(r.insert(u64::MAX, b"x", false), Err(DeliveryError::BeyondWindow));
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
        assert_eq!(r.insert(6, b"x", false), Err(DeliveryError::Inconsistent("stream data beyond its final size")));
        r.insert(0, b"abc", false).unwrap();
        assert!(!r.is_finished());
        assert_eq!(read_all(&mut r), b"abcdef");
        assert!(r.is_finished());
    }

    #[test]
    fn conflicting_fin_is_refused() {
        let mut r = StreamReassembler::new(100);
        r.insert(0, b"abcdef", false).unwrap();
        assert!(matches!(r.insert(0, b"abc", true), Err(DeliveryError::Inconsistent(_))));
        r.insert(6, b"", true).unwrap();
        assert!(matches!(r.insert(6, b"g", true), Err(DeliveryError::Inconsistent(_))));
    }
}
