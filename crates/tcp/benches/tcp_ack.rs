//! Cost of one ACK at the TCP sender against the window: W segments in flight, the first one
//! lost, then the W - 1 ACKs (with SACK blocks) the receiver sends for the others, the fast
//! retransmit, and the ACK of the retransmission. Reported per ACK: it must stay flat from 100
//! to 50,000 segments (the scoreboard does O(log W) work per ACK, not a rescan).
//!
//! Run with `cargo bench -p qstp-sim --bench tcp_ack`.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use qstp_proto::{Duration, Time};
use qstp_tcp::{NewReno, Segment, TcpConfig, TcpReceiver, TcpSender};

const MSS: u32 = 1460;

/// A sender with `window` segments in flight and the ACKs the receiver sends when the first one
/// is lost.
fn one_loss(window: u32) -> (TcpSender, Vec<Segment>, Segment) {
    let config = TcpConfig {
        mss: MSS,
        initial_window: window,
        receive_window: u64::from(window) * u64::from(MSS) * 4,
        ..TcpConfig::default()
    };
    let mut sender = TcpSender::new(config.clone(), Box::new(NewReno::new(MSS)));
    let mut receiver = TcpReceiver::new(&config);
    let t0 = Time::ZERO;
    let mut sent = Vec::new();
    while let Some(s) = sender.poll_segment(t0) {
        sent.push(s);
    }
    assert_eq!(sent.len(), window as usize);
    let t1 = t0 + Duration::from_millis(100);
    let acks = sent[1..]
        .iter()
        .map(|s| {
            receiver.on_segment(t1, s);
            receiver
                .poll_ack(t1)
                .expect("an ACK per out-of-order segment")
        })
        .collect();
    receiver.on_segment(t1, &sent[0]);
    let last = receiver
        .poll_ack(t1)
        .expect("the ACK of the retransmission");
    (sender, acks, last)
}

fn ack_processing(c: &mut Criterion) {
    let mut group = c.benchmark_group("tcp_sender_ack");
    group.sample_size(10);
    for window in [100u32, 1_000, 10_000, 50_000] {
        group.throughput(Throughput::Elements(u64::from(window)));
        group.bench_with_input(BenchmarkId::from_parameter(window), &window, |b, &w| {
            b.iter_batched(
                || one_loss(w),
                |(mut sender, acks, last)| {
                    let now = Time::ZERO + Duration::from_millis(100);
                    for ack in &acks {
                        sender.on_ack(now, ack);
                        while sender.poll_segment(now).is_some() {}
                    }
                    sender.on_ack(now, &last);
                    assert_eq!(sender.stats().fast_retransmits, 1);
                    sender
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, ack_processing);
criterion_main!(benches);
