//! A lossy, duplicating, reordering channel driven by a proptest-generated schedule (tests only).

use std::collections::BTreeMap;

use proptest::prelude::*;

/// What happens to one item sent over the channel.
#[derive(Debug, Clone, Copy)]
pub struct Hop {
    /// The item is lost.
    pub drop: bool,
    /// The item arrives twice (the copy a little later).
    pub duplicate: bool,
    /// Extra delay beyond the base latency, in steps (different delays reorder).
    pub delay: u64,
}

/// Schedules of up to `len` hops: about 20% loss, 10% duplication, delays up to 20 steps.
pub fn schedule(len: usize) -> impl Strategy<Value = Vec<Hop>> {
    proptest::collection::vec(
        (
            prop::bool::weighted(0.2),
            prop::bool::weighted(0.1),
            0u64..20,
        )
            .prop_map(|(drop, duplicate, delay)| Hop {
                drop,
                duplicate,
                delay,
            }),
        0..len,
    )
}

/// Items in flight; after the schedule runs out the channel is clean, so transfers always finish.
pub struct Channel<T> {
    schedule: Vec<Hop>,
    base_latency: u64,
    sent: usize,
    in_flight: BTreeMap<(u64, u64), T>,
    sequence: u64,
}

impl<T: Clone> Channel<T> {
    /// A channel applying `schedule` to the items sent, in order, with `base_latency` steps of delay.
    pub fn new(schedule: Vec<Hop>, base_latency: u64) -> Self {
        Self {
            schedule,
            base_latency,
            sent: 0,
            in_flight: BTreeMap::new(),
            sequence: 0,
        }
    }

    /// Send one item at step `now`.
    pub fn send(&mut self, now: u64, item: T) {
        let hop = self.schedule.get(self.sent).copied().unwrap_or(Hop {
            drop: false,
            duplicate: false,
            delay: 0,
        });
        self.sent += 1;
        if hop.drop {
            return;
        }
        let arrival = now + self.base_latency + hop.delay;
        if hop.duplicate {
            self.in_flight
                .insert((arrival + 3, self.sequence), item.clone());
            self.sequence += 1;
        }
        self.in_flight.insert((arrival, self.sequence), item);
        self.sequence += 1;
    }

    /// Items arriving at or before step `now`, in arrival order.
    pub fn deliver(&mut self, now: u64) -> Vec<T> {
        let later = self.in_flight.split_off(&(now + 1, 0));
        let due = std::mem::replace(&mut self.in_flight, later);
        due.into_values().collect()
    }
}
