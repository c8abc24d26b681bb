//! The event scheduler: events ordered by time, ties broken by insertion order.
//!
//! Events are small plain values (the simulator's event enum addresses components by typed ids),
//! so scheduling never allocates beyond its queues' own growth.
//!
//! The packet events wait in a calendar ([`crate::wheel`]): a ring of time slots, found from an
//! event's time without comparisons. Timers wait in a binary heap of their own. Most events
//! popped from the heap schedule another, so one popped is left at the top, spent, until the
//! next call: a schedule into the heap writes over it (one sift down, where a pop and a push
//! would sift twice), a pop removes it first. The order is the same.

use crate::wheel::{Entry, Place, Wheel, SLOT_SHIFT};
use qstp_proto::Time;
use std::collections::BinaryHeap;

/// The time of a key.
fn time_of(key: u128) -> Time {
    Time::from_nanos((key >> 64) as u64)
}

/// A discrete-event scheduler.
///
/// Events wait in one of two queues: [`Scheduler::schedule`]'s calendar, for the packet events
/// that come and go by the thousand per second, and [`Scheduler::schedule_timer`]'s heap, for
/// wake-ups that are mostly set far ahead and rarely fire (retransmission timers). One clock and
/// one sequence number span both: the order is that of a single heap.
pub struct Scheduler<E> {
    events: Wheel<E>,
    timers: BinaryHeap<Entry<E>>,
    /// Whether the timers' top is the event last popped, left in place.
    spent: bool,
    next_sequence: u64,
    now: Time,
    processed: u64,
}

impl<E: Copy> Default for Scheduler<E> {
    fn default() -> Self {
        Scheduler {
            events: Wheel::new(),
            timers: BinaryHeap::new(),
            spent: false,
            next_sequence: 0,
            now: Time::ZERO,
            processed: 0,
        }
    }
}

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
        self.events.len() + self.timers.len() - usize::from(self.spent)
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Remove the spent timer at the heap's top, if one is there.
    fn drop_spent(&mut self) {
        if std::mem::take(&mut self.spent) {
            self.timers.pop();
        }
    }

    /// The key of an event scheduled now at `time` (a time in the past is treated as now).
    #[inline]
    fn key(&mut self, time: Time) -> u128 {
        let time = time.max(self.now);
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        (u128::from(time.as_nanos()) << 64) | u128::from(sequence)
    }

    /// Schedule `event` at `time`; a time in the past is treated as now (causality holds).
    #[inline]
    pub fn schedule(&mut self, time: Time, event: E) {
        let key = self.key(time);
        self.events.push(key, event);
    }

    /// [`Scheduler::schedule`] for a wake-up that is usually set well ahead of the events around
    /// it and often set again before it fires: the same order, kept apart from the busy calendar.
    pub fn schedule_timer(&mut self, time: Time, event: E) {
        let key = self.key(time);
        let entry = Entry { key, event };
        if std::mem::take(&mut self.spent) {
            if let Some(mut top) = self.timers.peek_mut() {
                *top = entry;
                return;
            }
        }
        self.timers.push(entry);
    }

    /// The key of the next event, and where it waits (`None`: the timers' heap).
    #[inline]
    fn next(&mut self) -> Option<(u128, Option<Place>)> {
        self.drop_spent();
        match (self.events.peek(), self.timers.peek()) {
            (Some((event, _)), Some(timer)) if timer.key < event => Some((timer.key, None)),
            (Some((event, place)), _) => Some((event, Some(place))),
            (None, Some(timer)) => Some((timer.key, None)),
            (None, None) => None,
        }
    }

    /// When the next event is due.
    pub fn peek_time(&mut self) -> Option<Time> {
        self.next().map(|(key, _)| time_of(key))
    }

    /// Take the next event if it is due before `end`, advancing the clock to it.
    #[inline]
    pub fn pop_before(&mut self, end: Time) -> Option<(Time, E)> {
        let (key, place) = self.next()?;
        let time = time_of(key);
        if time >= end {
            return None;
        }
        let event = match place {
            Some(place) => self.events.pop(place),
            None => {
                self.spent = true;
                self.timers.peek().expect("the next timer").event
            }
        };
        self.now = time;
        self.events.advance(time.as_nanos() >> SLOT_SHIFT);
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

        /// Play `ops` on a scheduler and on a sorted list: (kind, delta) schedules an event
        /// `delta - past` after the last popped time (kind 1 into the calendar, 2 as a timer;
        /// before now is treated as now) or pops one (kind 0); both must agree throughout.
        fn play(ops: &[(u8, u64)], past: u64) -> Result<(), TestCaseError> {
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
                    let time = (now + delta).saturating_sub(past);
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
                prop_assert_eq!(s.peek_time(), model.iter().min().map(|m| t(m.0)));
            }
            Ok(())
        }

        proptest! {
            /// Within one slot of the calendar: half the times in the past, many ties.
            #[test]
            fn pops_what_a_sorted_list_pops(ops in proptest::collection::vec((0u8..3, 0u64..20), 1..200)) {
                play(&ops, 10)?;
            }

            /// Across the calendar: times a few slots ahead, round the ring, and far beyond it
            /// (up to 17 s: the window is 268 ms), so that events wait outside the ring and come
            /// in as it turns, or the ring empties and jumps.
            #[test]
            fn pops_what_a_sorted_list_pops_at_every_scale(
                ops in proptest::collection::vec(
                    (0u8..3, prop_oneof![0u64..20_000, 0u64..300_000_000, 0u64..(1 << 34)]),
                    1..300,
                )
            ) {
                play(&ops, 5_000)?;
            }
        }
    }
}
