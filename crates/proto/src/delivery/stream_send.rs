//! The bounded send buffer of the ordered byte stream.

/// Bytes written and not yet acknowledged, in a bounded ring.
#[derive(Debug)]
pub struct StreamSendBuffer {
    capacity: usize,
}

impl StreamSendBuffer {
    /// An empty buffer holding at most `capacity` unacknowledged bytes.
    pub fn new(capacity: usize) -> Self {
        Self { capacity }
    }
    /// Append bytes; returns how many were accepted.
    pub fn write(&mut self, data: &[u8]) -> usize {
        let _ = data;
        todo!()
    }
    /// Mark the end of the stream.
    pub fn finish(&mut self) {
        todo!()
    }
    /// Whether `finish` was called.
    pub fn is_finished(&self) -> bool {
        todo!()
    }
    /// Bytes `write` would accept now.
    pub fn free_space(&self) -> usize {
        let _ = self.capacity;
        todo!()
    }
    /// Next never-sent bytes, at most `max_len`, below `max_data`; copies them into `out`; marks sent.
    pub fn next_unsent(&mut self, max_len: usize, max_data: u64, out: &mut Vec<u8>) -> Option<(u64, bool)> {
        let _ = (max_len, max_data, out);
        todo!()
    }
    /// Copy a previously sent range for retransmission; false if it is already acknowledged.
    pub fn copy_range(&self, offset: u64, len: u32, out: &mut Vec<u8>) -> bool {
        let _ = (offset, len, out);
        todo!()
    }
    /// Record an acknowledged range; frees the acknowledged prefix.
    pub fn on_acked(&mut self, offset: u64, len: u32, fin: bool) {
        let _ = (offset, len, fin);
        todo!()
    }
    /// Finished and everything acknowledged.
    pub fn all_acked(&self) -> bool {
        todo!()
    }
    /// Length of the acknowledged prefix.
    pub fn acked_bytes(&self) -> u64 {
        todo!()
    }
}
