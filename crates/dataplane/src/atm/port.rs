//! The cell-level ATM segment of a path: AAL5 segmentation and per-VC peak-rate shaping at the
//! hosts, the usage parameter control of each VP at the WAN switch, the trunk's output buffers
//! (one per PHB, with selective cell discard and optional EPD/PPD) served by a trunk of cells, the
//! trunk's propagation delay, and AAL5 reassembly at the far end.
//!
//! A [`CellPort`] is a [`Port`] like the packet [`crate::link::Link`]: its driver offers it whole
//! frames (IP packets) and collects whole frames back, each either delivered at
//! the instant its last cell reached the far end or discarded because one of its cells did not.
//! In between, everything is per cell: every cell is policed, queued or discarded, and served on
//! its own, so the cells of different VCs interleave at the trunk as they do in the switch.
//!
//! The port simulates its cells lazily, up to the instant its driver asks for: no event per cell
//! reaches the engine. The driver wakes it at [`CellPort::next_wake`] (no later than one trunk
//! delay after any cell it holds could leave, so that every frame's arrival is scheduled before
//! it happens) and whenever a frame is offered. A cell costs no allocation: cells are small
//! copies in buffers allocated once at their full size.

use crate::aal5::{aal5_cells, CELL};
use crate::color::Color;
use crate::link::{LinkStats, Offered, PacketId, PacketPool, Port, QueuedPacket};
use crate::marker::{Gcra, Verdict};
use crate::params::ParamError;
use crate::queue::{CodePointCounters, DropKind};
use qstp_proto::{Duration, Rate, Time};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Bits of a cell times one second in nanoseconds: a cell's transmission time at a rate R bit/s
/// is exactly this many units of (nanoseconds x R).
const CELL_SCALED: u128 = CELL as u128 * 8 * 1_000_000_000;

/// Most frames a VC holds waiting for its shaper (its host's send queue); a frame offered to a
/// full VC is dropped at the host and counted.
pub const MAX_VC_FRAMES: usize = 1024;

/// The longest the port lets pass between two wakes while it holds cells.
pub const MAX_WAKE: Duration = Duration::from_millis(1);

/// Which output buffer of the trunk port a VP's cells join (AF-over-ATM paper §2.2: AF is
/// carried by SBR3 with SCD, DF by UBR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phb {
    /// The SBR3 buffer.
    Af,
    /// The UBR buffer.
    Df,
}

impl Phb {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Phb::Af => "af",
            Phb::Df => "df",
        }
    }
    fn index(self) -> usize {
        self as usize
    }
}

/// How the trunk serves its two buffers. The paper does not say how its Fore ASX-200BX did;
/// these are the choices such a switch plausibly had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Service {
    /// One FIFO in arrival order; each PHB's cells still count against their own buffer's size
    /// and SCD threshold.
    Fifo,
    /// One FIFO in arrival order and one buffer of `buffer` cells for both PHBs: SCD acts on
    /// what both hold together.
    Shared,
    /// The SBR3 (AF) buffer first; the UBR (DF) buffer only when it is empty.
    Priority,
    /// Weighted round robin, cell by cell, work-conserving: `af` cells of SBR3 for every `df`
    /// cells of UBR while both have cells.
    Weighted {
        /// Cells of the AF buffer per round.
        af: u32,
        /// Cells of the DF buffer per round.
        df: u32,
    },
}

impl Service {
    /// Whether both PHBs' cells wait in one queue, in arrival order.
    fn one_queue(self) -> bool {
        matches!(self, Service::Fifo | Service::Shared)
    }
}

/// The ATM parts of a trunk (the `atm` table of an ATM bottleneck).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AtmSpec {
    /// Cells each PHB's output buffer holds (AF-over-ATM paper §3.2: 10000).
    pub buffer: usize,
    /// Selective cell discard: the fraction of a buffer above which arriving CLP=1 cells are
    /// discarded, in (0, 1] (AF-over-ATM paper §3.2: 90%).
    pub scd: f64,
    /// How the trunk serves the two buffers.
    pub service: Service,
    /// Early packet discard: the fraction of a buffer from which a frame whose first cell arrives
    /// is discarded whole; `None` (the default): off, as the paper's switches are not said to use
    /// it.
    pub epd: Option<f64>,
    /// Partial packet discard: once a cell of a frame is discarded, discard the rest of the frame
    /// but its last cell; off by default.
    pub ppd: bool,
    /// The peak cell rate each VC is shaped to at its host, headers included (AF-over-ATM paper §3.2:
    /// 35 Mbit/s); `None`: cells leave the host back to back at the trunk's rate.
    pub shaping: Option<Rate>,
    /// A ping-like probe per VP measuring the queueing delay of its cells; `None`: no probe.
    pub probe: Option<ProbeSpec>,
    /// The rate of each VP's line from the LAN switch to the WAN switch, where its VCs are
    /// multiplexed without loss (AF-over-ATM paper §3.2: OC-3c); `None`: the trunk's rate.
    pub line: Option<Rate>,
    /// Which host sends each VC, per group then per flow: the VCs of one host share its shaper
    /// (at `shaping`, cell by cell in turn). `None`: each VC is shaped on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<Vec<u32>>>,
}

impl AtmSpec {
    /// Check the spec; the error names the key (under `key`, e.g. `bottleneck.atm`) and why.
    pub fn validate(&self, key: &str, trunk: Rate) -> Result<(), ParamError> {
        let invalid =
            |field: &str, reason: String| Err(ParamError::new(format!("{key}.{field}"), reason));
        if self.buffer == 0 {
            return invalid("buffer", "a buffer needs room for at least one cell".into());
        }
        if self.buffer > MAX_BUFFER {
            return invalid(
                "buffer",
                format!("{} cells is more than {MAX_BUFFER}", self.buffer),
            );
        }
        // AF-over-ATM paper §2.2: SCD discards CLP=1 cells above a fraction of the buffer.
        if !(self.scd > 0.0 && self.scd <= 1.0) {
            return invalid("scd", format!("{} is outside (0, 1]", self.scd));
        }
        if let Some(epd) = self.epd.filter(|e| !(*e > 0.0 && *e <= 1.0)) {
            return invalid("epd", format!("{epd} is outside (0, 1]"));
        }
        if let Service::Weighted { af, df } = self.service {
            if af == 0 || df == 0 {
                return invalid("service", "both weights must be positive".into());
            }
        }
        if self.shaping.is_some_and(|r| r.is_zero()) {
            return invalid("shaping", "must be positive".into());
        }
        if self.line.is_some_and(|r| r.is_zero()) {
            return invalid("line", "must be positive".into());
        }
        let line = self.line.unwrap_or(trunk);
        if let Some(s) = self.shaping.filter(|s| *s > line) {
            return invalid("shaping", format!("{s} is above the line's rate {line}"));
        }
        if let Some(hosts) = &self.hosts {
            if let Some(&h) = hosts.iter().flatten().find(|&&h| h as usize >= MAX_HOSTS) {
                return invalid("hosts", format!("host {h} is not below {MAX_HOSTS}"));
            }
        }
        if let Some(p) = &self.probe {
            if p.size == 0 || p.size > MAX_PROBE {
                return invalid(
                    "probe.size",
                    format!("{} bytes is outside 1..={MAX_PROBE}", p.size),
                );
            }
            if p.interval.is_zero() {
                return invalid("probe.interval", "must be positive".into());
            }
        }
        Ok(())
    }
}

/// Most hosts a port's VCs can come from.
pub const MAX_HOSTS: usize = 1 << 16;

/// Largest buffer, cells: a bound on what a scenario can make the port allocate.
pub const MAX_BUFFER: usize = 1 << 22;

/// Largest probe, bytes (an IP packet).
pub const MAX_PROBE: usize = 65_535;

/// A probe flow like the paper's `ping` (AF-over-ATM paper §3.2: 2048-byte ICMP packets): one frame per VP
/// every `interval`, on a VC of its own in the VP, policed and queued with the VP's cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProbeSpec {
    /// IP size of each probe, bytes.
    pub size: usize,
    /// Time between two probes of a VP (ping's default is one second).
    pub interval: Duration,
}

/// The default probe: 2048-byte packets once a second.
pub const DEFAULT_PROBE: ProbeSpec = ProbeSpec {
    size: 2048,
    interval: Duration::from_secs(1),
};

/// What a port is built from besides its spec: its VPs and which VP each flow's VC is in.
#[derive(Debug)]
pub struct PortSetup {
    /// Per VP: its buffer and its usage parameter control (`None`: not policed).
    pub vps: Vec<(Phb, Option<Gcra>)>,
    /// Per flow (by flow id): the VP of its VC; `None` for a flow that does not cross the port.
    pub vcs: Vec<Option<u32>>,
    /// Per flow (by flow id): the host that shapes its VC, if hosts share shapers.
    pub hosts: Option<Vec<u32>>,
    /// The trunk's rate, cells with their headers.
    pub trunk: Rate,
    /// The trunk's one-way propagation delay.
    pub delay: Duration,
    /// Counters start at this instant (the run's warm-up).
    pub warmup: Time,
}

/// Counters of one VP, from the warm-up on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VpStats {
    /// Cells its VCs sent (probes included).
    pub cells: u64,
    /// Cells the UPC tagged CLP=1.
    pub tagged: u64,
    /// Cells the UPC discarded (peak-rate violations).
    pub policed: u64,
    /// Frames offered to a VC whose host queue was full.
    pub host_drops: u64,
    /// Frames delivered whole.
    pub frames_delivered: u64,
    /// Frames that lost a cell: discarded by the reassembly, or never completed.
    pub frames_lost: u64,
    /// Probe frames sent.
    pub probes: u64,
    /// Probe frames that lost a cell.
    pub probes_lost: u64,
    /// Sum of the probes' queueing delays, nanoseconds.
    pub probe_delay_ns: u64,
    /// Largest probe queueing delay, nanoseconds.
    pub probe_delay_max_ns: u64,
}

impl VpStats {
    /// Mean queueing delay of the probes that arrived.
    pub fn probe_delay_mean(&self) -> Option<Duration> {
        let arrived = self.probes.saturating_sub(self.probes_lost);
        (arrived > 0).then(|| Duration::from_nanos(self.probe_delay_ns / arrived))
    }
}

/// Counters of one output buffer, per cell loss priority, from the warm-up on: `packets` are
/// cells that arrived at the buffer, `ldrops` cells refused at its limit, `edrops` cells
/// discarded early (SCD at the threshold, EPD, PPD).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferStats {
    /// CLP=0 cells.
    pub clp0: CodePointCounters,
    /// CLP=1 cells.
    pub clp1: CodePointCounters,
}

/// A frame waiting at its VC's shaper.
#[derive(Debug, Clone, Copy)]
struct Frame {
    /// The IP packet; `None` for a probe.
    packet: Option<PacketId>,
    /// Cells it takes.
    cells: u32,
    /// When it was offered.
    offered: Time,
}

/// Why a VC is discarding the rest of its current frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Discard {
    None,
    /// Every cell, the last one included (EPD).
    Whole,
    /// Every cell but the last (PPD).
    Partial,
}

/// One VC: its host's shaper and send queue, and its reassembly at the far end.
#[derive(Debug)]
struct Vc {
    vp: u32,
    phb: Phb,
    /// Frames waiting behind the one being cut.
    waiting: VecDeque<Frame>,
    /// The frame being cut into cells, and how many of its cells have left the host.
    current: Option<(Frame, u32)>,
    /// The tag of the current frame (wrapping), carried by each of its cells.
    frame_tag: u32,
    /// Its shaper.
    shaper: u32,
    discard: Discard,
    /// Reassembly: cells received since the last end of frame, the tag of the first of them, and
    /// whether cells of another frame were among them.
    rx_cells: u32,
    rx_tag: u32,
    rx_mixed: bool,
    /// For a probe VC: when its last cell joined the buffer.
    probe_eom_arrival: Option<Time>,
}

/// A host's shaper: one cell per cell time at the shaping rate, taken in turn from the VCs that
/// have cells.
#[derive(Debug, Default)]
struct Shaper {
    /// When its next cell leaves, nanoseconds x shaping rate.
    next_scaled: u128,
    /// VCs with cells, in turn.
    turn: VecDeque<u32>,
}

/// A cell on its way from its host to the WAN switch.
#[derive(Debug, Clone, Copy)]
struct Pending {
    vc: u32,
    tag: u32,
    first: bool,
    eom: bool,
    packet: Option<PacketId>,
    cells: u32,
}

/// A cell in a buffer.
#[derive(Debug, Clone, Copy)]
struct Cell {
    vc: u32,
    /// The tag of its frame.
    tag: u32,
    /// The frame's packet, on its last cell only.
    packet: Option<PacketId>,
    /// Cells of its frame (read on the last cell).
    cells: u32,
    eom: bool,
    phb: Phb,
}

/// The trunk port: buffers, scheduler, trunk, and everything on either side of it at cell level.
pub struct CellPort {
    spec: AtmSpec,
    /// Trunk rate, bit/s.
    trunk: u128,
    /// Shaping rate of every VC, bit/s.
    shaping: u128,
    delay: Duration,
    /// Longest time between two wakes while cells are held.
    wake: Duration,
    vcs: Vec<Vc>,
    /// VC of flow i, by flow id.
    vc_of_flow: Vec<Option<u32>>,
    vps: Vec<(Phb, Option<Gcra>)>,
    vp_stats: Vec<VpStats>,
    /// Per PHB: its buffer (with `Fifo` service, only the first is used, for both).
    buffers: [VecDeque<Cell>; 2],
    /// Cells of each PHB waiting.
    held: [usize; 2],
    /// SCD threshold of a buffer, cells.
    scd_cells: usize,
    /// EPD threshold of a buffer, cells.
    epd_cells: usize,
    buffer_stats: [BufferStats; 2],
    /// Weighted service: cells served of the PHB whose turn it is.
    round: (usize, u32),
    /// The hosts' shapers.
    shapers: Vec<Shaper>,
    /// Shapers with cells to send, by the instant of their next cell (ns).
    ready: BinaryHeap<Reverse<(u64, u32)>>,
    /// Line rate from the LAN switch to the WAN switch, bit/s.
    line: u128,
    /// Per VP, its line: when it is free (nanoseconds x line rate) and the cells on it, in order.
    vp_lines: Vec<(u128, VecDeque<Pending>)>,
    /// Cells on the lines, by the instant each reaches the WAN switch (ns), then by the order
    /// they entered (which keeps each line's order), with their VP.
    lines: BinaryHeap<Reverse<(u64, u64, u32)>>,
    /// Cells that have entered a line.
    line_seq: u64,
    /// When the trunk is free, nanoseconds x trunk rate.
    busy_scaled: u128,
    /// Frames propagating to the far end, in arrival order.
    in_flight: VecDeque<(Time, PacketId)>,
    /// Everything up to this instant has been simulated.
    clock: Time,
    /// When each VP next sends a probe.
    next_probe: Time,
    /// The first probe VC (probe VCs follow the flows' VCs, one per VP).
    probe_vc: usize,
    /// Probes sent so far, all VPs together (whose turn it is).
    probe_turn: usize,
    warmup: Time,
    /// Cells the trunk carried (all time).
    pub cells_sent: u64,
    /// Frames offered, refused and delivered (all time).
    stats: LinkStats,
    /// The trunk's rate.
    trunk_rate: Rate,
    /// Queue-length series: bin width, next bin end, and per PHB the cells held at each bin end.
    series: Option<(Duration, Time, usize, [Vec<u64>; 2])>,
}

impl std::fmt::Debug for CellPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CellPort")
            .field("vcs", &self.vcs.len())
            .field("held", &self.held)
            .field("clock", &self.clock)
            .finish()
    }
}

/// Scaled time (nanoseconds x rate) to nanoseconds, rounded up.
fn to_ns(scaled: u128, rate: u128) -> u64 {
    scaled.div_ceil(rate).min(u128::from(u64::MAX)) as u64
}

impl CellPort {
    /// The port of `spec` with the VPs and VCs of `setup`.
    pub fn new(spec: &AtmSpec, setup: PortSetup) -> Self {
        let trunk = u128::from(setup.trunk.bps().max(1));
        let shaping = spec.shaping.map_or(trunk, |r| u128::from(r.bps().max(1)));
        let vp_phb: Vec<Phb> = setup.vps.iter().map(|(phb, _)| *phb).collect();
        let mut shapers: Vec<Shaper> = Vec::new();
        if let Some(hosts) = &setup.hosts {
            let count = hosts.iter().map(|&h| h as usize + 1).max().unwrap_or(0);
            shapers.resize_with(count, Shaper::default);
        }
        let own_shaper = |shapers: &mut Vec<Shaper>| {
            shapers.push(Shaper::default());
            (shapers.len() - 1) as u32
        };
        let vc = |vp: u32, shaper: u32| Vc {
            vp,
            phb: vp_phb[vp as usize],
            waiting: VecDeque::new(),
            current: None,
            frame_tag: 0,
            shaper,
            discard: Discard::None,
            rx_cells: 0,
            rx_tag: 0,
            rx_mixed: false,
            probe_eom_arrival: None,
        };
        let mut vcs = Vec::new();
        let mut vc_of_flow = Vec::with_capacity(setup.vcs.len());
        for (flow, vp) in setup.vcs.iter().enumerate() {
            let host = setup.hosts.as_ref().and_then(|h| h.get(flow).copied());
            vc_of_flow.push(vp.map(|vp| {
                let shaper = host.unwrap_or_else(|| own_shaper(&mut shapers));
                vcs.push(vc(vp, shaper));
                (vcs.len() - 1) as u32
            }));
        }
        let probe_vc = vcs.len();
        if spec.probe.is_some() {
            for vp in 0..setup.vps.len() {
                let shaper = own_shaper(&mut shapers);
                vcs.push(vc(vp as u32, shaper));
            }
        }
        let cell_time = Duration::from_nanos(to_ns(CELL_SCALED, trunk));
        let limit = spec.buffer.max(1);
        let threshold = |fraction: f64| crate::queue::threshold_cells(limit, fraction);
        // One queue holds both PHBs' cells, or each its own.
        let queues = if spec.service.one_queue() { 1 } else { 2 };
        let ring = |i: usize| {
            if i < queues {
                VecDeque::with_capacity(limit * 2 / queues)
            } else {
                VecDeque::new()
            }
        };
        CellPort {
            trunk,
            shaping,
            delay: setup.delay,
            wake: (setup.delay + cell_time)
                .min(MAX_WAKE)
                .max(Duration::from_nanos(1)),
            vp_stats: vec![VpStats::default(); setup.vps.len()],
            vps: setup.vps,
            vcs,
            vc_of_flow,
            buffers: [ring(0), ring(1)],
            held: [0, 0],
            scd_cells: threshold(spec.scd),
            epd_cells: spec.epd.map_or(usize::MAX, threshold),
            buffer_stats: [BufferStats::default(); 2],
            round: (0, 0),
            shapers,
            ready: BinaryHeap::new(),
            line: spec.line.map_or(trunk, |r| u128::from(r.bps().max(1))),
            vp_lines: (0..vp_phb.len()).map(|_| (0, VecDeque::new())).collect(),
            lines: BinaryHeap::new(),
            line_seq: 0,
            busy_scaled: 0,
            in_flight: VecDeque::new(),
            clock: Time::ZERO,
            next_probe: if spec.probe.is_some() {
                Time::ZERO
            } else {
                Time::MAX
            },
            probe_vc,
            probe_turn: 0,
            warmup: setup.warmup,
            cells_sent: 0,
            stats: LinkStats::default(),
            trunk_rate: setup.trunk,
            series: None,
            spec: spec.clone(),
        }
    }

    /// Record the cells each buffer holds at the end of every bin of width `bin`, for `bins` bins.
    pub fn record_series(&mut self, bin: Duration, bins: usize) {
        let ends = Time::ZERO + bin;
        self.series = Some((
            bin,
            ends,
            bins,
            [Vec::with_capacity(bins), Vec::with_capacity(bins)],
        ));
    }

    /// The recorded series: per PHB, cells held at each bin end (empty without
    /// [`CellPort::record_series`]).
    pub fn series(&self) -> [(&'static str, &[u64]); 2] {
        match &self.series {
            Some((.., s)) => [("af", &s[0]), ("df", &s[1])],
            None => [("af", &[]), ("df", &[])],
        }
    }

    /// Per VP counters.
    pub fn vp_stats(&self) -> &[VpStats] {
        &self.vp_stats
    }

    /// Per PHB buffer counters (cells).
    pub fn buffer_stats(&self, phb: Phb) -> BufferStats {
        self.buffer_stats[phb.index()]
    }

    /// Which PHBs have VPs.
    pub fn phbs(&self) -> Vec<Phb> {
        [Phb::Af, Phb::Df]
            .into_iter()
            .filter(|p| self.vps.iter().any(|(phb, _)| phb == p))
            .collect()
    }

    /// Cells waiting in the buffer of `phb`.
    pub fn held(&self, phb: Phb) -> usize {
        self.held[phb.index()]
    }

    /// Offer the frame `packet` of `size` bytes (its IP size) of flow `flow` at `now`. A frame of a
    /// flow without a VC, or offered to a full VC, is discarded from `store`; returns whether it
    /// was taken.
    pub fn offer<S: PacketPool>(
        &mut self,
        now: Time,
        packet: PacketId,
        flow: u32,
        size: u32,
        store: &mut S,
    ) -> bool {
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += u64::from(size);
        self.advance(now, store);
        let Some(Some(vc)) = self.vc_of_flow.get(flow as usize).copied() else {
            self.stats.overflow_drops += 1;
            store.discard(packet);
            return false;
        };
        let frame = Frame {
            packet: Some(packet),
            cells: aal5_cells(u64::from(size)).min(u64::from(u32::MAX)) as u32,
            offered: now,
        };
        if !self.enqueue_frame(vc as usize, frame) {
            let vp = self.vcs[vc as usize].vp as usize;
            if now >= self.warmup {
                self.vp_stats[vp].host_drops += 1;
            }
            self.stats.overflow_drops += 1;
            store.discard(packet);
            return false;
        }
        true
    }

    /// Put a frame on a VC's send queue; false if the queue is full.
    fn enqueue_frame(&mut self, vc: usize, frame: Frame) -> bool {
        let shaping = self.shaping;
        let v = &mut self.vcs[vc];
        if v.current.is_none() {
            v.current = Some((frame, 0));
            let shaper = v.shaper;
            let s = &mut self.shapers[shaper as usize];
            s.turn.push_back(vc as u32);
            if s.turn.len() == 1 {
                // An idle shaper: its next cell no sooner than now.
                let offered = u128::from(frame.offered.as_nanos()) * shaping;
                s.next_scaled = s.next_scaled.max(offered);
                self.ready
                    .push(Reverse((to_ns(s.next_scaled, shaping), shaper)));
            }
            return true;
        }
        if v.waiting.len() >= MAX_VC_FRAMES {
            return false;
        }
        v.waiting.push_back(frame);
        true
    }

    /// When the driver must wake the port next (`None`: not until the next offer).
    pub fn next_wake(&self) -> Option<Time> {
        let busy = !self.ready.is_empty() || !self.lines.is_empty() || self.held != [0, 0];
        let tick = busy.then(|| self.clock + self.wake);
        let probe = (self.next_probe != Time::MAX)
            .then_some(self.next_probe.max(self.clock + Duration::from_nanos(1)));
        match (tick, probe) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// When the next frame reaches the far end, if one is propagating.
    pub fn next_arrival(&self) -> Option<Time> {
        self.in_flight.front().map(|&(at, _)| at)
    }

    /// The next frame that reached the far end whole by `now`.
    pub fn poll_arrival(&mut self, now: Time) -> Option<PacketId> {
        if self.in_flight.front()?.0 > now {
            return None;
        }
        let (_, packet) = self.in_flight.pop_front()?;
        self.stats.packets_delivered += 1;
        Some(packet)
    }

    /// Simulate every cell up to `now`.
    pub fn advance<S: PacketPool>(&mut self, now: Time, store: &mut S) {
        if now < self.clock {
            return;
        }
        let until = now.as_nanos();
        loop {
            let emission = self.ready.peek().map(|Reverse((t, _))| *t);
            let at_switch = self.lines.peek().map(|Reverse((t, ..))| *t);
            let probe = Some(self.next_probe.as_nanos()).filter(|_| self.next_probe != Time::MAX);
            let Some(next) = [probe, at_switch, emission].into_iter().flatten().min() else {
                break;
            };
            if next > until {
                break;
            }
            // Cells whose service starts before this instant leave first.
            self.serve(u128::from(next) * self.trunk, false, store);
            let at = Time::from_nanos(next);
            self.sample_to(at);
            if probe == Some(next) {
                self.send_probes(at);
            } else if at_switch == Some(next) {
                let Some(Reverse((_, _, vp))) = self.lines.pop() else {
                    break;
                };
                let Some(cell) = self.vp_lines[vp as usize].1.pop_front() else {
                    break;
                };
                self.cell_arrives(at, cell, store);
            } else {
                let Some(Reverse((_, shaper))) = self.ready.pop() else {
                    break;
                };
                self.emit(at, shaper as usize);
            }
        }
        self.serve(u128::from(now.as_nanos()) * self.trunk, true, store);
        self.sample_to(now);
        self.clock = now;
    }

    /// Record the series' bin ends up to `at` (the buffers as they stand, before what happens at
    /// `at`).
    fn sample_to(&mut self, at: Time) {
        let Some((bin, next, bins, series)) = &mut self.series else {
            return;
        };
        while *next <= at && series[0].len() < *bins {
            series[0].push(self.held[0] as u64);
            series[1].push(self.held[1] as u64);
            *next += *bin;
        }
    }

    /// The next VP's probe frame on its probe VC: the VPs take turns, evenly spread over the
    /// interval, so that their probes do not queue behind each other.
    fn send_probes(&mut self, now: Time) {
        let Some(probe) = self.spec.probe else { return };
        let vps = self.vps.len().max(1);
        let vp = self.probe_turn % vps;
        self.probe_turn += 1;
        let spacing = Duration::from_nanos((probe.interval.as_nanos() / vps as u64).max(1));
        self.next_probe = now + spacing;
        if vp >= self.vps.len() {
            return;
        }
        let frame = Frame {
            packet: None,
            cells: aal5_cells(probe.size as u64) as u32,
            offered: now,
        };
        if self.enqueue_frame(self.probe_vc + vp, frame) && now >= self.warmup {
            self.vp_stats[vp].probes += 1;
        }
    }

    /// Serve cells whose service starts before `until` (scaled by the trunk rate), or at it too
    /// if `inclusive`.
    fn serve<S: PacketPool>(&mut self, until: u128, inclusive: bool, store: &mut S) {
        while self.held != [0, 0]
            && (self.busy_scaled < until || (inclusive && self.busy_scaled == until))
        {
            let Some(cell) = self.dequeue() else { break };
            let start = self.busy_scaled;
            self.busy_scaled += CELL_SCALED;
            self.cells_sent += 1;
            self.cell_departs(cell, start, store);
        }
    }

    /// The next cell the trunk serves.
    fn dequeue(&mut self) -> Option<Cell> {
        let from = match self.spec.service {
            Service::Fifo | Service::Shared => 0,
            Service::Priority => usize::from(self.buffers[0].is_empty()),
            Service::Weighted { af, df } => {
                let quota = [af.max(1), df.max(1)];
                let (turn, served) = &mut self.round;
                if self.buffers[*turn].is_empty() || *served >= quota[*turn] {
                    let other = 1 - *turn;
                    if !self.buffers[other].is_empty() {
                        *turn = other;
                    }
                    *served = 0;
                }
                *served += 1;
                *turn
            }
        };
        let cell = self.buffers[from].pop_front()?;
        self.held[cell.phb.index()] -= 1;
        Some(cell)
    }

    /// The shaper `shaper` lets a cell of its next VC go at `now`: it crosses its VP's line from
    /// the LAN switch to the WAN switch (AF-over-ATM paper §3.2: the VCs of one destination share one OC-3c
    /// line, where no cell is lost), queueing behind the VP's other cells if the line is busy.
    fn emit(&mut self, now: Time, shaper: usize) {
        let shaping = self.shaping;
        let Some(vc) = self.shapers[shaper].turn.pop_front() else {
            return;
        };
        let vc = vc as usize;
        let v = &mut self.vcs[vc];
        let Some((frame, sent)) = v.current.as_mut() else {
            return;
        };
        let frame = *frame;
        let index = *sent;
        *sent += 1;
        let eom = index + 1 == frame.cells;
        let cell = Pending {
            vc: vc as u32,
            tag: v.frame_tag,
            first: index == 0,
            eom,
            packet: frame.packet,
            cells: frame.cells,
        };
        let vp = v.vp as usize;
        if eom {
            v.frame_tag = v.frame_tag.wrapping_add(1);
            v.current = v.waiting.pop_front().map(|f| (f, 0));
        }
        let more = v.current.is_some();
        // The shaper's next cell one cell time at the peak rate later (AF-over-ATM paper §3.2: PCR shaping at
        // the hosts), from the next VC in turn.
        let s = &mut self.shapers[shaper];
        s.next_scaled += CELL_SCALED;
        if more {
            s.turn.push_back(vc as u32);
        }
        if !s.turn.is_empty() {
            self.ready
                .push(Reverse((to_ns(s.next_scaled, shaping), shaper as u32)));
        }
        if now >= self.warmup {
            self.vp_stats[vp].cells += 1;
        }
        let line = &mut self.vp_lines[vp];
        let start = line.0.max(u128::from(now.as_nanos()) * self.line);
        line.0 = start + CELL_SCALED;
        line.1.push_back(cell);
        self.line_seq += 1;
        self.lines.push(Reverse((
            to_ns(line.0, self.line),
            self.line_seq,
            vp as u32,
        )));
    }

    /// A cell reaches the WAN switch at `now`: the UPC of its VP polices it, the buffer of its
    /// PHB takes or discards it.
    fn cell_arrives<S: PacketPool>(&mut self, now: Time, cell: Pending, store: &mut S) {
        let counted = now >= self.warmup;
        let Pending {
            vc,
            tag,
            first,
            eom,
            packet,
            cells,
        } = cell;
        let vc = vc as usize;
        let (vp, phb) = (self.vcs[vc].vp as usize, self.vcs[vc].phb);
        // ITU-T I.371 §6.5: the UPC of the VP (GCRA on PCR for CLP=0+1, on SCR for CLP=0 with
        // tagging in SBR3); hosts send every cell CLP=0.
        let clp1 = match self.vps[vp]
            .1
            .as_mut()
            .map(|g| g.police(now, CELL as usize, Color::Green))
        {
            None => false,
            Some(Verdict::Drop) => {
                if counted {
                    self.vp_stats[vp].policed += 1;
                }
                self.cell_lost(vc, eom, packet, counted, store);
                return;
            }
            Some(Verdict::Pass(color)) => {
                let tagged = color != Color::Green;
                if tagged && counted {
                    self.vp_stats[vp].tagged += 1;
                }
                tagged
            }
        };
        let b = phb.index();
        let held = match self.spec.service {
            Service::Shared => self.held[0] + self.held[1],
            _ => self.held[b],
        };
        let v = &mut self.vcs[vc];
        if first && held >= self.epd_cells {
            v.discard = Discard::Whole;
        }
        let stats = &mut self.buffer_stats[b];
        let counters = if clp1 {
            &mut stats.clp1
        } else {
            &mut stats.clp0
        };
        if counted {
            counters.packets += 1;
        }
        let refused = match v.discard {
            Discard::Whole => Some(true),
            Discard::Partial if !eom => Some(true),
            _ if held >= self.spec.buffer => Some(false),
            // AF-over-ATM paper §2.2: above the SCD threshold, arriving CLP=1 cells are discarded.
            _ if clp1 && held >= self.scd_cells => Some(true),
            _ => None,
        };
        if let Some(early) = refused {
            if counted {
                if early {
                    counters.edrops += 1;
                } else {
                    counters.ldrops += 1;
                }
            }
            if self.spec.ppd && v.discard == Discard::None && !eom {
                v.discard = Discard::Partial;
            }
            self.cell_lost(vc, eom, packet, counted, store);
            return;
        }
        if eom {
            v.discard = Discard::None;
            if vc >= self.probe_vc {
                v.probe_eom_arrival = Some(now);
            }
        }
        let buffer = if self.spec.service.one_queue() { 0 } else { b };
        self.buffers[buffer].push_back(Cell {
            vc: vc as u32,
            tag,
            packet: if eom { packet } else { None },
            cells,
            eom,
            phb,
        });
        self.held[b] += 1;
        // The trunk is idle: it starts on this cell at once.
        let now_scaled = u128::from(now.as_nanos()) * self.trunk;
        if self.busy_scaled < now_scaled {
            self.busy_scaled = now_scaled;
        }
    }

    /// A cell of `vc` was discarded: if it ended its frame, the frame can never arrive.
    fn cell_lost<S: PacketPool>(
        &mut self,
        vc: usize,
        eom: bool,
        packet: Option<PacketId>,
        counted: bool,
        store: &mut S,
    ) {
        let v = &mut self.vcs[vc];
        if !eom {
            return;
        }
        v.discard = Discard::None;
        v.probe_eom_arrival = None;
        let vp = v.vp as usize;
        if counted {
            let stats = &mut self.vp_stats[vp];
            match packet {
                Some(_) => stats.frames_lost += 1,
                None => stats.probes_lost += 1,
            }
        }
        if let Some(p) = packet {
            store.discard(p);
        }
    }

    /// A cell starts on the trunk at `start` (scaled); it reaches the far end's reassembly one
    /// cell time and the delay later.
    fn cell_departs<S: PacketPool>(&mut self, cell: Cell, start: u128, store: &mut S) {
        let v = &mut self.vcs[cell.vc as usize];
        // AAL5 reassembly (ITU-T I.363.5): cells accumulate until one ends a frame; the frame is
        // good only if exactly its own cells, all of them, came (a real receiver finds out by the
        // trailer's length and CRC).
        if v.rx_cells == 0 {
            v.rx_tag = cell.tag;
            v.rx_mixed = false;
        } else if cell.tag != v.rx_tag {
            v.rx_mixed = true;
        }
        v.rx_cells += 1;
        if !cell.eom {
            return;
        }
        let whole = !v.rx_mixed && v.rx_tag == cell.tag && v.rx_cells == cell.cells;
        v.rx_cells = 0;
        let end = Time::from_nanos(to_ns(start + CELL_SCALED, self.trunk));
        let counted = end >= self.warmup;
        let vp = v.vp as usize;
        match cell.packet {
            Some(packet) if whole => {
                if counted {
                    self.vp_stats[vp].frames_delivered += 1;
                }
                self.in_flight.push_back((end + self.delay, packet));
            }
            Some(packet) => {
                if counted {
                    self.vp_stats[vp].frames_lost += 1;
                }
                store.discard(packet);
            }
            None => {
                let arrival = v.probe_eom_arrival.take();
                if !counted {
                    return;
                }
                let stats = &mut self.vp_stats[vp];
                match arrival {
                    Some(at) if whole => {
                        // The probe's queueing delay: how long its last cell waited for the
                        // trunk (what ping adds to the unloaded round trip).
                        let began = Time::from_nanos(to_ns(start, self.trunk));
                        let wait = began.saturating_since(at).as_nanos();
                        stats.probe_delay_ns += wait;
                        stats.probe_delay_max_ns = stats.probe_delay_max_ns.max(wait);
                    }
                    _ => stats.probes_lost += 1,
                }
            }
        }
    }
}

impl<S: PacketPool> Port<S> for CellPort {
    fn offer(&mut self, now: Time, packet: QueuedPacket, pool: &mut S) -> Offered {
        match CellPort::offer(self, now, packet.id, packet.flow, packet.size, pool) {
            true => Offered::Queued,
            false => Offered::Dropped(DropKind::Overflow),
        }
    }
    fn handle_timeout(&mut self, now: Time, pool: &mut S) {
        self.advance(now, pool)
    }
    fn next_ready(&self) -> Option<Time> {
        self.next_wake()
    }
    fn next_arrival(&self) -> Option<Time> {
        CellPort::next_arrival(self)
    }
    fn poll_arrival(&mut self, now: Time) -> Option<PacketId> {
        CellPort::poll_arrival(self, now)
    }
    fn stats(&self) -> &LinkStats {
        &self.stats
    }
    fn rate(&self) -> Rate {
        self.trunk_rate
    }
    fn delay(&self) -> Duration {
        self.delay
    }
}

#[cfg(test)]
#[path = "port_tests.rs"]
mod tests;
