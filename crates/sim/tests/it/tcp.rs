//! TCP over the simulated dumbbell.

use crate::common::newreno;
use qstp_proto::{Duration, Rate};
use qstp_sim::capture::{Capture, CaptureSink};
use qstp_sim::TcpSpec;
use qstp_sim::{run, run_with_capture, GroupSpec, Protocol, SimError, SimSpec};
use qstp_tcp::{CcError, CcSpec, TcpOptions};

#[test]
fn tcp_flows_share_a_drop_tail_bottleneck_and_fill_it() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(10), 50, 30);
    spec.packet_size = 1500;
    spec.groups.push(GroupSpec::new(
        "tcp",
        newreno(),
        4,
        Duration::from_millis(40),
    ));
    let out = run(&spec).unwrap();
    // After slow start, from 5 s on, the bottleneck carries more than 90% of its capacity.
    let capacity_per_second = 10_000_000 / 8;
    let carried: u64 = out
        .flows
        .iter()
        .map(|f| f.received_bytes[5..].iter().sum::<u64>())
        .sum();
    let utilisation = carried as f64 / (capacity_per_second * 25) as f64;
    assert!(utilisation > 0.9, "utilisation {utilisation}");
    // Every flow gets a share, losses happened at the queue, and were repaired.
    for flow in &out.flows {
        let goodput: u64 = flow.delivered_bytes[5..].iter().sum();
        assert!(
            goodput > (capacity_per_second * 25 / 4) as u64 / 4,
            "flow {}: {goodput}",
            flow.flow
        );
        assert!(flow.packets_sent > 0);
    }
    assert!(out.queues[0].red.ldrops > 0);
    assert!(out.flows.iter().any(|f| f.packets_retransmitted > 0));
    // Each flow's loss events per bin: some, and never more than its retransmissions (each
    // event retransmits at least one packet); the drop-tail queue fills up between them.
    for flow in &out.flows {
        let events: u64 = flow.sender.loss_events.iter().sum();
        let resent: u64 = flow.sender.retransmitted.iter().sum();
        assert_eq!(flow.sender.loss_events.len(), 30);
        assert!(
            events > 0 && events <= resent,
            "{events} events, {resent} resent"
        );
    }
    let peak = out.queue_series[0].packets.iter().max().copied();
    assert!(peak.is_some_and(|p| p > 25 && p <= 50), "{peak:?}");
    // Every ACK's RTT lies between the 40 ms path (and a 1.2 ms segment's serialisation at the
    // bottleneck) and that plus the full 50-packet queue's 60 ms; the one-way delay is about half.
    for flow in &out.flows {
        let rtt = flow.rtt.unwrap();
        assert!(rtt.samples > 1000, "{rtt:?}");
        assert!(
            rtt.p50_ns > 41_000_000 && rtt.p99_ns < 105_000_000,
            "{rtt:?}"
        );
        let delay = flow.delay.unwrap();
        assert!(delay.mean_ns < rtt.mean_ns, "{delay:?} {rtt:?}");
    }
}

#[test]
fn tcp_with_delayed_acks_runs_and_is_deterministic() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(5), Duration::from_millis(10), 30, 10);
    spec.groups.push(GroupSpec::new(
        "tcp",
        Protocol::Tcp(TcpSpec {
            congestion: CcSpec::named("newreno"),
            options: TcpOptions {
                delayed_ack: true,
                receive_window: 1 << 20,
                ..TcpOptions::default()
            },
        }),
        3,
        Duration::from_millis(60),
    ));
    let a = run(&spec).unwrap();
    assert_eq!(a, run(&spec).unwrap());
    let delivered: u64 = a.flows.iter().flat_map(|f| f.delivered_bytes.iter()).sum();
    assert!(delivered > 5_000_000 / 8 * 5, "{delivered}");
}

#[test]
fn an_unknown_congestion_control_is_refused() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(5), Duration::from_millis(10), 30, 10);
    let protocol = Protocol::Tcp(TcpSpec {
        congestion: CcSpec::named("warp"),
        options: TcpOptions::default(),
    });
    spec.groups.push(GroupSpec::new(
        "tcp",
        protocol,
        1,
        Duration::from_millis(60),
    ));
    assert!(
        matches!(run(&spec), Err(SimError::CongestionControl { error: CcError::Unknown { name }, .. }) if name == "warp")
    );
}

#[test]
fn a_capture_sees_the_bottleneck_packets_and_changes_nothing() {
    struct Frames(Vec<(qstp_proto::Time, usize)>);
    impl CaptureSink for Frames {
        fn frame(&mut self, time: qstp_proto::Time, frame: &[u8]) {
            self.0.push((time, frame.len()));
        }
    }
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(10), 50, 5);
    spec.packet_size = 1500;
    spec.groups.push(GroupSpec::new(
        "tcp",
        newreno(),
        2,
        Duration::from_millis(40),
    ));
    let plain = run(&spec).unwrap();
    let mut frames = Frames(Vec::new());
    fn capture<'a>(link: &str, sink: &'a mut dyn CaptureSink) -> Capture<'a> {
        Capture {
            link: link.into(),
            limit: 1000,
            sink,
        }
    }
    let captured = run_with_capture(
        &spec,
        &mut |_| std::ops::ControlFlow::Continue(()),
        Some(capture("bottleneck", &mut frames)),
    )
    .unwrap();
    assert_eq!(plain, captured, "capturing does not change the run");
    assert_eq!(frames.0.len(), 1000, "the limit holds");
    assert!(frames.0.windows(2).all(|w| w[0].0 <= w[1].0));
    assert!(frames.0.iter().all(|&(_, len)| len == 1500));
    let err = run_with_capture(
        &spec,
        &mut |_| std::ops::ControlFlow::Continue(()),
        Some(capture("nowhere", &mut frames)),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("no link named 'nowhere' (known: bottleneck, access/tcp/0, sink/tcp/0, access/tcp/1, sink/tcp/1)"), "{err}");
}

/// `onoff` switches a TCP flow's application: nothing new is delivered in its off periods, the
/// continuous flow takes the capacity meanwhile, and the window restarts after each idle spell
/// instead of bursting a stale window into the queue (RFC 5681 §4.1).
#[test]
fn switched_tcp_is_silent_while_off_and_restarts_its_window() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(5), 100, 40);
    let mut switched = GroupSpec::new("S", newreno(), 1, Duration::from_millis(40));
    switched.onoff = Some(qstp_sim::Switching {
        on: Duration::from_secs(5),
        off: Duration::from_secs(5),
        random: false,
        flows: None,
    });
    spec.groups = vec![
        switched,
        GroupSpec::new("C", newreno(), 1, Duration::from_millis(40)),
    ];
    let out = qstp_sim::run(&spec).unwrap();
    let s = &out.flows[0].delivered_bytes;
    let c = &out.flows[1].delivered_bytes;
    // On in [0, 5), off in [5, 10), on in [10, 15), ...: one-second bins, the edges left out.
    let mean = |v: &[u64], bins: &[usize]| {
        bins.iter().map(|&i| v[i] as f64 * 8.0).sum::<f64>() / bins.len() as f64
    };
    let on: Vec<usize> = (0..40)
        .filter(|i| (i / 5) % 2 == 0 && i % 5 != 0 && i % 5 != 4)
        .collect();
    let off: Vec<usize> = (0..40).filter(|i| (i / 5) % 2 == 1 && i % 5 >= 2).collect();
    assert!(
        mean(s, &off) == 0.0,
        "the switched flow delivered while off: {s:?}"
    );
    assert!(
        mean(s, &on) > 3e6,
        "the switched flow is idle while on: {s:?}"
    );
    // The continuous flow takes (nearly) the whole link while the other is off.
    assert!(
        mean(c, &off) > 8.5e6,
        "continuous flow while the other is off: {c:?}"
    );
}
