//! Sojourn times at a link's queue: how long each packet waited between its offer and the start
//! of its serialisation, in bounded memory.
//!
//! The link writes a packet's arrival instant into a slot indexed by its [`PacketId`] (so the
//! slots never outnumber the driver's pool) and, when the packet starts serialising, adds the
//! difference to a fixed-size histogram: two writes, a subtraction and a bin index per packet.
//!
//! The histogram is log-linear: delays below 128 ns have a bin of their own (exact); above, each
//! power of two is cut into 64 equal bins, so a bin is at most 1/64 of its lower edge wide. A
//! percentile is read as the middle of its bin, which is within 1/128 (0.8%) of every delay the
//! bin holds. The mean is exact (a sum of nanoseconds).

use super::PacketId;
use qstp_proto::{Duration, Time};

/// Bins per power of two (2^SUB_BITS).
const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
/// Exact bins for the delays below 2 SUB: 0..127 ns.
const EXACT: u64 = 2 * SUB;
/// Every u64 of nanoseconds has a bin: 128 exact ones, then 64 per power of two from 2^7 to 2^63.
const BINS: usize = (EXACT + (64 - SUB_BITS as u64 - 1) * SUB) as usize;

/// Mean and percentiles of the sojourn times a [`Sojourn`] counted, nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SojournStats {
    /// Packets counted.
    pub samples: u64,
    /// Mean (exact).
    pub mean_ns: f64,
    /// Median (within 0.8%).
    pub p50_ns: f64,
    /// 95th percentile (within 0.8%).
    pub p95_ns: f64,
    /// 99th percentile (within 0.8%).
    pub p99_ns: f64,
}

/// The sojourn times of the packets a link's queue let go. Memory: 30 KiB of bins, and one
/// instant per pool slot the link has seen.
#[derive(Clone)]
pub struct Sojourn {
    /// The instant each packet slot was last offered.
    arrived: Vec<Time>,
    /// Packets per bin.
    bins: Box<[u64]>,
    samples: u64,
    sum_ns: u128,
}

impl std::fmt::Debug for Sojourn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sojourn")
            .field("samples", &self.samples)
            .finish()
    }
}

impl Default for Sojourn {
    fn default() -> Self {
        Self::new()
    }
}

/// The bin of `ns`.
#[inline]
fn bin_of(ns: u64) -> usize {
    if ns < EXACT {
        return ns as usize;
    }
    // ns has its highest bit at `top` >= 7: keep the SUB_BITS bits below it.
    let top = 63 - u64::from(ns.leading_zeros());
    let shift = top - u64::from(SUB_BITS);
    (EXACT + (top - u64::from(SUB_BITS) - 1) * SUB + ((ns >> shift) - SUB)) as usize
}

/// The middle of bin `index`, ns.
fn middle_of(index: usize) -> f64 {
    let index = index as u64;
    if index < EXACT {
        return index as f64;
    }
    let octave = (index - EXACT) / SUB;
    let shift = octave + 1;
    let low = (SUB + (index - EXACT) % SUB) << shift;
    low as f64 + ((1u64 << shift) as f64 - 1.0) / 2.0
}

impl Sojourn {
    /// Nothing counted yet.
    pub fn new() -> Self {
        Sojourn {
            arrived: Vec::new(),
            bins: vec![0; BINS].into_boxed_slice(),
            samples: 0,
            sum_ns: 0,
        }
    }

    /// Packet `id` was offered at `now`.
    #[inline]
    pub fn arrive(&mut self, id: PacketId, now: Time) {
        let i = id.index();
        if i >= self.arrived.len() {
            self.arrived.resize(i + 1, now);
        }
        self.arrived[i] = now;
    }

    /// Packet `id` started serialising at `now`: count the time since its offer.
    #[inline]
    pub fn depart(&mut self, id: PacketId, now: Time) {
        let Some(&arrived) = self.arrived.get(id.index()) else {
            return;
        };
        self.record(now.saturating_since(arrived));
    }

    /// Count one sojourn time.
    #[inline]
    pub fn record(&mut self, sojourn: Duration) {
        let ns = sojourn.as_nanos();
        self.bins[bin_of(ns)] += 1;
        self.samples += 1;
        self.sum_ns += u128::from(ns);
    }

    /// Forget what was counted (not the arrivals of the packets still queued): measure from now.
    pub fn restart(&mut self) {
        self.bins.fill(0);
        self.samples = 0;
        self.sum_ns = 0;
    }

    /// Mean and percentiles; `None` before any packet left.
    pub fn stats(&self) -> Option<SojournStats> {
        (self.samples > 0).then(|| SojournStats {
            samples: self.samples,
            mean_ns: self.sum_ns as f64 / self.samples as f64,
            p50_ns: self.quantile(0.50),
            p95_ns: self.quantile(0.95),
            p99_ns: self.quantile(0.99),
        })
    }

    /// The middle of the bin of the `ceil(q n)`-th smallest sojourn time (the nearest-rank
    /// percentile).
    fn quantile(&self, q: f64) -> f64 {
        let rank = ((q * self.samples as f64).ceil() as u64).clamp(1, self.samples);
        let mut seen = 0;
        for (i, &count) in self.bins.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return middle_of(i);
            }
        }
        middle_of(BINS - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_cover_every_value_in_order_and_within_their_resolution() {
        assert_eq!(bin_of(0), 0);
        assert_eq!(bin_of(127), 127);
        assert_eq!(bin_of(128), 128);
        assert_eq!(bin_of(u64::MAX), BINS - 1);
        let mut last = 0;
        for ns in (0..200_000u64).chain((20..64).map(|b| (1u64 << b) + 12345)) {
            let b = bin_of(ns);
            assert!(b >= last, "bins grow with the value ({ns})");
            last = b;
            let middle = middle_of(b);
            assert!(
                (middle - ns as f64).abs() <= ns as f64 / 128.0 + 0.5,
                "{ns} ns read as {middle}"
            );
        }
    }

    #[test]
    fn percentiles_and_mean_of_known_sojourns() {
        let mut s = Sojourn::new();
        assert_eq!(s.stats(), None);
        // 1..=100 ms, one packet each, through arrive/depart with reused slots.
        for k in 1..=100u64 {
            let at = Time::ZERO + Duration::from_secs(k);
            s.arrive(PacketId((k % 3) as u32), at);
            s.depart(PacketId((k % 3) as u32), at + Duration::from_millis(k));
        }
        let st = s.stats().unwrap();
        assert_eq!(st.samples, 100);
        assert!((st.mean_ns - 50.5e6).abs() < 1.0);
        for (got, want) in [(st.p50_ns, 50e6), (st.p95_ns, 95e6), (st.p99_ns, 99e6)] {
            assert!((got - want).abs() <= want / 128.0, "{got} against {want}");
        }
        s.restart();
        assert_eq!(s.stats(), None);
        // A packet never offered counts nothing.
        s.depart(PacketId(99), Time::ZERO + Duration::from_secs(1));
        assert_eq!(s.stats(), None);
    }
}
