//! Pacing: a token bucket of send credit refilled at the allowed rate, with bounded bursts.

use crate::rate::Rate;
use crate::time::Time;

/// Spaces packets out at the allowed rate.
#[derive(Debug, Clone)]
pub struct Pacer {}

impl Pacer {
    /// A pacer letting at most `max_burst` packets out back to back at high rates.
    pub fn new(max_burst: u32) -> Self {
        let _ = max_burst;
        todo!()
    }

    /// Earliest time a packet of `size` bytes may leave at `rate` (<= now: send now).
    pub fn next_send_time(&self, now: Time, rate: Rate, size: usize) -> Time {
        let _ = (now, rate, size);
        todo!()
    }

    /// A packet of `size` bytes left at `now`.
    pub fn on_sent(&mut self, now: Time, rate: Rate, size: usize) {
        let _ = (now, rate, size);
        todo!()
    }
}
