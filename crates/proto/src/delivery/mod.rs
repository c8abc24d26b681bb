//! Delivery: bounded send buffers and receive reassembly for the ordered byte stream and for messages.

pub mod error;
pub mod message_recv;
pub mod message_send;
pub mod stream_recv;
pub mod stream_send;

pub use error::DeliveryError;
pub use message_recv::MessageReassembler;
pub use message_send::MessageSendQueue;
pub use stream_recv::StreamReassembler;
pub use stream_send::StreamSendBuffer;

#[cfg(test)]
mod partial_reliability_tests;
#[cfg(test)]
mod reliable_stream_tests;
#[cfg(test)]
pub(crate) mod test_channel;
