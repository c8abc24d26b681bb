//! The bounded send queue of messages, with partial reliability.

use super::DeliveryError;
use crate::time::Time;

/// Messages written and neither acknowledged nor abandoned.
#[derive(Debug)]
pub struct MessageSendQueue {
    capacity: usize,
}

impl MessageSendQueue {
    /// An empty queue holding at most `capacity` bytes of messages.
    pub fn new(capacity: usize) -> Self {
        Self { capacity }
    }
    /// Queue a message; returns its id.
    pub fn push(&mut self, now: Time, data: &[u8], deadline: Option<Time>) -> Result<u64, DeliveryError> {
        let _ = (now, data, deadline);
        todo!()
    }
    /// Next never-sent fragment, at most `max_len`, of a message id below `max_data`; copies into `out`.
    pub fn next_unsent(&mut self, max_len: usize, max_data: u64, out: &mut Vec<u8>) -> Option<(u64, u32, u32)> {
        let _ = (max_len, max_data, out);
        todo!()
    }
    /// Copy a fragment for retransmission; false if acknowledged or abandoned.
    pub fn copy_fragment(&self, id: u64, offset: u32, len: u32, out: &mut Vec<u8>) -> bool {
        let _ = (id, offset, len, out);
        todo!()
    }
    /// Record an acknowledged fragment.
    pub fn on_acked(&mut self, id: u64, offset: u32, len: u32) {
        let _ = (id, offset, len);
        todo!()
    }
    /// Count a retransmission of message `id`; returns the count so far.
    pub fn on_retransmitted(&mut self, id: u64) -> u32 {
        let _ = id;
        todo!()
    }
    /// Abandon messages past their deadline or over `max_retransmissions`; returns how many.
    pub fn abandon(&mut self, now: Time, max_retransmissions: Option<u32>) -> usize {
        let _ = (now, max_retransmissions);
        todo!()
    }
    /// Lowest message id neither acknowledged nor abandoned.
    pub fn skip_to(&self) -> u64 {
        todo!()
    }
    /// Bytes `push` would accept now.
    pub fn free_space(&self) -> usize {
        let _ = self.capacity;
        todo!()
    }
    /// Every message acknowledged or abandoned.
    pub fn all_acked(&self) -> bool {
        todo!()
    }
}
