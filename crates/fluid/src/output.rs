//! The fluid solution as a [`RunOutput`], so that the lab reduces it as any run: per-flow records
//! in the spec's bins, the bottleneck's queue counters and backlog, the delegation's samples.

use super::model::Model;
use super::solver::Solver;
use qstp_dataplane::queue::CodePointCounters;
use qstp_proto::Duration;
use qstp_sim::output::{
    DelegationRecord, FlowRecord, QueueRecord, QueueSeries, RunOutput, SenderSeries,
};
use qstp_sim::spec::SimSpec;

/// One flow's integrals per bin, in packets (ns for the RTT).
#[derive(Debug, Clone)]
struct FlowBins {
    received: Vec<f64>,
    sent: Vec<f64>,
    dropped: Vec<f64>,
    signals: Vec<f64>,
    rtt_ns: Vec<f64>,
    rtt_samples: Vec<u64>,
    /// The window at the bin's last step, packets.
    cwnd: Vec<f64>,
}

/// Integrates the solver's steps into the spec's bins.
#[derive(Debug)]
pub struct Recorder {
    bin_ns: u64,
    warmup_ns: u64,
    flows: Vec<FlowBins>,
    backlog: Vec<f64>,
    /// After the warm-up: arrivals, early drops, overflow drops, packets.
    arrivals: f64,
    early: f64,
    overflow: f64,
    departed: f64,
    /// Over the run: the Free's signals delegated, reacted to, and the Stunts' it took.
    delegated: f64,
    reacted: f64,
    taken_by_free: f64,
    steps: u64,
}

/// `values` scaled, as integers whose running sums stay within half a unit of the exact ones.
fn counts(values: &[f64], scale: f64) -> Vec<u64> {
    let (mut exact, mut given) = (0.0, 0u64);
    values
        .iter()
        .map(|v| {
            exact += v * scale;
            let now = exact.round().max(0.0) as u64;
            let out = now.saturating_sub(given);
            given = given.max(now);
            out
        })
        .collect()
}

impl Recorder {
    /// A recorder of `spec`'s bins for the flows of `m`.
    pub fn new(m: &Model, spec: &SimSpec) -> Self {
        let bins = qstp_sim::validate::bin_count(spec) as usize;
        let zeros = vec![0.0; bins];
        Recorder {
            bin_ns: spec.bin.as_nanos().max(1),
            warmup_ns: spec.warmup.as_nanos(),
            flows: m
                .flows
                .iter()
                .map(|_| FlowBins {
                    received: zeros.clone(),
                    sent: zeros.clone(),
                    dropped: zeros.clone(),
                    signals: zeros.clone(),
                    rtt_ns: zeros.clone(),
                    rtt_samples: vec![0; bins],
                    cwnd: zeros.clone(),
                })
                .collect(),
            backlog: zeros,
            arrivals: 0.0,
            early: 0.0,
            overflow: 0.0,
            departed: 0.0,
            delegated: 0.0,
            reacted: 0.0,
            taken_by_free: 0.0,
            steps: 0,
        }
    }

    /// Add the step of `solver` that just ended, `h` seconds long.
    pub fn add(&mut self, m: &Model, solver: &Solver, h: f64) {
        self.steps += 1;
        let end = solver.now_ns();
        let step = &solver.last;
        if end > self.warmup_ns {
            self.arrivals += step.arrivals * h;
            self.early += step.early * h;
            self.overflow += step.overflow * h;
        }
        self.departed += step.departures.iter().sum::<f64>() * h;
        if let Some(d) = &m.delegation {
            self.delegated += step.delegated * h;
            self.taken_by_free += step.taken_by_free * h;
            self.reacted += step.signals[d.free] * h;
        }
        let k = ((end.max(1) - 1) / self.bin_ns) as usize;
        if k >= self.backlog.len() {
            return;
        }
        let state = solver.state();
        self.backlog[k] = state.b;
        for (i, f) in self.flows.iter_mut().enumerate() {
            let r = super::equations::rtt(m, i, state.b);
            f.received[k] += step.departures[i] * h;
            f.sent[k] += step.sent[i] * h;
            f.dropped[k] += step.dropped[i] * h;
            f.signals[k] += step.signals[i] * h;
            f.rtt_ns[k] += r * 1e9;
            f.rtt_samples[k] += 1;
            // w_i = x_i r_i. Free & Stunts eq. (13).
            f.cwnd[k] = state.x[i] * r;
        }
    }

    /// The run's output; `samples` are the delegation's control samples.
    pub fn finish(
        self,
        m: &Model,
        spec: &SimSpec,
        samples: Vec<(f64, f64)>,
        period: Option<Duration>,
    ) -> RunOutput {
        let (wire, payload) = (m.packet_bytes, m.payload_bytes);
        let flows = self
            .flows
            .iter()
            .zip(&m.flows)
            .map(|(b, f)| {
                let sent = counts(&b.sent, 1.0);
                let dropped = counts(&b.dropped, 1.0);
                FlowRecord {
                    group: f.group,
                    flow: f.flow,
                    received_bytes: counts(&b.received, wire),
                    delivered_bytes: counts(&b.received, payload),
                    // A fluid has no packet-to-packet delay variation.
                    jitter_ns: vec![0; b.received.len()],
                    received_packets: counts(&b.received, 1.0),
                    // Packets are not followed one by one, so there are no delay percentiles.
                    delay: None,
                    rtt: None,
                    packets_sent: sent.iter().sum(),
                    packets_retransmitted: dropped.iter().sum(),
                    sender: SenderSeries {
                        sent,
                        retransmitted: dropped,
                        rtt_ns: b.rtt_ns.iter().map(|&v| v.round() as u64).collect(),
                        rtt_samples: b.rtt_samples.clone(),
                        cwnd_bytes: b
                            .cwnd
                            .iter()
                            .map(|&w| (w * payload).round() as u64)
                            .collect(),
                        loss_events: counts(&b.signals, 1.0),
                        timeouts: Vec::new(),
                        rate: Vec::new(),
                    },
                    messages: None,
                }
            })
            .collect();
        // Unmarked traffic is red to the queues (spec::GroupSpec::marker).
        let red = CodePointCounters {
            packets: self.arrivals.round() as u64,
            ldrops: self.overflow.round() as u64,
            edrops: self.early.round() as u64,
            marks: 0,
        };
        let none = CodePointCounters::default();
        RunOutput {
            events: self.steps,
            bottleneck_packets: self.departed.round() as u64,
            simulated: spec.duration,
            flows,
            queues: vec![QueueRecord {
                name: "bottleneck".into(),
                green: none,
                yellow: none,
                red,
            }],
            queue_series: vec![QueueSeries {
                name: "bottleneck".into(),
                packets: self.backlog.iter().map(|&b| b.round() as u64).collect(),
                bytes: self
                    .backlog
                    .iter()
                    .map(|&b| (b * wire).round() as u64)
                    .collect(),
            }],
            // A fluid queue has no packets to time.
            sojourn: Vec::new(),
            delegation: period.map(|period| DelegationRecord {
                period,
                samples,
                delegated: self.delegated.round() as u64,
                reacted: self.reacted.round() as u64,
                taken_by_free: self.taken_by_free.round() as u64,
            }),
            atm: None,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_keep_the_running_sum() {
        let c = super::counts(&[0.4, 0.4, 0.4, 0.4, 0.4], 1.0);
        assert_eq!(c.iter().sum::<u64>(), 2);
        assert_eq!(super::counts(&[2.5, 0.0], 2.0), vec![5, 0]);
    }
}
