//! Close: either side ends the connection.
//!
//! Layout (integers big-endian): version (1), type (1), destination id (8), flags (1), code (4),
//! reason length (1), reason (at most `MAX_REASON_LEN` bytes); nothing may follow. Flags: bit 0
//! graceful, bits 1-7 reserved (zero). Once `check_len` passed, no accessor panics.

use super::header::{be_u32, destination, emit_destination, emit_type, Field};
use super::{Close, ConnectionId, PacketType, WireError, MAX_REASON_LEN};

/// Field offsets.
mod field {
    use super::Field;
    pub const FLAGS: usize = 10;
    pub const CODE: Field = 11..15;
    pub const REASON_LEN: usize = 15;
    pub const REASON: usize = 16;
}

/// Flag bit: the close ends a graceful shutdown.
const GRACEFUL: u8 = 0x01;

/// A raw octet buffer viewed as a close.
#[derive(Debug, Clone, Copy)]
pub struct ClosePacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ClosePacket<T> {
    /// Imbue a buffer with close structure, without checking its length.
    pub fn new_unchecked(buffer: T) -> Self {
        ClosePacket { buffer }
    }

    /// Imbue a buffer with close structure, checking its length matches the reason length.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Refuse an oversize reason, and a buffer not exactly as long as the reason length says.
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.buffer.as_ref().len();
        if len < field::REASON {
            return Err(WireError::Truncated);
        }
        let reason_len = usize::from(self.reason_len());
        if reason_len > MAX_REASON_LEN {
            return Err(WireError::Oversize);
        }
        match len {
            len if len < field::REASON + reason_len => Err(WireError::Truncated),
            len if len > field::REASON + reason_len => Err(WireError::TrailingBytes),
            _ => Ok(()),
        }
    }

    /// The receiver's connection id.
    pub fn destination(&self) -> ConnectionId {
        destination(self.buffer.as_ref())
    }

    /// The flag bits.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The application error code.
    pub fn code(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::CODE])
    }

    /// The reason length byte.
    pub fn reason_len(&self) -> u8 {
        self.buffer.as_ref()[field::REASON_LEN]
    }
}

impl<'a> ClosePacket<&'a [u8]> {
    /// The reason bytes, borrowed from the datagram.
    pub fn reason(&self) -> &'a [u8] {
        let buffer: &'a [u8] = self.buffer;
        &buffer[field::REASON..field::REASON + usize::from(self.reason_len())]
    }
}

impl<'a> Close<'a> {
    /// Parse and validate a close whose length was checked.
    pub fn parse(packet: &ClosePacket<&'a [u8]>) -> Result<Close<'a>, WireError> {
        let flags = packet.flags();
        if flags & !GRACEFUL != 0 {
            return Err(WireError::InvalidField("reserved close flag bits"));
        }
        let graceful = flags & GRACEFUL != 0;
        let code = packet.code();
        if graceful && code != 0 {
            return Err(WireError::InvalidField("graceful close with an error code"));
        }
        Ok(Close {
            destination: packet.destination(),
            graceful,
            code,
            reason: packet.reason(),
        })
    }

    /// The reason as sent: at most `MAX_REASON_LEN` bytes.
    fn sent_reason(&self) -> &[u8] {
        &self.reason[..self.reason.len().min(MAX_REASON_LEN)]
    }

    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        field::REASON + self.sent_reason().len()
    }

    /// Write the close into a buffer of `buffer_len` bytes; a longer reason is cut to
    /// `MAX_REASON_LEN` bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        debug_assert!(
            !self.graceful || self.code == 0,
            "graceful close with code {}",
            self.code
        );
        let reason = self.sent_reason();
        emit_type(buf, PacketType::Close);
        emit_destination(buf, self.destination);
        buf[field::FLAGS] = if self.graceful { GRACEFUL } else { 0 };
        buf[field::CODE].copy_from_slice(&self.code.to_be_bytes());
        buf[field::REASON_LEN] = reason.len() as u8;
        buf[field::REASON..field::REASON + reason.len()].copy_from_slice(reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Packet;
    use crate::wire::VERSION;

    #[test]
    fn golden_layout() {
        let close = Close {
            destination: ConnectionId(4),
            graceful: false,
            code: 0x0102,
            reason: b"bye",
        };
        let mut buf = Vec::new();
        Packet::Close(close.clone()).encode(&mut buf);
        let expected: &[u8] = &[
            2, 6, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1, 2, 3, b'b', b'y', b'e',
        ];
        assert_eq!(buf, expected);
        assert_eq!(Packet::decode(&buf), Ok(Packet::Close(close)));
        assert_eq!(Packet::decode(&buf[..18]), Err(WireError::Truncated));
        buf.push(b'!');
        assert_eq!(Packet::decode(&buf), Err(WireError::TrailingBytes));
    }

    #[test]
    fn rejects_oversize_reason_and_bad_flags() {
        let long = [b'x'; MAX_REASON_LEN + 1];
        let mut buf = vec![
            VERSION,
            6,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            4,
            0,
            0,
            0,
            0,
            0,
            MAX_REASON_LEN as u8 + 1,
        ];
        buf.extend_from_slice(&long);
        assert_eq!(Packet::decode(&buf), Err(WireError::Oversize));
        let mut graceful = vec![2, 6, 0, 0, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 0];
        assert_eq!(
            Packet::decode(&graceful),
            Ok(Packet::Close(Close {
                destination: ConnectionId(4),
                graceful: true,
                code: 0,
                reason: b""
            }))
        );
        graceful[14] = 1;
        assert_eq!(
            Packet::decode(&graceful),
            Err(WireError::InvalidField("graceful close with an error code"))
        );
        graceful[10] = 3;
        assert_eq!(
            Packet::decode(&graceful),
            Err(WireError::InvalidField("reserved close flag bits"))
        );
    }

    #[test]
    fn encoder_cuts_a_long_reason() {
        let long = [b'x'; 300];
        let close = Close {
            destination: ConnectionId(4),
            graceful: false,
            code: 9,
            reason: &long,
        };
        let packet = Packet::Close(close);
        let mut buf = Vec::new();
        packet.encode(&mut buf);
        assert_eq!(buf.len(), packet.encoded_len());
        let Ok(Packet::Close(decoded)) = Packet::decode(&buf) else {
            panic!("does not decode")
        };
        assert_eq!(decoded.reason, &long[..MAX_REASON_LEN]);
    }
}
