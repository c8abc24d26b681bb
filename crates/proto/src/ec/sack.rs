//! The sender's SACK scoreboard: outstanding packets, acknowledgement, loss inference, retransmission queue.
//!
//! SACK works on packets, not bytes (QSTP paper §4.2): the receiver reports ranges of packet
//! numbers, and lost data is sent again in a new packet number, never a reused one, so an
//! acknowledgement names exactly one transmission and the receiver's loss history stays true.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::time::{Duration, Time};
use crate::wire::ErrorControl;

/// What a sent packet carried, remembered until it is acknowledged or declared lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SentChunk {
    /// Stream bytes `offset..offset+len`, with the fin flag.
    Stream {
        /// Stream offset of the first byte.
        offset: u64,
        /// Number of bytes.
        len: u32,
        /// Whether the stream ended with this chunk.
        fin: bool,
    },
    /// A fragment of a message.
    Message {
        /// Message id.
        id: u64,
        /// Offset of the fragment in the message.
        offset: u32,
        /// Fragment length.
        len: u32,
        /// Length of the whole message.
        total_len: u32,
    },
    /// No application data.
    Empty,
}

/// One packet handed to the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentPacket {
    /// Its packet number (strictly increasing, never reused).
    pub packet_number: u64,
    /// When it was sent.
    pub sent: Time,
    /// Datagram size, bytes.
    pub size: usize,
    /// What it carried.
    pub chunk: SentChunk,
}

/// What one acknowledgement changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AckResult {
    /// Chunks newly acknowledged (never `Empty`).
    pub acked: Vec<SentChunk>,
    /// Packets newly acknowledged.
    pub acked_packets: u64,
    /// Their datagrams' bytes.
    pub acked_bytes: u64,
    /// Packets newly declared lost.
    pub lost_packets: u64,
    /// Send time of the largest newly acknowledged packet (for an RTT sample).
    pub largest_acked_sent: Option<Time>,
    /// Packet number of the largest newly acknowledged packet.
    pub largest_acked: Option<u64>,
    /// Every packet newly acknowledged, ascending by number, when the scoreboard was asked to
    /// list them ([`SackSender::list_acked_packets`]); empty otherwise.
    pub acked_list: Vec<SentPacket>,
}

/// Why an acknowledgement was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AckError {
    /// A range names a packet number never sent (optimistic acknowledgement).
    #[error("acknowledgement names a packet never sent")]
    NeverSent,
    /// Ranges are not disjoint, inclusive and highest first.
    #[error("acknowledgement ranges are malformed")]
    Malformed,
}

/// RFC 6675 §2 DupThresh: a packet is lost once this many later packets are acknowledged.
pub const DUP_THRESH: usize = 3;

/// Sender-side SACK scoreboard.
#[derive(Clone, Debug)]
pub struct SackSender {
    error: ErrorControl,
    max_outstanding: usize,
    /// Packets sent and neither acknowledged nor declared lost, by packet number.
    outstanding: BTreeMap<u64, SentPacket>,
    /// Packets declared lost, remembered (bounded) so a late acknowledgement still counts.
    lost: BTreeMap<u64, SentPacket>,
    /// Chunks to send again, FIFO, tagged with the packet number that lost them.
    retransmit: VecDeque<(u64, SentChunk)>,
    /// Packet numbers whose chunk still waits in `retransmit` (a late acknowledgement removes it).
    queued: BTreeSet<u64>,
    /// Lost chunks that will not be sent again (error control None), for the delivery layer.
    unrepaired: VecDeque<SentChunk>,
    largest_sent: Option<u64>,
    /// The DUP_THRESH largest packet numbers ever acknowledged, ascending.
    top_acked: Vec<u64>,
    /// The packet whose chunk `next_retransmission` gave last.
    last_retransmitted: Option<u64>,
    /// Whether acknowledgements list the packets they acknowledged (`AckResult::acked_list`).
    list_acked: bool,
}

impl SackSender {
    /// An empty scoreboard; the caller keeps at most `max_outstanding` packets in flight.
    pub fn new(error: ErrorControl, max_outstanding: usize) -> Self {
        Self {
            error,
            max_outstanding: max_outstanding.max(1),
            outstanding: BTreeMap::new(),
            lost: BTreeMap::new(),
            retransmit: VecDeque::new(),
            queued: BTreeSet::new(),
            unrepaired: VecDeque::new(),
            largest_sent: None,
            top_acked: Vec::with_capacity(DUP_THRESH + 1),
            last_retransmitted: None,
            list_acked: false,
        }
    }

    /// Have every acknowledgement list the packets it acknowledged, for a sender that checks
    /// its receiver's reports against them.
    pub fn list_acked_packets(&mut self) {
        self.list_acked = true;
    }

    /// Remember a packet just sent; packet numbers must increase (never reused).
    pub fn on_sent(&mut self, packet: SentPacket) {
        debug_assert!(
            self.largest_sent < Some(packet.packet_number),
            "packet numbers are never reused"
        );
        self.largest_sent = Some(
            self.largest_sent
                .map_or(packet.packet_number, |l| l.max(packet.packet_number)),
        );
        self.outstanding.insert(packet.packet_number, packet);
    }

    /// A packet number used by a packet error control does not track (a path MTU probe): it may
    /// be acknowledged, and numbers keep increasing past it.
    pub fn on_untracked_sent(&mut self, packet_number: u64) {
        self.largest_sent = Some(
            self.largest_sent
                .map_or(packet_number, |l| l.max(packet_number)),
        );
    }

    /// Process SACK ranges (inclusive, highest first); refuses ranges naming packets never sent, changing nothing.
    ///
    /// Acknowledged packets are forgotten; a packet with at least [`DUP_THRESH`] later packets
    /// acknowledged is lost and, unless error control is None, its chunk queued for retransmission.
    pub fn on_ack(&mut self, _now: Time, ranges: &[(u64, u64)]) -> Result<AckResult, AckError> {
        validate(ranges)?;
        if let Some(&(_, highest)) = ranges.first() {
            // Optimistic-ACK defence: acknowledging what was never sent is refused outright.
            match self.largest_sent {
                Some(largest) if highest <= largest => {}
                _ => return Err(AckError::NeverSent),
            }
        }
        let mut result = AckResult::default();
        let mut largest_newly_acked: Option<u64> = None;
        for &(lo, hi) in ranges {
            let in_flight: Vec<u64> = self.outstanding.range(lo..=hi).map(|(&pn, _)| pn).collect();
            let late: Vec<u64> = self.lost.range(lo..=hi).map(|(&pn, _)| pn).collect();
            for pn in in_flight {
                if let Some(p) = self.outstanding.remove(&pn) {
                    self.record_acked(&p, &mut result, &mut largest_newly_acked);
                }
            }
            for pn in late {
                if let Some(p) = self.lost.remove(&pn) {
                    // A late acknowledgement of a lost packet: its queued retransmission is moot.
                    self.queued.remove(&pn);
                    self.record_acked(&p, &mut result, &mut largest_newly_acked);
                }
            }
        }
        // RFC 6675 §4 IsLost(): DupThresh discontiguous later packets acknowledged.
        if self.top_acked.len() == DUP_THRESH {
            let threshold = self.top_acked[0];
            while let Some(entry) = self.outstanding.first_entry() {
                if *entry.key() >= threshold {
                    break;
                }
                let packet = entry.remove();
                self.declare_lost(packet);
                result.lost_packets += 1;
            }
        }
        result.acked_list.sort_unstable_by_key(|p| p.packet_number);
        Ok(result)
    }

    fn record_acked(&mut self, p: &SentPacket, result: &mut AckResult, largest: &mut Option<u64>) {
        result.acked_packets += 1;
        result.acked_bytes += p.size as u64;
        if self.list_acked {
            result.acked_list.push(*p);
        }
        if p.chunk != SentChunk::Empty {
            result.acked.push(p.chunk);
        }
        if *largest < Some(p.packet_number) {
            *largest = Some(p.packet_number);
            result.largest_acked_sent = Some(p.sent);
            result.largest_acked = Some(p.packet_number);
        }
        let pn = p.packet_number;
        if self.top_acked.len() < DUP_THRESH || pn > self.top_acked[0] {
            let at = self.top_acked.partition_point(|&x| x < pn);
            self.top_acked.insert(at, pn);
            if self.top_acked.len() > DUP_THRESH {
                self.top_acked.remove(0);
            }
        }
    }

    fn declare_lost(&mut self, packet: SentPacket) {
        if packet.chunk != SentChunk::Empty {
            if self.error.retransmits() {
                self.retransmit
                    .push_back((packet.packet_number, packet.chunk));
                self.queued.insert(packet.packet_number);
            } else {
                self.unrepaired.push_back(packet.chunk);
                if self.unrepaired.len() > self.max_outstanding {
                    self.unrepaired.pop_front();
                }
            }
        }
        self.lost.insert(packet.packet_number, packet);
        if self.lost.len() > self.max_outstanding {
            self.lost.pop_first();
        }
    }

    /// Deadline of the retransmission timer for the oldest outstanding packet.
    pub fn poll_timeout(&self, rto: Duration) -> Option<Time> {
        // Packet numbers grow with send time, so the lowest outstanding is the oldest.
        self.outstanding
            .first_key_value()
            .map(|(_, p)| p.sent + rto)
    }

    /// Declare lost every packet outstanding longer than `rto`; returns how many.
    pub fn handle_timeout(&mut self, now: Time, rto: Duration) -> u64 {
        // RFC 6298 §5: on timeout the oldest unacknowledged data is sent again (tail loss).
        let mut count = 0;
        while let Some(entry) = self.outstanding.first_entry() {
            if entry.get().sent + rto > now {
                break;
            }
            let packet = entry.remove();
            self.declare_lost(packet);
            count += 1;
        }
        count
    }

    /// Next chunk to send again, ahead of new data (the caller checks the buffer still wants it).
    pub fn next_retransmission(&mut self) -> Option<SentChunk> {
        // QSTP paper §4.4: packets to retransmit are placed on top of the transmission queue.
        while let Some((pn, chunk)) = self.retransmit.pop_front() {
            if self.queued.remove(&pn) {
                self.last_retransmitted = Some(pn);
                return Some(chunk);
            }
        }
        None
    }

    /// Put back, first in line, the part of the chunk [`SackSender::next_retransmission`] just
    /// gave that did not fit a packet (the path's datagrams shrank since it was first sent); a
    /// late acknowledgement of the original packet still cancels it.
    pub fn requeue_remainder(&mut self, chunk: SentChunk) {
        if let Some(pn) = self.last_retransmitted {
            self.retransmit.push_front((pn, chunk));
            self.queued.insert(pn);
        }
    }

    /// Whether any chunk waits for retransmission.
    pub fn has_retransmissions(&self) -> bool {
        !self.queued.is_empty()
    }

    /// Next lost chunk that will not be sent again (error control None), so delivery can give up on it.
    pub fn next_unrepaired(&mut self) -> Option<SentChunk> {
        self.unrepaired.pop_front()
    }

    /// Packets sent and neither acknowledged nor declared lost.
    pub fn outstanding(&self) -> usize {
        self.outstanding.len()
    }

    /// Whether another packet may be sent (fewer than `max_outstanding` in flight).
    pub fn can_send(&self) -> bool {
        self.outstanding.len() < self.max_outstanding
    }

    /// The largest packet number sent so far.
    pub fn largest_sent(&self) -> Option<u64> {
        self.largest_sent
    }
}

/// Check ranges are inclusive, highest first and disjoint.
fn validate(ranges: &[(u64, u64)]) -> Result<(), AckError> {
    let mut previous_lo: Option<u64> = None;
    for &(lo, hi) in ranges {
        if lo > hi {
            return Err(AckError::Malformed);
        }
        if let Some(prev) = previous_lo {
            if hi >= prev {
                return Err(AckError::Malformed);
            }
        }
        previous_lo = Some(lo);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(offset: u64) -> SentChunk {
        SentChunk::Stream {
            offset,
            len: 100,
            fin: false,
        }
    }

    fn sent(pn: u64, at_ms: u64) -> SentPacket {
        SentPacket {
            packet_number: pn,
            sent: Time::from_nanos(at_ms * 1_000_000),
            size: 1200,
            chunk: stream(pn * 100),
        }
    }

    fn sender_with(n: u64) -> SackSender {
        let mut s = SackSender::new(ErrorControl::SackFull, 64);
        for pn in 0..n {
            s.on_sent(sent(pn, pn));
        }
        s
    }

    const NOW: Time = Time::from_nanos(50_000_000);

    #[test]
    fn never_sent_is_refused_without_state_change() {
        let mut s = sender_with(5);
        assert_eq!(s.on_ack(NOW, &[(5, 5), (0, 3)]), Err(AckError::NeverSent));
        assert_eq!(s.outstanding(), 5);
        assert!(!s.has_retransmissions());
        // The honest part of that acknowledgement still works afterwards.
        let r = s.on_ack(NOW, &[(0, 3)]).unwrap();
        assert_eq!(r.acked_packets, 4);
        assert_eq!(s.outstanding(), 1);
        let mut empty = SackSender::new(ErrorControl::SackFull, 8);
        assert_eq!(empty.on_ack(NOW, &[(0, 0)]), Err(AckError::NeverSent));
    }

    #[test]
    fn malformed_ranges_are_refused() {
        let mut s = sender_with(10);
        assert_eq!(s.on_ack(NOW, &[(4, 3)]), Err(AckError::Malformed));
        assert_eq!(
            s.on_ack(NOW, &[(1, 2), (5, 6)]),
            Err(AckError::Malformed),
            "lowest first"
        );
        assert_eq!(
            s.on_ack(NOW, &[(5, 8), (3, 5)]),
            Err(AckError::Malformed),
            "overlapping"
        );
        assert_eq!(s.outstanding(), 10);
        assert_eq!(s.on_ack(NOW, &[]), Ok(AckResult::default()));
    }

    #[test]
    fn three_later_acks_declare_a_loss() {
        let mut s = sender_with(6);
        let r = s.on_ack(NOW, &[(2, 3)]).unwrap();
        assert_eq!((r.acked_packets, r.lost_packets), (2, 0));
        assert!(
            !s.has_retransmissions(),
            "two later acks are not enough (RFC 6675 DupThresh)"
        );
        let r = s.on_ack(NOW, &[(2, 4)]).unwrap();
        assert_eq!(
            (r.acked_packets, r.lost_packets),
            (1, 2),
            "packets 0 and 1 have 3 later acks"
        );
        assert_eq!(r.acked, vec![stream(400)]);
        assert_eq!(r.largest_acked_sent, Some(Time::from_nanos(4_000_000)));
        assert_eq!(s.next_retransmission(), Some(stream(0)));
        assert_eq!(s.next_retransmission(), Some(stream(100)));
        assert_eq!(s.next_retransmission(), None);
        assert_eq!(s.outstanding(), 1, "packet 5 still in flight");
    }

    #[test]
    fn acked_packets_are_forgotten_and_not_acked_twice() {
        let mut s = sender_with(3);
        assert_eq!(s.on_ack(NOW, &[(0, 2)]).unwrap().acked.len(), 3);
        let again = s.on_ack(NOW, &[(0, 2)]).unwrap();
        assert_eq!(again.acked_packets, 0);
        assert!(again.acked.is_empty());
        assert_eq!(s.outstanding(), 0);
    }

    #[test]
    fn rto_declares_tail_loss() {
        let mut s = sender_with(3);
        let rto = Duration::from_millis(100);
        assert_eq!(s.poll_timeout(rto), Some(Time::from_nanos(100_000_000)));
        assert_eq!(s.handle_timeout(Time::from_nanos(99_000_000), rto), 0);
        assert_eq!(s.handle_timeout(Time::from_nanos(101_000_000), rto), 2);
        assert_eq!(s.poll_timeout(rto), Some(Time::from_nanos(102_000_000)));
        assert_eq!(s.next_retransmission(), Some(stream(0)));
        assert_eq!(s.next_retransmission(), Some(stream(100)));
        assert_eq!(s.handle_timeout(Time::from_nanos(200_000_000), rto), 1);
        assert_eq!(s.poll_timeout(rto), None);
    }

    #[test]
    fn late_ack_of_lost_packet_cancels_its_retransmission() {
        let mut s = sender_with(3);
        let rto = Duration::from_millis(10);
        assert_eq!(s.handle_timeout(Time::from_nanos(20_000_000), rto), 3);
        assert!(s.has_retransmissions());
        let r = s.on_ack(NOW, &[(1, 1)]).unwrap();
        assert_eq!(
            r.acked,
            vec![stream(100)],
            "late acknowledgement still reports the chunk"
        );
        assert_eq!(s.next_retransmission(), Some(stream(0)));
        assert_eq!(s.next_retransmission(), Some(stream(200)));
        assert_eq!(s.next_retransmission(), None);
        assert!(!s.has_retransmissions());
    }

    #[test]
    fn retransmissions_come_out_fifo() {
        let mut s = sender_with(10);
        s.on_ack(NOW, &[(7, 9), (2, 2)]).unwrap();
        // 0, 1 (below 7: three later), 3..=6 all lost.
        let order: Vec<_> = std::iter::from_fn(|| s.next_retransmission()).collect();
        assert_eq!(
            order,
            [0, 1, 3, 4, 5, 6].map(|pn| stream(pn * 100)).to_vec()
        );
    }

    #[test]
    fn no_error_control_never_retransmits_but_reports_unrepaired() {
        let mut s = SackSender::new(ErrorControl::None, 16);
        for pn in 0..5 {
            s.on_sent(sent(pn, pn));
        }
        let r = s.on_ack(NOW, &[(1, 4)]).unwrap();
        assert_eq!(r.lost_packets, 1);
        assert!(!s.has_retransmissions());
        assert_eq!(s.next_retransmission(), None);
        assert_eq!(s.next_unrepaired(), Some(stream(0)));
        assert_eq!(s.next_unrepaired(), None);
    }

    #[test]
    fn empty_chunks_are_never_retransmitted_nor_reported() {
        let mut s = SackSender::new(ErrorControl::SackFull, 16);
        for pn in 0..5 {
            s.on_sent(SentPacket {
                chunk: SentChunk::Empty,
                ..sent(pn, pn)
            });
        }
        let r = s.on_ack(NOW, &[(1, 4)]).unwrap();
        assert_eq!((r.acked_packets, r.lost_packets), (4, 1));
        assert!(r.acked.is_empty());
        assert!(!s.has_retransmissions());
    }

    #[test]
    fn outstanding_is_bounded_for_the_caller() {
        let mut s = SackSender::new(ErrorControl::SackFull, 2);
        assert!(s.can_send());
        s.on_sent(sent(0, 0));
        s.on_sent(sent(1, 1));
        assert!(!s.can_send());
        s.on_ack(NOW, &[(1, 1)]).unwrap();
        assert!(s.can_send());
    }
}
