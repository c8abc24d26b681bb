//! A token bucket with exact integer arithmetic, shared by the token-bucket markers.
//!
//! Tokens are counted in bit-nanoseconds (a byte is 8e9 units), so refilling at `rate` bit/s over
//! `d` ns adds exactly `rate * d` units: no rounding, no drift however long the run.

use qstp_proto::{Rate, Time};

/// Units of token per byte: 8 bits times 10^9 ns per second.
const UNITS_PER_BYTE: u128 = 8 * 1_000_000_000;

/// A bucket of `depth` bytes holding tokens.
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    depth: u128,
    tokens: u128,
}

impl Bucket {
    /// A full bucket of `depth_bytes` (RFC 2697 §3.1, RFC 2698 §3.1: buckets start full).
    pub(crate) fn full(depth_bytes: u64) -> Self {
        let depth = depth_bytes as u128 * UNITS_PER_BYTE;
        Bucket {
            depth,
            tokens: depth,
        }
    }

    /// Add `units` of token; returns what did not fit.
    pub(crate) fn fill(&mut self, units: u128) -> u128 {
        let room = self.depth - self.tokens;
        let added = units.min(room);
        self.tokens += added;
        units - added
    }

    /// Whether the bucket holds at least `bytes` of token.
    pub(crate) fn has(&self, bytes: usize) -> bool {
        self.tokens >= bytes as u128 * UNITS_PER_BYTE
    }

    /// Remove `bytes` of token (the caller checked [`Bucket::has`]).
    pub(crate) fn take(&mut self, bytes: usize) {
        self.tokens = self.tokens.saturating_sub(bytes as u128 * UNITS_PER_BYTE);
    }

    /// Tokens held, in whole bytes.
    pub(crate) fn bytes(&self) -> u64 {
        (self.tokens / UNITS_PER_BYTE) as u64
    }
}

/// The token stream of one rate: how many units arrived since the last look.
#[derive(Debug, Clone)]
pub(crate) struct Refill {
    rate: Rate,
    last: Option<Time>,
}

impl Refill {
    /// Tokens at `rate`, counted from the first packet.
    pub(crate) fn new(rate: Rate) -> Self {
        Refill { rate, last: None }
    }

    /// Units of token produced since the previous call (none before the first call, or if time
    /// went backwards).
    pub(crate) fn since_last(&mut self, now: Time) -> u128 {
        let elapsed = match self.last {
            Some(last) => now.saturating_since(last).as_nanos(),
            None => 0,
        };
        let later = match self.last {
            Some(last) => now > last,
            None => true,
        };
        if later {
            self.last = Some(now);
        }
        self.rate.bps() as u128 * elapsed as u128
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qstp_proto::Duration;

    #[test]
    fn refill_is_exact_over_many_small_steps() {
        // A rate that is no whole number of bytes per step: 333 bit/s in 10^6 steps of 1 ms.
        let mut refill = Refill::new(Rate::from_bps(333));
        let mut bucket = Bucket {
            depth: u128::MAX,
            tokens: 0,
        };
        let mut now = Time::ZERO;
        refill.since_last(now);
        for _ in 0..1_000_000 {
            now += Duration::from_millis(1);
            bucket.fill(refill.since_last(now));
        }
        // 333 bit/s for 1000 s is 333000 bits = 41625 bytes exactly.
        assert_eq!(bucket.tokens, 41_625 * UNITS_PER_BYTE);
    }

    #[test]
    fn bucket_caps_and_returns_overflow() {
        let mut b = Bucket::full(100);
        b.take(60);
        assert_eq!(b.bytes(), 40);
        let overflow = b.fill(80 * UNITS_PER_BYTE);
        assert_eq!(b.bytes(), 100);
        assert_eq!(overflow, 20 * UNITS_PER_BYTE);
        assert!(b.has(100) && !b.has(101));
    }
}
