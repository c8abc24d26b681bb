//! One QSTP connection: handshake, transfer, flow control, close; statistics at any time.
//!
//! A `Connection` lives inside an [`Endpoint`](crate::endpoint::Endpoint), which routes datagrams
//! to it and collects what it wants to send. The application side is `write`/`read` for the
//! ordered byte stream and `send_message`/`recv_message` for messages.

use crate::config::Config;
use crate::rate::Rate;
use crate::time::{Duration, Time};
use std::net::SocketAddr;

/// Something the application should know about a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The handshake completed: data can flow.
    Connected,
    /// Stream bytes or messages are ready to read.
    Readable,
    /// Send-buffer space became free after a write was refused.
    Writable,
    /// The peer finished its stream: once the data buffered so far is read, `read` returns 0.
    Finished,
    /// Every byte this side wrote (and finished) was acknowledged by the peer.
    AllAcknowledged,
    /// The connection is over; the handle stays valid until the endpoint drops it.
    Closed(CloseReason),
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// Both sides finished and every byte was delivered and acknowledged.
    Graceful,
    /// This side aborted with [`Connection::close`].
    LocallyClosed,
    /// The peer aborted.
    PeerClosed {
        /// The peer's application error code.
        code: u32,
        /// The peer's reason, lossily decoded.
        reason: String,
    },
    /// Nothing was heard from the peer for the idle timeout.
    IdleTimeout,
    /// The handshake got no answer in time.
    HandshakeTimeout,
    /// The server refused the connection (for instance, an unsupported composition).
    Refused,
    /// The peer broke the protocol.
    ProtocolViolation(String),
}

/// Why a write was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The send buffer is full; retry after [`Event::Writable`].
    #[error("send buffer full")]
    Blocked,
    /// The stream was finished; no more data may be written.
    #[error("stream already finished")]
    Finished,
    /// The connection is closed.
    #[error("connection closed: {0:?}")]
    Closed(CloseReason),
    /// This composition has no byte stream (stream needs sack-full + ordered) or no such message.
    #[error("not supported by this composition: {0}")]
    Unsupported(&'static str),
    /// A message larger than the send buffer.
    #[error("message of {0} bytes exceeds the send buffer")]
    TooLarge(usize),
}

/// Why nothing could be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// Nothing to read yet; retry after [`Event::Readable`].
    #[error("no data available yet")]
    Blocked,
    /// The connection closed before the stream finished.
    #[error("connection closed: {0:?}")]
    Closed(CloseReason),
    /// This composition has no byte stream.
    #[error("not supported by this composition: {0}")]
    Unsupported(&'static str),
}

/// Counters and rate-control state, readable at any time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Datagrams sent, of any kind.
    pub packets_sent: u64,
    /// Data packets that carried data sent before (each in a new packet number).
    pub packets_retransmitted: u64,
    /// Data packets the sender declared lost.
    pub packets_lost: u64,
    /// Datagrams received and accepted.
    pub packets_received: u64,
    /// Datagrams dropped: malformed, truncated, replayed, out of window, unknown connection.
    pub packets_dropped: u64,
    /// Feedback that acknowledged packets never sent (optimistic-ACK defence), ignored.
    pub bogus_acks: u64,
    /// Bytes of datagrams sent.
    pub bytes_sent: u64,
    /// Bytes of datagrams received.
    pub bytes_received: u64,
    /// Application bytes written and acknowledged by the peer.
    pub bytes_acked: u64,
    /// Application bytes delivered to this side's application.
    pub bytes_delivered: u64,
    /// Current allowed sending rate X.
    pub rate: Rate,
    /// Rate from the TFRC throughput equation (RFC 5348 §3.1), zero before the first loss.
    pub x_calc: Rate,
    /// Receive rate reported by the peer.
    pub x_recv: Rate,
    /// Loss event rate p as seen by the peer's receiver.
    pub loss_event_rate: f64,
    /// Smoothed round-trip time.
    pub rtt: Duration,
    /// The gTFRC target g (zero if none).
    pub target: Rate,
    /// Whether the rate controller is still in slow start.
    pub slow_start: bool,
}

/// One QSTP connection.
#[derive(Debug)]
pub struct Connection {
    _private: (),
}

#[allow(unused_variables)]
impl Connection {
    /// Queue stream bytes; returns how many were accepted (less than `data.len()` when the send
    /// buffer fills, [`WriteError::Blocked`] when none fit).
    pub fn write(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        todo!()
    }

    /// Mark the end of this side's stream.
    pub fn finish(&mut self) -> Result<(), WriteError> {
        todo!()
    }

    /// Read delivered stream bytes in order; `Ok(0)` means the peer finished and all was read.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize, ReadError> {
        todo!()
    }

    /// Queue one message (the unit of partial reliability and of unordered delivery).
    pub fn send_message(&mut self, now: Time, data: &[u8]) -> Result<(), WriteError> {
        todo!()
    }

    /// Take the next delivered message, if any.
    pub fn recv_message(&mut self) -> Option<Vec<u8>> {
        todo!()
    }

    /// Abort the connection, telling the peer `code` and `reason` (at most 128 bytes are sent).
    pub fn close(&mut self, now: Time, code: u32, reason: &[u8]) {
        todo!()
    }

    /// Change the target rate g at run time (the paper's setsockopt); ignored without gTFRC.
    pub fn set_target_rate(&mut self, target: Rate) {
        todo!()
    }

    /// Counters and rate-control state.
    pub fn stats(&self) -> Stats {
        todo!()
    }

    /// The composition and limits in force (for an accepted connection, those negotiated).
    pub fn config(&self) -> &Config {
        todo!()
    }

    /// The peer's address.
    pub fn remote(&self) -> SocketAddr {
        todo!()
    }

    /// Whether the handshake completed and the connection is not closed.
    pub fn is_established(&self) -> bool {
        todo!()
    }

    /// Whether the connection has ended (see [`Event::Closed`]).
    pub fn is_closed(&self) -> bool {
        todo!()
    }

    /// Bytes that `write` would accept now.
    pub fn send_capacity(&self) -> usize {
        todo!()
    }
}
