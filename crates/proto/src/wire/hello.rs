//! Hello: client to server, opening a connection.
//!
//! Layout (integers big-endian): version (1), type (1), flags (1), source id (8), max datagram
//! (2), receive window (8), timestamp (4), composition (24), cookie (24, zero unless flagged),
//! X25519 key share (32, zero unless flagged: see `protection`), pre-shared key binder (32, zero
//! unless flagged: a MAC over every byte before it), then zero padding up to at least
//! `MIN_HELLO_SIZE` bytes so that the server's answer is never larger than the request
//! (anti-amplification). Once `check_len` passed, no accessor panics.

use super::composition;
use super::header::{be_u16, be_u32, be_u64, emit_type, Field};
use super::{
    ConnectionId, Cookie, Hello, PacketType, WireError, COOKIE_LEN, MAX_DATAGRAM, MIN_DATAGRAM,
    MIN_HELLO_SIZE,
};
use crate::protection::{BINDER_LEN, KEY_SHARE_LEN};

/// Field offsets.
mod field {
    use super::Field;
    pub const FLAGS: usize = 2;
    pub const SOURCE: Field = 3..11;
    pub const MAX_DATAGRAM: Field = 11..13;
    pub const RECV_WINDOW: Field = 13..21;
    pub const TIMESTAMP: Field = 21..25;
    pub const COMPOSITION: Field = 25..49;
    pub const COOKIE: Field = 49..73;
    pub const KEY_SHARE: Field = 73..105;
    pub const BINDER: Field = 105..137;
    pub const PADDING: usize = 137;
}

/// Flag bit: the cookie field holds a cookie.
const HAS_COOKIE: u8 = 0x01;
/// Flag bit: the key share field holds a key share.
const HAS_KEY_SHARE: u8 = 0x02;
/// Flag bit: the binder field holds a pre-shared key binder.
const HAS_BINDER: u8 = 0x04;

/// A raw octet buffer viewed as a hello.
#[derive(Debug, Clone, Copy)]
pub struct HelloPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> HelloPacket<T> {
    /// Imbue a buffer with hello structure, without checking its length.
    pub fn new_unchecked(buffer: T) -> Self {
        HelloPacket { buffer }
    }

    /// Imbue a buffer with hello structure, checking it is long enough for every accessor.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Refuse a buffer shorter than `MIN_HELLO_SIZE` (which holds every field).
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.buffer.as_ref().len();
        if len < MIN_HELLO_SIZE {
            return Err(WireError::ShortHello(len));
        }
        Ok(())
    }

    /// The flag bits.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The client's connection id.
    pub fn source(&self) -> ConnectionId {
        ConnectionId(be_u64(&self.buffer.as_ref()[field::SOURCE]))
    }

    /// The client's largest datagram.
    pub fn max_datagram(&self) -> u16 {
        be_u16(&self.buffer.as_ref()[field::MAX_DATAGRAM])
    }

    /// The client's receive window.
    pub fn recv_window(&self) -> u64 {
        be_u64(&self.buffer.as_ref()[field::RECV_WINDOW])
    }

    /// The client's clock, microseconds.
    pub fn timestamp(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::TIMESTAMP])
    }

    /// The raw composition block.
    pub fn composition(&self) -> &[u8] {
        &self.buffer.as_ref()[field::COMPOSITION]
    }

    /// The raw cookie field (zero when the flag is clear).
    pub fn cookie(&self) -> [u8; COOKIE_LEN] {
        let mut cookie = [0; COOKIE_LEN];
        cookie.copy_from_slice(&self.buffer.as_ref()[field::COOKIE]);
        cookie
    }

    /// The raw key share field (zero when the flag is clear).
    pub fn key_share(&self) -> [u8; KEY_SHARE_LEN] {
        let mut share = [0; KEY_SHARE_LEN];
        share.copy_from_slice(&self.buffer.as_ref()[field::KEY_SHARE]);
        share
    }

    /// The raw binder field (zero when the flag is clear).
    pub fn binder(&self) -> [u8; BINDER_LEN] {
        let mut binder = [0; BINDER_LEN];
        binder.copy_from_slice(&self.buffer.as_ref()[field::BINDER]);
        binder
    }

    /// The bytes a binder covers: everything before the binder field.
    pub fn binder_covered(&self) -> &[u8] {
        &self.buffer.as_ref()[..field::BINDER.start]
    }

    /// The padding after the last field.
    pub fn padding(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PADDING..]
    }
}

impl Hello {
    /// Parse and validate a hello whose length was checked.
    pub fn parse<T: AsRef<[u8]>>(packet: &HelloPacket<T>) -> Result<Hello, WireError> {
        let flags = packet.flags();
        if flags & !(HAS_COOKIE | HAS_KEY_SHARE | HAS_BINDER) != 0 {
            return Err(WireError::InvalidField("reserved hello flag bits"));
        }
        let max_datagram = packet.max_datagram();
        if !(MIN_DATAGRAM..=MAX_DATAGRAM).contains(&usize::from(max_datagram)) {
            return Err(WireError::InvalidField("max datagram out of range"));
        }
        let cookie = packet.cookie();
        let cookie = if flags & HAS_COOKIE != 0 {
            Some(Cookie(cookie))
        } else if cookie != [0; COOKIE_LEN] {
            return Err(WireError::InvalidField("cookie without its flag"));
        } else {
            None
        };
        let share = packet.key_share();
        let key_share = if flags & HAS_KEY_SHARE != 0 {
            Some(share)
        } else if share != [0; KEY_SHARE_LEN] {
            return Err(WireError::InvalidField("key share without its flag"));
        } else {
            None
        };
        let binder = packet.binder();
        let binder = if flags & HAS_BINDER != 0 {
            Some(binder)
        } else if binder != [0; BINDER_LEN] {
            return Err(WireError::InvalidField("binder without its flag"));
        } else {
            None
        };
        if packet.padding().iter().any(|&b| b != 0) {
            return Err(WireError::InvalidField("hello padding not zero"));
        }
        Ok(Hello {
            source: packet.source(),
            composition: composition::parse(packet.composition())?,
            max_datagram,
            recv_window: packet.recv_window(),
            timestamp: packet.timestamp(),
            cookie,
            key_share,
            binder,
        })
    }

    /// Bytes `emit` writes: always `MIN_HELLO_SIZE`.
    pub fn buffer_len(&self) -> usize {
        MIN_HELLO_SIZE
    }

    /// What packet keys bind of the hello: its fields but the flags, the timestamp, the cookie
    /// and the key share (the first three change between repeated hellos; the share is bound
    /// on its own).
    pub fn transcript(&self) -> Vec<u8> {
        let mut buf = vec![0; self.buffer_len()];
        self.emit(&mut buf);
        let mut out = buf[field::SOURCE.start..field::TIMESTAMP.start].to_vec();
        out.extend_from_slice(&buf[field::COMPOSITION]);
        out
    }

    /// Write the hello, padding included, into a zeroed buffer of `buffer_len` bytes.
    pub fn emit(&self, buf: &mut [u8]) {
        emit_type(buf, PacketType::Hello);
        buf[field::FLAGS] = if self.cookie.is_some() { HAS_COOKIE } else { 0 }
            | if self.key_share.is_some() {
                HAS_KEY_SHARE
            } else {
                0
            }
            | if self.binder.is_some() { HAS_BINDER } else { 0 };
        buf[field::SOURCE].copy_from_slice(&self.source.0.to_be_bytes());
        buf[field::MAX_DATAGRAM].copy_from_slice(&self.max_datagram.to_be_bytes());
        buf[field::RECV_WINDOW].copy_from_slice(&self.recv_window.to_be_bytes());
        buf[field::TIMESTAMP].copy_from_slice(&self.timestamp.to_be_bytes());
        composition::emit(&self.composition, &mut buf[field::COMPOSITION]);
        if let Some(cookie) = &self.cookie {
            buf[field::COOKIE].copy_from_slice(&cookie.0);
        }
        if let Some(share) = &self.key_share {
            buf[field::KEY_SHARE].copy_from_slice(share);
        }
        if let Some(binder) = &self.binder {
            buf[field::BINDER].copy_from_slice(binder);
        }
    }

    /// Write `binder` into the encoded hello `buf` (emitted with a binder, so its flag is set),
    /// computed by `mac` over the bytes it covers.
    pub fn bind(buf: &mut [u8], mac: impl FnOnce(&[u8]) -> [u8; BINDER_LEN]) {
        if buf.len() < MIN_HELLO_SIZE {
            return;
        }
        let binder = mac(&buf[..field::BINDER.start]);
        buf[field::BINDER].copy_from_slice(&binder);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::Rate;
    use crate::wire::{Composition, ErrorControl, Order, Packet, RateControl};

    fn example() -> Hello {
        Hello {
            source: ConnectionId(0x0102_0304_0506_0708),
            composition: Composition {
                congestion: RateControl::Gtfrc {
                    target: Rate::from_kbps(500),
                },
                error: ErrorControl::SackFull,
                order: Order::Ordered,
            },
            max_datagram: 1500,
            recv_window: 4 << 20,
            timestamp: 0xdead_beef,
            cookie: Some(Cookie([0xc0; COOKIE_LEN])),
            key_share: None,
            binder: None,
        }
    }

    #[test]
    fn golden_layout() {
        let mut buf = Vec::new();
        Packet::Hello(example()).encode(&mut buf);
        assert_eq!(buf.len(), MIN_HELLO_SIZE);
        #[rustfmt::skip]
        let head: &[u8] = &[
            2, 1, // version, type
            1, // flags: cookie
            1, 2, 3, 4, 5, 6, 7, 8, // source
            0x05, 0xdc, // max datagram 1500
            0, 0, 0, 0, 0, 0x40, 0, 0, // receive window 4 MiB
            0xde, 0xad, 0xbe, 0xef, // timestamp
            2, 0, 0, 0, 0, 0, 0x07, 0xa1, 0x20, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // composition
        ];
        assert_eq!(&buf[..49], head);
        assert_eq!(&buf[49..73], &[0xc0; COOKIE_LEN]);
        assert!(buf[73..].iter().all(|&b| b == 0));
        assert_eq!(Packet::decode(&buf), Ok(Packet::Hello(example())));
    }

    #[test]
    fn key_share_round_trips_and_needs_its_flag() {
        let hello = Hello {
            key_share: Some([0x5a; KEY_SHARE_LEN]),
            ..example()
        };
        let mut buf = Vec::new();
        Packet::Hello(hello.clone()).encode(&mut buf);
        assert_eq!(buf[2], HAS_COOKIE | HAS_KEY_SHARE);
        assert_eq!(&buf[73..105], &[0x5a; KEY_SHARE_LEN]);
        assert_eq!(Packet::decode(&buf), Ok(Packet::Hello(hello)));
        buf[2] = HAS_COOKIE;
        assert_eq!(
            Packet::decode(&buf),
            Err(WireError::InvalidField("key share without its flag"))
        );
    }

    #[test]
    fn binder_round_trips_needs_its_flag_and_covers_what_precedes_it() {
        let hello = Hello {
            key_share: Some([0x5a; KEY_SHARE_LEN]),
            binder: Some([0; BINDER_LEN]),
            ..example()
        };
        let mut buf = Vec::new();
        Packet::Hello(hello.clone()).encode(&mut buf);
        assert_eq!(buf[2], HAS_COOKIE | HAS_KEY_SHARE | HAS_BINDER);
        Hello::bind(&mut buf, |covered| {
            assert_eq!(covered.len(), 105);
            [0x77; BINDER_LEN]
        });
        assert_eq!(&buf[105..137], &[0x77; BINDER_LEN]);
        assert!(buf[137..].iter().all(|&b| b == 0));
        let bound = Hello {
            binder: Some([0x77; BINDER_LEN]),
            ..hello
        };
        assert_eq!(Packet::decode(&buf), Ok(Packet::Hello(bound)));
        let packet = HelloPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(packet.binder_covered(), &buf[..105]);
        buf[2] = HAS_COOKIE | HAS_KEY_SHARE;
        assert_eq!(
            Packet::decode(&buf),
            Err(WireError::InvalidField("binder without its flag"))
        );
    }

    #[test]
    fn short_hello_is_refused_before_anything_else() {
        let mut buf = Vec::new();
        Packet::Hello(example()).encode(&mut buf);
        for len in [2, 72, 73, MIN_HELLO_SIZE - 1] {
            assert_eq!(Packet::decode(&buf[..len]), Err(WireError::ShortHello(len)));
        }
    }

    #[test]
    fn longer_zero_padding_is_accepted_but_not_other_bytes() {
        let mut buf = Vec::new();
        Packet::Hello(example()).encode(&mut buf);
        buf.resize(1500, 0);
        assert_eq!(Packet::decode(&buf), Ok(Packet::Hello(example())));
        buf[1400] = 1;
        assert_eq!(
            Packet::decode(&buf),
            Err(WireError::InvalidField("hello padding not zero"))
        );
    }

    #[test]
    fn rejects_bad_flags_cookie_and_datagram_size() {
        let mut hello = example();
        hello.cookie = None;
        let mut buf = Vec::new();
        Packet::Hello(hello.clone()).encode(&mut buf);
        assert_eq!(Packet::decode(&buf), Ok(Packet::Hello(hello)));
        let mut bad = buf.clone();
        bad[field::FLAGS] = 0x08;
        assert_eq!(
            Packet::decode(&bad),
            Err(WireError::InvalidField("reserved hello flag bits"))
        );
        let mut bad = buf.clone();
        bad[field::COOKIE.start] = 9;
        assert_eq!(
            Packet::decode(&bad),
            Err(WireError::InvalidField("cookie without its flag"))
        );
        let mut bad = buf.clone();
        bad[field::MAX_DATAGRAM].copy_from_slice(&100u16.to_be_bytes());
        assert_eq!(
            Packet::decode(&bad),
            Err(WireError::InvalidField("max datagram out of range"))
        );
    }
}
