//! Reassembly of messages, delivered in order or as each completes.

use super::DeliveryError;
use crate::config::Order;

/// Message fragments held until their messages can be delivered.
#[derive(Debug)]
pub struct MessageReassembler {
    order: Order,
    capacity: usize,
    max_payload: usize,
}

impl MessageReassembler {
    /// An empty reassembler holding at most `capacity` bytes.
    pub fn new(order: Order, capacity: usize, max_payload: usize) -> Self {
        Self { order, capacity, max_payload }
    }
    /// Buffer one fragment of message `id`.
    pub fn insert(&mut self, id: u64, offset: u32, total_len: u32, data: &[u8]) -> Result<(), DeliveryError> {
        let _ = (id, offset, total_len, data);
        todo!()
    }
    /// Stop waiting for messages below `id`.
    pub fn skip_to(&mut self, id: u64) {
        let _ = id;
        todo!()
    }
    /// Next deliverable message.
    pub fn pop(&mut self) -> Option<Vec<u8>> {
        let _ = (self.order, self.capacity, self.max_payload);
        todo!()
    }
    /// Flow control: the sender may send message ids below this.
    pub fn max_data(&self) -> u64 {
        todo!()
    }
}
