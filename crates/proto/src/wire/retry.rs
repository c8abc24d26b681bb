//! Retry: server to client, a stateless cookie challenge.
//!
//! Layout (integers big-endian): version (1), type (1), destination id (8), cookie (24),
//! timestamp echo (4); nothing may follow. Once `check_len` passed, no accessor panics.

use super::header::{be_u32, check_exact_len, destination, emit_destination, emit_type, Field};
use super::{ConnectionId, Cookie, PacketType, Retry, WireError, COOKIE_LEN};

/// Field offsets.
mod field {
    use super::Field;
    pub const COOKIE: Field = 10..34;
    pub const TIMESTAMP_ECHO: Field = 34..38;
}

/// Length of a retry, bytes.
pub const RETRY_LEN: usize = field::TIMESTAMP_ECHO.end;

/// A raw octet buffer viewed as a retry.
#[derive(Debug, Clone, Copy)]
pub struct RetryPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> RetryPacket<T> {
    /// Imbue a buffer with retry structure, without checking its length.
    pub fn new_unchecked(buffer: T) -> Self {
        RetryPacket { buffer }
    }

    /// Imbue a buffer with retry structure, checking its length is exactly `RETRY_LEN`.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Refuse a buffer that is not exactly `RETRY_LEN` bytes.
    pub fn check_len(&self) -> Result<(), WireError> {
        check_exact_len(self.buffer.as_ref().len(), RETRY_LEN)
    }

    /// The client's connection id.
    pub fn destination(&self) -> ConnectionId {
        destination(self.buffer.as_ref())
    }

    /// The cookie.
    pub fn cookie(&self) -> [u8; COOKIE_LEN] {
        let mut cookie = [0; COOKIE_LEN];
        cookie.copy_from_slice(&self.buffer.as_ref()[field::COOKIE]);
        cookie
    }

    /// The hello's timestamp, echoed.
    pub fn timestamp_echo(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::TIMESTAMP_ECHO])
    }
}

impl Retry {
    /// Parse a retry whose length was checked (every value is valid).
    pub fn parse<T: AsRef<[u8]>>(packet: &RetryPacket<T>) -> Result<Retry, WireError> {
        Ok(Retry {
            destination: packet.destination(),
            cookie: Cookie(packet.cookie()),
            timestamp_echo: packet.timestamp_echo(),
        })
    }

    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        RETRY_LEN
    }

    /// Write the retry into a buffer of `buffer_len` bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        emit_type(buf, PacketType::Retry);
        emit_destination(buf, self.destination);
        buf[field::COOKIE].copy_from_slice(&self.cookie.0);
        buf[field::TIMESTAMP_ECHO].copy_from_slice(&self.timestamp_echo.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Packet;

    #[test]
    fn golden_layout() {
        let retry = Retry {
            destination: ConnectionId(0x1122_3344_5566_7788),
            cookie: Cookie([0xab; COOKIE_LEN]),
            timestamp_echo: 7,
        };
        let mut buf = Vec::new();
        Packet::Retry(retry.clone()).encode(&mut buf);
        let mut expected = vec![2, 2, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88];
        expected.extend_from_slice(&[0xab; COOKIE_LEN]);
        expected.extend_from_slice(&[0, 0, 0, 7]);
        assert_eq!(buf, expected);
        assert_eq!(Packet::decode(&buf), Ok(Packet::Retry(retry)));
        assert_eq!(
            Packet::decode(&buf[..RETRY_LEN - 1]),
            Err(WireError::Truncated)
        );
        buf.push(0);
        assert_eq!(Packet::decode(&buf), Err(WireError::TrailingBytes));
    }
}
