//! Error control: the datagram SACK sender scoreboard and the receiver's record of received packet numbers.

pub mod received;
pub mod sack;

pub use received::ReceivedPackets;
pub use sack::{AckError, AckResult, SackSender, SentChunk, SentPacket};
