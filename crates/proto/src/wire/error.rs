//! Why a datagram could not be decoded.

use super::{MAX_ACK_RANGES, MIN_HELLO_SIZE};

/// Why a datagram could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The datagram ends before a field it announces.
    #[error("datagram truncated")]
    Truncated,
    /// The version byte is not one this code speaks.
    #[error("unknown wire version {0}")]
    UnknownVersion(u8),
    /// The type byte names no packet kind.
    #[error("unknown packet type {0}")]
    UnknownType(u8),
    /// A field holds a value that is not allowed.
    #[error("invalid field: {0}")]
    InvalidField(&'static str),
    /// A feedback packet carries more than `MAX_ACK_RANGES` ranges.
    #[error("more than {MAX_ACK_RANGES} ack ranges")]
    TooManyRanges,
    /// A length field is larger than its bound (a close reason over `MAX_REASON_LEN`).
    #[error("field over its size bound")]
    Oversize,
    /// Bytes follow the end of the packet.
    #[error("trailing bytes after the packet")]
    TrailingBytes,
    /// A hello shorter than `MIN_HELLO_SIZE` (anti-amplification).
    #[error("hello of {0} bytes is shorter than {MIN_HELLO_SIZE}")]
    ShortHello(usize),
}
