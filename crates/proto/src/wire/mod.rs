//! The versioned wire format: every datagram a connection sends or receives.
//!
//! Every packet starts with a version byte and a type byte. `Packet::decode` validates every field
//! and returns an error for anything malformed, truncated or oversize, never panicking; decoded
//! packets borrow their payload from the datagram. Fields follow the QSTP paper's Fig. 1 where they
//! fit (packet number, timestamp, RTT estimate; feedback with timestamp echo, t_delay, X_recv, p
//! and SACK ranges given as pairs of packet numbers).
//!
//! Each packet kind has its own file with a zero-copy view (`HelloPacket`, `DataPacket`, ...) whose
//! `check_len` makes every accessor safe, and `parse`, `emit` and `buffer_len` on its
//! representation. Integers are big-endian; a field a flag or code leaves unused must be zero, so
//! every packet but a hello (whose zero padding may be longer) has exactly one encoding.

mod accept;
mod close;
mod composition;
mod data;
mod error;
mod feedback;
mod header;
mod hello;
mod retry;
#[cfg(test)]
mod tests;
mod varint;

pub use accept::{AcceptPacket, ACCEPT_LEN, PROTECTED_ACCEPT_LEN};
pub use close::ClosePacket;
pub use composition::{ErrorControl, Order, RateControl};
pub use data::DataPacket;
pub use error::WireError;
pub use feedback::{check_ack_ranges, FeedbackPacket, PPB_ONE};
pub use header::{destination_of, peek_type, PacketType};
pub use hello::HelloPacket;
pub use retry::{RetryPacket, RETRY_LEN};

/// The wire version this code speaks. 2: packets sealed with AES-256-GCM under per-epoch keys
/// (v2 key labels); a peer of version 1 is refused by its first packet with
/// [`WireError::UnknownVersion`] instead of failing the handshake as unauthenticated.
pub const VERSION: u8 = 2;

/// Length of a handshake cookie, bytes.
pub const COOKIE_LEN: usize = 24;

/// Most SACK ranges one feedback packet carries.
pub const MAX_ACK_RANGES: usize = 64;

/// Longest close reason carried, bytes.
pub const MAX_REASON_LEN: usize = 128;

/// The application error code of a refused handshake.
pub(crate) const REFUSED_CODE: u32 = 1;

/// The code of a handshake refused because the client's pre-shared key binder did not verify
/// (another key, or a key on one side only): the client reports [`CloseReason::KeyMismatch`].
pub(crate) const KEY_MISMATCH_CODE: u32 = 2;

/// A hello is padded to at least this size, so that answering it never amplifies traffic.
pub const MIN_HELLO_SIZE: usize = 1200;

/// Upper bound on a data packet's header (everything but the payload), bytes.
pub const MAX_DATA_HEADER: usize = 64;

/// Smallest datagram a connection may be configured to emit.
pub const MIN_DATAGRAM: usize = 256;
/// Largest datagram a connection may be configured to emit (fits a UDP payload).
pub const MAX_DATAGRAM: usize = 65_000;

/// A random 64-bit connection id, chosen by the side that receives packets addressed with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(pub u64);

/// A stateless handshake cookie: the server's proof that the client can receive at its address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cookie(pub [u8; COOKIE_LEN]);

/// The composition a client asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Composition {
    /// Congestion control, with its target or fixed rate.
    pub congestion: RateControl,
    /// Error control, with its partial-reliability limits.
    pub error: ErrorControl,
    /// Delivery order.
    pub order: Order,
}

/// Client to server: open a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// The id the server must put on packets to the client.
    pub source: ConnectionId,
    /// The requested composition and target rate.
    pub composition: Composition,
    /// Largest datagram the client sends and accepts.
    pub max_datagram: u16,
    /// The client's receive window, bytes.
    pub recv_window: u64,
    /// Client clock, microseconds (wrapping), echoed by the server.
    pub timestamp: u32,
    /// The cookie from a `Retry`, if the client has one.
    pub cookie: Option<Cookie>,
    /// The client's X25519 key share when it asks for protected packets (see `protection`).
    pub key_share: Option<[u8; crate::protection::KEY_SHARE_LEN]>,
    /// Proof the client holds a pre-shared key, when it has one: a MAC keyed from that key over
    /// the hello's bytes before this field (see [`crate::protection::PreSharedKey::binder`]).
    pub binder: Option<[u8; crate::protection::BINDER_LEN]>,
}

/// Server to client: come back with this cookie (no server state is kept).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retry {
    /// The client's connection id.
    pub destination: ConnectionId,
    /// The cookie to send back in the next hello.
    pub cookie: Cookie,
    /// The hello's timestamp, echoed.
    pub timestamp_echo: u32,
}

/// Server to client: the connection exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accept {
    /// The client's connection id.
    pub destination: ConnectionId,
    /// The id the client must put on packets to the server.
    pub source: ConnectionId,
    /// Largest datagram the server sends and accepts.
    pub max_datagram: u16,
    /// The server's receive window, bytes.
    pub recv_window: u64,
    /// The hello's timestamp, echoed (the client's first RTT sample).
    pub timestamp_echo: u32,
    /// The server's key share and key confirmation, when the hello carried a key share.
    pub keys: Option<AcceptKeys>,
}

/// What a protected accept adds: the server's key share and a tag over the accept made with the
/// derived keys (see `protection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceptKeys {
    /// The server's X25519 key share.
    pub share: [u8; crate::protection::KEY_SHARE_LEN],
    /// The server's confirmation tag over the accept's other bytes.
    pub confirmation: [u8; crate::protection::TAG_LEN],
}

/// What the payload of a data packet is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk {
    /// Bytes of the ordered stream starting at `offset`.
    Stream {
        /// Stream offset of the first payload byte.
        offset: u64,
        /// Whether the stream ends with this payload.
        fin: bool,
    },
    /// A fragment of message `id`, starting at `offset` within a message of `total_len` bytes.
    Message {
        /// Message id, counting from 0 in the order written.
        id: u64,
        /// Offset of the fragment within the message.
        offset: u32,
        /// Length of the whole message.
        total_len: u32,
    },
    /// No application data (a probe or keep-alive; still takes a packet number).
    Empty,
    /// A path MTU probe (RFC 8899 §4.1): padding up to the size being probed, no application
    /// data. Acknowledged like any packet, but left out of loss detection: its loss says the path
    /// is too narrow, not that it is congested (RFC 8899 §4.4).
    Padding,
}

/// Data, sender to receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Data<'a> {
    /// The receiver's connection id.
    pub destination: ConnectionId,
    /// Strictly increasing, never reused, retransmissions included.
    pub packet_number: u64,
    /// Sender clock, microseconds (wrapping) (RFC 5348 §3.2.1).
    pub timestamp: u32,
    /// The sender's current RTT estimate, microseconds (RFC 5348 §3.2.1).
    pub rtt: u32,
    /// What the payload is.
    pub chunk: Chunk,
    /// Partial reliability: the receiver stops waiting for stream bytes or messages below this
    /// offset or id (they were abandoned).
    pub skip_to: Option<u64>,
    /// Application bytes.
    /// The packet number before this one was skipped, never sent (RFC 9000 §21.4): the receiver
    /// leaves it out of loss detection, and acknowledging it proves the peer acknowledges what
    /// it never received.
    pub previous_skipped: bool,
    pub payload: &'a [u8],
}

/// Receiver to sender, once per RTT and on a new loss event (RFC 5348 §6.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feedback {
    /// The data sender's connection id.
    pub destination: ConnectionId,
    /// Strictly increasing per connection: stale or replayed feedback is dropped.
    pub sequence: u64,
    /// Timestamp of the last data packet received (t_recvdata), echoed.
    pub timestamp_echo: u32,
    /// Microseconds between receiving that packet and sending this feedback (t_delay).
    pub t_delay: u32,
    /// Receive rate since the last feedback, bits per second (X_recv).
    pub x_recv: u64,
    /// Loss event rate p, in parts per billion.
    pub loss_event_rate_ppb: u32,
    /// Flow control: the sender may send stream bytes (or message bytes) below this count.
    pub max_data: u64,
    /// Received packet numbers as inclusive `(first, last)` ranges, highest first, disjoint, at
    /// most [`MAX_ACK_RANGES`].
    pub ack_ranges: Vec<(u64, u64)>,
}

/// End the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Close<'a> {
    /// The receiver's connection id.
    pub destination: ConnectionId,
    /// Whether this is the end of a graceful close (all data delivered) rather than an abort.
    pub graceful: bool,
    /// Application error code (0 when graceful).
    pub code: u32,
    /// Human-readable reason, at most [`MAX_REASON_LEN`] bytes.
    pub reason: &'a [u8],
}

/// Any packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet<'a> {
    /// Client hello.
    Hello(Hello),
    /// Stateless cookie challenge.
    Retry(Retry),
    /// Handshake completion.
    Accept(Accept),
    /// Data.
    Data(Data<'a>),
    /// Receiver feedback.
    Feedback(Feedback),
    /// Close.
    Close(Close<'a>),
}

impl<'a> Packet<'a> {
    /// Decode one datagram; every field validated.
    pub fn decode(datagram: &'a [u8]) -> Result<Packet<'a>, WireError> {
        Ok(match peek_type(datagram)? {
            PacketType::Hello => Packet::Hello(Hello::parse(&HelloPacket::new_checked(datagram)?)?),
            PacketType::Retry => Packet::Retry(Retry::parse(&RetryPacket::new_checked(datagram)?)?),
            PacketType::Accept => {
                Packet::Accept(Accept::parse(&AcceptPacket::new_checked(datagram)?)?)
            }
            PacketType::Data => Packet::Data(Data::parse(&DataPacket::new_checked(datagram)?)?),
            PacketType::Feedback => {
                Packet::Feedback(Feedback::parse(&FeedbackPacket::new_checked(datagram)?)?)
            }
            PacketType::Close => Packet::Close(Close::parse(&ClosePacket::new_checked(datagram)?)?),
        })
    }

    /// Append the encoding to `buf` (a hello is padded to MIN_HELLO_SIZE).
    pub fn encode(&self, buf: &mut Vec<u8>) {
        let start = buf.len();
        buf.resize(start + self.encoded_len(), 0);
        let out = &mut buf[start..];
        match self {
            Packet::Hello(hello) => hello.emit(out),
            Packet::Retry(retry) => retry.emit(out),
            Packet::Accept(accept) => accept.emit(out),
            Packet::Data(data) => data.emit(out),
            Packet::Feedback(feedback) => feedback.emit(out),
            Packet::Close(close) => close.emit(out),
        }
    }

    /// Bytes `encode` will append.
    pub fn encoded_len(&self) -> usize {
        match self {
            Packet::Hello(hello) => hello.buffer_len(),
            Packet::Retry(retry) => retry.buffer_len(),
            Packet::Accept(accept) => accept.buffer_len(),
            Packet::Data(data) => data.buffer_len(),
            Packet::Feedback(feedback) => feedback.buffer_len(),
            Packet::Close(close) => close.buffer_len(),
        }
    }

    /// The destination connection id, for routing (None for a hello).
    pub fn destination(&self) -> Option<ConnectionId> {
        match self {
            Packet::Hello(_) => None,
            Packet::Retry(retry) => Some(retry.destination),
            Packet::Accept(accept) => Some(accept.destination),
            Packet::Data(data) => Some(data.destination),
            Packet::Feedback(feedback) => Some(feedback.destination),
            Packet::Close(close) => Some(close.destination),
        }
    }

    /// The kind of this packet.
    pub fn packet_type(&self) -> PacketType {
        match self {
            Packet::Hello(_) => PacketType::Hello,
            Packet::Retry(_) => PacketType::Retry,
            Packet::Accept(_) => PacketType::Accept,
            Packet::Data(_) => PacketType::Data,
            Packet::Feedback(_) => PacketType::Feedback,
            Packet::Close(_) => PacketType::Close,
        }
    }
}
