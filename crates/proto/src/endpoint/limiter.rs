//! A bound on the stateless replies (retries, refusals) a server sends towards one network: a
//! token bucket per source prefix (IPv4 /24, IPv6 /48), so hellos from spoofed addresses cannot
//! make it reflect replies at a victim's network at the rate they arrive, while other networks
//! are answered as before. QUIC leaves the bound to the server (RFC 9000 §8.1.1, §21.4).

use crate::time::Time;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

/// Replies a prefix may receive at once.
pub const REPLY_BURST: u32 = 16;
/// Replies per second a prefix earns back.
pub const REPLIES_PER_SECOND: u32 = 8;
/// Prefixes tracked at once; past it the one heard from longest ago is forgotten.
pub const MAX_PREFIXES: usize = 4096;

/// The network a source address belongs to for the bound: its IPv4 /24 or IPv6 /48 (an IPv4
/// address mapped into IPv6 counts as IPv4).
fn prefix(addr: &SocketAddr) -> (u8, u128) {
    match addr.ip() {
        IpAddr::V4(v4) => (4, u128::from(u32::from(v4) >> 8)),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => (4, u128::from(u32::from(v4) >> 8)),
            None => (6, u128::from(v6) >> 80),
        },
    }
}

/// One prefix's bucket: whole tokens, refilled from `since`.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: u32,
    since: Time,
}

/// The token buckets of the prefixes that asked for replies lately.
#[derive(Debug, Default, Clone)]
pub(crate) struct ReplyLimiter {
    buckets: BTreeMap<(u8, u128), Bucket>,
}

impl ReplyLimiter {
    /// Whether a reply towards `remote` may go at `now` (and take a token if so).
    pub(crate) fn allow(&mut self, now: Time, remote: &SocketAddr) -> bool {
        // Loopback cannot be spoofed from off the host (RFC 1122 §3.2.1.3: 127/8 never appears
        // on a network), and local tests open many connections at once.
        if remote.ip().is_loopback() {
            return true;
        }
        let key = prefix(remote);
        if !self.buckets.contains_key(&key) && self.buckets.len() >= MAX_PREFIXES {
            if let Some(oldest) = self
                .buckets
                .iter()
                .min_by_key(|(_, b)| b.since)
                .map(|(k, _)| *k)
            {
                self.buckets.remove(&oldest);
            }
        }
        let bucket = self.buckets.entry(key).or_insert(Bucket {
            tokens: REPLY_BURST,
            since: now,
        });
        // One token per 1 / REPLIES_PER_SECOND s since the last refill; the remainder of the
        // interval is kept by moving `since` only by the whole tokens earned.
        let step = 1_000_000_000 / u64::from(REPLIES_PER_SECOND);
        let earned = now.saturating_since(bucket.since).as_nanos() / step;
        if earned > 0 {
            bucket.tokens = (u64::from(bucket.tokens) + earned).min(u64::from(REPLY_BURST)) as u32;
            bucket.since += crate::time::Duration::from_nanos(earned * step);
        }
        if bucket.tokens == 0 {
            return false;
        }
        bucket.tokens -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    fn at(ms: u64) -> Time {
        Time::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn a_prefix_gets_its_burst_then_its_rate_and_others_are_untouched() {
        let mut limiter = ReplyLimiter::default();
        let spoofed = |i: u8| SocketAddr::from(([192, 0, 2, i], 4000));
        let allowed = (0..100)
            .filter(|&i| limiter.allow(at(0), &spoofed(i)))
            .count();
        assert_eq!(allowed, REPLY_BURST as usize, "one /24 shares one bucket");
        // Another network is answered.
        assert!(limiter.allow(at(0), &SocketAddr::from(([198, 51, 100, 1], 4000))));
        // A second later the /24 has earned REPLIES_PER_SECOND more.
        let allowed = (0..100)
            .filter(|&i| limiter.allow(at(1000), &spoofed(i)))
            .count();
        assert_eq!(allowed, REPLIES_PER_SECOND as usize);
        // Loopback is never bounded.
        let local = SocketAddr::from(([127, 0, 0, 1], 4000));
        assert!((0..100).all(|_| limiter.allow(at(0), &local)));
        // IPv6: a /48 is one network.
        let v6 = |last: u16| SocketAddr::from(([0x2001, 0xdb8, 7, 1, 0, 0, 0, last], 4000));
        let allowed = (0..100).filter(|&i| limiter.allow(at(0), &v6(i))).count();
        assert_eq!(allowed, REPLY_BURST as usize);
    }

    #[test]
    fn the_table_is_bounded() {
        let mut limiter = ReplyLimiter::default();
        for i in 0..(MAX_PREFIXES as u32 + 100) {
            let addr = SocketAddr::from((std::net::Ipv4Addr::from(i << 8), 1));
            assert!(limiter.allow(at(u64::from(i)), &addr));
        }
        assert_eq!(limiter.buckets.len(), MAX_PREFIXES);
    }
}
