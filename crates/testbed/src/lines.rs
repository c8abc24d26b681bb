//! What both directions of the router share: the clock, the per-group delay lines a packet waits
//! in until its scheduled departure, the record of how late each departure was, and the per-flow
//! counters of what left.

use crate::tun::Tun;
use qstp_proto::{Duration, Time};
use std::collections::VecDeque;

/// The run's clock: monotonic nanoseconds since the run's start, as simulator [`Time`].
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    epoch: std::time::Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Self {
        Clock {
            epoch: std::time::Instant::now(),
        }
    }

    /// The time since the start.
    pub fn now(&self) -> Time {
        Time::from_nanos(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

/// Most bytes the delay lines of one direction hold together: 128 MiB, a second of 1 Gbit/s;
/// beyond it packets are dropped and counted as overruns.
pub const MAX_DELAYED_BYTES: usize = 128 << 20;

/// Departure errors are counted in buckets of this many nanoseconds.
const BUCKET_NS: u64 = 1_000;
/// Buckets: errors up to 10 ms are resolved to 1 us; larger ones land in the last bucket.
const BUCKETS: usize = 10_000;
/// A departure this much later than its schedule is one the router could not keep up with.
pub const LATE_NS: u64 = 1_000_000;

/// How late departures were against their schedule, in a fixed-size histogram.
#[derive(Debug, Clone)]
pub struct Accuracy {
    buckets: Vec<u64>,
    count: u64,
    max_ns: u64,
    late: u64,
}

impl Default for Accuracy {
    fn default() -> Self {
        Accuracy {
            buckets: vec![0; BUCKETS],
            count: 0,
            max_ns: 0,
            late: 0,
        }
    }
}

impl Accuracy {
    /// Count a departure `error_ns` after its scheduled instant.
    pub fn record(&mut self, error_ns: u64) {
        let i = usize::try_from(error_ns / BUCKET_NS).map_or(BUCKETS - 1, |i| i.min(BUCKETS - 1));
        self.buckets[i] += 1;
        self.count += 1;
        self.max_ns = self.max_ns.max(error_ns);
        if error_ns > LATE_NS {
            self.late += 1;
        }
    }

    /// Departures counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The largest error, ns.
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// Departures later than [`LATE_NS`].
    pub fn late(&self) -> u64 {
        self.late
    }

    /// The `q` quantile (0 to 1) of the errors, ns: the upper edge of its bucket (the maximum if
    /// it lies in the last one); 0 with no departure.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return if i == BUCKETS - 1 {
                    self.max_ns
                } else {
                    ((i as u64 + 1) * BUCKET_NS).min(self.max_ns)
                };
            }
        }
        self.max_ns
    }
}

/// A packet waiting for its departure.
#[derive(Debug)]
pub struct Delayed {
    /// When it is due to leave.
    pub due: Time,
    /// When the router read it.
    pub read: Time,
    /// Its flow (index over the run).
    pub flow: usize,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// Per-flow counters of the packets that left, per bin.
#[derive(Debug, Clone, Default)]
pub struct FlowBins {
    /// Bytes per bin.
    pub bytes: Vec<u64>,
    /// Packets per bin.
    pub packets: Vec<u64>,
    /// |d_i - d_(i-1)| of the router's sojourn times, summed per bin, ns.
    pub jitter_ns: Vec<u64>,
    last_sojourn: Option<u64>,
}

/// The delay lines of one direction (one per group: a group's packets share one delay, so each
/// line stays in due order) and what left them.
#[derive(Debug)]
pub struct Lines {
    lines: Vec<VecDeque<Delayed>>,
    /// How late departures were.
    pub accuracy: Accuracy,
    /// Per flow, what left.
    pub flows: Vec<FlowBins>,
    /// Packets dropped because a line was full.
    pub overrun: u64,
    /// Packets the TUN device refused.
    pub write_failures: u64,
    /// Bytes held in the lines now (at most [`MAX_DELAYED_BYTES`]).
    held: usize,
    bin: Duration,
    /// Spare buffers, at most [`MAX_SPARE`].
    spare: Vec<Vec<u8>>,
}

/// Most spare packet buffers kept for reuse.
const MAX_SPARE: usize = 4096;

impl Lines {
    /// Lines for `groups` groups and `flows` flows, counted in bins of `bins` x `bin`.
    pub fn new(groups: usize, flows: usize, bins: usize, bin: Duration) -> Self {
        let flow = FlowBins {
            bytes: vec![0; bins],
            packets: vec![0; bins],
            jitter_ns: vec![0; bins],
            last_sojourn: None,
        };
        Lines {
            lines: (0..groups).map(|_| VecDeque::new()).collect(),
            accuracy: Accuracy::default(),
            flows: vec![flow; flows],
            overrun: 0,
            write_failures: 0,
            held: 0,
            bin,
            spare: Vec::new(),
        }
    }

    /// A buffer holding `bytes`, reusing a spare one when there is one.
    pub fn buffer(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut b = self.spare.pop().unwrap_or_default();
        b.clear();
        b.extend_from_slice(bytes);
        b
    }

    /// Keep `b` for reuse (if the pool has room).
    pub fn recycle(&mut self, b: Vec<u8>) {
        if self.spare.len() < MAX_SPARE {
            self.spare.push(b);
        }
    }

    /// Hold `packet` in group `group`'s line until it is due.
    pub fn push(&mut self, group: usize, packet: Delayed) {
        let len = packet.bytes.len();
        match self.lines.get_mut(group) {
            Some(line) if self.held + len <= MAX_DELAYED_BYTES => {
                self.held += len;
                line.push_back(packet);
            }
            _ => {
                self.overrun += 1;
                self.recycle(packet.bytes);
            }
        }
    }

    /// The earliest instant a packet is due.
    pub fn next_due(&self) -> Option<Time> {
        self.lines
            .iter()
            .filter_map(|l| l.front())
            .map(|d| d.due)
            .min()
    }

    /// Write every packet due by `now` to `tun`, counting how late each left.
    pub fn release(&mut self, now: Time, tun: &mut Tun) {
        for g in 0..self.lines.len() {
            while self.lines[g].front().is_some_and(|d| d.due <= now) {
                let Some(d) = self.lines[g].pop_front() else {
                    break;
                };
                self.held -= d.bytes.len();
                if tun.write(&d.bytes) {
                    self.accuracy.record((now - d.due).as_nanos());
                    self.count(now, &d);
                } else {
                    self.write_failures += 1;
                }
                self.recycle(d.bytes);
            }
        }
    }

    fn count(&mut self, now: Time, d: &Delayed) {
        let bin = (now.as_nanos() / self.bin.as_nanos().max(1)) as usize;
        let Some(f) = self.flows.get_mut(d.flow) else {
            return;
        };
        let sojourn = (now - d.read).as_nanos();
        if bin < f.bytes.len() {
            f.bytes[bin] += d.bytes.len() as u64;
            f.packets[bin] += 1;
            if let Some(last) = f.last_sojourn {
                f.jitter_ns[bin] += sojourn.abs_diff(last);
            }
        }
        f.last_sojourn = Some(sojourn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_come_from_the_histogram_and_the_maximum_is_exact() {
        let mut a = Accuracy::default();
        assert_eq!(a.quantile_ns(0.5), 0);
        for e in 0..100u64 {
            a.record(e * 10_000); // 0, 10 us, .., 990 us
        }
        a.record(50_000_000); // one departure 50 ms late
        assert_eq!(a.count(), 101);
        assert_eq!(a.late(), 1);
        assert_eq!(a.max_ns(), 50_000_000);
        assert_eq!(
            a.quantile_ns(0.5),
            501_000,
            "the 51st of 101: 500 us, upper edge"
        );
        assert_eq!(a.quantile_ns(1.0), 50_000_000);
        assert_eq!(a.quantile_ns(0.0), 1_000);
    }
}
