//! A calendar of events for the scheduler's busy side: a ring of time slots over the next
//! quarter second or so, with the events further out in a heap of their own until their slot
//! comes round.
//!
//! Events are keyed as the scheduler keys them (time in the high 64 bits, insertion sequence in
//! the low 64), and come out in key order, exactly as from a binary heap. A packet event is
//! scheduled a few microseconds to a few hundred milliseconds ahead, and the slot it goes to is
//! found from its time alone; the next one due is the first entry of the first occupied slot,
//! found through a bitmap. The heap's sift, whose every level is a branch the processor cannot
//! predict, is gone from the per-packet path.
//!
//! Every slot holds its events in a list sorted by key (usually one or none); the lists' nodes
//! live in one pool and are reused, so a run in steady state does not allocate.

use std::collections::BinaryHeap;

/// log2 of a slot's width in nanoseconds: 4.096 µs, about a 1500-byte packet at 3 Gbit/s.
pub(crate) const SLOT_SHIFT: u32 = 12;
/// log2 of the number of slots: 65,536 slots cover 268 ms ahead of the current one.
const SLOTS_LOG2: u32 = 16;
const SLOTS: usize = 1 << SLOTS_LOG2;
/// Bitmap words (one bit per slot), and summary words (one bit per bitmap word).
const WORDS: usize = SLOTS / 64;
const SUMMARY: usize = WORDS / 64;
/// The end of a slot's list.
const NIL: u32 = u32::MAX;

/// An event of the calendar, in the pool.
struct Node<E> {
    key: u128,
    event: E,
    next: u32,
}

/// An event and when it is due, in a heap: the key is the time in nanoseconds in the high 64
/// bits and the insertion sequence in the low 64, so one integer comparison orders by (time,
/// sequence). Ordered in reverse, so that the standard max-heap pops the earliest first. The
/// ring's far events wait in a heap of these, and so do the scheduler's timers.
pub(crate) struct Entry<E> {
    pub(crate) key: u128,
    pub(crate) event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.key.cmp(&self.key)
    }
}

/// Where the earliest event waits: in a ring slot, or beyond the ring (which is then empty).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Place {
    Ring(usize),
    Far,
}

/// The slot, counted from time zero, of the event with `key`.
#[inline]
fn slot_of(key: u128) -> u64 {
    ((key >> 64) as u64) >> SLOT_SHIFT
}

/// Events in key order: the ring holds those whose slot lies in `[origin, origin + SLOTS)`, the
/// heap the rest (all of them later).
pub(crate) struct Wheel<E> {
    /// The first slot of the ring's window, counted from time zero. Only moves forward, and
    /// never past an event's slot.
    origin: u64,
    /// Each ring slot's first node (the earliest key), or [`NIL`].
    heads: Box<[u32]>,
    /// Bit `i % 64` of word `i / 64`: ring slot `i` holds an event.
    occupied: Box<[u64]>,
    /// Bit `w % 64` of word `w / 64`: bitmap word `w` is not zero.
    summary: [u64; SUMMARY],
    nodes: Vec<Node<E>>,
    /// Nodes free for reuse.
    free: Vec<u32>,
    far: BinaryHeap<Entry<E>>,
}

impl<E: Copy> Wheel<E> {
    pub(crate) fn new() -> Self {
        Wheel {
            origin: 0,
            heads: vec![NIL; SLOTS].into_boxed_slice(),
            occupied: vec![0; WORDS].into_boxed_slice(),
            summary: [0; SUMMARY],
            nodes: Vec::new(),
            free: Vec::new(),
            far: BinaryHeap::new(),
        }
    }

    /// Events waiting.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len() - self.free.len() + self.far.len()
    }

    /// Add `event` with `key`, whose slot is not before the window's first.
    #[inline]
    pub(crate) fn push(&mut self, key: u128, event: E) {
        let slot = slot_of(key);
        debug_assert!(slot >= self.origin, "an event before the window");
        if slot - self.origin < SLOTS as u64 {
            self.insert(slot as usize & (SLOTS - 1), key, event);
        } else {
            self.far.push(Entry { key, event });
        }
    }

    /// Put an event into ring slot `i`, in key order.
    #[inline]
    fn insert(&mut self, i: usize, key: u128, event: E) {
        let node = Node {
            key,
            event,
            next: NIL,
        };
        let id = match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        let head = self.heads[i];
        if head == NIL {
            self.heads[i] = id;
            let w = i / 64;
            self.occupied[w] |= 1 << (i % 64);
            self.summary[w / 64] |= 1 << (w % 64);
            return;
        }
        if key < self.nodes[head as usize].key {
            self.nodes[id as usize].next = head;
            self.heads[i] = id;
            return;
        }
        let mut at = head;
        loop {
            let next = self.nodes[at as usize].next;
            if next == NIL || key < self.nodes[next as usize].key {
                self.nodes[id as usize].next = next;
                self.nodes[at as usize].next = id;
                return;
            }
            at = next;
        }
    }

    /// The first occupied ring slot at or after ring slot `from`, not wrapping round.
    #[inline]
    fn first_from(&self, from: usize) -> Option<usize> {
        let w = from / 64;
        let bits = self.occupied[w] & (!0u64 << (from % 64));
        if bits != 0 {
            return Some(w * 64 + bits.trailing_zeros() as usize);
        }
        let next = w + 1;
        if next == WORDS {
            return None;
        }
        let mut s = next / 64;
        let mut sbits = self.summary[s] & (!0u64 << (next % 64));
        loop {
            if sbits != 0 {
                let word = s * 64 + sbits.trailing_zeros() as usize;
                let bits = self.occupied[word];
                return Some(word * 64 + bits.trailing_zeros() as usize);
            }
            s += 1;
            if s == SUMMARY {
                return None;
            }
            sbits = self.summary[s];
        }
    }

    /// The ring slot of the earliest event, if the ring holds any: the first occupied slot from
    /// the window's first, round the ring.
    #[inline]
    fn first(&self) -> Option<usize> {
        let start = self.origin as usize & (SLOTS - 1);
        self.first_from(start)
            .or_else(|| (start > 0).then(|| self.first_from(0)).flatten())
    }

    /// The earliest event's key, and where it waits (for [`Wheel::pop`]), if any event waits.
    #[inline]
    pub(crate) fn peek(&self) -> Option<(u128, Place)> {
        match self.first() {
            Some(i) => Some((self.nodes[self.heads[i] as usize].key, Place::Ring(i))),
            None => self.far.peek().map(|f| (f.key, Place::Far)),
        }
    }

    /// Take the earliest event, which [`Wheel::peek`] just found at `place`.
    #[inline]
    pub(crate) fn pop(&mut self, place: Place) -> E {
        let i = match place {
            Place::Ring(i) => i,
            Place::Far => {
                // The ring is empty: the window jumps to the first far event's slot.
                let key = self.far.peek().expect("a far event").key;
                self.advance(slot_of(key));
                self.first().expect("the far event came into the ring")
            }
        };
        let id = self.heads[i];
        let node = &self.nodes[id as usize];
        let (event, next) = (node.event, node.next);
        self.heads[i] = next;
        if next == NIL {
            let w = i / 64;
            self.occupied[w] &= !(1 << (i % 64));
            if self.occupied[w] == 0 {
                self.summary[w / 64] &= !(1 << (w % 64));
            }
        }
        self.free.push(id);
        event
    }

    /// Move the window's first slot forward to `slot` (no event lies before it), taking into
    /// the ring the far events its end now reaches.
    #[inline]
    pub(crate) fn advance(&mut self, slot: u64) {
        if slot <= self.origin {
            return;
        }
        self.origin = slot;
        let end = slot + SLOTS as u64;
        while let Some(top) = self.far.peek() {
            let s = slot_of(top.key);
            if s >= end {
                break;
            }
            let far = self.far.pop().expect("peeked");
            self.insert(s as usize & (SLOTS - 1), far.key, far.event);
        }
    }
}
