//! The receiver's loss history: loss detection, loss events and loss intervals (RFC 5348 §5).
//!
//! Memory is bounded by construction: at most `NDUPACK` received packets wait above the lowest
//! unresolved packet number (a packet with `NDUPACK` later arrivals is declared lost at once), and
//! only the `N_INTERVALS` most recent closed loss intervals are kept. A gap of any size is resolved
//! loss event by loss event, not packet by packet, with at most `MAX_EVENTS_PER_GAP` new events.

use crate::time::{Duration, Time};

/// A packet is lost once this many later packets have arrived (RFC 5348 §5.1).
pub const NDUPACK: usize = 3;
/// Loss intervals averaged (RFC 5348 §5.4).
pub const N_INTERVALS: usize = 8;
/// Interval weights w_1..w_n (RFC 5348 §5.4).
const WEIGHTS: [f64; N_INTERVALS] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];
/// Most new loss events one gap can start; later losses of the gap join the last of them.
const MAX_EVENTS_PER_GAP: usize = 2 * (N_INTERVALS + 1);
/// Most loss events held for a delegation group's decision; one more is counted at once.
pub const MAX_DEFERRED: usize = MAX_EVENTS_PER_GAP;

/// A received packet: its number and arrival time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Arrival {
    number: u64,
    at: Time,
}

/// Loss detection and loss intervals over the packet numbers a receiver sees.
#[derive(Debug, Clone, Default)]
pub struct LossHistory {
    /// Lowest packet number not yet resolved as received or lost (`None` before any packet).
    next: Option<u64>,
    /// The highest resolved received packet (all numbers below `next` are resolved).
    last_received: Option<Arrival>,
    /// Received packets above `next`, ascending; fewer than `NDUPACK` between calls.
    pending: Vec<Arrival>,
    /// Highest packet number seen.
    highest: u64,
    /// First lost packet of the current loss event and its (interpolated) time.
    event_start: Option<Arrival>,
    /// Closed loss intervals in packets, most recent first (I_1, I_2, ...).
    intervals: Vec<f64>,
    /// Loss events recorded since the start.
    loss_events: u64,
    /// Packets declared lost since the start.
    lost_packets: u64,
    /// Whether new loss events wait for a decision ([`LossHistory::defer_events`]).
    defer: bool,
    /// Loss events held for a decision, oldest first (at most [`MAX_DEFERRED`]).
    deferred: Vec<Arrival>,
    /// The first loss of the latest held or forgiven event: later losses within an RTT of it
    /// belong to it (RFC 5348 §5.2), as they would to a counted one.
    absorbing: Option<Arrival>,
}

impl LossHistory {
    /// An empty history.
    pub fn new() -> Self {
        LossHistory::default()
    }

    /// Record the arrival of `number` at `now`; `rtt` groups losses into events (RFC 5348 §5.2).
    ///
    /// `first_interval` gives the synthetic first loss interval (RFC 5348 §6.3.1); it is called
    /// only when the first loss event is detected. Returns true if a new loss event began.
    /// Packets arriving after they were declared lost, and duplicates, change nothing.
    pub fn on_packet(
        &mut self,
        number: u64,
        now: Time,
        rtt: Duration,
        first_interval: impl FnOnce() -> f64,
    ) -> bool {
        let arrival = Arrival { number, at: now };
        let Some(next) = self.next else {
            self.next = Some(number.saturating_add(1));
            self.last_received = Some(arrival);
            self.highest = number;
            return false;
        };
        if number < next || self.pending.iter().any(|a| a.number == number) {
            return false;
        }
        let slot = self.pending.partition_point(|a| a.number < number);
        self.pending.insert(slot, arrival);
        self.highest = self.highest.max(number);

        let mut first_interval = Some(first_interval);
        let mut new_event = false;
        loop {
            // Consume packets that arrived in order.
            while let Some(first) = self.pending.first().copied() {
                if Some(first.number) != self.next {
                    break;
                }
                self.pending.remove(0);
                self.last_received = Some(first);
                self.next = Some(first.number.saturating_add(1));
            }
            // RFC 5348 §5.1: a missing packet with NDUPACK later arrivals is lost.
            if self.pending.len() < NDUPACK {
                break;
            }
            let after = self.pending[0];
            let (Some(from), Some(before)) = (self.next, self.last_received) else {
                break;
            };
            new_event |= self.record_losses(
                from,
                after.number - 1,
                before,
                after,
                rtt,
                &mut first_interval,
            );
            self.next = Some(after.number);
        }
        new_event
    }

    /// Declare `first..=last` lost, between the arrivals `before` and `after` (RFC 5348 §5.2).
    fn record_losses(
        &mut self,
        first: u64,
        last: u64,
        before: Arrival,
        after: Arrival,
        rtt: Duration,
        first_interval: &mut Option<impl FnOnce() -> f64>,
    ) -> bool {
        self.lost_packets = self.lost_packets.saturating_add(last - first + 1);
        let mut new_event = false;
        let mut events = 0;
        let mut number = first;
        while number <= last {
            let t_loss = interpolate(before, after, number);
            let in_current =
                matches!(self.grouping_start(), Some(start) if t_loss <= start.at + rtt);
            if !in_current {
                // RFC 5348 §5.2: a loss more than one RTT after the current event's start begins a
                // new loss event.
                self.begin_event(Arrival { number, at: t_loss }, first_interval);
                new_event = true;
                events += 1;
                if events == MAX_EVENTS_PER_GAP {
                    break;
                }
            }
            let Some(start) = self.grouping_start() else {
                break;
            };
            // Skip to the first lost packet whose interpolated time is past this event.
            number = number
                .saturating_add(1)
                .max(first_after(before, after, start.at + rtt));
            if number == u64::MAX {
                break;
            }
        }
        new_event
    }

    /// The event later losses may join: the latest one begun, counted or not.
    fn grouping_start(&self) -> Option<Arrival> {
        match (self.event_start, self.absorbing) {
            (Some(counted), Some(held)) => Some(if held.at > counted.at { held } else { counted }),
            (counted, held) => counted.or(held),
        }
    }

    fn begin_event(&mut self, start: Arrival, first_interval: &mut Option<impl FnOnce() -> f64>) {
        // Free & Stunts paper §II-B: "we have chosen to delegate losses during the AIMD
        // behavior": the event that ends slow start is always counted.
        if self.defer && self.event_start.is_some() && self.deferred.len() < MAX_DEFERRED {
            self.deferred.push(start);
            self.absorbing = Some(start);
            return;
        }
        self.count_event(start, first_interval);
    }

    /// Count a loss event beginning at `start`.
    fn count_event(&mut self, start: Arrival, first_interval: &mut Option<impl FnOnce() -> f64>) {
        match self.event_start {
            // RFC 5348 §5.3: an interval runs from one event's first loss to the next one's.
            // An event counted late (held for a decision, or given by another connection) never
            // makes an interval shorter than one packet.
            Some(previous) => self.intervals.insert(
                0,
                start.number.saturating_sub(previous.number).max(1) as f64,
            ),
            // RFC 5348 §6.3.1: the first interval is synthesised from the receive rate.
            None => {
                let synthetic = first_interval.take().map_or(1.0, |f| f());
                let synthetic = if synthetic.is_finite() {
                    synthetic.max(1.0)
                } else {
                    1.0
                };
                self.intervals.insert(0, synthetic);
            }
        }
        self.intervals.truncate(N_INTERVALS);
        self.event_start = Some(start);
        self.loss_events += 1;
    }

    /// Hold new loss events for a decision from now on (`on`), or count them at once (the
    /// default): the Free & Stunts paper's deferred reaction (§II-B), for an equation-based
    /// sender whose reaction to a loss event is the event's place in its history. A held event
    /// is not in [`LossHistory::loss_event_rate`] until [`LossHistory::count_deferred`] counts
    /// it; [`LossHistory::forgive_deferred`] drops it (another connection reacted in its place).
    /// Turning deferral off counts the events still held.
    pub fn defer_events(&mut self, on: bool) {
        self.defer = on;
        if !on {
            while self.count_deferred(|| 1.0) {}
        }
    }

    /// Loss events held for a decision.
    pub fn deferred(&self) -> usize {
        self.deferred.len()
    }

    /// Count the oldest held loss event (the connection reacts to it itself); `first_interval`
    /// as for [`LossHistory::on_packet`]. Whether one was held.
    pub fn count_deferred(&mut self, first_interval: impl FnOnce() -> f64) -> bool {
        if self.deferred.is_empty() {
            return false;
        }
        let start = self.deferred.remove(0);
        self.count_event(start, &mut Some(first_interval));
        true
    }

    /// Drop the oldest held loss event: another connection reacted in this one's place (Free &
    /// Stunts paper §II-B). Whether one was held.
    pub fn forgive_deferred(&mut self) -> bool {
        if self.deferred.is_empty() {
            return false;
        }
        self.deferred.remove(0);
        true
    }

    /// Count a loss event at `now` that this connection did not see: it reacts in another
    /// connection's place (Free & Stunts paper §II-B). It begins after the highest packet seen,
    /// so it closes the open interval there.
    pub fn take_event(&mut self, now: Time, first_interval: impl FnOnce() -> f64) {
        let start = Arrival {
            number: self.highest.saturating_add(1),
            at: now,
        };
        self.count_event(start, &mut Some(first_interval));
    }

    /// The average loss interval I_mean (RFC 5348 §5.4), `None` before the first loss event.
    pub fn mean_interval(&self) -> Option<f64> {
        let start = self.event_start?;
        let k = self.intervals.len();
        // The open interval I_0: packets from the current event's first loss to the highest seen.
        let open = (self.highest.saturating_sub(start.number) + 1) as f64;
        let mut i_tot0 = open * WEIGHTS[0];
        let mut i_tot1 = 0.0;
        let mut w_tot = 0.0;
        for (i, &interval) in self.intervals.iter().enumerate() {
            if i + 1 < k {
                i_tot0 += interval * WEIGHTS[i + 1];
            }
            i_tot1 += interval * WEIGHTS[i];
            w_tot += WEIGHTS[i];
        }
        // RFC 5348 §5.4: the open interval counts only if it raises the average.
        Some(i_tot0.max(i_tot1) / w_tot)
    }

    /// The loss event rate p = 1 / I_mean (RFC 5348 §5.4), zero before the first loss event.
    pub fn loss_event_rate(&self) -> f64 {
        self.mean_interval()
            .map_or(0.0, |mean| (1.0 / mean).min(1.0))
    }

    /// Loss events recorded so far.
    pub fn loss_events(&self) -> u64 {
        self.loss_events
    }

    /// Packets declared lost so far.
    pub fn lost_packets(&self) -> u64 {
        self.lost_packets
    }
}

/// The arrival time a lost packet would have had (RFC 5348 §5.2 interpolation).
fn interpolate(before: Arrival, after: Arrival, number: u64) -> Time {
    let (tb, ta) = (before.at.as_nanos(), after.at.as_nanos());
    if ta <= tb || after.number <= before.number {
        return before.at;
    }
    let span = u128::from(after.number - before.number);
    let offset = u128::from(number.saturating_sub(before.number)).min(span);
    let nanos = u128::from(ta - tb) * offset / span;
    Time::from_nanos(tb + nanos as u64)
}

/// The smallest packet number whose interpolated time is later than `limit` (`u64::MAX` if none).
fn first_after(before: Arrival, after: Arrival, limit: Time) -> u64 {
    let (tb, ta) = (before.at.as_nanos(), after.at.as_nanos());
    if limit.as_nanos() < tb {
        return 0;
    }
    if ta <= tb || after.number <= before.number {
        return u64::MAX;
    }
    // floor(D * (n - sb) / N) > L  <=>  n - sb >= ceil((L + 1) * N / D).
    let l = u128::from(limit.as_nanos() - tb);
    let (d, n) = (
        u128::from(ta - tb),
        u128::from(after.number - before.number),
    );
    let Some(scaled) = (l + 1).checked_mul(n) else {
        return u64::MAX;
    };
    u64::try_from(u128::from(before.number) + scaled.div_ceil(d)).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[path = "loss_history_tests.rs"]
mod tests;
