//! Pacing: a token bucket of send credit refilled at the allowed rate, with bounded bursts.
//!
//! The bucket holds at most the credit the rate earns in `BURST_SPAN`, never less than one packet
//! and never more than `max_burst` packets. A 400 kbit/s flow earns 50 bytes per millisecond, so
//! its packets always leave one by one; a 2 Gbit/s flow earns 250 kB per millisecond, so up to
//! `max_burst` packets may leave back to back. Credit saved during idle time is capped the same
//! way, so an idle sender never bursts more than that (RFC 5348 §4.6: no credit beyond a bound).

use crate::rate::Rate;
use crate::time::{Duration, Time};

/// The burst allowance is the credit the rate accumulates in this span.
pub const BURST_SPAN: Duration = Duration::from_millis(1);
/// Credit shortfalls smaller than this many bytes are float rounding, not a reason to wait.
const EPSILON_BYTES: f64 = 1e-6;

/// Spaces packets out at the allowed rate.
#[derive(Debug, Clone)]
pub struct Pacer {
    max_burst: u32,
    /// Send credit in bytes at `updated` (negative after sending ahead of the schedule).
    credit: f64,
    /// When `credit` was last brought up to date; `None` before the first packet.
    updated: Option<Time>,
}

impl Pacer {
    /// A pacer letting at most `max_burst` packets out back to back at high rates.
    pub fn new(max_burst: u32) -> Self {
        Pacer {
            max_burst: max_burst.max(1),
            credit: 0.0,
            updated: None,
        }
    }

    /// The most credit the bucket holds at `rate` for packets of `size` bytes.
    pub fn burst_bytes(&self, rate: Rate, size: usize) -> f64 {
        let size = size.max(1) as f64;
        let earned = rate.bytes_per_sec() * BURST_SPAN.as_secs_f64();
        earned.min(f64::from(self.max_burst) * size).max(size)
    }

    /// The credit available at `now`.
    fn credit_at(&self, now: Time, rate: Rate, size: usize) -> f64 {
        let capacity = self.burst_bytes(rate, size);
        match self.updated {
            None => capacity,
            Some(updated) => {
                let earned = rate.bytes_per_sec() * now.saturating_since(updated).as_secs_f64();
                (self.credit + earned).min(capacity)
            }
        }
    }

    /// Earliest time a packet of `size` bytes may leave at `rate` (<= now: send now).
    pub fn next_send_time(&self, now: Time, rate: Rate, size: usize) -> Time {
        if rate.is_zero() {
            return Time::MAX;
        }
        let shortfall = size as f64 - self.credit_at(now, rate, size);
        if shortfall <= EPSILON_BYTES {
            return now;
        }
        let nanos = (shortfall / rate.bytes_per_sec() * 1e9).ceil();
        if nanos >= u64::MAX as f64 {
            return Time::MAX;
        }
        now + Duration::from_nanos(nanos as u64)
    }

    /// A packet of `size` bytes left at `now`.
    pub fn on_sent(&mut self, now: Time, rate: Rate, size: usize) {
        let capacity = self.burst_bytes(rate, size);
        // Debt is bounded too: sending far ahead of schedule does not block the flow for long.
        self.credit = (self.credit_at(now, rate, size) - size as f64).max(-capacity);
        self.updated = Some(now.max(self.updated.unwrap_or(now)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sender that always has data: returns the departure times of `count` packets from `start`.
    fn greedy(p: &mut Pacer, start: Time, rate: Rate, size: usize, count: usize) -> Vec<Time> {
        let mut now = start;
        let mut sent = vec![];
        for _ in 0..count {
            now = now.max(p.next_send_time(now, rate, size));
            p.on_sent(now, rate, size);
            sent.push(now);
        }
        sent
    }

    /// The largest number of packets that left at one instant.
    fn largest_burst(times: &[Time]) -> usize {
        times
            .chunk_by(|a, b| a == b)
            .map(<[Time]>::len)
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn a_slow_flow_never_bursts() {
        let rate = Rate::from_kbps(400);
        let mut p = Pacer::new(16);
        let times = greedy(&mut p, Time::ZERO, rate, 1250, 50);
        assert_eq!(largest_burst(&times), 1);
        // 1250 bytes at 50 kB/s: 25 ms apart.
        assert_eq!(times[10] - times[9], Duration::from_millis(25));
        // After 10 s of idle time the saved-up credit is still one packet.
        let later = *times.last().unwrap() + Duration::from_secs(10);
        let times = greedy(&mut p, later, rate, 1250, 10);
        assert_eq!(largest_burst(&times), 1);
        assert!(times[1] - times[0] >= Duration::from_millis(25));
    }

    #[test]
    fn a_fast_flow_may_send_max_burst_back_to_back() {
        let rate = Rate::from_mbps(2000);
        let mut p = Pacer::new(16);
        let times = greedy(&mut p, Time::ZERO, rate, 1500, 100);
        assert_eq!(largest_burst(&times), 16);
        assert!(times[16] > times[0]);
        // After idle, again at most 16.
        let later = *times.last().unwrap() + Duration::from_secs(1);
        let times = greedy(&mut p, later, rate, 1500, 100);
        assert_eq!(largest_burst(&times), 16);
    }

    #[test]
    fn long_run_rate_is_the_allowed_rate() {
        let rate = Rate::from_mbps(10);
        let mut p = Pacer::new(16);
        let times = greedy(&mut p, Time::ZERO, rate, 1250, 10_001);
        let span = times[10_000] - times[0];
        // 10000 packets of 1250 B at 1.25 MB/s take 10 s, less the initial burst allowance.
        let secs = span.as_secs_f64();
        assert!((secs - 10.0).abs() < 0.002, "{secs}");
        assert_eq!(p.next_send_time(Time::ZERO, Rate::ZERO, 1250), Time::MAX);
    }

    #[test]
    fn burst_allowance_grows_with_rate() {
        let p = Pacer::new(16);
        assert_eq!(p.burst_bytes(Rate::from_kbps(400), 1250), 1250.0);
        // 100 Mbit/s earns 12500 B per ms: 10 packets of 1250 B.
        assert_eq!(p.burst_bytes(Rate::from_mbps(100), 1250), 12_500.0);
        assert_eq!(p.burst_bytes(Rate::from_mbps(2000), 1250), 16.0 * 1250.0);
    }
}
