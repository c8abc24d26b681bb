//! A small plan and a stand-in simulator for the lab's unit tests.

use qstp_dataplane::queue::CodePointCounters;
use qstp_proto::Time;
use qstp_sim::{
    FlowRecord, Protocol, QueueRecord, QueueSeries, RateSample, RunOutput, SenderSeries, SimSpec,
};

pub(crate) const PLAN: &str = r#"
name = "t"
duration = "10s"
warmup = "2s"
runs = 3
seed = 5
bin = "1s"
[bottleneck]
rate = "1M"
queue = { kind = "droptail", limit = 10 }
[[group]]
name = "A"
protocol = "qstp"
rtt = "30ms"
target = "500k"
[[group]]
name = "B"
protocol = "tcp"
flows = 2
rtt = "30ms"
[sweep]
"group.B.flows" = [1, 2]
"#;

/// A stand-in simulator: each flow receives `seed * 1000 + group * 100 + flow` bytes per bin.
pub(crate) fn fake(
    spec: &SimSpec,
    progress: &mut dyn FnMut(Time) -> std::ops::ControlFlow<()>,
) -> Result<RunOutput, String> {
    let bins = (spec.duration.as_nanos() / spec.bin.as_nanos()) as usize;
    for s in 0..=spec.duration.as_nanos() / 1_000_000_000 {
        if progress(Time::from_nanos(s * 1_000_000_000)).is_break() {
            return Err("stopped".into());
        }
    }
    let mut flows = Vec::new();
    for (g, group) in spec.groups.iter().enumerate() {
        for f in 0..group.flows {
            let b = spec.seed * 1000 + g as u64 * 100 + f as u64;
            flows.push(FlowRecord {
                group: g,
                flow: f,
                received_bytes: vec![b; bins],
                delivered_bytes: vec![b / 2; bins],
                jitter_ns: vec![1_000_000; bins],
                received_packets: vec![1; bins],
                delay: Some(qstp_sim::DelayStats {
                    samples: bins as u64,
                    mean_ns: 20e6 + b as f64 * 1e3,
                    p50_ns: 20_000_000,
                    p95_ns: 25_000_000,
                    p99_ns: 30_000_000,
                }),
                rtt: Some(qstp_sim::DelayStats {
                    samples: bins as u64,
                    mean_ns: 41e6,
                    p50_ns: 40_000_000,
                    p95_ns: 50_000_000,
                    p99_ns: 60_000_000,
                }),
                packets_sent: bins as u64,
                packets_retransmitted: 0,
                sender: SenderSeries {
                    sent: vec![10; bins],
                    retransmitted: vec![1; bins],
                    rtt_ns: vec![30_000_000; bins],
                    rtt_samples: vec![1; bins],
                    cwnd_bytes: vec![15_000; bins],
                    loss_events: vec![2; bins],
                    timeouts: vec![1; bins],
                    // qstp senders: their rate state at the end of each bin but the first (not
                    // yet established), X rising by 10 kbit/s a bin.
                    rate: if matches!(group.protocol, Protocol::Qstp(_)) {
                        (0..bins as u64)
                            .map(|i| {
                                (i > 0).then_some(RateSample {
                                    rate_bps: 400_000 + i * 10_000,
                                    x_recv_bps: 390_000,
                                    loss_event_rate_ppb: 1_234_567,
                                    rtt_ns: 30_000_000,
                                })
                            })
                            .collect()
                    } else {
                        Vec::new()
                    },
                },
                // qstp flows carry messages here: 10 written a bin, 9 delivered.
                messages: matches!(group.protocol, Protocol::Qstp(_)).then(|| {
                    qstp_sim::MessageSeries {
                        written: vec![10; bins],
                        delivered: vec![9; bins],
                    }
                }),
            });
        }
    }
    let queues = vec![QueueRecord {
        name: "bottleneck".into(),
        green: CodePointCounters {
            packets: 100 + spec.seed,
            ldrops: 1,
            edrops: 0,
            marks: 0,
        },
        yellow: CodePointCounters {
            packets: 10,
            ldrops: 2,
            edrops: 3,
            marks: 0,
        },
        red: CodePointCounters {
            packets: 40,
            ldrops: 4,
            edrops: 5,
            marks: 0,
        },
    }];
    Ok(RunOutput {
        events: 10,
        bottleneck_packets: 0,
        simulated: spec.duration,
        flows,
        queues,
        // A queue that fills by one packet of 1000 bytes per bin, and a class holding half of it.
        queue_series: vec![
            QueueSeries {
                name: "bottleneck".into(),
                packets: (0..bins as u64).collect(),
                bytes: (0..bins as u64).map(|i| i * 1000).collect(),
            },
            QueueSeries {
                name: "bottleneck/af".into(),
                packets: (0..bins as u64).map(|i| i / 2).collect(),
                bytes: (0..bins as u64).map(|i| i / 2 * 1000).collect(),
            },
        ],
        // 100 packets left the queue after 0.5 to 50 ms (mean 10 ms).
        sojourn: vec![qstp_sim::QueueSojourn {
            name: "bottleneck".into(),
            stats: qstp_dataplane::link::SojournStats {
                samples: 100,
                mean_ns: 10e6,
                p50_ns: 8e6,
                p95_ns: 30e6,
                p99_ns: 50e6,
            },
        }],
        delegation: None,
        atm: None,
    })
}
