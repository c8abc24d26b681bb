//! Feedback: receiver to sender, TFRC's report plus the SACK ranges.
//!
//! Layout (integers big-endian): version (1), type (1), destination id (8), sequence (8),
//! timestamp echo (4), t_delay (4), X_recv (8), loss event rate p in parts per billion (4),
//! max data (8), range count (1), then the ranges (RFC 5348 §6.2: t_recvdata, t_delay, X_recv
//! and p; QSTP paper §4.2 and Fig. 1: the SACK payload follows in the same packet). Nothing may
//! follow the last range. Once `check_len` passed, no accessor panics.
//!
//! The QSTP paper §4.2 lists the edges of each interval of received packets. Here each range is
//! two varints, highest range first: the first range is its last packet number and its length
//! minus one; each later range is the gap below the previous range's first packet (minus one)
//! and its length minus one. Unordered, overlapping or inverted ranges cannot be written, and a
//! range reaching below packet number 0 is refused.

use super::header::{be_u32, be_u64, destination, emit_destination, emit_type, Field};
use super::{varint, ConnectionId, Feedback, PacketType, WireError, MAX_ACK_RANGES};

/// Field offsets.
mod field {
    use super::Field;
    pub const SEQUENCE: Field = 10..18;
    pub const TIMESTAMP_ECHO: Field = 18..22;
    pub const T_DELAY: Field = 22..26;
    pub const X_RECV: Field = 26..34;
    pub const LOSS_EVENT_RATE: Field = 34..38;
    pub const MAX_DATA: Field = 38..46;
    pub const RANGE_COUNT: usize = 46;
    pub const RANGES: usize = 47;
}

/// A loss event rate of 1, in parts per billion.
pub const PPB_ONE: u32 = 1_000_000_000;

/// Check ranges are inclusive, highest first, disjoint and at most `MAX_ACK_RANGES`.
pub fn check_ack_ranges(ranges: &[(u64, u64)]) -> Result<(), WireError> {
    if ranges.len() > MAX_ACK_RANGES {
        return Err(WireError::TooManyRanges);
    }
    if ranges.iter().any(|&(first, last)| first > last) {
        return Err(WireError::InvalidField("ack range with first after last"));
    }
    if ranges.windows(2).any(|pair| pair[1].1 >= pair[0].0) {
        return Err(WireError::InvalidField(
            "ack ranges not disjoint and highest first",
        ));
    }
    Ok(())
}

/// A raw octet buffer viewed as a feedback packet.
#[derive(Debug, Clone, Copy)]
pub struct FeedbackPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> FeedbackPacket<T> {
    /// Imbue a buffer with feedback structure, without checking its length.
    pub fn new_unchecked(buffer: T) -> Self {
        FeedbackPacket { buffer }
    }

    /// Imbue a buffer with feedback structure, checking it holds the fixed fields.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Refuse a buffer shorter than the fixed fields (the ranges are checked as they are read).
    pub fn check_len(&self) -> Result<(), WireError> {
        if self.buffer.as_ref().len() < field::RANGES {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// The data sender's connection id.
    pub fn destination(&self) -> ConnectionId {
        destination(self.buffer.as_ref())
    }

    /// The feedback sequence number.
    pub fn sequence(&self) -> u64 {
        be_u64(&self.buffer.as_ref()[field::SEQUENCE])
    }

    /// The timestamp of the last data packet received, echoed.
    pub fn timestamp_echo(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::TIMESTAMP_ECHO])
    }

    /// Microseconds the receiver held that timestamp.
    pub fn t_delay(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::T_DELAY])
    }

    /// The receive rate, bit/s.
    pub fn x_recv(&self) -> u64 {
        be_u64(&self.buffer.as_ref()[field::X_RECV])
    }

    /// The loss event rate, parts per billion.
    pub fn loss_event_rate_ppb(&self) -> u32 {
        be_u32(&self.buffer.as_ref()[field::LOSS_EVENT_RATE])
    }

    /// The flow-control limit.
    pub fn max_data(&self) -> u64 {
        be_u64(&self.buffer.as_ref()[field::MAX_DATA])
    }

    /// How many ranges follow.
    pub fn range_count(&self) -> u8 {
        self.buffer.as_ref()[field::RANGE_COUNT]
    }

    /// The encoded ranges and anything after them.
    pub fn ranges(&self) -> &[u8] {
        &self.buffer.as_ref()[field::RANGES..]
    }
}

/// Decode `count` ranges from `bytes`, which must hold exactly them.
fn parse_ranges(count: usize, mut bytes: &[u8]) -> Result<Vec<(u64, u64)>, WireError> {
    let below_zero = WireError::InvalidField("ack range reaches below packet 0");
    let mut ranges = Vec::with_capacity(count);
    let mut previous_first: Option<u64> = None;
    for _ in 0..count {
        let (head, rest) = varint::read(bytes)?;
        let (len_minus_one, rest) = varint::read(rest)?;
        bytes = rest;
        let last = match previous_first {
            None => head,
            Some(previous) => previous
                .checked_sub(head)
                .and_then(|p| p.checked_sub(1))
                .ok_or(below_zero)?,
        };
        let first = last.checked_sub(len_minus_one).ok_or(below_zero)?;
        ranges.push((first, last));
        previous_first = Some(first);
    }
    if !bytes.is_empty() {
        return Err(WireError::TrailingBytes);
    }
    Ok(ranges)
}

/// The (head, length minus one) varint pairs of ranges that passed `check_ack_ranges`.
fn range_varints(ranges: &[(u64, u64)]) -> impl Iterator<Item = (u64, u64)> + '_ {
    let mut previous_first: Option<u64> = None;
    ranges
        .iter()
        .take(MAX_ACK_RANGES)
        .map(move |&(first, last)| {
            let head = match previous_first {
                None => last,
                Some(previous) => previous.wrapping_sub(last).wrapping_sub(1),
            };
            previous_first = Some(first);
            (head, last.wrapping_sub(first))
        })
}

impl Feedback {
    /// Parse and validate a feedback packet whose length was checked.
    pub fn parse<T: AsRef<[u8]>>(packet: &FeedbackPacket<T>) -> Result<Feedback, WireError> {
        let loss_event_rate_ppb = packet.loss_event_rate_ppb();
        if loss_event_rate_ppb > PPB_ONE {
            return Err(WireError::InvalidField("loss event rate above 1"));
        }
        let count = usize::from(packet.range_count());
        if count > MAX_ACK_RANGES {
            return Err(WireError::TooManyRanges);
        }
        Ok(Feedback {
            destination: packet.destination(),
            sequence: packet.sequence(),
            timestamp_echo: packet.timestamp_echo(),
            t_delay: packet.t_delay(),
            x_recv: packet.x_recv(),
            loss_event_rate_ppb,
            max_data: packet.max_data(),
            ack_ranges: parse_ranges(count, packet.ranges())?,
        })
    }

    /// Bytes `emit` writes.
    pub fn buffer_len(&self) -> usize {
        field::RANGES
            + range_varints(&self.ack_ranges)
                .map(|(a, b)| varint::len(a) + varint::len(b))
                .sum::<usize>()
    }

    /// Write the packet into a buffer of `buffer_len` bytes. At most `MAX_ACK_RANGES` ranges (the
    /// highest) are written and p is capped at 1; the ranges must pass `check_ack_ranges`.
    pub fn emit(&self, buf: &mut [u8]) {
        debug_assert!(
            check_ack_ranges(&self.ack_ranges[..self.ack_ranges.len().min(MAX_ACK_RANGES)]).is_ok(),
            "malformed ack ranges {:?}",
            self.ack_ranges
        );
        emit_type(buf, PacketType::Feedback);
        emit_destination(buf, self.destination);
        buf[field::SEQUENCE].copy_from_slice(&self.sequence.to_be_bytes());
        buf[field::TIMESTAMP_ECHO].copy_from_slice(&self.timestamp_echo.to_be_bytes());
        buf[field::T_DELAY].copy_from_slice(&self.t_delay.to_be_bytes());
        buf[field::X_RECV].copy_from_slice(&self.x_recv.to_be_bytes());
        buf[field::LOSS_EVENT_RATE]
            .copy_from_slice(&self.loss_event_rate_ppb.min(PPB_ONE).to_be_bytes());
        buf[field::MAX_DATA].copy_from_slice(&self.max_data.to_be_bytes());
        buf[field::RANGE_COUNT] = self.ack_ranges.len().min(MAX_ACK_RANGES) as u8;
        let mut at = field::RANGES;
        for (head, len_minus_one) in range_varints(&self.ack_ranges) {
            at += varint::write(&mut buf[at..], head);
            at += varint::write(&mut buf[at..], len_minus_one);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Packet;

    fn example() -> Feedback {
        Feedback {
            destination: ConnectionId(3),
            sequence: 17,
            timestamp_echo: 0x0102_0304,
            t_delay: 250,
            x_recv: 1_000_000,
            loss_event_rate_ppb: 10_000_000,
            max_data: 1 << 20,
            ack_ranges: vec![(300, 310), (100, 200), (0, 0)],
        }
    }

    fn encode(feedback: Feedback) -> Vec<u8> {
        let mut buf = Vec::new();
        Packet::Feedback(feedback).encode(&mut buf);
        buf
    }

    #[test]
    fn golden_layout() {
        let buf = encode(example());
        #[rustfmt::skip]
        let expected: &[u8] = &[
            2, 5, 0, 0, 0, 0, 0, 0, 0, 3, // version, type, destination
            0, 0, 0, 0, 0, 0, 0, 17, // sequence
            1, 2, 3, 4, // timestamp echo
            0, 0, 0, 250, // t_delay
            0, 0, 0, 0, 0, 0x0f, 0x42, 0x40, // X_recv 1 Mbit/s
            0, 0x98, 0x96, 0x80, // p = 1 %
            0, 0, 0, 0, 0, 0x10, 0, 0, // max data
            3, // ranges
            0xb6, 0x02, 10, // 300..=310: last 310, length 11
            99, 100, // 100..=200: gap 99 below 300, length 101
            99, 0, // 0..=0: gap 99 below 100, length 1
        ];
        assert_eq!(buf, expected);
        assert_eq!(Packet::decode(&buf), Ok(Packet::Feedback(example())));
    }

    #[test]
    fn no_ranges_and_full_loss_are_valid() {
        let mut f = example();
        f.ack_ranges.clear();
        f.loss_event_rate_ppb = PPB_ONE;
        let buf = encode(f.clone());
        assert_eq!(buf.len(), 47);
        assert_eq!(Packet::decode(&buf), Ok(Packet::Feedback(f)));
    }

    #[test]
    fn rejects_loss_rate_above_one() {
        let mut buf = encode(example());
        buf[field::LOSS_EVENT_RATE].copy_from_slice(&(PPB_ONE + 1).to_be_bytes());
        assert_eq!(
            Packet::decode(&buf),
            Err(WireError::InvalidField("loss event rate above 1"))
        );
    }

    #[test]
    fn rejects_too_many_ranges() {
        let mut buf = encode(example());
        buf[field::RANGE_COUNT] = MAX_ACK_RANGES as u8 + 1;
        assert_eq!(Packet::decode(&buf), Err(WireError::TooManyRanges));
        let many: Vec<(u64, u64)> = (0..=MAX_ACK_RANGES as u64)
            .rev()
            .map(|i| (2 * i, 2 * i))
            .collect();
        assert_eq!(check_ack_ranges(&many), Err(WireError::TooManyRanges));
        // The encoder keeps the highest MAX_ACK_RANGES.
        let mut f = example();
        f.ack_ranges = many.clone();
        let Ok(Packet::Feedback(decoded)) = Packet::decode(&encode(f)) else {
            panic!("does not decode")
        };
        assert_eq!(decoded.ack_ranges, many[..MAX_ACK_RANGES]);
    }

    #[test]
    fn rejects_ranges_below_zero_and_trailing_bytes() {
        let mut buf = encode(example());
        let len = buf.len();
        buf[len - 2] = 100; // the last gap would put the range at packet -1
        assert_eq!(
            Packet::decode(&buf),
            Err(WireError::InvalidField("ack range reaches below packet 0"))
        );
        let mut buf = encode(example());
        let len = buf.len();
        buf[len - 1] = 1; // the last range would be -1..=0
        assert_eq!(
            Packet::decode(&buf),
            Err(WireError::InvalidField("ack range reaches below packet 0"))
        );
        let mut buf = encode(example());
        buf.push(0);
        assert_eq!(Packet::decode(&buf), Err(WireError::TrailingBytes));
        let buf = encode(example());
        assert_eq!(
            Packet::decode(&buf[..buf.len() - 1]),
            Err(WireError::Truncated)
        );
        assert_eq!(Packet::decode(&buf[..46]), Err(WireError::Truncated));
    }

    #[test]
    fn range_check_refuses_overlap_disorder_and_inversion() {
        assert_eq!(check_ack_ranges(&[(10, 20), (0, 5)]), Ok(()));
        assert_eq!(
            check_ack_ranges(&[(10, 20), (0, 9)]),
            Ok(()),
            "adjacent ranges are disjoint"
        );
        assert!(check_ack_ranges(&[(10, 20), (5, 10)]).is_err(), "overlap");
        assert!(
            check_ack_ranges(&[(0, 5), (10, 20)]).is_err(),
            "lowest first"
        );
        assert!(check_ack_ranges(&[(20, 10)]).is_err(), "first after last");
    }
}
