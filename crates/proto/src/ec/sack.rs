//! The sender's SACK scoreboard: outstanding packets, acknowledgement, loss inference, retransmission queue.

use crate::config::ErrorControl;
use crate::time::{Duration, Time};

/// What a sent packet carried, remembered until it is acknowledged or declared lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SentChunk {
    /// Stream bytes `offset..offset+len`, with the fin flag.
    Stream {
        /// Stream offset of the first byte.
        offset: u64,
        /// Number of bytes.
        len: u32,
        /// Whether the stream ended with this chunk.
        fin: bool,
    },
    /// A fragment of a message.
    Message {
        /// Message id.
        id: u64,
        /// Offset of the fragment in the message.
        offset: u32,
        /// Fragment length.
        len: u32,
        /// Length of the whole message.
        total_len: u32,
    },
    /// No application data.
    Empty,
}

/// One packet handed to the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentPacket {
    /// Its packet number (strictly increasing, never reused).
    pub packet_number: u64,
    /// When it was sent.
    pub sent: Time,
    /// Datagram size, bytes.
    pub size: usize,
    /// What it carried.
    pub chunk: SentChunk,
}

/// What one acknowledgement changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AckResult {
    /// Chunks newly acknowledged (never `Empty`).
    pub acked: Vec<SentChunk>,
    /// Packets newly acknowledged.
    pub acked_packets: u64,
    /// Packets newly declared lost.
    pub lost_packets: u64,
    /// Send time of the largest newly acknowledged packet (for an RTT sample).
    pub largest_acked_sent: Option<Time>,
}

/// Why an acknowledgement was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AckError {
    /// A range names a packet number never sent (optimistic acknowledgement).
    #[error("acknowledgement names a packet never sent")]
    NeverSent,
    /// Ranges are not disjoint, inclusive and highest first.
    #[error("acknowledgement ranges are malformed")]
    Malformed,
}

/// Sender-side SACK scoreboard.
#[derive(Debug)]
pub struct SackSender {
    error: ErrorControl,
    max_outstanding: usize,
}

impl SackSender {
    /// An empty scoreboard.
    pub fn new(error: ErrorControl, max_outstanding: usize) -> Self {
        Self { error, max_outstanding }
    }
    /// Remember a packet just sent.
    pub fn on_sent(&mut self, packet: SentPacket) {
        let _ = packet;
        todo!()
    }
    /// Process SACK ranges (highest first); refuses ranges naming packets never sent, changing nothing.
    pub fn on_ack(&mut self, now: Time, ranges: &[(u64, u64)]) -> Result<AckResult, AckError> {
        let _ = (now, ranges, &self.error);
        todo!()
    }
    /// Deadline of the retransmission timer for the oldest outstanding packet.
    pub fn poll_timeout(&self, rto: Duration) -> Option<Time> {
        let _ = rto;
        todo!()
    }
    /// Declare lost every packet outstanding longer than `rto`; returns how many.
    pub fn handle_timeout(&mut self, now: Time, rto: Duration) -> u64 {
        let _ = (now, rto);
        todo!()
    }
    /// Next chunk to send again, ahead of new data.
    pub fn next_retransmission(&mut self) -> Option<SentChunk> {
        todo!()
    }
    /// Whether any chunk waits for retransmission.
    pub fn has_retransmissions(&self) -> bool {
        todo!()
    }
    /// Packets sent and neither acknowledged nor declared lost.
    pub fn outstanding(&self) -> usize {
        let _ = self.max_outstanding;
        todo!()
    }
}
