//! The two bytes every packet starts with, and the destination id all but a hello carry next.
//!
//! Layout: version (1 byte), type (1 byte), then for every type but hello the destination
//! connection id (8 bytes, big-endian).

use super::{ConnectionId, WireError, VERSION};

/// A byte range within a packet.
pub(crate) type Field = core::ops::Range<usize>;

/// Field offsets shared by every packet kind.
pub(crate) mod field {
    use super::Field;
    /// Wire version.
    pub const VERSION: usize = 0;
    /// Packet type code.
    pub const TYPE: usize = 1;
    /// Destination connection id (absent in a hello).
    pub const DESTINATION: Field = 2..10;
}

/// Length of the version and type bytes.
pub(crate) const TYPE_HEADER_LEN: usize = 2;

/// The kind of a packet, from its type byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// Client hello.
    Hello,
    /// Stateless cookie challenge.
    Retry,
    /// Handshake completion.
    Accept,
    /// Data.
    Data,
    /// Receiver feedback.
    Feedback,
    /// Close.
    Close,
}

impl PacketType {
    /// Every packet type.
    pub const ALL: [PacketType; 6] = [
        PacketType::Hello,
        PacketType::Retry,
        PacketType::Accept,
        PacketType::Data,
        PacketType::Feedback,
        PacketType::Close,
    ];

    /// The type byte on the wire.
    pub const fn code(self) -> u8 {
        match self {
            PacketType::Hello => 1,
            PacketType::Retry => 2,
            PacketType::Accept => 3,
            PacketType::Data => 4,
            PacketType::Feedback => 5,
            PacketType::Close => 6,
        }
    }

    /// The packet type with type byte `code`.
    pub fn from_code(code: u8) -> Result<PacketType, WireError> {
        PacketType::ALL
            .into_iter()
            .find(|t| t.code() == code)
            .ok_or(WireError::UnknownType(code))
    }
}

/// Peek at a datagram's version and type without full decoding (for cheap dispatch and counters).
pub fn peek_type(datagram: &[u8]) -> Result<PacketType, WireError> {
    if datagram.len() < TYPE_HEADER_LEN {
        return Err(WireError::Truncated);
    }
    if datagram[field::VERSION] != VERSION {
        return Err(WireError::UnknownVersion(datagram[field::VERSION]));
    }
    PacketType::from_code(datagram[field::TYPE])
}

/// Write the version and type bytes into `buf`, which holds at least `TYPE_HEADER_LEN` bytes.
pub(crate) fn emit_type(buf: &mut [u8], packet_type: PacketType) {
    buf[field::VERSION] = VERSION;
    buf[field::TYPE] = packet_type.code();
}

/// Refuse a fixed-size packet whose buffer is not exactly `expected` bytes.
pub(crate) fn check_exact_len(len: usize, expected: usize) -> Result<(), WireError> {
    match len {
        len if len < expected => Err(WireError::Truncated),
        len if len > expected => Err(WireError::TrailingBytes),
        _ => Ok(()),
    }
}

/// Read the destination id of a packet whose length was checked to hold it.
pub(crate) fn destination(buf: &[u8]) -> ConnectionId {
    ConnectionId(be_u64(&buf[field::DESTINATION]))
}

/// The destination id of a datagram of any type but hello, without decoding the rest; `None`
/// when it is too short to hold one.
pub fn destination_of(datagram: &[u8]) -> Option<ConnectionId> {
    (datagram.len() >= field::DESTINATION.end).then(|| destination(datagram))
}

/// Write the destination id into a buffer that holds it.
pub(crate) fn emit_destination(buf: &mut [u8], id: ConnectionId) {
    buf[field::DESTINATION].copy_from_slice(&id.0.to_be_bytes());
}

/// A big-endian u16 from a two-byte field.
pub(crate) fn be_u16(bytes: &[u8]) -> u16 {
    let mut b = [0; 2];
    b.copy_from_slice(bytes);
    u16::from_be_bytes(b)
}

/// A big-endian u32 from a four-byte field.
pub(crate) fn be_u32(bytes: &[u8]) -> u32 {
    let mut b = [0; 4];
    b.copy_from_slice(bytes);
    u32::from_be_bytes(b)
}

/// A big-endian u64 from an eight-byte field.
pub(crate) fn be_u64(bytes: &[u8]) -> u64 {
    let mut b = [0; 8];
    b.copy_from_slice(bytes);
    u64::from_be_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_codes_round_trip_and_unknown_codes_are_refused() {
        for t in PacketType::ALL {
            assert_eq!(PacketType::from_code(t.code()), Ok(t));
            assert_eq!(peek_type(&[VERSION, t.code()]), Ok(t));
        }
        assert_eq!(PacketType::from_code(0), Err(WireError::UnknownType(0)));
        assert_eq!(PacketType::from_code(7), Err(WireError::UnknownType(7)));
    }

    #[test]
    fn peek_checks_version_before_type() {
        assert_eq!(peek_type(&[]), Err(WireError::Truncated));
        assert_eq!(peek_type(&[VERSION]), Err(WireError::Truncated));
        // A peer of version 1 (before AES-256-GCM and the v2 key labels) is told apart.
        assert_eq!(peek_type(&[1, 1]), Err(WireError::UnknownVersion(1)));
        assert_eq!(peek_type(&[3, 1]), Err(WireError::UnknownVersion(3)));
        assert_eq!(peek_type(&[0, 99]), Err(WireError::UnknownVersion(0)));
        assert_eq!(peek_type(&[VERSION, 99]), Err(WireError::UnknownType(99)));
    }
}
