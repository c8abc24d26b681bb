//! What one simulation run hands back: per-flow records and series, the bottleneck's queue
//! counters and length series, and what the delegation group and the ATM port recorded.

use qstp_dataplane::queue::CodePointCounters;
use qstp_proto::Duration;

/// Statistics of one queue.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct QueueRecord {
    /// Name (`bottleneck`, or `bottleneck/<class>` for CBQ classes).
    pub name: String,
    /// Green packets.
    pub green: CodePointCounters,
    /// Yellow packets.
    pub yellow: CodePointCounters,
    /// Red packets.
    pub red: CodePointCounters,
}

/// The sojourn times of the packets one queue let go after the warm-up: from the packet's offer to
/// the start of its serialisation (`qstp_dataplane::link::Sojourn`: the mean exact, percentiles
/// within 0.8%).
#[derive(Debug, Clone, PartialEq)]
pub struct QueueSojourn {
    /// Name, as in [`QueueRecord::name`].
    pub name: String,
    /// Mean and percentiles, ns.
    pub stats: qstp_dataplane::link::SojournStats,
}

/// The occupancy of one queue, sampled at the end of every bin of width `SimSpec::bin`: what it
/// held at that instant (not a mean over the bin), as ns-3 users sample a queue's length.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueSeries {
    /// Name, as in [`QueueRecord::name`] (`bottleneck`, `bottleneck/<class>`).
    pub name: String,
    /// Packets queued at the end of each bin.
    pub packets: Vec<u64>,
    /// Bytes queued (sizes on the wire) at the end of each bin.
    pub bytes: Vec<u64>,
}

/// What one flow did, recorded at fixed bins of width `SimSpec::bin`.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowRecord {
    /// Index of the group in `SimSpec::groups`.
    pub group: usize,
    /// Index of the flow in its group.
    pub flow: u32,
    /// Bytes of packets (headers included) that reached the receiver, per bin: the network-level
    /// throughput, retransmissions and duplicates included.
    pub received_bytes: Vec<u64>,
    /// Bytes delivered in order to the receiving application, per bin: the goodput.
    pub delivered_bytes: Vec<u64>,
    /// One-way delay of each received packet minus that of the packet before it, absolute, summed
    /// per bin, in nanoseconds (with `received_packets`, gives the mean jitter per bin).
    pub jitter_ns: Vec<u64>,
    /// Packets that reached the receiver, per bin.
    pub received_packets: Vec<u64>,
    /// One-way delay of the packets that reached the receiver from the warm-up on (`None` if
    /// none did).
    pub delay: Option<DelayStats>,
    /// The sender's RTT measurements from the warm-up on (TCP: each ACK's sample, Karn's rule
    /// kept; qstp: each feedback's, RFC 5348 §4.3; `None` for senders without, or before any).
    pub rtt: Option<DelayStats>,
    /// Data packets the sender emitted (retransmissions included).
    pub packets_sent: u64,
    /// Data packets the sender sent again.
    pub packets_retransmitted: u64,
    /// What the sender saw, per bin (TCP and qstp senders; empty for others).
    pub sender: SenderSeries,
    /// The messages of a qstp flow that carries messages, by the bin they were written in
    /// (`None` for other flows).
    pub messages: Option<MessageSeries>,
}

/// A message flow's messages, per bin of the instant the sending application wrote them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageSeries {
    /// Messages the application wrote (the connection accepted).
    pub written: Vec<u64>,
    /// Of those, the ones the receiving application got (by the end of the run).
    pub delivered: Vec<u64>,
}

/// Mean and percentiles of a flow's one-way delays (sent to received, queueing included), or of
/// its sender's RTT measurements.
///
/// The mean is exact; the percentiles come from a histogram with two significant digits
/// (HdrHistogram): each is the highest delay its bucket holds, at most 1% above the true value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DelayStats {
    /// Packets measured.
    pub samples: u64,
    /// Mean, nanoseconds.
    pub mean_ns: f64,
    /// Median, nanoseconds.
    pub p50_ns: u64,
    /// 95th percentile, nanoseconds.
    pub p95_ns: u64,
    /// 99th percentile, nanoseconds.
    pub p99_ns: u64,
}

/// A sender's state per bin: data packets sent and sent again, and its smoothed RTT and window as
/// its acknowledgements arrived. Vectors are empty for senders that do not report them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SenderSeries {
    /// Data packets sent, retransmissions included.
    pub sent: Vec<u64>,
    /// Data packets sent again.
    pub retransmitted: Vec<u64>,
    /// Smoothed RTT at each ACK, summed, nanoseconds (with `rtt_samples`, the bin's mean).
    pub rtt_ns: Vec<u64>,
    /// ACKs that contributed to `rtt_ns`.
    pub rtt_samples: Vec<u64>,
    /// Congestion window after the bin's last ACK, bytes (0: no ACK in the bin).
    pub cwnd_bytes: Vec<u64>,
    /// Loss events the sender reacted to in the bin: TCP's entries into fast recovery and
    /// retransmission timeouts; qstp's feedbacks whose loss event rate p rose
    /// (`qstp_proto::Stats::loss_event_rate_increases`, a lower bound on new loss events).
    pub loss_events: Vec<u64>,
    /// Of those, retransmission timeouts (TCP senders; empty for others).
    pub timeouts: Vec<u64>,
    /// The rate controller's state at the end of each bin (qstp senders; `None` for a bin that
    /// ended before the connection was established).
    pub rate: Vec<Option<RateSample>>,
}

/// A qstp sender's rate controller at one instant (`qstp_proto::Connection::stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateSample {
    /// The allowed sending rate X, bit/s (under the group's `max_rate` cap, if any: the rate the
    /// sender paces at).
    pub rate_bps: u64,
    /// The receive rate X_recv the latest feedback reported, bit/s.
    pub x_recv_bps: u64,
    /// The loss event rate p the latest feedback reported, parts per billion (as on the wire).
    pub loss_event_rate_ppb: u64,
    /// The smoothed RTT, nanoseconds.
    pub rtt_ns: u64,
}

/// Everything one run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutput {
    /// Events the engine processed.
    pub events: u64,
    /// Packets that crossed the bottleneck link.
    pub bottleneck_packets: u64,
    /// Simulated time covered.
    pub simulated: Duration,
    /// One per flow, groups in order, flows in order.
    pub flows: Vec<FlowRecord>,
    /// One per queue on the bottleneck, counted after `SimSpec::warmup`.
    pub queues: Vec<QueueRecord>,
    /// The occupancy of the same queues over the whole run, one value per bin.
    pub queue_series: Vec<QueueSeries>,
    /// Sojourn times at the same queues after the warm-up (the whole packet queue; empty for an
    /// ATM trunk or a run that does not measure them).
    pub sojourn: Vec<QueueSojourn>,
    /// What the delegation group did, if the run has one.
    pub delegation: Option<DelegationRecord>,
    /// What the ATM trunk's port counted, if the bottleneck is one (from the warm-up on).
    pub atm: Option<AtmRecord>,
}

/// What an ATM trunk's port counted, from the warm-up on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtmRecord {
    /// Per group (VP), in order.
    pub vps: Vec<qstp_dataplane::atm::VpStats>,
    /// Cells the trunk carried.
    pub cells_sent: u64,
}

/// What a delegation group did over a run.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DelegationRecord {
    /// Time between control instants; sample k covers (k x period, (k + 1) x period].
    pub period: Duration,
    /// Per control instant: the Free's throughput over the last period and the trace's target,
    /// bit/s.
    pub samples: Vec<(f64, f64)>,
    /// Signals of the Free delegated to Stunts.
    pub delegated: u64,
    /// Signals of the Free it reacted to itself.
    pub reacted: u64,
    /// Signals of Stunts the Free took (reverse delegation).
    pub taken_by_free: u64,
}
