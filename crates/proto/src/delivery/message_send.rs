//! The bounded send queue of messages, with partial reliability.
//!
//! Messages get ids 0, 1, 2, ... in write order. Under partial reliability (QSTP paper §3.2: SACK
//! makes a partially reliable service possible) a message is abandoned once its deadline passes or
//! it needed more than the allowed retransmissions; the receiver is then told to skip it.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

use super::DeliveryError;
use crate::range_set::RangeSet;
use crate::time::Time;

/// Most skip_to values awaiting confirmation remembered (older ones are forgotten, which only delays confirmation).
const MAX_SKIP_MARKS: usize = 1024;

/// Where a queued message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Still to be delivered.
    Pending,
    /// Every byte acknowledged.
    Acked,
    /// Given up on (deadline, retransmission limit or loss without error control).
    Abandoned,
}

#[derive(Clone, Debug)]
struct OutMessage {
    data: Vec<u8>,
    deadline: Option<Time>,
    /// Bytes below this offset were sent at least once.
    sent_upto: u32,
    /// Whether a fragment was ever sent (a zero-length message is one empty fragment).
    any_sent: bool,
    /// Acknowledged byte ranges.
    acked: RangeSet,
    any_acked: bool,
    retransmissions: u32,
    fate: Fate,
}

impl OutMessage {
    fn total_len(&self) -> u32 {
        self.data.len() as u32
    }

    fn fully_sent(&self) -> bool {
        self.any_sent && self.sent_upto == self.total_len()
    }

    fn is_acked_range(&self, offset: u32, end: u32) -> bool {
        self.acked.contains_range(u64::from(offset), u64::from(end))
    }

    /// Record `offset..end` as acknowledged; returns how many of its bytes were not before.
    fn add_acked(&mut self, offset: u32, end: u32) -> u64 {
        self.any_acked = true;
        let before = self.acked.bytes();
        self.acked.insert(u64::from(offset), u64::from(end));
        if self.acked.is_exactly(0, u64::from(self.total_len()))
            || (self.total_len() == 0 && self.any_acked)
        {
            self.fate = Fate::Acked;
        }
        self.acked.bytes() - before
    }
}

/// Messages written and neither acknowledged nor abandoned.
#[derive(Clone, Debug)]
pub struct MessageSendQueue {
    capacity: usize,
    /// Messages from id `first_id` on; the front is always pending (settled ones are popped).
    messages: VecDeque<OutMessage>,
    first_id: u64,
    /// Bytes held by `messages`.
    used: usize,
    /// Index into `messages` before which every message is fully sent or settled.
    unsent_cursor: usize,
    /// `(first packet number carrying it, skip_to)` for each skip_to value not yet confirmed.
    skip_marks: VecDeque<(u64, u64)>,
    /// Highest skip_to carried by a packet the receiver acknowledged.
    skip_confirmed: u64,
    /// Deadlines of queued messages, earliest first (entries of settled messages linger until popped).
    deadlines: BinaryHeap<Reverse<(Time, u64)>>,
    /// Pending messages retransmitted at least once (candidates for the retransmission limit).
    retransmitted: BTreeSet<u64>,
    /// Message bytes acknowledged, each once (a fragment acknowledged again, or after its
    /// message was settled, adds nothing).
    acked_bytes: u64,
}

impl MessageSendQueue {
    /// An empty queue holding at most `capacity` bytes of messages.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            messages: VecDeque::new(),
            first_id: 0,
            used: 0,
            unsent_cursor: 0,
            skip_marks: VecDeque::new(),
            skip_confirmed: 0,
            deadlines: BinaryHeap::new(),
            retransmitted: BTreeSet::new(),
            acked_bytes: 0,
        }
    }

    /// Message bytes the peer acknowledged, each counted once.
    pub fn acked_bytes(&self) -> u64 {
        self.acked_bytes
    }

    /// Queue a message to be abandoned at `deadline` (if any); returns its id.
    pub fn push(
        &mut self,
        _now: Time,
        data: &[u8],
        deadline: Option<Time>,
    ) -> Result<u64, DeliveryError> {
        if data.len() > u32::MAX as usize || data.len() > self.capacity {
            return Err(DeliveryError::Full);
        }
        if data.len() > self.free_space() {
            return Err(DeliveryError::Full);
        }
        let id = self.first_id + self.messages.len() as u64;
        self.used += data.len();
        if let Some(deadline) = deadline {
            if self.deadlines.len() >= 2 * self.messages.len() + 16 {
                // Drop entries of settled messages so the heap stays proportional to the queue.
                let first_id = self.first_id;
                let live = |&Reverse((_, id)): &Reverse<(Time, u64)>| id >= first_id;
                self.deadlines.retain(live);
            }
            self.deadlines.push(Reverse((deadline, id)));
        }
        self.messages.push_back(OutMessage {
            data: data.to_vec(),
            deadline,
            sent_upto: 0,
            any_sent: false,
            acked: RangeSet::new(),
            any_acked: false,
            retransmissions: 0,
            fate: Fate::Pending,
        });
        Ok(id)
    }

    fn get(&self, id: u64) -> Option<&OutMessage> {
        let index = usize::try_from(id.checked_sub(self.first_id)?).ok()?;
        self.messages.get(index)
    }

    fn get_mut(&mut self, id: u64) -> Option<&mut OutMessage> {
        let index = usize::try_from(id.checked_sub(self.first_id)?).ok()?;
        self.messages.get_mut(index)
    }

    /// Next never-sent fragment, at most `max_len`, of a message id below `max_data`; appends it to `out`.
    ///
    /// Returns `(id, offset, total_len)`; the fragment length is what was appended. Call
    /// [`MessageSendQueue::abandon`] first with the current time so no expired message leaves.
    pub fn next_unsent(
        &mut self,
        max_len: usize,
        max_data: u64,
        out: &mut Vec<u8>,
    ) -> Option<(u64, u32, u32)> {
        while let Some(m) = self.messages.get(self.unsent_cursor) {
            if m.fate != Fate::Pending || m.fully_sent() {
                self.unsent_cursor += 1;
            } else {
                break;
            }
        }
        let id = self.first_id + self.unsent_cursor as u64;
        if id >= max_data {
            return None;
        }
        let m = self.messages.get_mut(self.unsent_cursor)?;
        let offset = m.sent_upto;
        let len = (m.total_len() - offset).min(u32::try_from(max_len).unwrap_or(u32::MAX));
        if len == 0 && m.total_len() > 0 {
            return None;
        }
        out.extend_from_slice(&m.data[offset as usize..(offset + len) as usize]);
        m.sent_upto += len;
        m.any_sent = true;
        Some((id, offset, m.total_len()))
    }

    /// Copy a fragment for retransmission; false if acknowledged, abandoned or out of bounds.
    pub fn copy_fragment(&self, id: u64, offset: u32, len: u32, out: &mut Vec<u8>) -> bool {
        let Some(m) = self.get(id) else { return false };
        let Some(end) = offset.checked_add(len) else {
            return false;
        };
        if m.fate != Fate::Pending
            || end > m.sent_upto
            || (len > 0 && m.is_acked_range(offset, end))
        {
            return false;
        }
        out.extend_from_slice(&m.data[offset as usize..end as usize]);
        true
    }

    /// Record an acknowledged fragment; true if it completes the message (not abandoned before).
    pub fn on_acked(&mut self, id: u64, offset: u32, len: u32) -> bool {
        let Some(m) = self.get_mut(id) else {
            return false;
        };
        let Some(end) = offset.checked_add(len) else {
            return false;
        };
        if m.fate != Fate::Pending || end > m.total_len() || (len == 0 && m.total_len() > 0) {
            return false;
        }
        let newly = m.add_acked(offset, end);
        let completed = m.fate == Fate::Acked;
        self.acked_bytes += newly;
        self.release_settled();
        completed
    }

    /// Give up on message `id` because a fragment was lost and will not be sent again (no error control).
    pub fn on_lost(&mut self, id: u64) {
        if let Some(m) = self.get_mut(id) {
            if m.fate == Fate::Pending {
                m.fate = Fate::Abandoned;
            }
        }
        self.release_settled();
    }

    /// Count a retransmission of message `id`; returns the count so far.
    ///
    /// Call it when a lost fragment is taken for retransmission, then [`MessageSendQueue::abandon`]
    /// and [`MessageSendQueue::copy_fragment`]: with a limit of n, the (n+1)-th loss abandons.
    pub fn on_retransmitted(&mut self, id: u64) -> u32 {
        match self.get_mut(id) {
            Some(m) => {
                m.retransmissions = m.retransmissions.saturating_add(1);
                let count = m.retransmissions;
                self.retransmitted.insert(id);
                count
            }
            None => 0,
        }
    }

    /// Abandon messages past their deadline or over `max_retransmissions`; returns how many.
    pub fn abandon(&mut self, now: Time, max_retransmissions: Option<u32>) -> usize {
        let mut count = 0;
        while let Some(&Reverse((deadline, id))) = self.deadlines.peek() {
            if deadline > now {
                break;
            }
            self.deadlines.pop();
            if let Some(m) = self.get_mut(id) {
                if m.fate == Fate::Pending && m.deadline.is_some_and(|d| now >= d) {
                    m.fate = Fate::Abandoned;
                    count += 1;
                }
            }
        }
        if let Some(max) = max_retransmissions {
            let candidates: Vec<u64> = self.retransmitted.iter().copied().collect();
            for id in candidates {
                match self.get_mut(id) {
                    Some(m) if m.fate == Fate::Pending => {
                        if m.retransmissions > max {
                            m.fate = Fate::Abandoned;
                            count += 1;
                            self.retransmitted.remove(&id);
                        }
                    }
                    _ => {
                        self.retransmitted.remove(&id);
                    }
                }
            }
        }
        self.release_settled();
        count
    }

    /// Free settled messages at the front of the queue.
    fn release_settled(&mut self) {
        while self
            .messages
            .front()
            .is_some_and(|m| m.fate != Fate::Pending)
        {
            if let Some(m) = self.messages.pop_front() {
                self.used -= m.data.len();
                self.first_id += 1;
                self.unsent_cursor = self.unsent_cursor.saturating_sub(1);
            }
        }
        if self
            .retransmitted
            .first()
            .is_some_and(|&id| id < self.first_id)
        {
            self.retransmitted = self.retransmitted.split_off(&self.first_id);
        }
    }

    /// The deadline of the oldest message still pending: when [`MessageSendQueue::abandon`] next
    /// has work, as deadlines grow with ids when every message gets the same allowance (as the
    /// connection gives them); otherwise a later message may expire first and wait for this one.
    pub fn next_deadline(&self) -> Option<Time> {
        self.messages.front().and_then(|m| m.deadline)
    }

    /// The earliest deadline queued, whatever order deadlines were given in: when
    /// [`MessageSendQueue::abandon`] next may have work (a settled message's deadline may linger
    /// until it passes, so this can be early, never late).
    pub fn next_expiry(&self) -> Option<Time> {
        self.deadlines
            .peek()
            .map(|&Reverse((deadline, _))| deadline)
    }

    /// Lowest message id neither acknowledged nor abandoned (the receiver may skip below it).
    pub fn skip_to(&self) -> u64 {
        self.first_id
    }

    /// Note that packet `packet_number` leaves carrying the current [`MessageSendQueue::skip_to`].
    pub fn on_packet_sent(&mut self, packet_number: u64) {
        let skip = self.skip_to();
        let last = self
            .skip_marks
            .back()
            .map_or(self.skip_confirmed, |&(_, s)| s);
        if skip > last {
            self.skip_marks.push_back((packet_number, skip));
            if self.skip_marks.len() > MAX_SKIP_MARKS {
                self.skip_marks.pop_front();
            }
        }
    }

    /// Note that the receiver acknowledged packet `packet_number` (the largest newly acknowledged
    /// suffices: skip_to only grows with packet numbers).
    pub fn on_packet_acked(&mut self, packet_number: u64) {
        while let Some(&(pn, skip)) = self.skip_marks.front() {
            if pn > packet_number {
                break;
            }
            self.skip_confirmed = self.skip_confirmed.max(skip);
            self.skip_marks.pop_front();
        }
    }

    /// Whether the receiver may not know the current skip_to yet: with nothing else to send and
    /// nothing in flight, send an empty packet carrying it, or the receiver may wait forever.
    pub fn skip_unconfirmed(&self) -> bool {
        self.skip_to() > self.skip_confirmed
    }

    /// Bytes `push` would accept now.
    pub fn free_space(&self) -> usize {
        self.capacity.saturating_sub(self.used)
    }

    /// Every message acknowledged or abandoned.
    pub fn all_acked(&self) -> bool {
        self.messages.is_empty()
    }

    /// Whether a never-sent fragment remains.
    pub fn has_unsent(&self) -> bool {
        self.messages
            .iter()
            .skip(self.unsent_cursor)
            .any(|m| m.fate == Fate::Pending && !m.fully_sent())
    }

    /// The id the next `push` will get.
    pub fn next_id(&self) -> u64 {
        self.first_id + self.messages.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(m: u64) -> Time {
        Time::from_nanos(m * 1_000_000)
    }

    #[test]
    fn the_next_deadline_is_the_oldest_pending_messages() {
        let mut q = MessageSendQueue::new(100);
        assert_eq!(q.next_deadline(), None);
        q.push(ms(0), b"a", Some(ms(100))).unwrap();
        q.push(ms(10), b"b", Some(ms(110))).unwrap();
        assert_eq!(q.next_deadline(), Some(ms(100)));
        let mut out = Vec::new();
        q.next_unsent(10, 10, &mut out).unwrap();
        q.on_acked(0, 0, 1);
        assert_eq!(
            q.next_deadline(),
            Some(ms(110)),
            "an acknowledged message no longer counts"
        );
        assert_eq!(q.abandon(ms(110), None), 1);
        assert_eq!(q.next_deadline(), None);
    }

    #[test]
    fn ids_follow_write_order_and_fragments_cover_the_message() {
        let mut q = MessageSendQueue::new(100);
        assert_eq!(q.push(ms(0), b"hello world", None), Ok(0));
        assert_eq!(q.push(ms(0), b"bye", None), Ok(1));
        let mut out = Vec::new();
        assert_eq!(q.next_unsent(5, 10, &mut out), Some((0, 0, 11)));
        assert_eq!(q.next_unsent(5, 10, &mut out), Some((0, 5, 11)));
        assert_eq!(q.next_unsent(5, 10, &mut out), Some((0, 10, 11)));
        assert_eq!(q.next_unsent(5, 10, &mut out), Some((1, 0, 3)));
        assert_eq!(out, b"hello worldbye");
        assert_eq!(q.next_unsent(5, 10, &mut out), None);
    }

    #[test]
    fn flow_control_limits_ids() {
        let mut q = MessageSendQueue::new(100);
        q.push(ms(0), b"a", None).unwrap();
        q.push(ms(0), b"b", None).unwrap();
        let mut out = Vec::new();
        assert!(q.next_unsent(5, 1, &mut out).is_some());
        assert_eq!(q.next_unsent(5, 1, &mut out), None);
        assert!(q.has_unsent());
    }

    #[test]
    fn capacity_bounds_the_queue() {
        let mut q = MessageSendQueue::new(10);
        assert_eq!(q.push(ms(0), &[0; 11], None), Err(DeliveryError::Full));
        q.push(ms(0), &[0; 6], None).unwrap();
        assert_eq!(q.free_space(), 4);
        assert_eq!(q.push(ms(0), &[0; 5], None), Err(DeliveryError::Full));
        let mut out = Vec::new();
        q.next_unsent(100, 10, &mut out);
        q.on_acked(0, 0, 6);
        assert_eq!(q.free_space(), 10, "acknowledged messages free their bytes");
        assert!(q.all_acked());
    }

    #[test]
    fn a_fragment_acknowledged_twice_counts_once() {
        // fuzz/findings/connection-bytes-acked-twice: a fragment's original arrived late, after
        // its retransmission, and both acknowledgements added its length.
        let mut q = MessageSendQueue::new(100);
        q.push(ms(0), b"0123456789", None).unwrap();
        let mut out = Vec::new();
        while q.next_unsent(4, 10, &mut out).is_some() {}
        q.on_acked(0, 0, 4);
        q.on_acked(0, 0, 4);
        q.on_acked(0, 2, 4);
        assert_eq!(q.acked_bytes(), 6);
        q.on_acked(0, 4, 6);
        assert_eq!(q.acked_bytes(), 10);
        q.on_acked(0, 0, 4);
        assert_eq!(
            q.acked_bytes(),
            10,
            "a settled message's fragment adds nothing"
        );
    }

    #[test]
    fn acknowledgement_in_pieces_settles_the_message() {
        let mut q = MessageSendQueue::new(100);
        q.push(ms(0), b"0123456789", None).unwrap();
        q.push(ms(0), b"x", None).unwrap();
        let mut out = Vec::new();
        while q.next_unsent(4, 10, &mut out).is_some() {}
        assert!(!q.on_acked(0, 4, 4));
        assert!(!q.on_acked(0, 8, 2));
        assert_eq!(q.skip_to(), 0);
        out.clear();
        assert!(q.copy_fragment(0, 0, 4, &mut out));
        assert_eq!(out, b"0123");
        assert!(!q.copy_fragment(0, 4, 4, &mut out), "already acknowledged");
        assert!(q.on_acked(0, 0, 4), "the last piece completes the message");
        assert!(!q.on_acked(0, 0, 4));
        assert_eq!(q.skip_to(), 1);
        assert!(!q.copy_fragment(0, 0, 4, &mut out));
    }

    #[test]
    fn deadline_abandons_and_moves_skip_to() {
        let mut q = MessageSendQueue::new(100);
        q.push(ms(0), b"late", Some(ms(10))).unwrap();
        q.push(ms(0), b"ok", None).unwrap();
        assert_eq!(q.abandon(ms(9), None), 0);
        assert_eq!(q.abandon(ms(10), None), 1);
        assert_eq!(q.skip_to(), 1);
        let mut out = Vec::new();
        assert_eq!(
            q.next_unsent(10, 10, &mut out),
            Some((1, 0, 2)),
            "the expired message is never sent"
        );
        assert!(!q.copy_fragment(0, 0, 4, &mut out));
    }

    #[test]
    fn retransmission_limit_abandons_on_the_next_loss() {
        let mut q = MessageSendQueue::new(100);
        q.push(ms(0), b"m", None).unwrap();
        let mut out = Vec::new();
        q.next_unsent(10, 10, &mut out);
        assert_eq!(q.on_retransmitted(0), 1);
        assert_eq!(q.abandon(ms(0), Some(1)), 0, "one retransmission allowed");
        assert_eq!(q.on_retransmitted(0), 2);
        assert_eq!(q.abandon(ms(0), Some(1)), 1);
        assert!(q.all_acked());
    }

    #[test]
    fn skip_to_waits_for_the_lowest_pending_message() {
        let mut q = MessageSendQueue::new(100);
        for _ in 0..3 {
            q.push(ms(0), b"abc", None).unwrap();
        }
        let mut out = Vec::new();
        while q.next_unsent(10, 10, &mut out).is_some() {}
        q.on_acked(1, 0, 3);
        q.on_acked(2, 0, 3);
        assert_eq!(q.skip_to(), 0);
        q.on_lost(0);
        assert_eq!(q.skip_to(), 3);
        assert!(q.all_acked());
    }

    #[test]
    fn skip_is_confirmed_by_the_acknowledgement_of_a_packet_carrying_it() {
        let mut q = MessageSendQueue::new(100);
        q.push(ms(0), b"a", Some(ms(5))).unwrap();
        q.push(ms(0), b"b", None).unwrap();
        let mut out = Vec::new();
        q.next_unsent(10, 10, &mut out);
        q.on_packet_sent(0);
        assert!(!q.skip_unconfirmed());
        q.abandon(ms(5), None);
        assert_eq!(q.skip_to(), 1);
        assert!(q.skip_unconfirmed());
        q.next_unsent(10, 10, &mut out);
        q.on_packet_sent(1);
        q.on_packet_acked(0);
        assert!(q.skip_unconfirmed(), "packet 0 left before the skip");
        q.on_packet_acked(1);
        assert!(!q.skip_unconfirmed());
    }

    #[test]
    fn deadlines_out_of_push_order_are_all_honoured() {
        let mut q = MessageSendQueue::new(100);
        q.push(ms(0), b"a", Some(ms(30))).unwrap();
        q.push(ms(0), b"b", Some(ms(10))).unwrap();
        q.push(ms(0), b"c", None).unwrap();
        q.push(ms(0), b"d", Some(ms(20))).unwrap();
        assert_eq!(q.abandon(ms(15), None), 1);
        assert_eq!(q.skip_to(), 0, "message 0 is still pending");
        assert_eq!(q.abandon(ms(25), None), 1);
        assert_eq!(q.abandon(ms(35), None), 1);
        assert_eq!(q.skip_to(), 2);
        assert_eq!(q.abandon(ms(1000), None), 0, "message 2 has no deadline");
    }

    #[test]
    fn empty_messages_are_sent_and_acknowledged() {
        let mut q = MessageSendQueue::new(10);
        q.push(ms(0), b"", None).unwrap();
        let mut out = Vec::new();
        assert_eq!(q.next_unsent(10, 10, &mut out), Some((0, 0, 0)));
        assert_eq!(q.next_unsent(10, 10, &mut out), None);
        q.on_acked(0, 0, 0);
        assert!(q.all_acked());
    }
}
