//! Data: sender to receiver, one chunk of application data.
//!
//! Layout (integers big-endian): version (1), type (1), destination id (8), flags (1), packet
//! number (8), timestamp (4), RTT estimate (4) (RFC 5348 §3.2.1: sequence number, timestamp and
//! the sender's RTT estimate; QSTP paper Fig. 1), then the chunk fields (stream: offset (8);
//! message: id (8), offset (4), total length (4); empty and padding: nothing), then the skip-to point (8)
//! if flagged, then the payload up to the end of the datagram (for a padding chunk, a path MTU
//! probe's filler, RFC 8899 §4.1). Flags: bits 0-1 the chunk kind,
//! bit 2 fin (stream only), bit 3 skip-to present, bit 4 "the previous packet number was skipped"
//! (never sent: RFC 9000 §21.4's defence against optimistic acknowledgements), bits 5-7 reserved
//! (zero). Once `check_len`
//! passed, no accessor panics.

use super::header::{be_u32, be_u64, destination, emit_destination, emit_type, Field};
use super::{Chunk, ConnectionId, Data, PacketType, WireError, MAX_DATA_HEADER};

/// Field offsets; chunk fields are relative to `CHUNK`.
mod field {
    use super::Field;
    pub const FLAGS: usize = 10;
    pub const PACKET_NUMBER: Field = 11..19;
    pub const TIMESTAMP: Field = 19..23;
    pub const RTT: Field = 23..27;
    pub const CHUNK: usize = 27;
    pub const STREAM_OFFSET: Field = 0..8;
    pub const MESSAGE_ID: Field = 0..8;
    pub const MESSAGE_OFFSET: Field = 8..12;
    pub const MESSAGE_TOTAL_LEN: Field = 12..16;
    pub const SKIP_TO_LEN: usize = 8;
}

mod flag {
    pub const KIND: u8 = 0x03;
    pub const FIN: u8 = 0x04;
    pub const HAS_SKIP_TO: u8 = 0x08;
    pub const PREVIOUS_SKIPPED: u8 = 0x10;
    pub const RESERVED: u8 = 0xe0;
}

mod kind {
    pub const EMPTY: u8 = 0;
    pub const STREAM: u8 = 1;
    pub const MESSAGE: u8 = 2;
    pub const PADDING: u8 = 3;
}

/// Bytes of the chunk fields for a chunk kind code, if the code is known.
fn chunk_fields_len(kind: u8) -> Option<usize> {
    match kind {
        kind::EMPTY | kind::PADDING => Some(0),
        kind::STREAM => Some(field::STREAM_OFFSET.end),
        kind::MESSAGE => Some(field::MESSAGE_TOTAL_LEN.end),
        _ => None,
    }
}

/// A raw octet buffer viewed as a data packet.
#[derive(Debug, Clone, Copy)]
pub struct DataPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> DataPacket<T> {
    /// Imbue a buffer with data packet structure, without checking its length.
    pub fn new_unchecked(buffer: T) -> Self {
        DataPacket { buffer }
    }

    /// Imbue a buffer with data packet structure, checking it holds the header its flags announce.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Refuse a buffer shorter than the header its flags announce, or with an unknown chunk kind.
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.buffer.as_ref().len();
        if len < field::CHUNK {
            return Err(WireError::Truncated);
        }
        if len < self.header_len()? {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// The header length the flags announce.
    fn header_len(&self) -> Result<usize, WireError> {
        let chunk = chunk_fields_len(self.kind()).ok_or(WireError::InvalidField("chunk kind"))?;
        let skip = if self.has_skip_to() {
            field::SKIP_TO_LEN
        } else {
            0
        };
        Ok(field::CHUNK + chunk + skip)
    }

    /// The receiver's connection id.
    pub fn destination(&self) -> ConnectionId {
        destination(self.buffer.as_ref())
    }

    /// The flag bits.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The chunk kind code.
    pub fn kind(&self) -> u8 {
        self.flags() & flag::KIND
    }

    /// Whether the fin bit is set.
    pub fn fin(&self) -> bool {
        self.flags() & flag::FIN != 0
    }

    /// Whether a skip-to point follows the chunk fields.
    pub fn has_skip_to(&self) -> bool {
        self.flags() & flag::HAS_SKIP_TO != 0
    }

    /// The packet number.
    pub fn packet_number(&self) -> u64 {
        be_u64(&self.buffer.as_ref()[field::PACKET_NUMBER])
    }

    /// The sender's clock, microseconds.
    pub fn timestamp(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::TIMESTAMP])
    }

    /// The sender's RTT estimate, microseconds.
    pub fn rtt(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::RTT])
    }

    /// A chunk field, `range` relative to the chunk start.
    fn chunk_field(&self, range: Field) -> &[u8] {
        &self.buffer.as_ref()[field::CHUNK + range.start..field::CHUNK + range.end]
    }

    /// The chunk as announced by the kind (fields of the other kinds are not read).
    pub fn chunk(&self) -> Chunk {
        match self.kind() {
            kind::STREAM => Chunk::Stream {
                offset: be_u64(self.chunk_field(field::STREAM_OFFSET)),
                fin: self.fin(),
            },
            kind::MESSAGE => Chunk::Message {
                id: be_u64(self.chunk_field(field::MESSAGE_ID)),
                offset: be_u32(self.chunk_field(field::MESSAGE_OFFSET)),
                total_len: be_u32(self.chunk_field(field::MESSAGE_TOTAL_LEN)),
            },
            kind::PADDING => Chunk::Padding,
            _ => Chunk::Empty,
        }
    }

    /// The skip-to point, if flagged.
    pub fn skip_to(&self) -> Option<u64> {
        if !self.has_skip_to() {
            return None;
        }
        let end = self.header_len().ok()?;
        Some(be_u64(&self.buffer.as_ref()[end - field::SKIP_TO_LEN..end]))
    }

    /// The payload, everything after the header.
    pub fn payload(&self) -> &[u8] {
        let start = self.header_len().unwrap_or(field::CHUNK);
        &self.buffer.as_ref()[start..]
    }
}

impl<'a> Data<'a> {
    /// Header bytes for this chunk kind (<= MAX_DATA_HEADER).
    pub fn header_len(chunk: &Chunk, has_skip: bool) -> usize {
        let chunk = match chunk {
            Chunk::Empty | Chunk::Padding => 0,
            Chunk::Stream { .. } => field::STREAM_OFFSET.end,
            Chunk::Message { .. } => field::MESSAGE_TOTAL_LEN.end,
        };
        field::CHUNK + chunk + if has_skip { field::SKIP_TO_LEN } else { 0 }
    }

    /// Parse and validate a data packet whose length was checked.
    pub fn parse(packet: &DataPacket<&'a [u8]>) -> Result<Data<'a>, WireError> {
        if packet.flags() & flag::RESERVED != 0 {
            return Err(WireError::InvalidField("reserved data flag bits"));
        }
        let chunk = packet.chunk();
        let payload: &'a [u8] = {
            let buffer: &'a [u8] = packet.buffer;
            &buffer[packet.header_len()?..]
        };
        let len = payload.len() as u64;
        match chunk {
            Chunk::Empty | Chunk::Padding if packet.fin() => {
                return Err(WireError::InvalidField("fin on a non-stream chunk"))
            }
            Chunk::Message { .. } if packet.fin() => {
                return Err(WireError::InvalidField("fin on a non-stream chunk"))
            }
            Chunk::Empty if !payload.is_empty() => return Err(WireError::TrailingBytes),
            Chunk::Stream { offset, .. } if offset.checked_add(len).is_none() => {
                return Err(WireError::InvalidField("stream offset overflows"))
            }
            Chunk::Message {
                offset, total_len, ..
            } if u64::from(offset) + len > u64::from(total_len) => {
                return Err(WireError::InvalidField("fragment beyond its message"))
            }
            _ => {}
        }
        Ok(Data {
            destination: packet.destination(),
            packet_number: packet.packet_number(),
            timestamp: packet.timestamp(),
            rtt: packet.rtt(),
            chunk,
            skip_to: packet.skip_to(),
            previous_skipped: packet.flags() & flag::PREVIOUS_SKIPPED != 0,
            payload,
        })
    }

    /// Bytes `emit` writes: header and payload.
    pub fn buffer_len(&self) -> usize {
        Data::header_len(&self.chunk, self.skip_to.is_some()) + self.payload.len()
    }

    /// Write the packet into a zeroed buffer of `buffer_len` bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        debug_assert!(
            self.chunk != Chunk::Empty || self.payload.is_empty(),
            "payload on an empty chunk"
        );
        emit_type(buf, PacketType::Data);
        emit_destination(buf, self.destination);
        let chunk = &mut buf[field::CHUNK..];
        let (kind, fin) = match self.chunk {
            Chunk::Empty => (kind::EMPTY, false),
            Chunk::Padding => (kind::PADDING, false),
            Chunk::Stream { offset, fin } => {
                chunk[field::STREAM_OFFSET].copy_from_slice(&offset.to_be_bytes());
                (kind::STREAM, fin)
            }
            Chunk::Message {
                id,
                offset,
                total_len,
            } => {
                chunk[field::MESSAGE_ID].copy_from_slice(&id.to_be_bytes());
                chunk[field::MESSAGE_OFFSET].copy_from_slice(&offset.to_be_bytes());
                chunk[field::MESSAGE_TOTAL_LEN].copy_from_slice(&total_len.to_be_bytes());
                (kind::MESSAGE, false)
            }
        };
        let mut flags = kind;
        if fin {
            flags |= flag::FIN;
        }
        if self.previous_skipped {
            flags |= flag::PREVIOUS_SKIPPED;
        }
        let header_len = Data::header_len(&self.chunk, self.skip_to.is_some());
        if let Some(skip_to) = self.skip_to {
            flags |= flag::HAS_SKIP_TO;
            buf[header_len - field::SKIP_TO_LEN..header_len]
                .copy_from_slice(&skip_to.to_be_bytes());
        }
        buf[field::FLAGS] = flags;
        buf[field::PACKET_NUMBER].copy_from_slice(&self.packet_number.to_be_bytes());
        buf[field::TIMESTAMP].copy_from_slice(&self.timestamp.to_be_bytes());
        buf[field::RTT].copy_from_slice(&self.rtt.to_be_bytes());
        buf[header_len..].copy_from_slice(self.payload);
    }
}

// The largest header fits the bound the connection sizes payloads with.
const _: () =
    assert!(field::CHUNK + field::MESSAGE_TOTAL_LEN.end + field::SKIP_TO_LEN <= MAX_DATA_HEADER);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Packet;

    fn stream_example() -> Data<'static> {
        Data {
            destination: ConnectionId(0x0a0b_0c0d_0e0f_1011),
            packet_number: 0x0100,
            timestamp: 0x1000_0001,
            rtt: 30_000,
            chunk: Chunk::Stream {
                offset: 0x0203,
                fin: true,
            },
            skip_to: None,
            previous_skipped: false,
            payload: b"hi",
        }
    }

    #[test]
    fn golden_stream_layout() {
        let mut buf = Vec::new();
        Packet::Data(stream_example()).encode(&mut buf);
        #[rustfmt::skip]
        let expected: &[u8] = &[
            2, 4, // version, type
            0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, // destination
            0x05, // flags: stream, fin
            0, 0, 0, 0, 0, 0, 0x01, 0x00, // packet number
            0x10, 0, 0, 0x01, // timestamp
            0, 0, 0x75, 0x30, // rtt 30 ms
            0, 0, 0, 0, 0, 0, 0x02, 0x03, // stream offset
            b'h', b'i',
        ];
        assert_eq!(buf, expected);
        assert_eq!(Packet::decode(&buf), Ok(Packet::Data(stream_example())));
    }

    #[test]
    fn golden_message_layout_with_skip() {
        let data = Data {
            destination: ConnectionId(2),
            packet_number: 9,
            timestamp: 1,
            rtt: 2,
            chunk: Chunk::Message {
                id: 5,
                offset: 3,
                total_len: 4,
            },
            skip_to: Some(4),
            previous_skipped: true,
            payload: b"z",
        };
        let mut buf = Vec::new();
        Packet::Data(data.clone()).encode(&mut buf);
        #[rustfmt::skip]
        let expected: &[u8] = &[
            2, 4, 0, 0, 0, 0, 0, 0, 0, 2,
            0x1a, // flags: message, skip-to, previous skipped
            0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 2,
            0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 3, 0, 0, 0, 4, // id, offset, total length
            0, 0, 0, 0, 0, 0, 0, 4, // skip to
            b'z',
        ];
        assert_eq!(buf, expected);
        assert_eq!(buf.len(), Data::header_len(&data.chunk, true) + 1);
        assert_eq!(Packet::decode(&buf), Ok(Packet::Data(data)));
    }

    #[test]
    fn header_lengths_stay_under_the_bound() {
        let message = Chunk::Message {
            id: 0,
            offset: 0,
            total_len: 0,
        };
        assert_eq!(Data::header_len(&Chunk::Empty, false), 27);
        assert_eq!(
            Data::header_len(
                &Chunk::Stream {
                    offset: 0,
                    fin: false
                },
                false
            ),
            35
        );
        assert_eq!(Data::header_len(&message, true), 51);
        assert!(Data::header_len(&message, true) <= MAX_DATA_HEADER);
    }

    #[test]
    fn rejects_malformed_data() {
        let mut buf = Vec::new();
        Packet::Data(stream_example()).encode(&mut buf);
        let with_flags = |flags: u8| {
            let mut b = buf.clone();
            b[field::FLAGS] = flags;
            Packet::decode(&b).map(|_| ())
        };
        assert_eq!(
            with_flags(0x25),
            Err(WireError::InvalidField("reserved data flag bits"))
        );
        // Kind 3 is padding (a path MTU probe): whatever follows the header is its filler.
        assert!(with_flags(0x03).is_ok());
        assert_eq!(
            with_flags(0x07),
            Err(WireError::InvalidField("fin on a non-stream chunk"))
        );
        assert_eq!(
            with_flags(0x04),
            Err(WireError::InvalidField("fin on a non-stream chunk"))
        );
        // An empty chunk may not carry payload (the stream offset bytes become payload here).
        assert_eq!(with_flags(0x00), Err(WireError::TrailingBytes));
        // The stream offset is cut short.
        assert_eq!(Packet::decode(&buf[..30]), Err(WireError::Truncated));
        let mut overflow = stream_example();
        overflow.chunk = Chunk::Stream {
            offset: u64::MAX,
            fin: false,
        };
        let mut b = Vec::new();
        Packet::Data(overflow).encode(&mut b);
        assert_eq!(
            Packet::decode(&b),
            Err(WireError::InvalidField("stream offset overflows"))
        );
        let mut beyond = stream_example();
        beyond.chunk = Chunk::Message {
            id: 1,
            offset: 1,
            total_len: 2,
        };
        let mut b = Vec::new();
        Packet::Data(beyond).encode(&mut b);
        assert_eq!(
            Packet::decode(&b),
            Err(WireError::InvalidField("fragment beyond its message"))
        );
    }
}
