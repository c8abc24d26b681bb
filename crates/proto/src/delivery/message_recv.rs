//! Reassembly of messages, delivered in order or as each completes.
//!
//! Memory is bounded: a message is buffered whole (its `total_len` reserved on its first
//! fragment), messages other than the lowest undelivered one fill at most `capacity` bytes and
//! leave room for it, the lowest is always taken in (so at most `2 * capacity` bytes are held),
//! and ids beyond the advertised [`MessageReassembler::max_data`] are refused.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::DeliveryError;
use crate::range_set::RangeSet;
use crate::wire::Order;

/// Most disjoint received ranges one message may hold: a fragment that would open more is
/// refused (the sender sends it again), so tiny scattered fragments cannot cost quadratic time.
pub const MAX_MESSAGE_RANGES: usize = 64;

#[derive(Clone, Debug)]
struct InMessage {
    data: Vec<u8>,
    /// Received byte ranges.
    ranges: RangeSet,
    complete: bool,
}

impl InMessage {
    fn new(total_len: u32) -> Self {
        Self {
            data: vec![0; total_len as usize],
            ranges: RangeSet::new(),
            complete: total_len == 0,
        }
    }

    /// Take in a fragment; false when it would open more than [`MAX_MESSAGE_RANGES`] ranges.
    fn add(&mut self, offset: u32, data: &[u8]) -> bool {
        let end = offset + data.len() as u32;
        if self.ranges.len() >= MAX_MESSAGE_RANGES
            && !self.ranges.touches(u64::from(offset), u64::from(end))
        {
            return false;
        }
        self.data[offset as usize..end as usize].copy_from_slice(data);
        self.ranges.insert(u64::from(offset), u64::from(end));
        self.complete = self.complete || self.ranges.is_exactly(0, self.data.len() as u64);
        true
    }
}

/// Message fragments held until their messages can be delivered.
#[derive(Clone, Debug)]
pub struct MessageReassembler {
    order: Order,
    capacity: usize,
    max_payload: usize,
    /// Largest message length seen so far (at least `max_payload`): the room kept for the lowest message.
    reserve: usize,
    /// Lowest id neither delivered nor given up on.
    next_deliver: u64,
    /// Messages below this id that were incomplete when the skip arrived are never delivered.
    skip_floor: u64,
    /// Messages being received (and, in order, complete ones waiting their turn).
    pending: BTreeMap<u64, InMessage>,
    /// Unordered: complete messages waiting for `pop`.
    ready: VecDeque<Vec<u8>>,
    /// Unordered: ids above `next_deliver` already completed.
    delivered_above: BTreeSet<u64>,
    /// Bytes reserved by `pending` and `ready`.
    used: usize,
    /// The highest id window computed so far: ids below it stay allowed, so a packet the sender
    /// sent within an advertised window is never refused for a window that shrank since.
    granted: u64,
}

impl MessageReassembler {
    /// An empty reassembler holding at most `capacity` bytes; `max_payload` sizes the id window.
    ///
    /// Room for the lowest undelivered message is kept free: as much as the largest message seen
    /// so far, and at least `max_payload`. That room is only a guess (a lost message's size is
    /// unknown until a fragment arrives), so the lowest message is admitted even when later ones
    /// took the room: ordered delivery never stalls on a buffer full of messages that wait for it.
    pub fn new(order: Order, capacity: usize, max_payload: usize) -> Self {
        let max_payload = max_payload.clamp(1, capacity.max(1));
        let mut reassembler = Self {
            order,
            capacity,
            max_payload,
            reserve: max_payload,
            next_deliver: 0,
            skip_floor: 0,
            pending: BTreeMap::new(),
            ready: VecDeque::new(),
            delivered_above: BTreeSet::new(),
            used: 0,
            granted: 0,
        };
        reassembler.granted = reassembler.window();
        reassembler
    }

    /// Lowest id the reassembler still waits for.
    fn floor(&self) -> u64 {
        self.next_deliver.max(self.skip_floor)
    }

    /// Buffer one fragment of message `id`; stale and duplicate fragments are ignored.
    pub fn insert(
        &mut self,
        id: u64,
        offset: u32,
        total_len: u32,
        data: &[u8],
    ) -> Result<(), DeliveryError> {
        let len = u32::try_from(data.len())
            .map_err(|_| DeliveryError::Inconsistent("fragment too long"))?;
        let end = offset
            .checked_add(len)
            .ok_or(DeliveryError::Inconsistent("fragment beyond its message"))?;
        if end > total_len {
            return Err(DeliveryError::Inconsistent("fragment beyond its message"));
        }
        if id < self.floor() || self.delivered_above.contains(&id) {
            return Ok(());
        }
        if let Some(message) = self.pending.get_mut(&id) {
            if message.data.len() != total_len as usize {
                return Err(DeliveryError::Inconsistent(
                    "message length changed between fragments",
                ));
            }
            if !message.complete {
                if !message.add(offset, data) {
                    return Err(DeliveryError::Full);
                }
                self.on_progress(id);
            }
            return Ok(());
        }
        if id >= self.max_data() {
            return Err(DeliveryError::BeyondWindow);
        }
        // Keep room for the lowest undelivered message, so later ones cannot starve it.
        let floor = self.floor();
        if total_len as usize > self.capacity {
            return Err(DeliveryError::Full);
        }
        // The lowest undelivered message is always taken in (it fits the capacity on its own):
        // in order, nothing can be delivered without it, so refusing it could stall delivery for
        // good. Memory stays below twice the capacity.
        if id != floor {
            let reserve = if self.pending.contains_key(&floor) {
                0
            } else {
                self.reserve
            };
            if self.used + total_len as usize + reserve > self.capacity {
                return Err(DeliveryError::Full);
            }
        }
        // Raised only for a message taken in: a refused one must not keep blocking later ones.
        self.reserve = self.reserve.max(total_len as usize);
        self.used += total_len as usize;
        let mut message = InMessage::new(total_len);
        if len > 0 {
            // A new message holds no range yet, so the first fragment always fits.
            message.add(offset, data);
        }
        self.pending.insert(id, message);
        self.on_progress(id);
        self.grant();
        Ok(())
    }

    /// Move a message completed out of order to the ready queue (unordered delivery).
    fn on_progress(&mut self, id: u64) {
        if self.order != Order::Unordered || !self.pending.get(&id).is_some_and(|m| m.complete) {
            return;
        }
        if let Some(message) = self.pending.remove(&id) {
            self.ready.push_back(message.data);
            self.delivered_above.insert(id);
            self.advance_unordered();
        }
    }

    fn advance_unordered(&mut self) {
        self.next_deliver = self.next_deliver.max(self.skip_floor);
        while self.delivered_above.remove(&self.next_deliver) {
            self.next_deliver += 1;
        }
        let floor = self.next_deliver;
        self.delivered_above.retain(|&d| d > floor);
    }

    /// Stop waiting for messages below `id` (abandoned by the sender, or lost with no error control).
    ///
    /// Incomplete messages below `id` are dropped and never delivered; complete ones still are.
    pub fn skip_to(&mut self, id: u64) {
        if id <= self.skip_floor {
            return;
        }
        self.skip_floor = id;
        let dropped: Vec<u64> = self
            .pending
            .range(..id)
            .filter(|(_, m)| !m.complete)
            .map(|(&k, _)| k)
            .collect();
        for k in dropped {
            if let Some(m) = self.pending.remove(&k) {
                self.used -= m.data.len();
            }
        }
        if self.order == Order::Unordered {
            self.advance_unordered();
        }
        self.grant();
    }

    /// Next deliverable message.
    pub fn pop(&mut self) -> Option<Vec<u8>> {
        let data = match self.order {
            Order::Unordered => self.ready.pop_front()?,
            Order::Ordered => {
                if self.next_deliver < self.skip_floor {
                    // Only complete messages remain below the skip: deliver them in order.
                    match self.pending.first_key_value() {
                        Some((&k, _)) if k < self.skip_floor => self.next_deliver = k,
                        _ => self.next_deliver = self.skip_floor,
                    }
                }
                let mut entry = self.pending.first_entry()?;
                if *entry.key() != self.next_deliver || !entry.get_mut().complete {
                    return None;
                }
                self.next_deliver += 1;
                entry.remove().data
            }
        };
        self.used -= data.len();
        self.grant();
        Some(data)
    }

    /// Whether [`MessageReassembler::pop`] would return a message now.
    pub fn has_deliverable(&self) -> bool {
        match self.order {
            Order::Unordered => !self.ready.is_empty(),
            Order::Ordered => {
                let Some((&first, message)) = self.pending.first_key_value() else {
                    return false;
                };
                // As in `pop`: complete messages left below a skip go first, in order.
                let expected = if self.next_deliver < self.skip_floor && first < self.skip_floor {
                    first
                } else {
                    self.next_deliver.max(self.skip_floor)
                };
                first == expected && message.complete
            }
        }
    }

    /// Flow control: the sender may send message ids below this (lowest undelivered id + free
    /// buffer / max_payload, at least one), and never less than before.
    pub fn max_data(&self) -> u64 {
        self.granted.max(self.window())
    }

    /// The window the buffer allows now: lowest undelivered id + free buffer / max_payload.
    fn window(&self) -> u64 {
        let free = self.capacity.saturating_sub(self.used);
        self.floor()
            .saturating_add(((free / self.max_payload) as u64).max(1))
    }

    /// Remember the window as granted (RFC 1122 §4.2.2.16: a receiver should not shrink its
    /// window); the byte bound still holds, as every message must fit the buffer to be taken in.
    fn grant(&mut self) {
        self.granted = self.granted.max(self.window());
    }

    /// Bytes reserved by buffered messages.
    pub fn buffered(&self) -> usize {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(r: &mut MessageReassembler) -> Vec<Vec<u8>> {
        std::iter::from_fn(|| r.pop()).collect()
    }

    #[test]
    fn a_refused_large_message_does_not_raise_the_reserve() {
        let mut r = MessageReassembler::new(Order::Ordered, 10_000, 1000);
        // Message 1 is not the lowest: 9000 bytes plus the 1000 kept for message 0 do not fit.
        assert_eq!(r.insert(1, 0, 9_500, &[0; 100]), Err(DeliveryError::Full));
        // Had the refused message raised the reserve to 9500, this 1500-byte one would be refused.
        assert_eq!(r.insert(2, 0, 1_500, &[7; 1_500]), Ok(()));
        assert_eq!(r.buffered(), 1_500);
    }

    #[test]
    fn ordered_waits_for_the_earlier_message() {
        let mut r = MessageReassembler::new(Order::Ordered, 1000, 100);
        r.insert(1, 0, 3, b"two").unwrap();
        assert!(!r.has_deliverable());
        assert_eq!(r.pop(), None);
        r.insert(0, 0, 3, b"one").unwrap();
        assert!(r.has_deliverable());
        assert_eq!(drain(&mut r), vec![b"one".to_vec(), b"two".to_vec()]);
        assert_eq!(r.buffered(), 0);
    }

    #[test]
    fn unordered_delivers_on_completion() {
        let mut r = MessageReassembler::new(Order::Unordered, 1000, 100);
        r.insert(1, 0, 3, b"two").unwrap();
        assert_eq!(r.pop(), Some(b"two".to_vec()));
        r.insert(1, 0, 3, b"two").unwrap();
        assert_eq!(
            r.pop(),
            None,
            "a duplicate of a delivered message is ignored"
        );
        r.insert(0, 0, 3, b"one").unwrap();
        assert_eq!(drain(&mut r), vec![b"one".to_vec()]);
        assert_eq!(r.max_data(), 2 + 10);
    }

    #[test]
    fn fragments_reassemble_in_any_order() {
        let mut r = MessageReassembler::new(Order::Ordered, 1000, 100);
        r.insert(0, 6, 11, b"world").unwrap();
        r.insert(0, 6, 11, b"world").unwrap();
        assert!(!r.has_deliverable(), "half a message is not deliverable");
        assert_eq!(r.pop(), None);
        r.insert(0, 0, 11, b"hello ").unwrap();
        assert_eq!(r.pop(), Some(b"hello world".to_vec()));
    }

    #[test]
    fn scattered_one_byte_fragments_open_at_most_the_range_cap() {
        let mut r = MessageReassembler::new(Order::Ordered, 4000, 100);
        // Every other byte of a 1000-byte message: the 65th disjoint range is refused.
        for i in 0..MAX_MESSAGE_RANGES as u32 {
            r.insert(0, 2 * i, 1000, b"x").unwrap();
        }
        let next = 2 * MAX_MESSAGE_RANGES as u32;
        assert_eq!(r.insert(0, next, 1000, b"x"), Err(DeliveryError::Full));
        // A fragment touching a held range merges and is still taken; then the message completes.
        r.insert(0, 1, 1000, b"y").unwrap();
        r.insert(0, 0, 1000, &[b'z'; 1000]).unwrap();
        assert_eq!(r.pop().map(|m| m.len()), Some(1000));
    }

    #[test]
    fn skip_drops_incomplete_but_keeps_complete_messages() {
        let mut r = MessageReassembler::new(Order::Ordered, 1000, 100);
        r.insert(0, 0, 4, b"ze").unwrap();
        r.insert(1, 0, 3, b"one").unwrap();
        r.insert(3, 0, 5, b"three").unwrap();
        r.skip_to(3);
        assert!(
            r.has_deliverable(),
            "complete messages below the skip are still delivered"
        );
        r.insert(0, 2, 4, b"ro").unwrap();
        r.insert(2, 0, 3, b"two").unwrap();
        assert_eq!(drain(&mut r), vec![b"one".to_vec(), b"three".to_vec()]);
        assert!(!r.has_deliverable());
        assert_eq!(r.buffered(), 0);
    }

    #[test]
    fn unordered_skip_moves_the_window() {
        let mut r = MessageReassembler::new(Order::Unordered, 1000, 100);
        r.insert(0, 0, 4, b"ze").unwrap();
        r.insert(2, 0, 3, b"two").unwrap();
        r.skip_to(2);
        assert_eq!(
            r.max_data(),
            3 + 997 / 100,
            "2 was already delivered; its 3 bytes wait in the ready queue"
        );
        assert_eq!(drain(&mut r), vec![b"two".to_vec()]);
        r.insert(0, 2, 4, b"ro").unwrap();
        assert_eq!(r.pop(), None);
    }

    #[test]
    fn bounds_are_enforced() {
        let mut r = MessageReassembler::new(Order::Ordered, 100, 40);
        assert_eq!(r.insert(0, 0, 101, b"x"), Err(DeliveryError::Full));
        assert_eq!(r.max_data(), 2);
        assert_eq!(r.insert(2, 0, 10, b"x"), Err(DeliveryError::BeyondWindow));
        // Room for the lowest message is kept: message 1 may take at most 100 - 40 bytes...
        assert_eq!(r.insert(1, 0, 61, b"x"), Err(DeliveryError::Full));
        // ...and a refused message does not raise the room kept: 60 bytes still fit.
        r.insert(1, 0, 60, b"x").unwrap();
        r.insert(0, 0, 40, b"y").unwrap();
        assert_eq!(
            r.insert(0, 0, 41, b"y"),
            Err(DeliveryError::Inconsistent(
                "message length changed between fragments"
            ))
        );
        assert_eq!(
            r.insert(0, 39, 40, b"yz"),
            Err(DeliveryError::Inconsistent("fragment beyond its message"))
        );
    }

    #[test]
    fn room_kept_for_the_lowest_message_grows_with_the_messages_seen() {
        let mut r = MessageReassembler::new(Order::Ordered, 1000, 10);
        r.insert(1, 0, 300, b"x").unwrap();
        r.insert(2, 0, 300, b"x").unwrap();
        // 400 bytes free, but 300 are kept for message 0, whose fragments were all lost.
        assert_eq!(r.insert(3, 0, 200, b"x"), Err(DeliveryError::Full));
        r.insert(3, 0, 100, b"x").unwrap();
        r.insert(0, 0, 300, b"x").unwrap();
        assert_eq!(r.buffered(), 1000);
    }

    #[test]
    fn the_lowest_message_is_taken_in_even_when_later_ones_took_its_room() {
        let mut r = MessageReassembler::new(Order::Ordered, 1000, 10);
        r.insert(1, 0, 300, b"x").unwrap();
        r.insert(2, 0, 300, b"x").unwrap();
        r.insert(3, 0, 100, b"x").unwrap();
        // Message 0 is larger than any seen: the 300 bytes kept for it are not enough.
        r.insert(0, 0, 600, b"x").unwrap();
        assert_eq!(r.buffered(), 1300, "over capacity by at most one message");
        assert!(r.insert(4, 0, 1, b"x").is_err(), "later messages wait");
        assert_eq!(
            r.insert(0, 0, 600, b"x"),
            Ok(()),
            "further fragments of it are welcome"
        );
        assert_eq!(
            r.max_data(),
            100,
            "ids once allowed stay allowed; bytes still bound the buffer"
        );
    }

    #[test]
    fn the_window_never_shrinks_while_the_lowest_message_is_missing() {
        let mut r = MessageReassembler::new(Order::Ordered, 8192, 1436);
        assert_eq!(r.max_data(), 5);
        r.insert(1, 0, 1400, b"x").unwrap();
        r.insert(2, 0, 1400, b"x").unwrap();
        // The free buffer alone would now allow ids below 3, but 3 and 4 were granted and fit.
        assert_eq!(r.max_data(), 5);
        r.insert(3, 0, 1400, b"x").unwrap();
        r.insert(4, 0, 1400, b"x").unwrap();
        assert_eq!(r.insert(5, 0, 10, b"x"), Err(DeliveryError::BeyondWindow));
    }

    #[test]
    fn empty_messages_are_delivered() {
        let mut r = MessageReassembler::new(Order::Ordered, 100, 40);
        r.insert(0, 0, 0, b"").unwrap();
        assert_eq!(r.pop(), Some(Vec::new()));
    }
}
