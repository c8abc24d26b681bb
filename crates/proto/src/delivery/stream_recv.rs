//! Reassembly of the ordered byte stream within a bounded window.

use super::DeliveryError;

/// Out-of-order stream bytes held until they can be read in order.
#[derive(Debug)]
pub struct StreamReassembler {
    window: usize,
}

impl StreamReassembler {
    /// An empty reassembler accepting bytes up to `window` beyond the read offset.
    pub fn new(window: usize) -> Self {
        Self { window }
    }
    /// Buffer bytes at `offset`; beyond the advertised window -> Err; duplicates ignored.
    pub fn insert(&mut self, offset: u64, data: &[u8], fin: bool) -> Result<usize, DeliveryError> {
        let _ = (offset, data, fin);
        todo!()
    }
    /// Read in-order bytes into `buf`; returns how many.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        let _ = buf;
        todo!()
    }
    /// In-order bytes ready to read.
    pub fn readable(&self) -> usize {
        todo!()
    }
    /// Fin received and everything read.
    pub fn is_finished(&self) -> bool {
        todo!()
    }
    /// Read offset + window: what to advertise.
    pub fn max_data(&self) -> u64 {
        let _ = self.window;
        todo!()
    }
}
