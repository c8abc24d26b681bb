//! `summary.json`: per sweep point, per group, the statistics across runs (and flows) of
//! throughput, goodput and jitter, and per queue the packets of each code point.
//!
//! Throughput statistics are per flow (`throughput_bps`: every flow of every run is one sample) and
//! per group (`aggregate_bps`: the group's total in each run is one sample). Queue counters are
//! means per run after the warm-up, like throughput; `in_profile` is green, `out_profile` yellow
//! plus red.

use crate::metrics::{jain, FlowRun, RunColumn, RunMetrics, Stats, RUN_COLUMNS};
use crate::runner::PointResult;
use crate::scenario::{protocol_name, Overrides, Plan};
use qstp_dataplane::queue::CodePointCounters;
use qstp_sim::QueueRecord;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The qstp version that writes summaries.
pub const QSTP_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The git commit the lab was built from (`unknown` when built outside a git checkout).
pub const GIT_COMMIT: &str = env!("QSTP_GIT_COMMIT");

/// The whole summary file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// The qstp version that ran it.
    pub qstp_version: String,
    /// The git commit of the source that ran it.
    pub git_commit: String,
    /// Values the command line put in place of the file's.
    pub overrides: OverridesRecord,
    /// Scenario description.
    pub description: String,
    /// Seed of the first run.
    pub seed: u64,
    /// Runs per point.
    pub runs: u32,
    /// Simulated time per run, s.
    pub duration_s: f64,
    /// Time left out of the means at the start of each run, s.
    pub warmup_s: f64,
    /// Simulated time over all runs, s.
    pub simulated_s: f64,
    /// Simulator events over all runs.
    pub events: u64,
    /// The swept keys.
    pub sweep: Vec<String>,
    /// Which runs' time series `series.csv` holds (`all`, or `first` when all would not fit).
    pub series_runs: crate::runner::SeriesRuns,
    /// One per sweep point.
    pub points: Vec<PointSummary>,
}

/// The command-line overrides of a run, as recorded in the summary (`null`: the file's value).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OverridesRecord {
    /// Runs per point.
    pub runs: Option<u32>,
    /// Seed of the first run.
    pub seed: Option<u64>,
    /// Simulated time per run, s.
    pub duration_s: Option<f64>,
}

impl From<&Overrides> for OverridesRecord {
    fn from(o: &Overrides) -> Self {
        OverridesRecord {
            runs: o.runs,
            seed: o.seed,
            duration_s: o.duration.map(|d| d.as_secs_f64()),
        }
    }
}

/// One sweep point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointSummary {
    /// The swept values.
    pub params: serde_json::Map<String, serde_json::Value>,
    /// One per group.
    pub flows: Vec<GroupSummary>,
    /// One per bottleneck queue.
    pub queues: Vec<QueueSummary>,
    /// Jain's index of every flow's throughput over its share of its group's target, mean over
    /// runs; only when every group has a target.
    pub target_fairness: Option<f64>,
    /// Efficiency, fairness and performance over all the point's flows (the high-speed TCP
    /// paper's metrics); absent from summaries written before they existed.
    #[serde(default)]
    pub metrics: Option<PointMetrics>,
}

/// The high-speed TCP paper's metrics of one point (§III B-D), over
/// every flow of every group, each run one sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointMetrics {
    /// E = Q / Q_opt: the mean per-flow throughput Q over the optimal share Q_opt = C / n of the
    /// bottleneck rate C (that is, the flows' total over C).
    pub efficiency: Stats,
    /// Jain's index F over the per-flow throughputs normalised by the optimal share.
    pub jain: Stats,
    /// a E + (1 - a) F for a = 0.2, 0.5 and 0.8, from the means of E and F.
    pub performance: std::collections::BTreeMap<String, f64>,
}

/// The weights `a` the summary reports performance for (the paper's Figs. 5-7).
pub const PERFORMANCE_WEIGHTS: [f64; 3] = [0.2, 0.5, 0.8];

/// The paper's performance: `a E + (1 - a) F` (§III D).
pub fn performance(a: f64, efficiency: f64, jain: f64) -> f64 {
    a * efficiency + (1.0 - a) * jain
}

/// The key of weight `a` in [`PointMetrics::performance`] (`"0.2"`).
pub fn weight_key(a: f64) -> String {
    format!("{a}")
}

fn point_metrics(pt: &crate::scenario::Point, runs: &[RunMetrics]) -> Option<PointMetrics> {
    let capacity = pt.scenario.bottleneck().rate.bps() as f64;
    let mut efficiency = Vec::new();
    let mut fairness = Vec::new();
    for r in runs {
        let n = r.flows.len();
        if n == 0 || capacity <= 0.0 {
            continue;
        }
        let optimal = capacity / n as f64;
        let normalised: Vec<f64> = r.flows.iter().map(|f| f.throughput_bps / optimal).collect();
        // E = (1/n) sum q_i / Q_opt.
        efficiency.push(normalised.iter().sum::<f64>() / n as f64);
        fairness.extend(jain(&normalised));
    }
    let efficiency = Stats::of(&efficiency)?;
    let jain = Stats::of(&fairness)?;
    let performance = PERFORMANCE_WEIGHTS
        .iter()
        .map(|&a| (weight_key(a), performance(a, efficiency.mean, jain.mean)))
        .collect();
    Some(PointMetrics {
        efficiency,
        jain,
        performance,
    })
}

/// One group at one point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupSummary {
    /// Group name.
    pub group: String,
    /// Protocol name.
    pub protocol: String,
    /// Number of flows.
    pub flows: u32,
    /// The group's target rate, bit/s.
    pub target_bps: Option<u64>,
    /// Per-flow throughput at the receiver, bit/s.
    pub throughput_bps: Stats,
    /// The group's total throughput per run, bit/s.
    pub aggregate_bps: Stats,
    /// Per-flow goodput, bit/s.
    pub goodput_bps: Stats,
    /// Per-flow jitter, ms.
    pub jitter_ms: Option<Stats>,
    /// Jain's index over the group's flows, mean over runs (groups of several flows).
    pub fairness: Option<f64>,
    /// Share of sent data packets that were retransmissions.
    pub retransmitted: f64,
    /// A TCP group's loss recoveries per flow and run after the warm-up (`None` for other
    /// protocols).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// For the Free connection of a delegation group: how its throughput matched the trace
    /// (Free & Stunts paper eqs. 16-19), means over runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matching: Option<qstp_sim::delegation::Matching>,
    /// For the Free connection of a delegation group: who took the group's congestion signals,
    /// means per run over the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signals: Option<crate::metrics::Signals>,
    /// On an ATM trunk: the PHB of the group's VP (`"af"`: SBR3 with SCD; `"df"`: UBR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phb: Option<String>,
    /// On an ATM trunk: the TCP throughput per connection the AF-over-ATM paper's assumptions
    /// give (AF-over-ATM paper §4.1, [`qstp_dataplane::aal5::estimate`]), bit/s, to set beside
    /// the measured goodput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_bps: Option<f64>,
    /// On an ATM trunk: what the group's VP counted, means per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atm: Option<AtmGroup>,
    /// The per-flow results that `RUN_COLUMNS` sums up by name (every flow of every run with a
    /// value is a sample).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, Stats>,
}

/// How a TCP group's senders recovered from losses: means per flow and run, after the warm-up.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// Retransmission timeouts (RFC 6298 §5.5; on the testbed the kernel's `TCPTimeouts`).
    pub timeouts: f64,
    /// Entries into fast recovery (RFC 6582, RFC 6675; on the testbed the kernel's
    /// `TCPSackRecovery` and `TCPRenoRecovery`).
    pub fast_recoveries: f64,
}

/// What an ATM VP counted, means per run (from the warm-up on).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AtmGroup {
    /// Cells its VCs sent.
    pub cells: f64,
    /// Cells its UPC tagged CLP=1.
    pub tagged: f64,
    /// Cells its UPC discarded.
    pub policed: f64,
    /// Frames delivered whole.
    pub frames_delivered: f64,
    /// Frames that lost a cell (and with it the whole frame).
    pub frames_lost: f64,
    /// Mean queueing delay of its probe (the paper's ping), ms; `None` without a probe.
    pub queueing_delay_ms: Option<f64>,
    /// Largest queueing delay of its probe in any run, ms.
    pub queueing_delay_max_ms: Option<f64>,
    /// Probes that lost a cell.
    pub probes_lost: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// The packets of one code point at one queue, means per run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Packets that arrived.
    pub packets: f64,
    /// Packets dropped because the queue was full.
    pub ldrops: f64,
    /// Packets dropped early.
    pub edrops: f64,
    /// Packets marked CE instead of an early drop (ECN, RFC 3168 §5); left out while zero, so a
    /// run without ECN writes what it wrote before.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub marks: f64,
    /// Share of all packets at this queue that had this code point.
    pub share: f64,
    /// `ldrops / packets`.
    pub ldrop_rate: f64,
    /// `edrops / packets`.
    pub edrop_rate: f64,
}

/// One queue at one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueSummary {
    /// Queue name.
    pub name: String,
    /// Green packets.
    pub in_profile: Counts,
    /// Yellow and red packets.
    pub out_profile: Counts,
    /// Yellow packets alone (three-colour markers' middle precedence, AFx2; zero with two-colour
    /// markers). They are part of `out_profile` too.
    pub yellow: Counts,
    /// Sojourn times of the packets it let go after the warm-up (offer to start of
    /// serialisation), each run one sample; absent where the queue does not measure them (an
    /// ATM trunk's buffers, CBQ classes) and from summaries written before them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sojourn_ms: Option<SojournSummary>,
}

/// A queue's sojourn times at one point, ms: each statistic over runs of the run's mean and
/// percentiles (each percentile to within 0.8%, `qstp_dataplane::link::Sojourn`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SojournSummary {
    /// Mean sojourn time.
    pub mean: Stats,
    /// Median.
    pub p50: Stats,
    /// 95th percentile.
    pub p95: Stats,
    /// 99th percentile.
    pub p99: Stats,
    /// Packets measured per run (mean over runs).
    pub packets: f64,
}

fn sojourn_summary(runs: &[RunMetrics], name: &str) -> Option<SojournSummary> {
    let of: Vec<&crate::metrics::QueueSojournRun> = runs
        .iter()
        .filter_map(|r| r.sojourn.iter().find(|q| q.name == name))
        .collect();
    let stats = |pick: fn(&crate::metrics::QueueSojournRun) -> f64| {
        Stats::of(&of.iter().map(|q| pick(q)).collect::<Vec<_>>())
    };
    Some(SojournSummary {
        mean: stats(|q| q.mean_ms)?,
        p50: stats(|q| q.p50_ms)?,
        p95: stats(|q| q.p95_ms)?,
        p99: stats(|q| q.p99_ms)?,
        packets: of.iter().map(|q| q.samples as f64).sum::<f64>() / of.len() as f64,
    })
}

/// Build the summary of a finished plan. It holds no wall-clock time and no path: the same
/// scenario and seeds give a byte-identical summary, wherever and however fast the tasks ran.
/// `overrides` are the command line's, recorded as given.
pub fn build(plan: &Plan, results: &[PointResult], overrides: &Overrides) -> Summary {
    let base = plan.base();
    let all_runs = || results.iter().flat_map(|p| &p.runs);
    Summary {
        scenario: base.name.clone(),
        qstp_version: QSTP_VERSION.to_string(),
        git_commit: GIT_COMMIT.to_string(),
        overrides: overrides.into(),
        description: base.description.clone(),
        seed: base.seed,
        runs: base.runs,
        duration_s: base.duration.as_secs_f64(),
        warmup_s: base.warmup.as_secs_f64(),
        simulated_s: all_runs().map(|r| r.simulated.as_secs_f64()).sum(),
        events: all_runs().map(|r| r.events).sum(),
        sweep: plan.sweep_keys.clone(),
        series_runs: crate::runner::series_runs(plan),
        points: plan
            .points
            .iter()
            .zip(results)
            .map(|(pt, res)| point(pt, &res.runs))
            .collect(),
    }
}

/// A point's swept values as the summary holds them.
pub fn point_params(pt: &crate::scenario::Point) -> serde_json::Map<String, serde_json::Value> {
    pt.params
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
            )
        })
        .collect()
}

fn point(pt: &crate::scenario::Point, runs: &[RunMetrics]) -> PointSummary {
    let params = point_params(pt);
    let groups = &pt.scenario.groups;
    let free = pt.scenario.delegation.as_ref().map(|d| d.free.as_str());
    let estimates = atm_estimates(pt);
    let flows = groups
        .iter()
        .enumerate()
        .map(|(g, spec)| {
            let mut summary = group(g, spec, runs);
            if let Some(estimates) = &estimates {
                summary.phb = Some(qstp_sim::topology::atm_phb(spec).name().to_string());
                summary.estimate_bps = estimates.get(g).copied();
            }
            if free == Some(spec.name.as_str()) {
                summary.matching = mean_matching(runs);
                summary.signals = mean_signals(runs);
            }
            summary
        })
        .collect();
    let all_targets = groups
        .iter()
        .all(|g| g.target.is_some_and(|t| !t.is_zero()));
    let target_fairness = all_targets
        .then(|| {
            let per_run: Vec<f64> = runs
                .iter()
                .filter_map(|r| {
                    let shares: Vec<f64> = r
                        .flows
                        .iter()
                        .map(|f| {
                            let g = &groups[f.group];
                            let flow_target =
                                g.target.map_or(1.0, |t| t.bps() as f64 / g.flows as f64);
                            f.throughput_bps / flow_target
                        })
                        .collect();
                    jain(&shares)
                })
                .collect();
            Stats::of(&per_run).map(|s| s.mean)
        })
        .flatten();
    PointSummary {
        params,
        flows,
        queues: queues(runs),
        target_fairness,
        metrics: point_metrics(pt, runs),
    }
}

/// On an ATM trunk, each group's per-connection TCP throughput by the AF-over-ATM paper's
/// estimate (AF-over-ATM paper §4.1): the trunk less the AF VPs' SCR0 shared equally by
/// all VPs, plus each AF VP's SCR0, carried in segments of the group's packet size less 40 bytes
/// of TCP/IP headers, split among the VP's connections.
pub fn atm_estimates(pt: &crate::scenario::Point) -> Option<Vec<f64>> {
    let s = &pt.scenario;
    s.bottleneck().atm.as_ref()?;
    let scr: Vec<Option<qstp_proto::Rate>> =
        s.groups.iter().map(qstp_sim::topology::atm_scr).collect();
    let connections: Vec<u32> = s.groups.iter().map(|g| g.flows).collect();
    let header = u64::from(qstp_dataplane::headers::TCP_IP_HEADER);
    Some(
        s.groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let size = g.packet_size.unwrap_or(s.packet_size) as u64;
                let e = qstp_dataplane::aal5::estimate(
                    s.bottleneck().rate,
                    &scr,
                    &connections,
                    qstp_dataplane::headers::tcp_payload(size),
                    header,
                );
                e.per_connection_bps[i]
            })
            .collect(),
    )
}

fn group(g: usize, spec: &qstp_sim::GroupSpec, runs: &[RunMetrics]) -> GroupSummary {
    let of_group = |r: &'_ RunMetrics| {
        r.flows
            .iter()
            .filter(move |f| f.group == g)
            .cloned()
            .collect::<Vec<_>>()
    };
    let mut throughput = Vec::new();
    let mut goodput = Vec::new();
    let mut jitter = Vec::new();
    let mut aggregate = Vec::new();
    let mut fairness = Vec::new();
    let (mut sent, mut retransmitted) = (0u64, 0u64);
    let mut recoveries = Vec::new();
    for r in runs {
        let flows = of_group(r);
        throughput.extend(flows.iter().map(|f| f.throughput_bps));
        goodput.extend(flows.iter().map(|f| f.goodput_bps));
        jitter.extend(flows.iter().filter_map(|f| f.jitter_ms));
        aggregate.push(flows.iter().map(|f| f.throughput_bps).sum());
        if flows.len() > 1 {
            fairness.extend(jain(
                &flows.iter().map(|f| f.throughput_bps).collect::<Vec<_>>(),
            ));
        }
        sent += flows.iter().map(|f| f.packets_sent).sum::<u64>();
        retransmitted += flows.iter().map(|f| f.packets_retransmitted).sum::<u64>();
        recoveries.extend(
            flows
                .iter()
                .filter_map(|f| Some((f.timeouts?, f.fast_recoveries?))),
        );
    }
    let n = recoveries.len() as f64;
    let recovery = (!recoveries.is_empty()).then(|| Recovery {
        timeouts: recoveries.iter().map(|r| r.0 as f64).sum::<f64>() / n,
        fast_recoveries: recoveries.iter().map(|r| r.1 as f64).sum::<f64>() / n,
    });
    GroupSummary {
        group: spec.name.clone(),
        protocol: protocol_name(&spec.protocol),
        flows: spec.flows,
        target_bps: spec.target.map(|t| t.bps()),
        throughput_bps: Stats::of(&throughput).unwrap_or_default(),
        aggregate_bps: Stats::of(&aggregate).unwrap_or_default(),
        goodput_bps: Stats::of(&goodput).unwrap_or_default(),
        jitter_ms: Stats::of(&jitter),
        fairness: Stats::of(&fairness).map(|s| s.mean),
        retransmitted: if sent == 0 {
            0.0
        } else {
            retransmitted as f64 / sent as f64
        },
        recovery,
        matching: None,
        signals: None,
        phb: None,
        estimate_bps: None,
        atm: atm_group(g, runs),
        metrics: column_stats(
            RUN_COLUMNS,
            runs.iter()
                .flat_map(|r| r.flows.iter().filter(|f| f.group == g)),
        ),
    }
}

/// The statistics of each column of `columns` that is summed up, over `flows` (those with a
/// value), by the column's name.
fn column_stats<'a>(
    columns: &[RunColumn],
    flows: impl Iterator<Item = &'a FlowRun> + Clone,
) -> BTreeMap<String, Stats> {
    columns
        .iter()
        .filter_map(|c| {
            let value = c.summary?;
            let values: Vec<f64> = flows.clone().filter_map(value).collect();
            Some((c.name.to_string(), Stats::of(&values)?))
        })
        .collect()
}

/// The means over runs of what group `g`'s VP counted, if the runs had an ATM trunk.
fn atm_group(g: usize, runs: &[RunMetrics]) -> Option<AtmGroup> {
    let vps: Vec<&qstp_dataplane::atm::VpStats> = runs
        .iter()
        .filter_map(|r| r.atm.as_ref().and_then(|a| a.get(g)))
        .collect();
    if vps.is_empty() {
        return None;
    }
    let n = vps.len() as f64;
    let mean = |f: fn(&qstp_dataplane::atm::VpStats) -> u64| {
        vps.iter().map(|v| f(v) as f64).sum::<f64>() / n
    };
    let delays: Vec<f64> = vps
        .iter()
        .filter_map(|v| v.probe_delay_mean())
        .map(|d| d.as_secs_f64() * 1e3)
        .collect();
    let max = vps
        .iter()
        .filter(|v| v.probes > v.probes_lost)
        .map(|v| v.probe_delay_max_ns as f64 / 1e6)
        .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.max(d))));
    Some(AtmGroup {
        cells: mean(|v| v.cells),
        tagged: mean(|v| v.tagged),
        policed: mean(|v| v.policed),
        frames_delivered: mean(|v| v.frames_delivered),
        frames_lost: mean(|v| v.frames_lost),
        queueing_delay_ms: (!delays.is_empty())
            .then(|| delays.iter().sum::<f64>() / delays.len() as f64),
        queueing_delay_max_ms: max,
        probes_lost: mean(|v| v.probes_lost),
    })
}

/// The mean over runs of each signal count.
fn mean_signals(runs: &[RunMetrics]) -> Option<crate::metrics::Signals> {
    let all: Vec<_> = runs.iter().filter_map(|r| r.signals).collect();
    let mean =
        |f: fn(&crate::metrics::Signals) -> f64| all.iter().map(f).sum::<f64>() / all.len() as f64;
    (!all.is_empty()).then(|| crate::metrics::Signals {
        delegated: mean(|s| s.delegated),
        reacted: mean(|s| s.reacted),
        taken_by_free: mean(|s| s.taken_by_free),
    })
}

/// The mean over runs of each matching metric (delta over the runs that have one).
fn mean_matching(runs: &[RunMetrics]) -> Option<qstp_sim::delegation::Matching> {
    let all: Vec<_> = runs.iter().filter_map(|r| r.matching).collect();
    let mean = |f: &dyn Fn(&qstp_sim::delegation::Matching) -> f64| {
        all.iter().map(f).sum::<f64>() / all.len() as f64
    };
    let deltas: Vec<f64> = all.iter().filter_map(|m| m.delta).collect();
    (!all.is_empty()).then(|| qstp_sim::delegation::Matching {
        v_plus: mean(&|m| m.v_plus),
        v_minus: mean(&|m| m.v_minus),
        v_star: mean(&|m| m.v_star),
        delta: (!deltas.is_empty()).then(|| deltas.iter().sum::<f64>() / deltas.len() as f64),
        target_mean_bps: mean(&|m| m.target_mean_bps),
    })
}

fn queues(runs: &[RunMetrics]) -> Vec<QueueSummary> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .queues
        .iter()
        .map(|q| {
            let same: Vec<&QueueRecord> = runs
                .iter()
                .filter_map(|r| r.queues.iter().find(|x| x.name == q.name))
                .collect();
            let sum = |pick: &dyn Fn(&QueueRecord) -> CodePointCounters| {
                same.iter().fold(CodePointCounters::default(), |acc, r| {
                    let c = pick(r);
                    CodePointCounters {
                        packets: acc.packets + c.packets,
                        ldrops: acc.ldrops + c.ldrops,
                        edrops: acc.edrops + c.edrops,
                        marks: acc.marks + c.marks,
                    }
                })
            };
            let green = sum(&|r| r.green);
            let yellow = sum(&|r| r.yellow);
            let out = sum(&|r| CodePointCounters {
                packets: r.yellow.packets + r.red.packets,
                ldrops: r.yellow.ldrops + r.red.ldrops,
                edrops: r.yellow.edrops + r.red.edrops,
                marks: r.yellow.marks + r.red.marks,
            });
            let total = (green.packets + out.packets) as f64;
            let n = same.len().max(1) as f64;
            let counts = |c: CodePointCounters| Counts {
                packets: c.packets as f64 / n,
                ldrops: c.ldrops as f64 / n,
                edrops: c.edrops as f64 / n,
                marks: c.marks as f64 / n,
                share: ratio(c.packets as f64, total),
                ldrop_rate: ratio(c.ldrops as f64, c.packets as f64),
                edrop_rate: ratio(c.edrops as f64, c.packets as f64),
            };
            QueueSummary {
                name: q.name.clone(),
                in_profile: counts(green),
                out_profile: counts(out),
                yellow: counts(yellow),
                sojourn_ms: sojourn_summary(runs, &q.name),
            }
        })
        .collect()
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// The end-of-run table: one line per point and group (the group's total throughput per run, its
/// goodput and jitter, and the total over the target), then each queue's packets per run, and a
/// legend saying what each column is.
pub fn text_table(s: &Summary) -> String {
    let mut out = String::new();
    let kbps = |v: f64| format!("{:.1}", v / 1e3);
    let labels: Vec<String> = s.points.iter().map(|p| params_label(&p.params)).collect();
    let width = labels
        .iter()
        .map(|l| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    let group_width = s
        .points
        .iter()
        .flat_map(|p| &p.flows)
        .map(|g| g.group.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    let protocol_width = s
        .points
        .iter()
        .flat_map(|p| &p.flows)
        .map(|g| g.protocol.len())
        .max()
        .unwrap_or(0)
        .max(8);
    let row = |cells: [&str; 13]| {
        let line = format!(
            "{:<width$}  {:<group_width$}  {:<protocol_width$} {:>5} {:>8} {:>9} {:>9} {:>9} {:>9} {:>7} {:>8} {:>8} {:>10}",
            cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7],
            cells[8], cells[9], cells[10], cells[11], cells[12]
        );
        line.trim_end().to_string() + "\n"
    };
    out.push_str(&row([
        "point",
        "group",
        "protocol",
        "flows",
        "target",
        "thr mean",
        "thr min",
        "thr max",
        "goodput",
        "jitter",
        "delay",
        "p99",
        "thr/target",
    ]));
    out.push_str(&row([
        "", "", "", "", "kbit/s", "kbit/s", "kbit/s", "kbit/s", "kbit/s", "ms", "ms", "ms", "",
    ]));
    let diffserv = s
        .points
        .iter()
        .flat_map(|p| &p.queues)
        .any(|q| q.in_profile.packets > 0.0);
    for (p, label) in s.points.iter().zip(&labels) {
        for g in &p.flows {
            let of_target = g
                .target_bps
                .filter(|&t| t > 0)
                .map_or("-".to_string(), |t| {
                    format!("{:.0}%", 100.0 * g.aggregate_bps.mean / t as f64)
                });
            let delay = |name: &str| {
                g.metrics
                    .get(name)
                    .map_or("-".to_string(), |d| format!("{:.1}", d.mean))
            };
            out.push_str(&row([
                label,
                &g.group,
                &g.protocol,
                &g.flows.to_string(),
                &g.target_bps.map_or("-".to_string(), |t| kbps(t as f64)),
                &kbps(g.aggregate_bps.mean),
                &kbps(g.aggregate_bps.min),
                &kbps(g.aggregate_bps.max),
                &kbps(g.goodput_bps.mean * g.flows as f64),
                &g.jitter_ms
                    .map_or("-".to_string(), |j| format!("{:.2}", j.mean)),
                &delay("delay_mean_ms"),
                &delay("delay_p99_ms"),
                &of_target,
            ]));
        }
        if let Some(m) = &p.metrics {
            let perf: Vec<String> = m
                .performance
                .iter()
                .map(|(a, v)| format!("a={a} {v:.3}"))
                .collect();
            out.push_str(&format!(
                "{:<width$}  E {:.3}{}  F {:.3}  performance {}\n",
                "",
                m.efficiency.mean,
                plus_minus(m.efficiency.ci95),
                m.jain.mean,
                perf.join(", ")
            ));
        }
        for q in &p.queues {
            if diffserv {
                out.push_str(&format!(
                    "{:<width$}  queue {}: in {:.0} pkts ({:.0}% of all; ldrops {:.0}, edrops {:.0}); out {:.0} pkts (ldrops {:.0}, edrops {:.0}){}\n",
                    "",
                    q.name,
                    q.in_profile.packets,
                    100.0 * q.in_profile.share,
                    q.in_profile.ldrops,
                    q.in_profile.edrops,
                    q.out_profile.packets,
                    q.out_profile.ldrops,
                    q.out_profile.edrops,
                    sojourn_cell(q)
                ));
            } else {
                // CE marks (ECN) only where a queue made some: other tables read as before.
                let marks = q.in_profile.marks + q.out_profile.marks;
                let marks = if marks > 0.0 {
                    format!(", marks {marks:.0}")
                } else {
                    String::new()
                };
                out.push_str(&format!(
                    "{:<width$}  queue {}: {:.0} pkts (ldrops {:.0}, edrops {:.0}{marks}){}\n",
                    "",
                    q.name,
                    q.out_profile.packets,
                    q.out_profile.ldrops,
                    q.out_profile.edrops,
                    sojourn_cell(q)
                ));
            }
        }
    }
    out.push_str(
        "\nthr: the group's flows together, at the receiver (network level, retransmissions included),\n\
         \x20    per run after the warm-up: mean, min and max over runs. goodput: the group's in-order\n\
         \x20    application bytes, mean per run. jitter: mean IPDV (difference of consecutive one-way\n\
         \x20    delays) per flow. delay, p99: one-way delay (queueing included) after the warm-up, mean\n\
         \x20    and 99th percentile per flow, averaged over flows and runs. thr/target: mean thr over\n\
         \x20    the group's target.\n\
         E: efficiency, all flows' throughput over the bottleneck rate (±: 95% confidence of the\n\
         \x20    mean); F: Jain's index over all flows; performance: a E + (1 - a) F.\n\
         queue: packets arriving per run after the warm-up (mean over runs); ldrops: dropped because the queue was full;\n\
         \x20    edrops: dropped early by RED/RIO.",
    );
    let sojourns = s
        .points
        .iter()
        .flat_map(|p| &p.queues)
        .any(|q| q.sojourn_ms.is_some());
    if sojourns {
        out.push_str(
            " sojourn: time from arrival to the start of\n\
             \x20    serialisation after the warm-up, mean, p95 and p99 over the queue's packets (mean over runs).",
        );
    }
    if diffserv {
        out.push_str(
            " in: green (in-profile) packets; out: yellow and red\n\
             \x20    (out of profile, or unmarked best effort); % of all: in's share of the queue's packets.\n",
        );
    } else {
        out.push('\n');
    }
    out
}

/// `; sojourn 1.2 ms, p95 3.4, p99 5.6` for a queue that measured its sojourn times, else nothing.
fn sojourn_cell(q: &QueueSummary) -> String {
    q.sojourn_ms.as_ref().map_or(String::new(), |s| {
        format!(
            "; sojourn {:.2} ms, p95 {:.2}, p99 {:.2}",
            s.mean.mean, s.p95.mean, s.p99.mean
        )
    })
}

/// A swept key as labels show it: the first of keys joined with `+`, without `group.`
/// (`group.CD.flows+group.CD.target` is `CD.flows`).
pub fn short_key(key: &str) -> &str {
    let first = key.split(['+', ',']).next().unwrap_or(key);
    first.strip_prefix("group.").unwrap_or(first)
}

/// `key=value, ...` with each key as [`short_key`] shows it (`AB.protocol=qstp, CD.flows=20`),
/// every value whole, or `(single point)`. Keys joined with `,` move together with one value per
/// key, and each shows with its own (`bottleneck.rate=40M, X.flows=10`).
pub fn params_label(params: &serde_json::Map<String, serde_json::Value>) -> String {
    if params.is_empty() {
        return "(single point)".into();
    }
    let text = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    params
        .iter()
        .flat_map(|(k, v)| match v.as_array() {
            Some(values) if k.contains(',') && values.len() == k.split(',').count() => k
                .split(',')
                .zip(values)
                .map(|(k, v)| format!("{}={}", short_key(k.trim()), text(v)))
                .collect(),
            _ => vec![format!("{}={}", short_key(k), text(v))],
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests;

/// ` ±x.xxx` for a confidence interval, nothing where one run leaves it undefined.
pub(crate) fn plus_minus(ci95: Option<f64>) -> String {
    ci95.map_or(String::new(), |ci| format!(" ±{ci:.3}"))
}
