//! The event scheduler: a heap of events ordered by time, ties broken by insertion order.
//!
//! Events are small plain values (the simulator's event enum addresses components by typed ids),
//! so scheduling never allocates beyond the heap's own growth.

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
pub struct Scheduler<E> {
    heap: BinaryHeap<Entry<E>>,
    next_sequence: u64,
    now: Time,
    processed: u64,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Scheduler {
            heap: BinaryHeap::new(),
            next_sequence: 0,
            now: Time::ZERO,
            processed: 0,
        }
    }
}

impl<E> Scheduler<E> {
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
        self.heap.len()
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedule `event` at `time`; a time in the past is treated as now (causality holds).
    pub fn schedule(&mut self, time: Time, event: E) {
        let time = time.max(self.now);
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let key = (u128::from(time.as_nanos()) << 64) | u128::from(sequence);
        self.heap.push(Entry { key, event });
    }

    /// When the next event is due.
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(Entry::time)
    }

    /// Take the next event if it is due before `end`, advancing the clock to it.
    pub fn pop_before(&mut self, end: Time) -> Option<(Time, E)> {
        if self.heap.peek()?.time() >= end {
            return None;
        }
        let entry = self.heap.pop()?;
        let time = entry.time();
        self.now = time;
        self.processed += 1;
        Some((time, entry.event))
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
}
