//! Accept: server to client, the connection exists.
//!
//! Layout (integers big-endian): version (1), type (1), destination id (8), source id (8),
//! max datagram (2), receive window (8), timestamp echo (4); then, answering a hello with a key
//! share, the server's key share (32) and its confirmation tag (16) over all bytes before the tag;
//! nothing else may follow. Once `check_len` passed, no accessor panics.

use super::header::{
    be_u16, be_u32, be_u64, check_exact_len, destination, emit_destination, emit_type, Field,
};
use super::{Accept, AcceptKeys, ConnectionId, PacketType, WireError, MAX_DATAGRAM, MIN_DATAGRAM};
use crate::protection::{KEY_SHARE_LEN, TAG_LEN};

/// Field offsets.
mod field {
    use super::Field;
    pub const SOURCE: Field = 10..18;
    pub const MAX_DATAGRAM: Field = 18..20;
    pub const RECV_WINDOW: Field = 20..28;
    pub const TIMESTAMP_ECHO: Field = 28..32;
    pub const KEY_SHARE: Field = 32..64;
    pub const CONFIRMATION: Field = 64..80;
}

/// Length of an accept without keys, bytes.
pub const ACCEPT_LEN: usize = field::TIMESTAMP_ECHO.end;

/// Length of an accept with the server's key share and confirmation, bytes.
pub const PROTECTED_ACCEPT_LEN: usize = field::CONFIRMATION.end;

/// A raw octet buffer viewed as an accept.
#[derive(Debug, Clone, Copy)]
pub struct AcceptPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> AcceptPacket<T> {
    /// Imbue a buffer with accept structure, without checking its length.
    pub fn new_unchecked(buffer: T) -> Self {
        AcceptPacket { buffer }
    }

    /// Imbue a buffer with accept structure, checking its length is `ACCEPT_LEN` or
    /// `PROTECTED_ACCEPT_LEN`.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Refuse a buffer that is neither `ACCEPT_LEN` nor `PROTECTED_ACCEPT_LEN` bytes.
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.buffer.as_ref().len();
        if len == PROTECTED_ACCEPT_LEN {
            return Ok(());
        }
        check_exact_len(len, ACCEPT_LEN)
    }

    /// The server's key share and confirmation, in a protected accept.
    pub fn keys(&self) -> Option<AcceptKeys> {
        let buf = self.buffer.as_ref();
        (buf.len() == PROTECTED_ACCEPT_LEN).then(|| {
            let mut share = [0; KEY_SHARE_LEN];
            share.copy_from_slice(&buf[field::KEY_SHARE]);
            let mut confirmation = [0; TAG_LEN];
            confirmation.copy_from_slice(&buf[field::CONFIRMATION]);
            AcceptKeys {
                share,
                confirmation,
            }
        })
    }

    /// The client's connection id.
    pub fn destination(&self) -> ConnectionId {
        destination(self.buffer.as_ref())
    }

    /// The server's connection id.
    pub fn source(&self) -> ConnectionId {
        ConnectionId(be_u64(&self.buffer.as_ref()[field::SOURCE]))
    }

    /// The server's largest datagram.
    pub fn max_datagram(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::MAX_DATAGRAM])
    }

    /// The server's receive window.
    pub fn recv_window(&self) -> u64 {
        be_u64(&self.buffer.as_ref()[field::RECV_WINDOW])
    }

    /// The hello's timestamp, echoed.
    pub fn timestamp_echo(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::TIMESTAMP_ECHO])
    }
}

impl Accept {
    /// Parse and validate an accept whose length was checked.
    pub fn parse<T: AsRef<[u8]>>(packet: &AcceptPacket<T>) -> Result<Accept, WireError> {
        let max_datagram = packet.max_datagram();
        if !(MIN_DATAGRAM..=MAX_DATAGRAM).contains(&usize::from(max_datagram)) {
            return Err(WireError::InvalidField("max datagram out of range"));
        }
        Ok(Accept {
            destination: packet.destination(),
            source: packet.source(),
            max_datagram,
            recv_window: packet.recv_window(),
            timestamp_echo: packet.timestamp_echo(),
            keys: packet.keys(),
        })
    }

    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        if self.keys.is_some() {
            PROTECTED_ACCEPT_LEN
        } else {
            ACCEPT_LEN
        }
    }

    /// The bytes the confirmation tag covers: the encoded accept up to the tag.
    pub fn confirmed_bytes(encoded: &[u8]) -> &[u8] {
        &encoded[..encoded.len().min(field::CONFIRMATION.start)]
    }

    /// Write the accept into a buffer of `buffer_len` bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        emit_type(buf, PacketType::Accept);
        emit_destination(buf, self.destination);
        buf[field::SOURCE].copy_from_slice(&self.source.0.to_be_bytes());
        buf[field::MAX_DATAGRAM].copy_from_slice(&self.max_datagram.to_be_bytes());
        buf[field::RECV_WINDOW].copy_from_slice(&self.recv_window.to_be_bytes());
        buf[field::TIMESTAMP_ECHO].copy_from_slice(&self.timestamp_echo.to_be_bytes());
        if let Some(keys) = &self.keys {
            buf[field::KEY_SHARE].copy_from_slice(&keys.share);
            buf[field::CONFIRMATION].copy_from_slice(&keys.confirmation);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Packet;

    #[test]
    fn golden_layout() {
        let accept = Accept {
            destination: ConnectionId(1),
            source: ConnectionId(0xffee_ddcc_bbaa_9988),
            max_datagram: 1200,
            recv_window: 65_536,
            timestamp_echo: 0x0102_0304,
            keys: None,
        };
        let mut buf = Vec::new();
        Packet::Accept(accept.clone()).encode(&mut buf);
        #[rustfmt::skip]
        let expected: &[u8] = &[
            2, 3, // version, type
            0, 0, 0, 0, 0, 0, 0, 1, // destination
            0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88, // source
            0x04, 0xb0, // max datagram 1200
            0, 0, 0, 0, 0, 1, 0, 0, // receive window
            1, 2, 3, 4, // timestamp echo
        ];
        assert_eq!(buf, expected);
        assert_eq!(Packet::decode(&buf), Ok(Packet::Accept(accept)));
        assert_eq!(
            Packet::decode(&buf[..ACCEPT_LEN - 1]),
            Err(WireError::Truncated)
        );
        let mut long = buf.clone();
        long.push(0);
        assert_eq!(Packet::decode(&long), Err(WireError::TrailingBytes));
        buf[field::MAX_DATAGRAM].copy_from_slice(&65_535u16.to_be_bytes());
        assert_eq!(
            Packet::decode(&buf),
            Err(WireError::InvalidField("max datagram out of range"))
        );
    }

    #[test]
    fn protected_accept_carries_share_and_confirmation() {
        let accept = Accept {
            destination: ConnectionId(1),
            source: ConnectionId(2),
            max_datagram: 1500,
            recv_window: 1 << 20,
            timestamp_echo: 7,
            keys: Some(AcceptKeys {
                share: [0x11; KEY_SHARE_LEN],
                confirmation: [0x22; TAG_LEN],
            }),
        };
        let mut buf = Vec::new();
        Packet::Accept(accept.clone()).encode(&mut buf);
        assert_eq!(buf.len(), PROTECTED_ACCEPT_LEN);
        assert_eq!(&buf[32..64], &[0x11; KEY_SHARE_LEN]);
        assert_eq!(&buf[64..], &[0x22; TAG_LEN]);
        assert_eq!(Accept::confirmed_bytes(&buf), &buf[..64]);
        assert_eq!(Packet::decode(&buf), Ok(Packet::Accept(accept)));
        // Between the two lengths, or beyond the longer: refused.
        for len in [ACCEPT_LEN + 1, PROTECTED_ACCEPT_LEN - 1] {
            assert!(Packet::decode(&buf[..len]).is_err(), "{len}");
        }
        buf.push(0);
        assert!(Packet::decode(&buf).is_err());
    }
}
