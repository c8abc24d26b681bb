//! TCP over the AQM queues (CoDel, PIE, FQ-CoDel) and with ECN (RFC 3168).

use crate::common::newreno;
use qstp_dataplane::queue::{CoDelParams, CoDelSpec, FqCoDelSpec, QueueSpec, RedParams, RedSpec};
use qstp_proto::{Duration, Rate};
use qstp_sim::{run, GroupSpec, Protocol, RunOutput, SimSpec};

/// NewReno with ECN on or off.
fn newreno_ecn(ecn: bool) -> Protocol {
    let Protocol::Tcp(mut tcp) = newreno() else {
        unreachable!()
    };
    tcp.options.ecn = ecn;
    Protocol::Tcp(tcp)
}

fn red(ecn: bool) -> QueueSpec {
    QueueSpec::Red(RedSpec {
        limit: 200,
        params: RedParams {
            min_th: 15.0,
            max_th: 45.0,
            max_p: 0.1,
        },
        weight: 0.002,
        wait: false,
        ecn,
    })
}

fn codel(ecn: bool) -> QueueSpec {
    QueueSpec::CoDel(CoDelSpec {
        limit: 1000,
        params: CoDelParams {
            ecn,
            ..CoDelParams::default()
        },
    })
}

/// Two groups of 2 NewReno flows each (one with ECN if `ecn_flows`) for 40 s on a 10 Mbit/s,
/// 40 ms dumbbell behind `queue`.
fn dumbbell(queue: QueueSpec, ecn_flows: bool) -> RunOutput {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(10), 1000, 40);
    spec.packet_size = 1500;
    spec.bottleneck_mut().unwrap().queue = queue;
    spec.groups.push(GroupSpec::new(
        "ecn",
        newreno_ecn(ecn_flows),
        2,
        Duration::from_millis(40),
    ));
    spec.groups.push(GroupSpec::new(
        "plain",
        newreno(),
        2,
        Duration::from_millis(40),
    ));
    run(&spec).unwrap()
}

/// Each flow's bytes received from 10 s on.
fn shares(out: &RunOutput) -> Vec<u64> {
    out.flows
        .iter()
        .map(|f| f.received_bytes[10..].iter().sum())
        .collect()
}

fn jain(x: &[u64]) -> f64 {
    let sum: f64 = x.iter().map(|&v| v as f64).sum();
    let squares: f64 = x.iter().map(|&v| (v as f64).powi(2)).sum();
    sum * sum / (x.len() as f64 * squares)
}

#[test]
fn ecn_flows_on_red_and_codel_are_marked_not_dropped_and_still_share_fairly() {
    for queue in [red(true), codel(true)] {
        let out = dumbbell(queue.clone(), true);
        let q = &out.queues[0];
        // Unmarked (best effort) packets are red: the counters of that colour.
        assert!(q.red.marks > 100, "{queue:?}: {:?}", q.red);
        // Once past slow start's overshoot (which may overflow the buffer), the ECN flows are
        // marked, not dropped: from 10 s on they resend (almost) nothing, while the plain flows
        // resend what the queue dropped of theirs.
        let resent = |f: usize| -> u64 { out.flows[f].sender.retransmitted[10..].iter().sum() };
        let sent: u64 = out.flows[0].sender.sent[10..].iter().sum();
        for f in 0..2 {
            assert!(
                resent(f) * 1000 <= sent,
                "{queue:?}: ECN flow {f} resent {} (about {sent} sent)",
                resent(f)
            );
        }
        assert!(
            resent(2) + resent(3) > 10,
            "{queue:?}: plain flows lose packets"
        );
        let s = shares(&out);
        let total: u64 = s.iter().sum();
        assert!(
            total as f64 > 0.85 * 10e6 / 8.0 * 30.0,
            "{queue:?}: utilisation {s:?}"
        );
        assert!(jain(&s) > 0.9, "{queue:?}: Jain {} of {s:?}", jain(&s));
    }
}

#[test]
fn ecn_off_gives_the_same_run_whether_the_queue_could_mark_or_not() {
    // Without ECT packets a marking queue drops exactly as before: identical outputs.
    for (marking, plain) in [(red(true), red(false)), (codel(true), codel(false))] {
        assert_eq!(dumbbell(marking, false), dumbbell(plain, false));
    }
}

#[test]
fn fq_codel_keeps_a_thin_flow_fast_beside_bulk_tcp() {
    // A 200k CBR flow beside 4 NewReno flows: behind a 1000-packet drop-tail queue it waits for
    // the standing queue; behind FQ-CoDel its packets leave almost at once.
    let thin_delay = |queue: QueueSpec| {
        let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(10), 1000, 20);
        spec.packet_size = 1500;
        spec.bottleneck_mut().unwrap().queue = queue;
        spec.groups.push(GroupSpec::new(
            "bulk",
            newreno(),
            4,
            Duration::from_millis(40),
        ));
        spec.groups.push(GroupSpec::new(
            "thin",
            crate::common::cbr(Rate::from_kbps(200)),
            1,
            Duration::from_millis(40),
        ));
        let out = run(&spec).unwrap();
        out.flows[4].delay.unwrap().p99_ns as f64 / 1e6
    };
    let fq = thin_delay(QueueSpec::FqCoDel(FqCoDelSpec {
        limit: 1000,
        flows: 1024,
        quantum: 1514,
        codel: CoDelParams::default(),
    }));
    let fifo = thin_delay(QueueSpec::drop_tail(1000));
    // The path's one-way delay is 20 ms (half the 40 ms rtt) plus serialisation.
    assert!(fq < 25.0, "FQ-CoDel p99 {fq} ms");
    assert!(fifo > 100.0, "drop-tail p99 {fifo} ms");
}

#[test]
fn the_bottleneck_times_its_queue_and_codel_keeps_the_sojourn_near_its_target() {
    // The same four NewReno flows behind a 1000-packet drop-tail queue (1.2 s of packets at
    // 10 Mbit/s, which the flows fill) and behind CoDel (target 5 ms, RFC 8289 §4.3).
    let drop_tail = dumbbell(QueueSpec::drop_tail(1000), false);
    let codel = dumbbell(codel(false), false);
    let sojourn = |out: &RunOutput| {
        assert_eq!(out.sojourn.len(), 1);
        assert_eq!(out.sojourn[0].name, "bottleneck");
        out.sojourn[0].stats
    };
    let (d, c) = (sojourn(&drop_tail), sojourn(&codel));
    // Every packet that crossed the bottleneck left its queue and was timed (with no warm-up,
    // from the start), and so were the few still on the 10 ms link at the end.
    assert!(d.samples >= drop_tail.bottleneck_packets);
    assert!(d.samples <= drop_tail.bottleneck_packets + 20);
    assert!(d.p50_ns <= d.p95_ns && d.p95_ns <= d.p99_ns);
    assert!(d.mean_ns > 100e6, "a standing queue: {d:?}");
    assert!(c.mean_ns < 30e6 && c.p50_ns < 20e6, "CoDel: {c:?}");
    assert!(c.p99_ns < d.p50_ns, "{c:?} against {d:?}");
}
