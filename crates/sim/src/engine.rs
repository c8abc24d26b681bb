//! The event scheduler: a heap of events ordered by time, ties broken by insertion order.
//!
//! Events are small plain values (the simulator's event enum addresses components by typed ids),
//! so scheduling never allocates beyond the heap's own growth.
//!
//! Most events schedule another (a packet's arrival arms the next one's), so an event popped is
//! left at the top of its heap, spent, until the next call: a schedule into that heap writes over
//! it (one sift down, where a pop and a push would sift twice), a pop removes it first. The order
//! is the same.

use qstp_proto::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// An event and when it is due: the key is the time in nanoseconds in the high 64 bits and the
/// insertion sequence in the low 64, so one integer comparison orders by (time, sequence).
struct Entry<E> {
    key: u128,
    event: E,
}

impl<E> Entry<E> {
    fn time(&self) -> Time {
        Time::from_nanos((self.key >> 64) as u64)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    /// Reversed, so that the max-heap pops the earliest (time, sequence) first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key.cmp(&self.key)
    }
}

/// A discrete-event scheduler.
///
/// Events wait in one of two heaps: [`Scheduler::schedule`]'s, for the packet events that come
/// and go by the thousand per second, and [`Scheduler::schedule_timer`]'s, for wake-ups that are
/// mostly set far ahead and rarely fire (retransmission timers), so that the busy heap stays
/// shallow. One clock and one sequence number span both: the order is that of a single heap.
pub struct Scheduler<E> {
    /// The packet events' heap (0) and the timers' (1).
    heaps: [BinaryHeap<Entry<E>>; 2],
    /// The heap whose top is the event last popped, left in place.
    spent: Option<usize>,
    next_sequence: u64,
    now: Time,
    processed: u64,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Scheduler {
            heaps: [BinaryHeap::new(), BinaryHeap::new()],
            spent: None,
            next_sequence: 0,
            now: Time::ZERO,
            processed: 0,
        }
    }
}

/// The heap of [`Scheduler::schedule`].
const EVENTS: usize = 0;
/// The heap of [`Scheduler::schedule_timer`].
const TIMERS: usize = 1;

impl<E: Copy> Scheduler<E> {
    /// An empty scheduler at time zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The time of the event last popped.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Events popped so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heaps[EVENTS].len() + self.heaps[TIMERS].len() - usize::from(self.spent.is_some())
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Remove the spent event at a top, if one is there.
    fn drop_spent(&mut self) {
        if let Some(heap) = self.spent.take() {
            self.heaps[heap].pop();
        }
    }

    /// Schedule `event` at `time`; a time in the past is treated as now (causality holds).
    pub fn schedule(&mut self, time: Time, event: E) {
        self.schedule_in(EVENTS, time, event);
    }

    /// [`Scheduler::schedule`] for a wake-up that is usually set well ahead of the events around
    /// it and often set again before it fires: the same order, kept apart from the busy heap.
    pub fn schedule_timer(&mut self, time: Time, event: E) {
        self.schedule_in(TIMERS, time, event);
    }

    fn schedule_in(&mut self, heap: usize, time: Time, event: E) {
        let time = time.max(self.now);
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let key = (u128::from(time.as_nanos()) << 64) | u128::from(sequence);
        let entry = Entry { key, event };
        if self.spent == Some(heap) {
            self.spent = None;
            if let Some(mut top) = self.heaps[heap].peek_mut() {
                *top = entry;
                return;
            }
        }
        self.heaps[heap].push(entry);
    }

    /// The heap holding the next event, if any.
    fn next_heap(&self) -> Option<usize> {
        match (self.heaps[EVENTS].peek(), self.heaps[TIMERS].peek()) {
            (Some(event), Some(timer)) => Some(if event.key < timer.key {
                EVENTS
            } else {
                TIMERS
            }),
            (Some(_), None) => Some(EVENTS),
            (None, Some(_)) => Some(TIMERS),
            (None, None) => None,
        }
    }

    /// When the next event is due.
    pub fn peek_time(&mut self) -> Option<Time> {
        self.drop_spent();
        let heap = self.next_heap()?;
        self.heaps[heap].peek().map(Entry::time)
    }

    /// Take the next event if it is due before `end`, advancing the clock to it.
    pub fn pop_before(&mut self, end: Time) -> Option<(Time, E)> {
        self.drop_spent();
        let heap = self.next_heap()?;
        let top = self.heaps[heap].peek()?;
        let time = top.time();
        if time >= end {
            return None;
        }
        let event = top.event;
        self.spent = Some(heap);
        self.now = time;
        self.processed += 1;
        Some((time, event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ns: u64) -> Time {
        Time::from_nanos(ns)
    }

    #[test]
    fn events_come_out_in_time_order() {
        let mut s = Scheduler::new();
        for (time, name) in [(30, "c"), (10, "a"), (20, "b"), (5, "first")] {
            s.schedule(t(time), name);
        }
        let order: Vec<_> = std::iter::from_fn(|| s.pop_before(Time::MAX)).collect();
        assert_eq!(
            order,
            vec![(t(5), "first"), (t(10), "a"), (t(20), "b"), (t(30), "c")]
        );
        assert_eq!(s.processed(), 4);
    }

    #[test]
    fn ties_break_by_insertion_order() {
        let mut s = Scheduler::new();
        for i in 0..100u32 {
            s.schedule(t(7), i);
        }
        s.schedule(t(3), 1000);
        let order: Vec<u32> = std::iter::from_fn(|| s.pop_before(Time::MAX))
            .map(|(_, e)| e)
            .collect();
        let mut expected = vec![1000];
        expected.extend(0..100);
        assert_eq!(order, expected);
    }

    #[test]
    fn ties_scheduled_while_running_go_after_earlier_ones() {
        let mut s = Scheduler::new();
        s.schedule(t(10), "a");
        s.schedule(t(10), "b");
        let (now, first) = s.pop_before(Time::MAX).unwrap();
        assert_eq!(first, "a");
        s.schedule(now, "c");
        s.schedule(t(1), "past");
        let rest: Vec<_> = std::iter::from_fn(|| s.pop_before(Time::MAX)).collect();
        assert_eq!(rest, vec![(t(10), "b"), (t(10), "c"), (t(10), "past")]);
    }

    #[test]
    fn pop_before_stops_at_the_end() {
        let mut s = Scheduler::new();
        s.schedule(t(10), 1);
        s.schedule(t(20), 2);
        assert_eq!(s.pop_before(t(20)), Some((t(10), 1)));
        assert_eq!(s.pop_before(t(20)), None);
        assert_eq!(s.peek_time(), Some(t(20)));
        assert_eq!(s.now(), t(10));
    }

    /// Against a model (a sorted list): any interleaving of schedules (into either heap) and
    /// pops, with ties and times in the past, pops the same events at the same times, and `len`
    /// agrees.
    mod against_a_model {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn pops_what_a_sorted_list_pops(ops in proptest::collection::vec((0u8..3, 0u64..20), 1..200)) {
                let mut s = Scheduler::new();
                // (time, sequence, event), popped in (time, sequence) order.
                let mut model: Vec<(u64, u64, u32)> = Vec::new();
                let (mut now, mut sequence) = (0u64, 0u64);
                for (i, &(op, delta)) in ops.iter().enumerate() {
                    if op == 0 {
                        let popped = s.pop_before(Time::MAX);
                        model.sort();
                        let expected = (!model.is_empty()).then(|| model.remove(0));
                        if let Some((time, _, _)) = expected {
                            now = time;
                        }
                        prop_assert_eq!(popped, expected.map(|(time, _, e)| (t(time), e)));
                    } else {
                        // Half of these are in the past (treated as now), many tie; either heap.
                        let time = (now + delta).saturating_sub(10);
                        if op == 1 {
                            s.schedule(t(time), i as u32);
                        } else {
                            s.schedule_timer(t(time), i as u32);
                        }
                        model.push((time.max(now), sequence, i as u32));
                        sequence += 1;
                    }
                    prop_assert_eq!(s.len(), model.len());
                    prop_assert_eq!(s.is_empty(), model.is_empty());
                }
            }
        }
    }
}
