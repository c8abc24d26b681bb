//! BBR v1 (Cardwell, Cheng, Gunn, Hassas Yeganeh and Jacobson, "BBR: Congestion-Based
//! Congestion Control", ACM Queue 14(5), 2016) as Linux `net/ipv4/tcp_bbr.c` has it in kernels
//! 4.9 to 5.x: a model of the path, the bottleneck bandwidth (the max of the delivery-rate
//! samples over 10 round trips) and the round-trip propagation time (the min RTT over 10 s),
//! sets the pacing rate (gain x bandwidth) and the window (gain x bandwidth-delay product plus a
//! send quantum). Its states: STARTUP doubles the rate each round trip until the bandwidth stops
//! growing; DRAIN empties the queue that made; PROBE_BW cycles the pacing gain through 1.25,
//! 0.75 and six rounds of 1; PROBE_RTT drops to 4 segments for 200 ms every 10 s to see the
//! propagation time again.
//!
//! Losses do not reduce the model: the first round of a fast recovery conserves packets, later
//! ones slow-start back towards the model's window, and leaving recovery restores the window it
//! had. The long-term bandwidth estimate of policed paths and the ACK-aggregation allowance of
//! 5.x kernels are there as Linux has them.
//!
//! The sender hands it a delivery-rate sample on every ACK (draft-cheng-iccrg-delivery-rate-
//! estimation, [`RateSample`]); it works in whole segments as Linux does (in packets) and in
//! floating-point rates rather than Linux's fixed point. The random phase at which PROBE_BW
//! starts its gain cycle comes from the flow's random stream ([`CongestionControl::seed`]);
//! without one, from a fixed seed.

mod filter;

use super::{CaState, CongestionControl, Param, ParamKind, Params, RateSample, Registered};
use filter::MaxFilter;
use qstp_proto::{Duration, Rate, Time};

/// Registry entry.
pub(super) const ENTRY: Registered = Registered {
    name: "bbr",
    aliases: &["bbr1"],
    doc: "BBR v1 (Cardwell et al. 2016; Linux tcp_bbr.c): paces at the max delivery rate, window 2 x BDP, PROBE_BW gain cycle, PROBE_RTT every 10 s",
    params: &[
        // tcp_bbr.c bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1: 2/ln 2, the smallest gain that
        // doubles the rate each round trip.
        Param { name: "high_gain", kind: ParamKind::Real, default: 2.885, min: 1.0, max: 10.0, doc: "STARTUP's pacing and window gain (DRAIN paces at its inverse)" },
        // tcp_bbr.c bbr_cwnd_gain = BBR_UNIT * 2.
        Param { name: "cwnd_gain", kind: ParamKind::Real, default: 2.0, min: 1.0, max: 10.0, doc: "PROBE_BW's window, in bandwidth-delay products" },
        // tcp_bbr.c bbr_bw_rtts = CYCLE_LEN + 2.
        Param { name: "bw_rtts", kind: ParamKind::Integer, default: 10.0, min: 1.0, max: 1000.0, doc: "round trips over which the bandwidth estimate is the max" },
        // tcp_bbr.c bbr_min_rtt_win_sec = 10.
        Param { name: "min_rtt_win", kind: ParamKind::Real, default: 10.0, min: 0.1, max: 3600.0, doc: "seconds over which the propagation-time estimate is the min (then PROBE_RTT)" },
        // tcp_bbr.c bbr_probe_rtt_mode_ms = 200.
        Param { name: "probe_rtt_ms", kind: ParamKind::Integer, default: 200.0, min: 0.0, max: 60_000.0, doc: "milliseconds PROBE_RTT holds the window at cwnd_min (0: no PROBE_RTT)" },
        // tcp_bbr.c bbr_cwnd_min_target = 4.
        Param { name: "cwnd_min", kind: ParamKind::Integer, default: 4.0, min: 1.0, max: 1000.0, doc: "smallest window, segments (PROBE_RTT's)" },
        // tcp_bbr.c bbr_full_bw_thresh = BBR_UNIT * 5 / 4, bbr_full_bw_cnt = 3.
        Param { name: "full_bw_thresh", kind: ParamKind::Real, default: 1.25, min: 1.0, max: 10.0, doc: "STARTUP ends after full_bw_cnt rounds growing the bandwidth by less than this factor" },
        Param { name: "full_bw_cnt", kind: ParamKind::Integer, default: 3.0, min: 1.0, max: 100.0, doc: "rounds without that growth that end STARTUP" },
        // tcp_bbr.c bbr_pacing_margin_percent = 1.
        Param { name: "pacing_margin", kind: ParamKind::Real, default: 0.01, min: 0.0, max: 0.5, doc: "pace this share below gain x bandwidth" },
        // tcp_bbr.c bbr_lt_* (policer detection).
        Param { name: "lt_bw", kind: ParamKind::Flag, default: 1.0, min: 0.0, max: 1.0, doc: "the long-term (policed) bandwidth estimate" },
        // tcp_bbr.c bbr_extra_acked_gain = BBR_UNIT (kernels 5.1 on).
        Param { name: "extra_acked", kind: ParamKind::Flag, default: 1.0, min: 0.0, max: 1.0, doc: "the ACK-aggregation allowance in the window (kernels 5.1 on)" },
    ],
    build: |mss, p: &Params| {
        Box::new(Bbr {
            high_gain: p.real("high_gain"),
            cwnd_gain_probe_bw: p.real("cwnd_gain"),
            bw_rtts: u64::from(p.integer("bw_rtts")),
            min_rtt_win: Duration::from_secs_f64(p.real("min_rtt_win")),
            probe_rtt_time: Duration::from_millis(u64::from(p.integer("probe_rtt_ms"))),
            cwnd_min: u64::from(p.integer("cwnd_min")),
            full_bw_thresh: p.real("full_bw_thresh"),
            full_bw_cnt_max: p.integer("full_bw_cnt"),
            pacing_margin: p.real("pacing_margin"),
            lt_enabled: p.flag("lt_bw"),
            extra_acked_enabled: p.flag("extra_acked"),
            ..Bbr::new(mss)
        })
    },
};

/// tcp_bbr.c CYCLE_LEN: phases of the PROBE_BW gain cycle.
const CYCLE_LEN: usize = 8;
/// tcp_bbr.c bbr_pacing_gain: probe at 1.25, drain at 0.75, cruise at 1 for six phases.
const PACING_GAIN: [f64; CYCLE_LEN] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// tcp_bbr.c bbr_cycle_rand: the cycle starts at one of this many phases (never at 0.75).
const CYCLE_RAND: u64 = 7;
/// include/net/tcp.h TCP_INIT_CWND: the window before any RTT sample.
const TCP_INIT_CWND: u64 = 10;
/// tcp_bbr.c bbr_min_tso_rate: below 1.2 Mbit/s the send quantum is one segment.
const MIN_TSO_RATE_BYTES: f64 = 1_200_000.0 / 8.0;
/// Linux GSO_MAX_SIZE - 1 - MAX_TCP_HEADER: the largest send quantum, bytes.
const GSO_MAX_BYTES: f64 = (65536 - 1 - 320) as f64;
/// Linux sk_pacing_shift = 10: the send quantum is about 1 ms (rate / 2^10) of data.
const PACING_SHIFT_DIVISOR: f64 = 1024.0;
/// tcp_bbr.c bbr_lt_intvl_min_rtts: a long-term interval lasts at least 4 round trips.
const LT_INTVL_MIN_RTTS: u32 = 4;
/// tcp_bbr.c bbr_lt_loss_thresh = 50 (of 256): an interval losing 20% may be policed.
const LT_LOSS_THRESH: f64 = 50.0 / 256.0;
/// tcp_bbr.c bbr_lt_bw_ratio = BBR_UNIT / 8: two intervals within 1/8 are consistent.
const LT_BW_RATIO: f64 = 1.0 / 8.0;
/// tcp_bbr.c bbr_lt_bw_diff = 4000 / 8 bytes/s: or within 4 kbit/s.
const LT_BW_DIFF_BYTES: f64 = 4000.0 / 8.0;
/// tcp_bbr.c bbr_lt_bw_max_rtts: the policed rate is used for 48 round trips.
const LT_BW_MAX_RTTS: u32 = 48;
/// tcp_bbr.c bbr_extra_acked_win_rtts: the aggregation max spans 5 to 10 round trips.
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// tcp_bbr.c bbr_ack_epoch_acked_reset_thresh = 1 << 20 packets.
const ACK_EPOCH_ACKED_RESET: u64 = 1 << 20;
/// tcp_bbr.c bbr_extra_acked_max_us = 100 ms: the allowance is at most 100 ms of bandwidth.
const EXTRA_ACKED_MAX: f64 = 0.1;

/// BBR's states (tcp_bbr.c `enum bbr_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Ramp up the sending rate rapidly to fill the pipe.
    Startup,
    /// Drain the queue STARTUP made.
    Drain,
    /// Pace around the estimated bandwidth, cycling the gain to probe and share it.
    ProbeBw,
    /// Cut what is in flight to a minimum to see the propagation time.
    ProbeRtt,
}

/// BBR v1.
#[derive(Debug, Clone)]
pub struct Bbr {
    mss: u64,
    /// Header bytes per segment on the wire (pacing counts them).
    header: u64,
    // Parameters.
    high_gain: f64,
    cwnd_gain_probe_bw: f64,
    bw_rtts: u64,
    min_rtt_win: Duration,
    probe_rtt_time: Duration,
    cwnd_min: u64,
    full_bw_thresh: f64,
    full_bw_cnt_max: u32,
    pacing_margin: f64,
    lt_enabled: bool,
    extra_acked_enabled: bool,
    // State (tcp_bbr.c `struct bbr`).
    /// Congestion window, segments.
    cwnd: u64,
    /// Slow-start threshold, segments (DRAIN sets it; nothing reads it).
    ssthresh: u64,
    mode: Mode,
    /// Max-filtered delivery rate, segments per second.
    bw: MaxFilter,
    /// Packet-timed round trips so far.
    rtt_cnt: u64,
    /// The round under way ends when this many bytes are delivered.
    next_rtt_delivered: u64,
    round_start: bool,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Time,
    probe_rtt_done_stamp: Option<Time>,
    probe_rtt_round_done: bool,
    packet_conservation: bool,
    prev_ca_state: CaState,
    idle_restart: bool,
    cycle_idx: usize,
    cycle_stamp: Time,
    pacing_gain: f64,
    cwnd_gain: f64,
    full_bw_reached: bool,
    full_bw: f64,
    full_bw_cnt: u32,
    /// The window before recovery or PROBE_RTT cut it, segments.
    prior_cwnd: u64,
    has_seen_rtt: bool,
    /// Pacing rate for the payload, bytes per second.
    pacing_rate: f64,
    // Long-term bandwidth (policer) estimate.
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: f64,
    lt_last_delivered: u64,
    lt_last_stamp: Time,
    lt_last_lost: u64,
    // ACK aggregation.
    ack_epoch_stamp: Time,
    extra_acked: [u64; 2],
    ack_epoch_acked: u64,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// Whether the sender is to mark itself application-limited (PROBE_RTT).
    app_limited_mark: bool,
    /// The connection's delivered and lost bytes and delivery time at the last sample (for a
    /// timeout's long-term sample, which Linux takes from the socket).
    last_delivered: u64,
    last_lost: u64,
    last_delivered_time: Time,
    /// The state of the random phase choice (SplitMix64).
    rng: u64,
}

impl Bbr {
    /// BBR with Linux's constants, for segments of `mss` bytes.
    pub fn new(mss: u32) -> Self {
        Bbr {
            mss: u64::from(mss.max(1)),
            header: 40,
            high_gain: 2.885,
            cwnd_gain_probe_bw: 2.0,
            bw_rtts: 10,
            min_rtt_win: Duration::from_secs(10),
            probe_rtt_time: Duration::from_millis(200),
            cwnd_min: 4,
            full_bw_thresh: 1.25,
            full_bw_cnt_max: 3,
            pacing_margin: 0.01,
            lt_enabled: true,
            extra_acked_enabled: true,
            cwnd: TCP_INIT_CWND,
            ssthresh: u64::MAX,
            mode: Mode::Startup,
            bw: MaxFilter::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            min_rtt: None,
            min_rtt_stamp: Time::ZERO,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            packet_conservation: false,
            prev_ca_state: CaState::Open,
            idle_restart: false,
            cycle_idx: 0,
            cycle_stamp: Time::ZERO,
            pacing_gain: 2.885,
            cwnd_gain: 2.885,
            full_bw_reached: false,
            full_bw: 0.0,
            full_bw_cnt: 0,
            prior_cwnd: 0,
            has_seen_rtt: false,
            pacing_rate: 0.0,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0.0,
            lt_last_delivered: 0,
            lt_last_stamp: Time::ZERO,
            lt_last_lost: 0,
            ack_epoch_stamp: Time::ZERO,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            app_limited_mark: false,
            last_delivered: 0,
            last_lost: 0,
            last_delivered_time: Time::ZERO,
            // A fixed seed when the flow gives none (documented in the module notes).
            rng: 0x6262_725f_7631_0000,
        }
    }

    /// The state it is in.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The bandwidth estimate, bytes of payload per second.
    pub fn bandwidth(&self) -> f64 {
        self.bw_pkts() * self.mss as f64
    }

    /// The propagation-time estimate, if it has one.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// Whether STARTUP found the pipe full.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// Packet-timed round trips so far.
    pub fn rounds(&self) -> u64 {
        self.rtt_cnt
    }

    /// The PROBE_BW gain-cycle phase.
    pub fn cycle_index(&self) -> usize {
        self.cycle_idx
    }

    /// SplitMix64: a number below `n`.
    fn random_below(&mut self, n: u64) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        // prandom_u32_max: the high bits of a 32-bit draw times n.
        ((z >> 32) * n) >> 32
    }

    /// tcp_bbr.c bbr_max_bw: the max-filtered bandwidth, segments per second.
    fn max_bw(&self) -> f64 {
        self.bw.get()
    }

    /// tcp_bbr.c bbr_bw: the long-term estimate when policed, else the max filter's.
    fn bw_pkts(&self) -> f64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    /// tcp_bbr.c bbr_rate_bytes_per_sec: a rate in segments per second with a gain, in bytes
    /// per second, the pacing margin off.
    fn rate_bytes_per_sec(&self, bw: f64, gain: f64) -> f64 {
        bw * self.mss as f64 * gain * (1.0 - self.pacing_margin)
    }

    /// tcp_bbr.c bbr_init_pacing_rate_from_rtt: high_gain x the window over the smoothed RTT,
    /// or over 1 ms before any.
    fn init_pacing_rate_from_rtt(&mut self, srtt: Duration) {
        let rtt = if srtt.is_zero() {
            Duration::from_millis(1)
        } else {
            self.has_seen_rtt = true;
            srtt
        };
        let bw = self.cwnd as f64 / rtt.as_secs_f64();
        self.pacing_rate = self.rate_bytes_per_sec(bw, self.high_gain);
    }

    /// tcp_bbr.c bbr_set_pacing_rate: pace at gain x bandwidth; before the pipe is full, never
    /// slower than before.
    fn set_pacing_rate(&mut self, bw: f64, gain: f64, srtt: Duration) {
        let rate = self.rate_bytes_per_sec(bw, gain);
        if !self.has_seen_rtt && !srtt.is_zero() {
            self.init_pacing_rate_from_rtt(srtt);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// tcp_bbr.c bbr_tso_segs_goal: the send quantum, segments (about 1 ms of data at the pacing
    /// rate, at least 2 segments or 1 below 1.2 Mbit/s, at most 127).
    fn tso_segs_goal(&self) -> u64 {
        let bytes = (self.pacing_rate / PACING_SHIFT_DIVISOR).min(GSO_MAX_BYTES);
        let min_segs = if self.pacing_rate < MIN_TSO_RATE_BYTES {
            1
        } else {
            2
        };
        ((bytes / self.mss as f64) as u64).max(min_segs).min(0x7f)
    }

    /// tcp_bbr.c bbr_save_cwnd: remember the last good window, before recovery or PROBE_RTT.
    fn save_cwnd(&mut self) {
        if self.prev_ca_state == CaState::Open && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    /// tcp_bbr.c bbr_bdp: ceil(gain x bandwidth x min RTT), segments; the initial window before
    /// any RTT sample.
    fn bdp(&self, bw: f64, gain: f64) -> u64 {
        match self.min_rtt {
            None => TCP_INIT_CWND,
            Some(rtt) => (bw * rtt.as_secs_f64() * gain - 1e-9).ceil().max(0.0) as u64,
        }
    }

    /// tcp_bbr.c bbr_quantization_budget: three send quanta more (one in the sender's queue,
    /// one in its offload engine, one at the receiver), rounded up to even, and two more in the
    /// probing phase so that gain cycling raises what is in flight even for small BDPs.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal();
        cwnd = (cwnd + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// tcp_bbr.c bbr_inflight: the window for a bandwidth and gain.
    fn inflight(&self, bw: f64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// tcp_bbr.c bbr_packets_in_net_at_edt: of `inflight` segments, those still in the network
    /// when the next segment leaves (the pacing wait delivers some meanwhile).
    fn packets_in_net_at_edt(&self, inflight: u64, rs: &RateSample) -> u64 {
        let wait = rs.next_departure.saturating_since(rs.now);
        let delivered = (self.bw_pkts() * wait.as_secs_f64()) as u64;
        let mut at_edt = inflight;
        if self.pacing_gain > 1.0 {
            at_edt += self.tso_segs_goal();
        }
        at_edt.saturating_sub(delivered)
    }

    /// tcp_bbr.c bbr_ack_aggregation_cwnd: the allowance for ACK aggregation, segments.
    fn ack_aggregation_cwnd(&self) -> u64 {
        if !(self.extra_acked_enabled && self.full_bw_reached) {
            return 0;
        }
        let max_aggr = (self.bw_pkts() * EXTRA_ACKED_MAX) as u64;
        self.extra_acked[0].max(self.extra_acked[1]).min(max_aggr)
    }

    /// tcp_bbr.c bbr_set_cwnd_to_recover_or_restore: losses take segments off the window; the
    /// first round of a recovery conserves packets; leaving recovery restores the window saved
    /// entering it. Returns the window and whether packet conservation holds it.
    fn cwnd_to_recover_or_restore(&mut self, rs: &RateSample, acked: u64) -> (u64, bool) {
        let mut cwnd = self.cwnd;
        let in_flight = self.pkts(rs.in_flight);
        // An ACK for P segments releases at most 2P: first take off those lost.
        let losses = self.pkts(rs.losses);
        if losses > 0 {
            cwnd = cwnd.saturating_sub(losses).max(1);
        }
        let (prev, state) = (self.prev_ca_state, rs.state);
        if state == CaState::Recovery && prev != CaState::Recovery {
            // The first round of recovery: packet conservation, from what is in flight.
            self.packet_conservation = true;
            self.next_rtt_delivered = rs.delivered_total;
            cwnd = in_flight + acked;
        } else if prev != CaState::Open && state == CaState::Open {
            // Leaving recovery (or a timeout's loss state): restore the window saved.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// tcp_bbr.c bbr_set_cwnd: slow-start up to the target window (the pipe not yet full, or
    /// losses drew it down), or snap down to it.
    fn set_cwnd(&mut self, rs: &RateSample, acked: u64, bw: f64, gain: f64) {
        if acked > 0 {
            let (mut cwnd, conserving) = self.cwnd_to_recover_or_restore(rs, acked);
            if !conserving {
                let mut target = self.bdp(bw, gain);
                // More for the data ACK aggregation seems to hold back.
                target += self.ack_aggregation_cwnd();
                target = self.quantization_budget(target);
                if self.full_bw_reached {
                    // Only cut the window once the pipe was filled.
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || rs.delivered_total < TCP_INIT_CWND * self.mss {
                    cwnd += acked;
                }
                cwnd = cwnd.max(self.cwnd_min);
            }
            self.cwnd = cwnd;
        }
        if self.mode == Mode::ProbeRtt {
            // Drain the queue and see the propagation time.
            self.cwnd = self.cwnd.min(self.cwnd_min);
        }
    }

    /// tcp_bbr.c bbr_is_next_cycle_phase: a phase lasts a min RTT; probing (1.25) also waits for
    /// the inflight it aims at or a loss, draining (0.75) ends early once inflight is down to
    /// the BDP.
    fn is_next_cycle_phase(&self, rs: &RateSample) -> bool {
        let full_length = match self.min_rtt {
            Some(rtt) => rs.delivered_time.saturating_since(self.cycle_stamp) > rtt,
            None => true,
        };
        if self.pacing_gain == 1.0 {
            return full_length;
        }
        let inflight = self.packets_in_net_at_edt(self.pkts(rs.prior_in_flight), rs);
        let bw = self.max_bw();
        if self.pacing_gain > 1.0 {
            return full_length
                && (rs.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        full_length || inflight <= self.inflight(bw, 1.0)
    }

    /// tcp_bbr.c bbr_advance_cycle_phase.
    fn advance_cycle_phase(&mut self, rs_delivered_time: Time) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_stamp = rs_delivered_time;
    }

    /// tcp_bbr.c bbr_reset_probe_bw_mode: PROBE_BW at a random phase of the cycle other than
    /// the draining one.
    fn reset_probe_bw_mode(&mut self, delivered_time: Time) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.random_below(CYCLE_RAND) as usize;
        self.advance_cycle_phase(delivered_time);
    }

    /// tcp_bbr.c bbr_reset_mode: STARTUP again unless the pipe was found full.
    fn reset_mode(&mut self, delivered_time: Time) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(delivered_time);
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// tcp_bbr.c bbr_reset_lt_bw_sampling_interval.
    fn reset_lt_interval(&mut self, delivered_total: u64, delivered_time: Time, lost: u64) {
        self.lt_last_stamp = delivered_time;
        self.lt_last_delivered = delivered_total;
        self.lt_last_lost = lost;
        self.lt_rtt_cnt = 0;
    }

    /// tcp_bbr.c bbr_reset_lt_bw_sampling.
    fn reset_lt(&mut self, rs: &RateSample) {
        self.lt_bw = 0.0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_interval(rs.delivered_total, rs.delivered_time, rs.lost_total);
    }

    /// tcp_bbr.c bbr_lt_bw_interval_done: two consistent lossy intervals mean a policer; use
    /// their mean rate.
    fn lt_interval_done(&mut self, bw: f64, rs: &RateSample) {
        if self.lt_bw > 0.0 {
            let diff = (bw - self.lt_bw).abs();
            if diff <= LT_BW_RATIO * self.lt_bw
                || self.rate_bytes_per_sec(diff, 1.0) <= LT_BW_DIFF_BYTES
            {
                self.lt_bw = (bw + self.lt_bw) / 2.0;
                self.lt_use_bw = true;
                self.pacing_gain = 1.0;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_interval(rs.delivered_total, rs.delivered_time, rs.lost_total);
    }

    /// tcp_bbr.c bbr_lt_bw_sampling: the long-term delivery rate over intervals of 4 to 16 round
    /// trips that start and end with a loss and lose at least 20%.
    fn lt_bw_sampling(&mut self, rs: &RateSample, losses: bool) {
        if !self.lt_enabled {
            return;
        }
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    // Stop using the policed rate; restart gain cycling.
                    self.reset_lt(rs);
                    self.reset_probe_bw_mode(rs.delivered_time);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            // Wait for the first loss: the policer's tokens are spent by then.
            if !losses {
                return;
            }
            self.reset_lt_interval(rs.delivered_total, rs.delivered_time, rs.lost_total);
            self.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt(rs);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt(rs);
            return;
        }
        if !losses {
            return;
        }
        let lost = rs.lost_total.saturating_sub(self.lt_last_lost) as f64;
        let delivered = rs.delivered_total.saturating_sub(self.lt_last_delivered) as f64;
        if delivered == 0.0 || lost < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = rs.delivered_time.saturating_since(self.lt_last_stamp);
        // Linux counts the interval in whole milliseconds: under one, wait.
        if t < Duration::from_millis(1) {
            return;
        }
        let bw = delivered / self.mss as f64 / t.as_secs_f64();
        self.lt_interval_done(bw, rs);
    }

    /// tcp_bbr.c bbr_update_bw: count rounds, and feed the max filter (application-limited
    /// samples only when they raise it).
    fn update_bw(&mut self, rs: &RateSample) {
        self.round_start = false;
        let (Some(delivered), Some(interval)) = (rs.delivered, rs.interval) else {
            return;
        };
        if rs
            .prior_delivered
            .is_some_and(|p| p >= self.next_rtt_delivered)
        {
            self.next_rtt_delivered = rs.delivered_total;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(rs, rs.losses > 0);
        let bw = delivered as f64 / self.mss as f64 / interval.as_secs_f64();
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.update(self.bw_rtts, self.rtt_cnt, bw);
        }
    }

    /// tcp_bbr.c bbr_update_ack_aggregation: the most data acknowledged beyond what the
    /// bandwidth estimate expects, over 5 to 10 round trips.
    fn update_ack_aggregation(&mut self, rs: &RateSample) {
        let acked = self.pkts(rs.acked_sacked);
        if !self.extra_acked_enabled || acked == 0 || rs.delivered.is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch = rs.delivered_time.saturating_since(self.ack_epoch_stamp);
        let mut expected = (self.bw_pkts() * epoch.as_secs_f64()) as u64;
        // A new epoch when ACKs come slower than expected, or after very many.
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + acked >= ACK_EPOCH_ACKED_RESET
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_stamp = rs.delivered_time;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + acked).min(0xfffff);
        let extra = (self.ack_epoch_acked - expected).min(self.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// tcp_bbr.c bbr_check_full_bw_reached: STARTUP filled the pipe once the bandwidth grew by
    /// less than 25% over 3 rounds that were not application-limited.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        if self.max_bw() >= self.full_bw * self.full_bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= self.full_bw_cnt_max;
    }

    /// tcp_bbr.c bbr_check_drain: STARTUP -> DRAIN once the pipe is full; DRAIN -> PROBE_BW once
    /// what is in flight is down to the BDP.
    fn check_drain(&mut self, rs: &RateSample) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.ssthresh = self.inflight(self.max_bw(), 1.0);
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(self.pkts(rs.in_flight), rs)
                <= self.inflight(self.max_bw(), 1.0)
        {
            self.reset_probe_bw_mode(rs.delivered_time);
        }
    }

    /// tcp_bbr.c bbr_check_probe_rtt_done: after 200 ms and a round at the minimum, restore
    /// the window and leave PROBE_RTT.
    fn check_probe_rtt_done(&mut self, now: Time, delivered_time: Time) {
        if !self.probe_rtt_done_stamp.is_some_and(|t| now > t) {
            return;
        }
        // Wait a while until the next PROBE_RTT.
        self.min_rtt_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        self.reset_mode(delivered_time);
    }

    /// tcp_bbr.c bbr_update_min_rtt: the min RTT over 10 s; when it expires, PROBE_RTT.
    fn update_min_rtt(&mut self, rs: &RateSample) {
        let now = rs.now;
        let expired = self.min_rtt.is_some() && now > self.min_rtt_stamp + self.min_rtt_win;
        if let Some(rtt) = rs.rtt {
            let lower = match self.min_rtt {
                Some(m) => rtt <= m,
                None => true,
            };
            if lower || expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if !self.probe_rtt_time.is_zero()
            && expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            // Dip: drain the queue.
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
        }
        self.app_limited_mark = false;
        if self.mode == Mode::ProbeRtt {
            // Ignore the low-rate samples of this state.
            self.app_limited_mark = true;
            // Hold the minimum in flight for max(200 ms, one round).
            if self.probe_rtt_done_stamp.is_none() && self.pkts(rs.in_flight) <= self.cwnd_min {
                self.probe_rtt_done_stamp = Some(now + self.probe_rtt_time);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = rs.delivered_total;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now, rs.delivered_time);
                }
            }
        }
        // The restart after idle ends with the first ACK of new data.
        if rs.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    /// tcp_bbr.c bbr_update_gains: each state's pacing and window gains.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (self.high_gain, self.high_gain),
            Mode::Drain => (1.0 / self.high_gain, self.high_gain),
            Mode::ProbeBw if self.lt_use_bw => (1.0, self.cwnd_gain_probe_bw),
            Mode::ProbeBw => (PACING_GAIN[self.cycle_idx], self.cwnd_gain_probe_bw),
            Mode::ProbeRtt => (1.0, 1.0),
        };
    }

    /// Bytes in whole segments, rounded up (Linux counts packets).
    fn pkts(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.mss)
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn init(&mut self, initial_cwnd: u64, _initial_ssthresh: u64) {
        // tcp_bbr.c bbr_init: ssthresh infinite, pacing from the initial window over 1 ms.
        self.cwnd = self.pkts(initial_cwnd).max(1);
        self.ssthresh = u64::MAX;
        self.init_pacing_rate_from_rtt(Duration::ZERO);
    }

    fn in_slow_start(&self) -> bool {
        self.mode == Mode::Startup
    }

    fn cwnd(&self) -> u64 {
        self.cwnd.saturating_mul(self.mss)
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh.saturating_mul(self.mss)
    }

    fn cong_control(&self) -> bool {
        true
    }

    fn on_ack(&mut self, _sample: &crate::AckSample) {
        // Everything happens in on_rate_sample (Linux: cong_control replaces cong_avoid).
    }

    fn on_rate_sample(&mut self, rs: &RateSample) {
        self.header = u64::from(rs.header_bytes);
        self.last_delivered = rs.delivered_total;
        self.last_lost = rs.lost_total;
        self.last_delivered_time = rs.delivered_time;
        // tcp_bbr.c bbr_update_model.
        self.update_bw(rs);
        self.update_ack_aggregation(rs);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(rs) {
            self.advance_cycle_phase(rs.delivered_time);
        }
        self.check_full_bw_reached(rs);
        self.check_drain(rs);
        self.update_min_rtt(rs);
        self.update_gains();
        // tcp_bbr.c bbr_main.
        let bw = self.bw_pkts();
        self.set_pacing_rate(bw, self.pacing_gain, rs.srtt);
        let acked = self.pkts(rs.acked_sacked);
        self.set_cwnd(rs, acked, bw, self.cwnd_gain);
    }

    fn mark_app_limited(&self) -> bool {
        self.app_limited_mark
    }

    fn on_congestion_event(&mut self, _now: Time, _in_flight: u64) {
        // tcp_bbr.c bbr_ssthresh: entering recovery, save the window for its end.
        self.save_cwnd();
    }

    fn on_recovery_end(&mut self, _now: Time) {
        // The next rate sample sees the open state and restores the window.
    }

    fn on_retransmission_timeout(&mut self, now: Time, _in_flight: u64) {
        // tcp_input.c tcp_enter_loss: ssthresh from the control (bbr_ssthresh saves the
        // window), the window to what is in flight plus one, every segment now deemed lost.
        self.save_cwnd();
        self.cwnd = 1;
        // tcp_bbr.c bbr_set_state(TCP_CA_Loss): a timeout ends a round and restarts the
        // full-pipe detection; it counts as a loss for the long-term estimate.
        self.prev_ca_state = CaState::Loss;
        self.full_bw = 0.0;
        self.round_start = true;
        let rs = RateSample {
            now,
            delivered_total: self.last_delivered,
            delivered_time: self.last_delivered_time,
            prior_delivered: None,
            delivered: None,
            interval: None,
            is_app_limited: false,
            acked_sacked: 0,
            losses: 1,
            lost_total: self.last_lost,
            prior_in_flight: 0,
            in_flight: 0,
            rtt: None,
            srtt: Duration::ZERO,
            state: CaState::Loss,
            next_departure: now,
            header_bytes: self.header as u32,
        };
        self.lt_bw_sampling(&rs, true);
    }

    fn on_idle_restart(&mut self, _restart_window: u64) {
        // Linux skips the window restart after idle for cong_control modules
        // (tcp_output.c tcp_slow_start_after_idle_check); tcp_bbr.c bbr_cwnd_event
        // (CA_EVENT_TX_START while application-limited) marks the restart instead, and paces at
        // the estimate in PROBE_BW.
        self.idle_restart = true;
        self.ack_epoch_acked = 0;
        if self.mode == Mode::ProbeBw {
            let bw = self.bw_pkts();
            self.set_pacing_rate(bw, 1.0, Duration::ZERO);
        }
    }

    fn on_moderate(&mut self, _limit: u64) {
        // The window is BBR's own in and after recovery (no tcp_moderate_cwnd).
    }

    fn pacing_rate(&self) -> Option<Rate> {
        // The rate is of payload; the sender paces segments with their headers.
        let wire = (self.mss + self.header) as f64 / self.mss as f64;
        Some(Rate::from_bytes_per_sec(self.pacing_rate * wire))
    }

    fn seed(&mut self, seed: u64) {
        self.rng = seed;
    }
}
