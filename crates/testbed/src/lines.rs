//! What both directions of the router share: the clock, the per-group delay lines a packet waits
//! in until its scheduled departure, the record of how late each departure was, and the per-flow
//! counters of what left.

use crate::packet::{Run, Segment, VnetHdr, MAX_SEGMENTS};
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
    /// The router's sojourn times (queueing and the emulated links' delays) from the warm-up on:
    /// the one-way delay through the emulated network, host stacks left out.
    pub delays: qstp_sim::Delays,
}

/// Where the delay lines write: a TUN device (or, in tests, a recorder).
pub trait Writer {
    /// Write one plain packet; whether it was taken.
    fn write(&mut self, packet: &[u8]) -> bool;
    /// Write one packet made of `parts` in order behind the virtio-net header `hdr`; whether it
    /// was taken whole.
    fn write_parts(&mut self, hdr: &VnetHdr, parts: &[&[u8]]) -> bool;
}

impl Writer for Tun {
    fn write(&mut self, packet: &[u8]) -> bool {
        Tun::write(self, packet)
    }

    fn write_parts(&mut self, hdr: &VnetHdr, parts: &[&[u8]]) -> bool {
        Tun::write_parts(self, hdr, parts)
    }
}

/// Segments of one TCP flow due together, being gathered into one super-packet.
#[derive(Debug)]
struct Open {
    /// What the next segment must match.
    run: Run,
    /// The segments, in order (at most [`MAX_SEGMENTS`]).
    segs: Vec<Delayed>,
    /// The last segment's TCP flags.
    last_flags: u8,
}

/// Most runs open at once while due packets are written (one per TCP flow among them): beyond
/// it the oldest is written first.
const MAX_OPEN: usize = 8;

/// The delay lines of one direction (one per group: a group's packets share one delay, so each
/// line stays in due order) and what left them.
///
/// Due packets are written in batches: consecutive segments of one TCP flow that are due at the
/// same wake-up (same addresses, ports and headers, contiguous sequence numbers, see
/// [`Run::continues`]) leave as one super-packet that the kernel carries to the receiver whole
/// (a virtio-net header with `VNET_GSO_TCPV4`), in one `writev`; every segment is still counted
/// on its own (its departure error, its flow's bytes and jitter).
#[derive(Debug)]
pub struct Lines {
    lines: Vec<VecDeque<Delayed>>,
    /// How late departures were.
    pub accuracy: Accuracy,
    /// Per flow, what left.
    pub flows: Vec<FlowBins>,
    /// Delays count from this instant on (the warm-up's end).
    measure_from: Time,
    /// Packets dropped because a line was full.
    pub overrun: u64,
    /// Packets the TUN device refused.
    pub write_failures: u64,
    /// Bytes held in the lines now (at most [`MAX_DELAYED_BYTES`]).
    held: usize,
    bin: Duration,
    /// Spare buffers, at most [`MAX_SPARE`].
    spare: Vec<Vec<u8>>,
    /// Runs being gathered during [`Lines::release`] (at most [`MAX_OPEN`]; none between calls).
    open: Vec<Open>,
    /// Spare segment lists of runs, at most [`MAX_OPEN`].
    spare_runs: Vec<Vec<Delayed>>,
    /// Super-packets written (each of two segments or more).
    pub super_packets: u64,
    /// Segments written in super-packets.
    pub coalesced: u64,
    /// Super-packets the device refused, whose segments were then written one by one.
    pub super_failures: u64,
}

/// Most spare packet buffers kept for reuse.
const MAX_SPARE: usize = 4096;

impl Lines {
    /// Lines for `groups` groups and `flows` flows, counted in bins of `bins` x `bin`; delays
    /// measured from `measure_from` on.
    pub fn new(
        groups: usize,
        flows: usize,
        bins: usize,
        bin: Duration,
        measure_from: Time,
    ) -> Self {
        let flow = FlowBins {
            bytes: vec![0; bins],
            packets: vec![0; bins],
            jitter_ns: vec![0; bins],
            last_sojourn: None,
            delays: qstp_sim::Delays::new(),
        };
        Lines {
            lines: (0..groups).map(|_| VecDeque::new()).collect(),
            accuracy: Accuracy::default(),
            flows: vec![flow; flows],
            measure_from,
            overrun: 0,
            write_failures: 0,
            held: 0,
            bin,
            spare: Vec::new(),
            open: Vec::with_capacity(MAX_OPEN),
            spare_runs: Vec::new(),
            super_packets: 0,
            coalesced: 0,
            super_failures: 0,
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

    /// Write every packet due by `now` to `tun`, counting how late each left; consecutive
    /// segments of a TCP flow leave together as one super-packet.
    pub fn release(&mut self, now: Time, tun: &mut impl Writer) {
        for g in 0..self.lines.len() {
            while self.lines[g].front().is_some_and(|d| d.due <= now) {
                let Some(d) = self.lines[g].pop_front() else {
                    break;
                };
                self.held -= d.bytes.len();
                self.send(now, d, tun);
            }
        }
        while let Some(o) = self.open.pop() {
            self.flush(now, o, tun);
        }
    }

    /// Add `d` to its flow's open run, or start one, or write it alone.
    fn send(&mut self, now: Time, d: Delayed, tun: &mut impl Writer) {
        let Some(seg) = Segment::parse(&d.bytes) else {
            return self.write_one(now, d, tun);
        };
        if let Some(i) = self.open.iter().position(|o| o.run.head.flow == seg.flow) {
            let o = &mut self.open[i];
            if o.run.continues(&o.segs[0].bytes, &d.bytes, &seg) {
                o.run.push(&seg);
                o.last_flags = seg.flags;
                o.segs.push(d);
                if o.run.closed {
                    let o = self.open.swap_remove(i);
                    self.flush(now, o, tun);
                }
                return;
            }
            // The flow's earlier segments leave first.
            let o = self.open.swap_remove(i);
            self.flush(now, o, tun);
        }
        let run = Run::start(seg);
        if !seg.coalescable() || run.closed {
            return self.write_one(now, d, tun);
        }
        if self.open.len() >= MAX_OPEN {
            let o = self.open.swap_remove(0);
            self.flush(now, o, tun);
        }
        let mut segs = self.spare_runs.pop().unwrap_or_default();
        segs.push(d);
        self.open.push(Open {
            run,
            segs,
            last_flags: seg.flags,
        });
    }

    /// Write the run `o`: a super-packet of its segments (one `writev`), or its one segment.
    fn flush(&mut self, now: Time, mut o: Open, tun: &mut impl Writer) {
        if o.segs.len() > 1 {
            let cut = o.run.head.ihl + o.run.head.thl;
            // The first segment's own headers, to write the segments one by one if the device
            // refuses the super-packet.
            let mut saved = [0u8; 120];
            saved[..cut].copy_from_slice(&o.segs[0].bytes[..cut]);
            let hdr = o.run.finish(&mut o.segs[0].bytes, o.last_flags);
            let mut parts: [&[u8]; MAX_SEGMENTS] = [&[]; MAX_SEGMENTS];
            for (i, (p, d)) in parts.iter_mut().zip(&o.segs).enumerate() {
                *p = if i == 0 { &d.bytes } else { &d.bytes[cut..] };
            }
            if tun.write_parts(&hdr, &parts[..o.segs.len()]) {
                self.super_packets += 1;
                self.coalesced += o.segs.len() as u64;
                for d in o.segs.drain(..) {
                    self.written(now, d, true);
                }
            } else {
                self.super_failures += 1;
                o.segs[0].bytes[..cut].copy_from_slice(&saved[..cut]);
            }
        }
        for d in o.segs.drain(..) {
            self.write_one(now, d, tun);
        }
        if self.spare_runs.len() < MAX_OPEN {
            self.spare_runs.push(o.segs);
        }
    }

    /// Write `d` alone.
    fn write_one(&mut self, now: Time, d: Delayed, tun: &mut impl Writer) {
        let ok = tun.write(&d.bytes);
        self.written(now, d, ok);
    }

    /// Count `d` as written (`ok`) or refused, and keep its buffer.
    fn written(&mut self, now: Time, d: Delayed, ok: bool) {
        if ok {
            self.accuracy.record((now - d.due).as_nanos());
            self.count(now, &d);
        } else {
            self.write_failures += 1;
        }
        self.recycle(d.bytes);
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
            if now >= self.measure_from {
                f.delays.record(Duration::from_nanos(sojourn));
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

    use crate::packet::{self, tests::tcp_from};

    /// Records what the lines write; refuses super-packets if `refuse`.
    #[derive(Default)]
    struct Recorder {
        written: Vec<(VnetHdr, Vec<u8>)>,
        refuse: bool,
    }

    impl Writer for Recorder {
        fn write(&mut self, p: &[u8]) -> bool {
            self.written.push((VnetHdr::default(), p.to_vec()));
            true
        }

        fn write_parts(&mut self, hdr: &VnetHdr, parts: &[&[u8]]) -> bool {
            if self.refuse && hdr.gso_type != packet::VNET_GSO_NONE {
                return false;
            }
            self.written.push((*hdr, parts.concat()));
            true
        }
    }

    /// Two TCP flows' segments interleaved, a pure acknowledgement and a UDP packet, all due.
    fn due() -> Vec<(usize, Vec<u8>)> {
        let a = |seq: u32, id: u16, flags: u8, n: usize| (0, tcp_from(40000, seq, id, flags, n));
        let b = |seq: u32, id: u16, flags: u8, n: usize| (1, tcp_from(40001, seq, id, flags, n));
        let mut udp = tcp_from(40002, 0, 0, 0x10, 30);
        udp[9] = 17;
        vec![
            a(1000, 1, 0x10, 1000),
            b(5000, 9, 0x10, 1000),
            a(2000, 2, 0x10, 1000),
            b(6000, 10, 0x10, 1000),
            a(3000, 3, 0x18, 400), // PSH, shorter: ends flow 0's run
            b(7000, 11, 0x10, 1000),
            b(8000, 12, 0x10, 0), // an acknowledgement: flow 1's run leaves before it
            a(3400, 4, 0x10, 1000),
            (1, udp),
        ]
    }

    fn release(refuse: bool) -> (Lines, Vec<(VnetHdr, Vec<u8>)>) {
        let mut lines = Lines::new(1, 2, 1, Duration::from_secs(1), Time::ZERO);
        for (flow, bytes) in due() {
            let due = Time::from_nanos(1_000);
            let read = Time::ZERO;
            lines.push(
                0,
                Delayed {
                    due,
                    read,
                    flow,
                    bytes,
                },
            );
        }
        let mut out = Recorder {
            refuse,
            ..Recorder::default()
        };
        lines.release(Time::from_nanos(3_000), &mut out);
        (lines, out.written)
    }

    /// Every written packet cut back into plain packets.
    fn plain(written: &[(VnetHdr, Vec<u8>)]) -> Vec<Vec<u8>> {
        let mut out = vec![0u8; 65_535];
        let mut plain = Vec::new();
        for (hdr, p) in written {
            for i in 0..packet::segments(hdr, p).unwrap() {
                if hdr.gso_type == packet::VNET_GSO_NONE {
                    plain.push(p.clone());
                } else {
                    let n = packet::segment(hdr, p, i, &mut out).unwrap();
                    plain.push(out[..n].to_vec());
                }
            }
        }
        plain
    }

    #[test]
    fn due_segments_of_a_flow_leave_as_one_super_packet_each_counted_alone() {
        let (lines, written) = release(false);
        // Flow 0: 3 segments (the third with PSH), then 1 alone; flow 1: 3 segments, then the
        // acknowledgement; the UDP packet alone.
        assert_eq!(lines.super_packets, 2);
        assert_eq!(lines.coalesced, 6);
        assert_eq!(written.len(), 5);
        assert_eq!(lines.accuracy.count(), 9, "every packet counted on its own");
        assert_eq!(lines.accuracy.quantile_ns(1.0), 2_000);
        assert_eq!(lines.flows[0].packets[0], 4);
        assert_eq!(lines.flows[1].packets[0], 5);
        // Each packet's time through the router: read at 0, written at 3 us.
        let delay = lines.flows[1].delays.stats().unwrap();
        assert_eq!((delay.samples, delay.mean_ns), (5, 3_000.0));
        let bytes: u64 = due().iter().map(|(_, p)| p.len() as u64).sum();
        assert_eq!(lines.flows[0].bytes[0] + lines.flows[1].bytes[0], bytes);
        // Cut back into plain packets, each flow's packets are the ones pushed, in order.
        let plain = plain(&written);
        let due = due();
        for port in [40000u16, 40001, 40002] {
            let of = |p: &&Vec<u8>| p[20..22] == port.to_be_bytes();
            let sent: Vec<&Vec<u8>> = due.iter().map(|(_, p)| p).filter(of).collect();
            let got: Vec<&Vec<u8>> = plain.iter().filter(of).collect();
            assert_eq!(got, sent, "port {port}");
        }
    }

    #[test]
    fn a_refused_super_packet_leaves_segment_by_segment_unchanged() {
        let (lines, written) = release(true);
        assert_eq!((lines.super_packets, lines.super_failures), (0, 2));
        assert_eq!(lines.write_failures, 0);
        assert_eq!(lines.accuracy.count(), 9);
        let mut sent: Vec<Vec<u8>> = due().into_iter().map(|(_, p)| p).collect();
        let mut got: Vec<Vec<u8>> = written.into_iter().map(|(_, p)| p).collect();
        sent.sort();
        got.sort();
        assert_eq!(got, sent, "the first segments' headers restored");
    }
}
