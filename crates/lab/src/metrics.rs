//! What the papers measure, computed from one run's records: throughput at the receiver, goodput,
//! jitter, the 1 s time-sliding-window series, and the statistics across runs.

use qstp_proto::Duration;
use qstp_sim::{FlowRecord, QueueRecord, RunOutput};
use serde::{Deserialize, Serialize};

/// A [`Duration`] on the wire between a task and its reduction: whole nanoseconds, exact.
mod nanos {
    use qstp_proto::Duration;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        d.as_nanos().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_nanos)
    }
}

/// Window of the throughput series: one second, as the QSTP paper's Fig. 4 (§5.2, after RFC 2859).
pub const TSW_WINDOW: Duration = Duration::from_secs(1);

/// One flow's means over a run, after the warm-up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowRun {
    /// Index of the group.
    pub group: usize,
    /// Index of the flow in its group.
    pub flow: u32,
    /// Network-level throughput at the receiver, bit/s.
    pub throughput_bps: f64,
    /// Application-level goodput (in-order delivered bytes), bit/s.
    pub goodput_bps: f64,
    /// Mean absolute difference of consecutive one-way delays per packet, ms; `None` without packets.
    pub jitter_ms: Option<f64>,
    /// Data packets sent, retransmissions included.
    pub packets_sent: u64,
    /// Data packets sent again.
    pub packets_retransmitted: u64,
    /// Retransmission timeouts after the warm-up (TCP senders; `None` for others).
    #[serde(default)]
    pub timeouts: Option<u64>,
    /// Entries into fast recovery after the warm-up (TCP senders; `None` for others).
    #[serde(default)]
    pub fast_recoveries: Option<u64>,
    /// One-way delay (sent to received, queueing included) of the packets received after the
    /// warm-up: mean, ms; `None` without packets.
    #[serde(default)]
    pub delay_mean_ms: Option<f64>,
    /// Its median, ms (to within 1%: `qstp_sim::DelayStats`).
    #[serde(default)]
    pub delay_p50_ms: Option<f64>,
    /// Its 95th percentile, ms.
    #[serde(default)]
    pub delay_p95_ms: Option<f64>,
    /// Its 99th percentile, ms.
    #[serde(default)]
    pub delay_p99_ms: Option<f64>,
    /// The sender's RTT measurements after the warm-up (TCP and qstp senders): mean, ms; `None`
    /// without any.
    #[serde(default)]
    pub rtt_mean_ms: Option<f64>,
    /// Their median, ms (to within 1%).
    #[serde(default)]
    pub rtt_p50_ms: Option<f64>,
    /// Their 95th percentile, ms.
    #[serde(default)]
    pub rtt_p95_ms: Option<f64>,
    /// Their 99th percentile, ms.
    #[serde(default)]
    pub rtt_p99_ms: Option<f64>,
    /// The run's sojourn times at the bottleneck's whole queue (offer to start of serialisation)
    /// after the warm-up, the same for every flow of the run: mean, ms; `None` where the
    /// bottleneck does not measure them (an ATM trunk) or no packet left it.
    #[serde(default)]
    pub queue_sojourn_mean_ms: Option<f64>,
    /// Their median, ms (to within 0.8%: `qstp_dataplane::link::Sojourn`).
    #[serde(default)]
    pub queue_sojourn_p50_ms: Option<f64>,
    /// Their 95th percentile, ms.
    #[serde(default)]
    pub queue_sojourn_p95_ms: Option<f64>,
    /// Their 99th percentile, ms.
    #[serde(default)]
    pub queue_sojourn_p99_ms: Option<f64>,
    /// A message flow's (qstp compositions that carry messages): the share of the messages
    /// written after the warm-up and at least [`MESSAGE_SETTLE`] before the end that the
    /// receiving application got by the end; `None` for other flows.
    #[serde(default)]
    pub messages_delivered: Option<f64>,
    /// The share of the same messages it never got: given up by the sender (a deadline or a
    /// retransmission limit) or, with full reliability, still waiting at the run's end.
    #[serde(default)]
    pub messages_expired: Option<f64>,
}

/// The messages written in the last 2 s of a run are left out of its delivered and expired
/// shares: they may still be on their way (every deadline of the shipped scenarios is shorter).
pub const MESSAGE_SETTLE: Duration = Duration::from_secs(2);

/// The sojourn times at one bottleneck queue over one run after the warm-up: from a packet's
/// offer to the start of its serialisation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueSojournRun {
    /// `bottleneck`.
    pub name: String,
    /// Packets that left the queue.
    pub samples: u64,
    /// Mean, ms (exact).
    pub mean_ms: f64,
    /// Median, ms (to within 0.8%).
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
}

/// One flow's series over a whole run, one value per bin.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowSeries {
    /// Index of the group.
    pub group: usize,
    /// Index of the flow in its group.
    pub flow: u32,
    /// Throughput at the receiver through the 1 s time-sliding window, bit/s.
    pub throughput_bps: Vec<f64>,
    /// Goodput through the same window, bit/s.
    pub goodput_bps: Vec<f64>,
    /// Mean jitter of the bin's packets, ms (`None` for a bin without packets).
    pub jitter_ms: Vec<Option<f64>>,
    /// The sender's mean smoothed RTT over the bin's acknowledgements, ms (TCP; `None` without).
    #[serde(default)]
    pub rtt_ms: Vec<Option<f64>>,
    /// The sender's congestion window after the bin's last acknowledgement, bytes (TCP).
    #[serde(default)]
    pub cwnd_bytes: Vec<Option<f64>>,
    /// Share of the data packets sent in the last 1 s (the TSW window, up to the end of the bin)
    /// that were retransmissions (TCP; `None` when none were sent): the sender's view of the
    /// loss rate.
    #[serde(default)]
    pub loss_rate: Vec<Option<f64>>,
    /// Loss events the sender saw in the bin (TCP: entries into fast recovery and retransmission
    /// timeouts; qstp: feedbacks whose loss event rate p rose; `None` for senders that do not
    /// report them).
    #[serde(default)]
    pub loss_events: Vec<Option<f64>>,
    /// The qstp sender's allowed sending rate X at the end of the bin (under its `max_rate`
    /// cap), bit/s (`None` before the connection is established; empty for other senders).
    #[serde(default)]
    pub rate_bps: Vec<Option<f64>>,
    /// The receive rate X_recv of the latest feedback at the end of the bin, bit/s (qstp).
    #[serde(default)]
    pub x_recv_bps: Vec<Option<f64>>,
    /// The loss event rate p of the latest feedback at the end of the bin (qstp).
    #[serde(default)]
    pub loss_event_rate: Vec<Option<f64>>,
}

/// One bottleneck queue's occupancy over a whole run, at the end of each bin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueLength {
    /// `bottleneck`, or `bottleneck/<class>` for a CBQ class.
    pub name: String,
    /// Packets queued at the end of each bin.
    pub packets: Vec<f64>,
    /// Bytes queued at the end of each bin (empty when not known).
    #[serde(default)]
    pub bytes: Vec<f64>,
}

/// The series of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSeries {
    /// Width of a bin.
    #[serde(with = "nanos")]
    pub bin: Duration,
    /// One per flow, groups in order.
    pub flows: Vec<FlowSeries>,
    /// One per bottleneck queue: the whole queue, then each class.
    #[serde(default)]
    pub queues: Vec<QueueLength>,
}

/// One run reduced to what the reports need.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    /// The run's seed.
    pub seed: u64,
    /// Events the simulator processed.
    pub events: u64,
    /// Simulated time covered.
    #[serde(with = "nanos")]
    pub simulated: Duration,
    /// One per flow, groups in order.
    pub flows: Vec<FlowRun>,
    /// Per-colour statistics of each bottleneck queue.
    pub queues: Vec<QueueRecord>,
    /// Sojourn times at the bottleneck queues that measure them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sojourn: Vec<QueueSojournRun>,
    /// The time series, kept for the first run of each point only.
    pub series: Option<RunSeries>,
    /// How the delegation group's Free matched its trace after the warm-up (Free & Stunts
    /// paper eqs. 16-19), when the run has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching: Option<qstp_sim::delegation::Matching>,
    /// Who took the delegation group's congestion signals over the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signals: Option<Signals>,
    /// What the ATM trunk's port counted per group (VP), when the bottleneck is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atm: Option<Vec<qstp_dataplane::atm::VpStats>>,
}

/// Who took a delegation group's congestion signals (Free & Stunts §II-B): per run, or the mean
/// over runs in a summary.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Signals {
    /// Fast-retransmit signals of the Free that Stunts backed off for.
    pub delegated: f64,
    /// Signals of the Free it reacted to itself (not delegated, or the Stunts too small).
    pub reacted: f64,
    /// Signals of Stunts the Free took (reverse delegation).
    pub taken_by_free: f64,
}

/// Reduce one run; `warmup` is left out of the means; `keep_series` keeps the time series.
pub fn reduce(
    output: &RunOutput,
    seed: u64,
    bin: Duration,
    warmup: Duration,
    keep_series: bool,
) -> RunMetrics {
    let sojourn: Vec<QueueSojournRun> = output
        .sojourn
        .iter()
        .map(|q| QueueSojournRun {
            name: q.name.clone(),
            samples: q.stats.samples,
            mean_ms: q.stats.mean_ns / 1e6,
            p50_ms: q.stats.p50_ns / 1e6,
            p95_ms: q.stats.p95_ns / 1e6,
            p99_ms: q.stats.p99_ns / 1e6,
        })
        .collect();
    let whole = sojourn.iter().find(|q| q.name == "bottleneck");
    let flows = output
        .flows
        .iter()
        .map(|f| FlowRun {
            queue_sojourn_mean_ms: whole.map(|q| q.mean_ms),
            queue_sojourn_p50_ms: whole.map(|q| q.p50_ms),
            queue_sojourn_p95_ms: whole.map(|q| q.p95_ms),
            queue_sojourn_p99_ms: whole.map(|q| q.p99_ms),
            ..flow_run(f, bin, warmup, output.simulated)
        })
        .collect();
    let series = keep_series.then(|| RunSeries {
        bin,
        flows: output.flows.iter().map(|f| flow_series(f, bin)).collect(),
        queues: output
            .queue_series
            .iter()
            .map(|q| QueueLength {
                name: q.name.clone(),
                packets: q.packets.iter().map(|&v| v as f64).collect(),
                bytes: q.bytes.iter().map(|&v| v as f64).collect(),
            })
            .collect(),
    });
    // The samples of the periods that start at or after the warm-up.
    let matching = output.delegation.as_ref().and_then(|d| {
        let skip = warmup.as_nanos().div_ceil(d.period.as_nanos().max(1)) as usize;
        qstp_sim::delegation::matching(d.samples.get(skip..).unwrap_or(&[]))
    });
    let signals = output.delegation.as_ref().map(|d| Signals {
        delegated: d.delegated as f64,
        reacted: d.reacted as f64,
        taken_by_free: d.taken_by_free as f64,
    });
    RunMetrics {
        seed,
        events: output.events,
        simulated: output.simulated,
        flows,
        queues: output.queues.clone(),
        sojourn,
        series,
        matching,
        signals,
        atm: output.atm.as_ref().map(|a| a.vps.clone()),
    }
}

/// Index of the first bin that starts at or after `warmup`.
fn first_bin(bin: Duration, warmup: Duration) -> usize {
    warmup.as_nanos().div_ceil(bin.as_nanos().max(1)) as usize
}

/// Mean rate in bit/s of `bytes` per bin from `first` on, over the time those bins cover (the last
/// one cut at `end`).
fn mean_rate(bytes: &[u64], first: usize, bin: Duration, end: Duration) -> f64 {
    if first >= bytes.len() {
        return 0.0;
    }
    let total: u64 = bytes[first..].iter().sum();
    let start = bin.as_secs_f64() * first as f64;
    let stop = (bin.as_secs_f64() * bytes.len() as f64).min(end.as_secs_f64().max(start));
    if stop <= start {
        return 0.0;
    }
    total as f64 * 8.0 / (stop - start)
}

fn flow_run(f: &FlowRecord, bin: Duration, warmup: Duration, end: Duration) -> FlowRun {
    let first = first_bin(bin, warmup);
    let jitter_sum: u64 = f.jitter_ns.iter().skip(first).sum();
    let packets: u64 = f.received_packets.iter().skip(first).sum();
    // A TCP sender's loss events split into timeouts and fast recoveries.
    let recovery = (!f.sender.timeouts.is_empty()).then(|| {
        let sum = |v: &[u64]| v.iter().skip(first).sum::<u64>();
        (sum(&f.sender.timeouts), sum(&f.sender.loss_events))
    });
    // Messages written from the warm-up's first bin to the last bin that ends MESSAGE_SETTLE
    // before the end.
    let delivered = f.messages.as_ref().and_then(|m| {
        let settled = end.saturating_sub(MESSAGE_SETTLE).as_nanos() / bin.as_nanos().max(1);
        let last = (settled as usize).min(m.written.len());
        let written: u64 = m.written.get(first..last)?.iter().sum();
        let got: u64 = m.delivered.get(first..last)?.iter().sum();
        (written > 0).then(|| {
            let share = got as f64 / written as f64;
            (share, 1.0 - share)
        })
    });
    FlowRun {
        group: f.group,
        flow: f.flow,
        throughput_bps: mean_rate(&f.received_bytes, first, bin, end),
        goodput_bps: mean_rate(&f.delivered_bytes, first, bin, end),
        // The recorder sums |d_i - d_{i-1}| per received packet.
        jitter_ms: (packets > 0).then(|| jitter_sum as f64 / packets as f64 / 1e6),
        packets_sent: f.packets_sent,
        packets_retransmitted: f.packets_retransmitted,
        timeouts: recovery.map(|(t, _)| t),
        fast_recoveries: recovery.map(|(t, events)| events.saturating_sub(t)),
        delay_mean_ms: f.delay.map(|d| d.mean_ns / 1e6),
        delay_p50_ms: f.delay.map(|d| d.p50_ns as f64 / 1e6),
        delay_p95_ms: f.delay.map(|d| d.p95_ns as f64 / 1e6),
        delay_p99_ms: f.delay.map(|d| d.p99_ns as f64 / 1e6),
        rtt_mean_ms: f.rtt.map(|d| d.mean_ns / 1e6),
        rtt_p50_ms: f.rtt.map(|d| d.p50_ns as f64 / 1e6),
        rtt_p95_ms: f.rtt.map(|d| d.p95_ns as f64 / 1e6),
        rtt_p99_ms: f.rtt.map(|d| d.p99_ns as f64 / 1e6),
        messages_delivered: delivered.map(|(d, _)| d),
        messages_expired: delivered.map(|(_, e)| e),
        // The queue's, filled in by `reduce`.
        queue_sojourn_mean_ms: None,
        queue_sojourn_p50_ms: None,
        queue_sojourn_p95_ms: None,
        queue_sojourn_p99_ms: None,
    }
}

fn flow_series(f: &FlowRecord, bin: Duration) -> FlowSeries {
    let mut series = FlowSeries {
        group: f.group,
        flow: f.flow,
        throughput_bps: tsw(&f.received_bytes, bin, TSW_WINDOW),
        goodput_bps: tsw(&f.delivered_bytes, bin, TSW_WINDOW),
        ..FlowSeries::default()
    };
    for metric in OPTIONAL_SERIES {
        *(metric.values_mut)(&mut series) = (metric.read)(f, bin);
    }
    series
}

/// A per-flow column of `runs.csv` (after the point, run, group and flow): its name, how it is
/// written from a flow's [`FlowRun`], how `qstp plot`'s reader takes it back and how
/// `summary.json` sums it up. The writer, the reader and the summary all iterate
/// [`RUN_COLUMNS`], so a new per-flow result is a field of [`FlowRun`], the line that computes
/// it from the run's record (in this file) and one entry there.
pub struct RunColumn {
    /// Its header in `runs.csv`.
    pub name: &'static str,
    /// Whether every `runs.csv` the lab ever wrote has it (the reader checks those headers).
    pub always: bool,
    /// The text written for a flow (empty for no value).
    pub write: fn(&FlowRun) -> String,
    /// Take the text back into a flow (`None`: the column is absent); `false` if it cannot be
    /// read and must be.
    pub read: fn(&mut FlowRun, Option<&str>) -> bool,
    /// Its value for a flow, summed up over a group's flows and runs as [`Stats`] under the
    /// column's name in a group's `metrics` in `summary.json` (`None`: not there; the columns
    /// older than `metrics` have fields of their own in the summary, computed in `summary.rs`).
    pub summary: Option<fn(&FlowRun) -> Option<f64>>,
}

/// A required number, parsed into `$field`.
macro_rules! required {
    ($field:ident) => {
        |f, text| match text.and_then(|t| t.parse().ok()) {
            Some(v) => {
                f.$field = v;
                true
            }
            None => false,
        }
    };
}

/// An optional number (empty, absent or unreadable: `None`), parsed into `$field`.
macro_rules! optional {
    ($field:ident) => {
        |f, text| {
            f.$field = text.and_then(|t| t.parse().ok());
            true
        }
    };
}

/// An optional column with six decimals, summed up in `metrics`: a delay (one-way or round
/// trip, ms) or a share of a flow's messages.
macro_rules! summed_column {
    ($field:ident) => {
        RunColumn {
            name: stringify!($field),
            always: false,
            write: |f| f.$field.map_or(String::new(), |d| format!("{d:.6}")),
            read: optional!($field),
            summary: Some(|f| f.$field),
        }
    };
}

/// A queue's delay column: as `summed_column`, but not summed up per group.
macro_rules! queue_column {
    ($field:ident) => {
        RunColumn {
            summary: None,
            ..summed_column!($field)
        }
    };
}

/// The per-flow columns of `runs.csv`, in order.
pub const RUN_COLUMNS: &[RunColumn] = &[
    RunColumn {
        name: "throughput_bps",
        always: true,
        write: |f| format!("{:.1}", f.throughput_bps),
        read: required!(throughput_bps),
        summary: None,
    },
    RunColumn {
        name: "goodput_bps",
        always: true,
        write: |f| format!("{:.1}", f.goodput_bps),
        read: required!(goodput_bps),
        summary: None,
    },
    RunColumn {
        name: "jitter_ms",
        always: true,
        write: |f| f.jitter_ms.map_or(String::new(), |j| format!("{j:.6}")),
        read: optional!(jitter_ms),
        summary: None,
    },
    RunColumn {
        name: "packets_sent",
        always: true,
        write: |f| f.packets_sent.to_string(),
        read: required!(packets_sent),
        summary: None,
    },
    RunColumn {
        name: "packets_retransmitted",
        always: true,
        write: |f| f.packets_retransmitted.to_string(),
        read: required!(packets_retransmitted),
        summary: None,
    },
    // The share of packets sent again: derived from the two columns before it, not read back.
    RunColumn {
        name: "retransmitted",
        always: false,
        write: |f| {
            let share = if f.packets_sent == 0 {
                0.0
            } else {
                f.packets_retransmitted as f64 / f.packets_sent as f64
            };
            format!("{share:.6}")
        },
        read: |_, _| true,
        summary: None,
    },
    // TCP's loss recoveries: empty for other senders, absent from files written before them.
    RunColumn {
        name: "timeouts",
        always: false,
        write: |f| f.timeouts.map_or(String::new(), |c| c.to_string()),
        read: optional!(timeouts),
        summary: None,
    },
    RunColumn {
        name: "fast_recoveries",
        always: false,
        write: |f| f.fast_recoveries.map_or(String::new(), |c| c.to_string()),
        read: optional!(fast_recoveries),
        summary: None,
    },
    // One-way delay and the sender's RTT after the warm-up: empty for a flow without, absent
    // from files written before them.
    summed_column!(delay_mean_ms),
    summed_column!(delay_p50_ms),
    summed_column!(delay_p95_ms),
    summed_column!(delay_p99_ms),
    summed_column!(rtt_mean_ms),
    summed_column!(rtt_p50_ms),
    summed_column!(rtt_p95_ms),
    summed_column!(rtt_p99_ms),
    // The bottleneck's sojourn times in the flow's run (the same on each of the run's rows):
    // empty where not measured; a queue's, so summed up per queue in `summary.json`, not per group.
    queue_column!(queue_sojourn_mean_ms),
    queue_column!(queue_sojourn_p50_ms),
    queue_column!(queue_sojourn_p95_ms),
    queue_column!(queue_sojourn_p99_ms),
    // A message flow's delivered and expired shares: empty for other flows.
    summed_column!(messages_delivered),
    summed_column!(messages_expired),
];

/// The per-flow figure of a point that a series is drawn in, one panel each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowFigure {
    /// `flows-*.svg`: each TCP flow's throughput, then these panels.
    Tcp,
    /// `rates-*.svg`: each rate-controlled (qstp, gTFRC, TFRC) flow's rate-control state.
    Rate,
}

/// How a series is drawn: in which figure, under which title, with which y label and scale.
pub struct Panel {
    /// The figure it is a panel of.
    pub figure: FlowFigure,
    /// The panel's title.
    pub title: &'static str,
    /// Its y axis label (with the unit after `scale`).
    pub y_label: &'static str,
    /// What a value is multiplied by before it is drawn (1e-3: bit/s as kbit/s).
    pub scale: f64,
}

/// A per-flow time series with an optional value per bin: how it is read from the run's record,
/// where it is kept in a [`FlowSeries`], its name in `series.csv` and its digits there, and the
/// panel it is drawn in. The series' computation, the long CSV writer, `qstp plot`'s reader and
/// the per-flow figures all iterate [`OPTIONAL_SERIES`], so a new series is a field of
/// [`FlowSeries`] and one entry there.
pub struct SeriesMetric {
    /// Its `metric` in `series.csv`.
    pub name: &'static str,
    /// Decimal digits written.
    pub digits: usize,
    /// Every flow has it (a value or `None` per bin); otherwise only the flows whose senders
    /// report it, and the others' is empty.
    pub every_flow: bool,
    /// Computed from the run's record.
    pub read: fn(&FlowRecord, Duration) -> Vec<Option<f64>>,
    /// Where a [`FlowSeries`] keeps it.
    pub values: fn(&FlowSeries) -> &Vec<Option<f64>>,
    /// The same, to fill in.
    pub values_mut: fn(&mut FlowSeries) -> &mut Vec<Option<f64>>,
    /// Where it is drawn (`None`: only written).
    pub panel: Option<Panel>,
}

/// Declare a [`SeriesMetric`] kept in the field of the same name.
macro_rules! series_metric {
    ($field:ident, $digits:expr, $every_flow:expr, $panel:expr, $read:expr) => {
        SeriesMetric {
            name: stringify!($field),
            digits: $digits,
            every_flow: $every_flow,
            read: $read,
            values: |s| &s.$field,
            values_mut: |s| &mut s.$field,
            panel: $panel,
        }
    };
}

/// Per bin, `part` over `whole` summed over the bins of the last `window` up to that bin (the
/// bin itself and those before it that the window reaches); `None` where `whole` sums to zero.
/// A per-bin share swings between 0 and 1 when a bin holds a handful of packets; over a window
/// it reads as a rate.
fn windowed_share(
    part: &[u64],
    whole: &[u64],
    bin: Duration,
    window: Duration,
) -> Vec<Option<f64>> {
    let span = (window.as_nanos().div_ceil(bin.as_nanos().max(1)) as usize).max(1);
    let (mut p, mut w) = (0u64, 0u64);
    (0..whole.len().min(part.len()))
        .map(|i| {
            p += part[i];
            w += whole[i];
            if i >= span {
                p -= part[i - span];
                w -= whole[i - span];
            }
            (w > 0).then(|| p as f64 / w as f64)
        })
        .collect()
}

/// A panel of `figure`.
const fn panel(
    figure: FlowFigure,
    title: &'static str,
    y_label: &'static str,
    scale: f64,
) -> Option<Panel> {
    Some(Panel {
        figure,
        title,
        y_label,
        scale,
    })
}

/// Every optional per-flow series, in the order `series.csv` lists them (after the throughput and
/// the goodput, which every flow has in every bin).
pub const OPTIONAL_SERIES: &[SeriesMetric] = &[
    series_metric!(jitter_ms, 3, true, None, |f, _| {
        f.jitter_ns
            .iter()
            .zip(&f.received_packets)
            .map(|(&j, &n)| (n > 0).then(|| j as f64 / n as f64 / 1e6))
            .collect()
    }),
    series_metric!(
        rtt_ms,
        3,
        false,
        panel(FlowFigure::Tcp, "Smoothed RTT", "RTT (ms)", 1.0),
        |f, _| {
            f.sender
                .rtt_ns
                .iter()
                .zip(&f.sender.rtt_samples)
                .map(|(&r, &n)| (n > 0).then(|| r as f64 / n as f64 / 1e6))
                .collect()
        }
    ),
    series_metric!(cwnd_bytes, 0, false, None, |f, _| {
        f.sender
            .cwnd_bytes
            .iter()
            .map(|&c| (c > 0).then_some(c as f64))
            .collect()
    }),
    series_metric!(
        loss_rate,
        6,
        false,
        panel(
            FlowFigure::Tcp,
            "Loss rate (data packets sent again, over the last 1 s)",
            "loss rate",
            1.0
        ),
        |f, bin| windowed_share(&f.sender.retransmitted, &f.sender.sent, bin, TSW_WINDOW)
    ),
    series_metric!(loss_events, 0, false, None, |f, _| {
        f.sender
            .loss_events
            .iter()
            .map(|&n| Some(n as f64))
            .collect()
    }),
    series_metric!(
        rate_bps,
        0,
        false,
        panel(
            FlowFigure::Rate,
            "Allowed sending rate X (dashed: target g)",
            "X (kbit/s)",
            1e-3
        ),
        |f, _| rate_series(f, |r| r.rate_bps as f64)
    ),
    series_metric!(
        x_recv_bps,
        0,
        false,
        panel(
            FlowFigure::Rate,
            "Receive rate X_recv (feedback)",
            "X_recv (kbit/s)",
            1e-3
        ),
        |f, _| rate_series(f, |r| r.x_recv_bps as f64)
    ),
    series_metric!(
        loss_event_rate,
        9,
        false,
        panel(FlowFigure::Rate, "Loss event rate p (feedback)", "p", 1.0),
        |f, _| { rate_series(f, |r| r.loss_event_rate_ppb as f64 / 1e9) }
    ),
];

/// One field of a rate-based sender's per-bin samples.
fn rate_series(f: &FlowRecord, pick: impl Fn(&qstp_sim::RateSample) -> f64) -> Vec<Option<f64>> {
    f.sender
        .rate
        .iter()
        .map(|r| r.as_ref().map(&pick))
        .collect()
}

/// The time-sliding-window rate estimator of RFC 2859 §2.1, fed one bin at a time (each bin's bytes
/// arriving at its end), in bit/s; the estimate starts at zero (the RFC starts a marker's at its
/// committed rate, which a measurement does not know).
pub fn tsw(bytes: &[u64], bin: Duration, window: Duration) -> Vec<f64> {
    let win = window.as_secs_f64();
    let step = bin.as_secs_f64();
    let mut avg_rate = 0.0; // bytes per second
    bytes
        .iter()
        .map(|&b| {
            // RFC 2859 §2.1: Bytes_in_win = AVG_RATE * AVG_INTERVAL; New_bytes = Bytes_in_win +
            // pkt_size; AVG_RATE = New_bytes / (now - T_FRONT + AVG_INTERVAL); T_FRONT = now.
            let bytes_in_tsw = avg_rate * win;
            avg_rate = (bytes_in_tsw + b as f64) / (step + win);
            avg_rate * 8.0
        })
        .collect()
}

/// Mean, extremes and sample standard deviation of a set of measurements.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Sample standard deviation (n - 1 in the denominator; zero for one value).
    pub std: f64,
    /// Half-width of the 95% confidence interval of the mean, Student's t with n - 1 degrees of
    /// freedom times std / sqrt(n): the mean is `mean ± ci95`. `None` (`null` in summary.json)
    /// for one value, where it is undefined, not zero.
    pub ci95: Option<f64>,
    /// Number of values.
    pub n: usize,
}

/// Two-sided 95% quantiles of Student's t distribution, t(0.975, df), for df = 1..=30 (the
/// standard table, e.g. NIST/SEMATECH e-Handbook of Statistical Methods §1.3.6.7.2).
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// t(0.975, df); beyond the table the value at the next lower tabulated df (40, 60, 120, then
/// the normal 1.960), which errs on the wide side.
pub fn t975(df: usize) -> f64 {
    match df {
        0 => f64::NAN,
        1..=30 => T975[df - 1],
        31..=39 => T975[29],
        40..=59 => 2.021,
        60..=119 => 2.000,
        120..=999 => 1.980,
        _ => 1.960,
    }
}

impl Stats {
    /// The statistics of `values`, `None` if there are none.
    pub fn of(values: &[f64]) -> Option<Stats> {
        if values.is_empty() {
            return None;
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let std = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let ci95 = (n > 1).then(|| t975(n - 1) * std / (n as f64).sqrt());
        Some(Stats {
            mean,
            min,
            max,
            std,
            ci95,
            n,
        })
    }
}

/// Jain's fairness index (Σx)² / (n·Σx²): 1 when all are equal, 1/n when one takes everything;
/// `None` for no values or all zero.
pub fn jain(values: &[f64]) -> Option<f64> {
    let sum: f64 = values.iter().sum();
    let squares: f64 = values.iter().map(|v| v * v).sum();
    (!values.is_empty() && squares > 0.0).then(|| sum * sum / (values.len() as f64 * squares))
}

#[cfg(test)]
mod tests {
    use super::*;
    use qstp_dataplane::queue::CodePointCounters;

    fn record(group: usize, flow: u32, bytes_per_bin: u64, bins: usize) -> FlowRecord {
        FlowRecord {
            group,
            flow,
            received_bytes: vec![bytes_per_bin; bins],
            delivered_bytes: vec![bytes_per_bin / 2; bins],
            jitter_ns: vec![2_000_000; bins],
            received_packets: vec![2; bins],
            delay: Some(qstp_sim::DelayStats {
                samples: 2 * bins as u64,
                mean_ns: 41_500_000.0,
                p50_ns: 40_000_000,
                p95_ns: 52_000_000,
                p99_ns: 61_000_000,
            }),
            rtt: None,
            packets_sent: 2 * bins as u64,
            packets_retransmitted: 1,
            sender: Default::default(),
            messages: None,
        }
    }

    #[test]
    fn the_loss_rate_is_a_share_over_the_last_second_not_per_bin() {
        // 250 ms bins: a window of 4. One retransmission among 10 sends in bin 1, nothing sent
        // in bins 6 and 7.
        let sent = [10, 10, 10, 10, 10, 10, 0, 0, 0, 0, 0];
        let resent = [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let share = windowed_share(&resent, &sent, Duration::from_millis(250), TSW_WINDOW);
        let expected = [
            Some(0.0),
            Some(0.05),
            Some(1.0 / 30.0),
            Some(0.025),
            Some(0.025),
            Some(0.0),
            Some(0.0),
            Some(0.0),
            Some(0.0),
            None,
            None,
        ];
        assert_eq!(share.len(), expected.len());
        for (got, want) in share.iter().zip(expected) {
            match (got, want) {
                (Some(g), Some(w)) => assert!((g - w).abs() < 1e-12, "{share:?}"),
                _ => assert_eq!(*got, want, "{share:?}"),
            }
        }
    }

    #[test]
    fn throughput_is_bytes_per_second_after_the_warmup() {
        // 10 bins of 100 ms; 6250 B per bin is 500 kbit/s; the first 3 bins carry nothing.
        let mut f = record(0, 0, 6250, 10);
        for b in &mut f.received_bytes[..3] {
            *b = 0;
        }
        let out = RunOutput {
            events: 7,
            bottleneck_packets: 0,
            simulated: Duration::from_secs(1),
            flows: vec![f],
            queue_series: Vec::new(),
            sojourn: Vec::new(),
            delegation: None,
            atm: None,
            queues: vec![QueueRecord {
                name: "bottleneck".into(),
                green: CodePointCounters {
                    packets: 5,
                    ldrops: 0,
                    edrops: 1,
                    marks: 0,
                },
                yellow: CodePointCounters::default(),
                red: CodePointCounters::default(),
            }],
        };
        let m = reduce(
            &out,
            9,
            Duration::from_millis(100),
            Duration::from_millis(300),
            false,
        );
        assert!((m.flows[0].throughput_bps - 500_000.0).abs() < 1e-6);
        assert!((m.flows[0].goodput_bps - 250_000.0).abs() < 1e-6);
        // 7 bins of 2 packets whose differences sum to 2 ms each: 1 ms per packet.
        assert!((m.flows[0].jitter_ms.unwrap() - 1.0).abs() < 1e-9);
        // The recorder's delays, in ms.
        let f = &m.flows[0];
        assert_eq!(
            (
                f.delay_mean_ms,
                f.delay_p50_ms,
                f.delay_p95_ms,
                f.delay_p99_ms
            ),
            (Some(41.5), Some(40.0), Some(52.0), Some(61.0))
        );
        assert_eq!((m.seed, m.events, m.queues.len()), (9, 7, 1));
        assert!(m.series.is_none());
        let with_warm = reduce(&out, 9, Duration::from_millis(100), Duration::ZERO, true);
        assert!((with_warm.flows[0].throughput_bps - 350_000.0).abs() < 1e-6);
        assert_eq!(with_warm.series.unwrap().flows[0].throughput_bps.len(), 10);
    }

    #[test]
    fn tsw_converges_to_a_steady_rate() {
        // A steady 1 Mbit/s (12500 B per 100 ms): after ten windows the estimate is within 0.1%.
        let s = tsw(&[12_500; 200], Duration::from_millis(100), TSW_WINDOW);
        assert!(s[0] < 200_000.0, "starts from zero: {}", s[0]);
        assert!((s[199] - 1e6).abs() < 1e3, "{}", s[199]);
        assert!(s.windows(2).all(|w| w[1] >= w[0]));
        // And forgets: one window after the traffic stops, less than 40% is left.
        let mut bytes = vec![12_500; 100];
        bytes.extend([0; 10]);
        let s = tsw(&bytes, Duration::from_millis(100), TSW_WINDOW);
        assert!(s[109] < 0.4e6, "{}", s[109]);
    }

    #[test]
    fn stats_and_fairness_follow_their_definitions() {
        let s = Stats::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!((s.mean, s.min, s.max, s.n), (5.0, 2.0, 9.0, 8));
        assert!((s.std - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(Stats::of(&[3.0]).unwrap().std, 0.0);
        // n = 8: t(0.975, 7) = 2.365; ci95 = 2.365 * std / sqrt(8).
        assert!((s.ci95.unwrap() - 2.365 * s.std / 8f64.sqrt()).abs() < 1e-12);
        assert_eq!(Stats::of(&[3.0]).unwrap().ci95, None);
        assert_eq!(
            (t975(1), t975(30), t975(45), t975(5000)),
            (12.706, 2.042, 2.021, 1.960)
        );
        assert!(Stats::of(&[]).is_none());
        assert_eq!(jain(&[1.0, 1.0, 1.0]), Some(1.0));
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]).unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(jain(&[0.0, 0.0]), None);
    }
}
