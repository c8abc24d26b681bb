//! The receiver's record of received packet numbers, kept as bounded disjoint ranges.

/// Ranges of received packet numbers, bounded by `max_ranges`.
#[derive(Debug, Clone)]
pub struct ReceivedPackets {
    max_ranges: usize,
}

impl ReceivedPackets {
    /// An empty record keeping at most `max_ranges` ranges.
    pub fn new(max_ranges: usize) -> Self {
        Self { max_ranges }
    }
    /// Record a packet number; false if already received (duplicate) or too old to tell.
    pub fn insert(&mut self, packet_number: u64) -> bool {
        let _ = (packet_number, self.max_ranges);
        todo!()
    }
    /// Ranges to report, inclusive, highest first, disjoint, at most `limit`.
    pub fn ranges(&self, limit: usize) -> Vec<(u64, u64)> {
        let _ = limit;
        todo!()
    }
    /// The largest packet number received.
    pub fn largest(&self) -> Option<u64> {
        todo!()
    }
}
