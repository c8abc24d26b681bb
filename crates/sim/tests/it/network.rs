//! The network on its own: UDP traffic through the dumbbell, drops, determinism, spec errors.

use crate::common::cbr;
use qstp_proto::{Duration, Rate};
use qstp_sim::{run, run_with_progress, GroupSpec, Protocol, SimError, SimSpec};
use qstp_sim::{CbrSpec, OnOffSpec};

#[test]
fn a_cbr_flow_gets_exactly_its_rate() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(10), 50, 10);
    spec.groups.push(GroupSpec::new(
        "udp",
        cbr(Rate::from_mbps(1)),
        1,
        Duration::from_millis(40),
    ));
    let out = run(&spec).unwrap();
    let flow = &out.flows[0];
    // 1 Mbit/s of 1000-byte packets is one every 8 ms: 125 per second, in every full second.
    for second in 1..10 {
        assert_eq!(flow.received_bytes[second], 125_000, "second {second}");
        assert_eq!(flow.received_packets[second], 125, "second {second}");
        assert_eq!(flow.jitter_ns[second], 0, "a constant path has no jitter");
        assert_eq!(flow.delivered_bytes[second], 125 * (1000 - 28));
    }
    // Every packet takes the same time: half the 40 ms RTT and 1.04 ms of serialisation (0.8 ms
    // at the 10 Mbit/s bottleneck, 0.08 ms on each of three 100 Mbit/s links); the percentiles
    // are that delay's bucket, the mean exact.
    let delay = flow.delay.unwrap();
    assert_eq!(delay.samples, flow.received_packets.iter().sum::<u64>());
    assert_eq!(delay.mean_ns, 21_040_000.0);
    assert_eq!(delay.p50_ns, delay.p99_ns);
    assert!(delay.p50_ns as f64 >= delay.mean_ns && delay.p50_ns as f64 <= delay.mean_ns * 1.01);
    assert_eq!(out.queues[0].name, "bottleneck");
    assert_eq!(out.queues[0].red.ldrops, 0);
    assert!(
        out.bottleneck_packets >= 1240 && out.bottleneck_packets <= 1250,
        "{}",
        out.bottleneck_packets
    );
}

#[test]
fn an_overloaded_link_drops_at_its_queue_and_runs_at_capacity() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(1), Duration::from_millis(5), 20, 10);
    spec.groups.push(GroupSpec::new(
        "udp",
        cbr(Rate::from_mbps(2)),
        1,
        Duration::from_millis(20),
    ));
    let out = run(&spec).unwrap();
    let red = out.queues[0].red;
    assert!(red.ldrops > 0);
    // About half of what is offered is dropped.
    let share = red.ldrops as f64 / red.packets as f64;
    assert!((0.45..0.55).contains(&share), "dropped share {share}");
    // The receiver gets the link's capacity: 125 packets of 1000 bytes per second.
    for second in 2..10 {
        let bytes = out.flows[0].received_bytes[second];
        assert!(
            (124_000..=126_000).contains(&bytes),
            "second {second}: {bytes}"
        );
    }
}

#[test]
fn a_rate_schedule_is_followed() {
    // QSTP paper Fig. 7: 300 kbit/s, 1000 kbit/s for t in [60, 120) s, then 300 kbit/s (scaled down
    // to seconds 3..6 here).
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(5), 50, 9);
    let schedule = vec![
        (Duration::ZERO, Rate::from_kbps(300)),
        (Duration::from_secs(3), Rate::from_kbps(1000)),
        (Duration::from_secs(6), Rate::from_kbps(300)),
    ];
    spec.groups.push(GroupSpec::new(
        "udp",
        Protocol::Cbr(CbrSpec { schedule }),
        1,
        Duration::from_millis(10),
    ));
    spec.packet_size = 1250; // 10 kbit per packet: 30 per second, then 100
    let out = run(&spec).unwrap();
    let packets = &out.flows[0].received_packets;
    assert!((29..=31).contains(&packets[1]), "{packets:?}");
    assert!((99..=101).contains(&packets[4]), "{packets:?}");
    assert!((29..=31).contains(&packets[7]), "{packets:?}");
}

#[test]
fn on_off_sources_send_less_than_their_rate() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(5), 50, 20);
    let protocol = Protocol::OnOff(OnOffSpec {
        schedule: vec![(Duration::ZERO, Rate::from_mbps(1))],
        mean_on: Duration::from_millis(500),
        mean_off: Duration::from_millis(500),
    });
    spec.groups.push(GroupSpec::new(
        "onoff",
        protocol,
        4,
        Duration::from_millis(20),
    ));
    let out = run(&spec).unwrap();
    for flow in &out.flows {
        let total: u64 = flow.received_bytes.iter().sum();
        // About half of 20 s at 1 Mbit/s (2.5 MB); exponential periods vary.
        assert!((600_000..2_000_000).contains(&total), "{total}");
    }
}

#[test]
fn same_spec_same_output_other_seed_other_output() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(1), Duration::from_millis(5), 20, 10);
    let protocol = Protocol::OnOff(OnOffSpec {
        schedule: vec![(Duration::ZERO, Rate::from_kbps(600))],
        mean_on: Duration::from_millis(300),
        mean_off: Duration::from_millis(200),
    });
    spec.groups.push(GroupSpec::new(
        "onoff",
        protocol,
        3,
        Duration::from_millis(30),
    ));
    spec.groups.push(GroupSpec::new(
        "cbr",
        cbr(Rate::from_kbps(400)),
        2,
        Duration::from_millis(60),
    ));
    let a = run(&spec).unwrap();
    let b = run(&spec).unwrap();
    assert_eq!(a, b);
    spec.seed = 2;
    let c = run(&spec).unwrap();
    assert_ne!(a.flows, c.flows);
}

#[test]
fn progress_is_reported_every_simulated_second() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(1), Duration::from_millis(5), 20, 3);
    spec.groups.push(GroupSpec::new(
        "udp",
        cbr(Rate::from_kbps(100)),
        1,
        Duration::from_millis(20),
    ));
    let mut seen = Vec::new();
    run_with_progress(&spec, &mut |t| {
        seen.push(t.as_nanos() / 1_000_000_000);
        std::ops::ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(seen, vec![1, 2, 3]);
    // Seconds without any event are reported too.
    spec.groups.clear();
    seen.clear();
    run_with_progress(&spec, &mut |t| {
        seen.push(t.as_nanos() / 1_000_000_000);
        std::ops::ControlFlow::Continue(())
    })
    .unwrap();
    assert_eq!(seen, vec![1, 2, 3]);
}

#[test]
fn an_rtt_shorter_than_the_bottleneck_both_ways_is_refused() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(1), Duration::from_millis(20), 20, 3);
    spec.groups.push(GroupSpec::new(
        "udp",
        cbr(Rate::from_kbps(100)),
        1,
        Duration::from_millis(30),
    ));
    assert!(matches!(
        run(&spec),
        Err(SimError::RttShorterThanPath { .. })
    ));
}

#[test]
fn bad_specs_name_the_field() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(1), Duration::from_millis(5), 20, 3);
    spec.groups.push(GroupSpec::new(
        "udp",
        Protocol::Cbr(CbrSpec { schedule: vec![] }),
        1,
        Duration::from_millis(30),
    ));
    match run(&spec) {
        Err(SimError::Invalid { key, .. }) => assert_eq!(key, "groups[udp].schedule"),
        other => panic!("{other:?}"),
    }
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(1), Duration::from_millis(5), 20, 3);
    spec.bin = Duration::ZERO;
    assert!(matches!(run(&spec), Err(SimError::Invalid { key, .. }) if key == "bin"));
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(1), Duration::from_millis(5), 20, 3);
    spec.groups.push(GroupSpec::new(
        "a",
        cbr(Rate::from_kbps(1)),
        1,
        Duration::from_millis(30),
    ));
    spec.groups.push(GroupSpec::new(
        "a",
        cbr(Rate::from_kbps(1)),
        1,
        Duration::from_millis(30),
    ));
    assert!(matches!(run(&spec), Err(SimError::Invalid { key, .. }) if key == "groups[a].name"));
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(1), Duration::from_millis(5), 20, 3);
    spec.bin = Duration::from_nanos(1);
    spec.groups.push(GroupSpec::new(
        "a",
        cbr(Rate::from_kbps(1)),
        1,
        Duration::from_millis(30),
    ));
    assert!(matches!(run(&spec), Err(SimError::TooManyBins { .. })));
}

#[test]
fn a_source_scheduled_at_zero_rate_waits_for_its_next_step() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(5), 50, 5);
    let schedule = vec![
        (Duration::ZERO, Rate::ZERO),
        (Duration::from_secs(2), Rate::from_mbps(1)),
        (Duration::from_secs(4), Rate::ZERO),
    ];
    spec.groups.push(GroupSpec::new(
        "udp",
        Protocol::Cbr(CbrSpec { schedule }),
        1,
        Duration::from_millis(10),
    ));
    let out = run(&spec).unwrap();
    assert_eq!(out.flows[0].received_packets, vec![0, 0, 125, 125, 0]);
    assert_eq!(out.flows[0].packets_sent, 250);
}

#[test]
fn a_zero_start_spread_starts_every_flow_at_once() {
    // Four CBR flows of 1 packet per 10 ms from t = 0: with no spread, each delivers in its first
    // bin exactly what the others do.
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(5), 50, 1);
    spec.bin = Duration::from_millis(100);
    let mut g = GroupSpec::new("C", cbr(Rate::from_kbps(800)), 4, Duration::from_millis(40));
    g.start_spread = Some(Duration::ZERO);
    spec.groups.push(g);
    let out = run(&spec).unwrap();
    let first: Vec<u64> = out.flows.iter().map(|f| f.received_bytes[0]).collect();
    assert!(first.iter().all(|&b| b == first[0] && b > 0), "{first:?}");
    // With the default spread (one rtt) the flows start apart.
    spec.groups[0].start_spread = None;
    let out = run(&spec).unwrap();
    let first: Vec<u64> = out.flows.iter().map(|f| f.received_bytes[0]).collect();
    assert!(first.iter().any(|&b| b != first[0]), "{first:?}");
}

#[test]
fn queue_counters_leave_the_warm_up_out() {
    // One CBR flow at a steady rate: after a warm-up of half the run the queue counts half.
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(5), 50, 4);
    spec.groups.push(GroupSpec::new(
        "C",
        cbr(Rate::from_mbps(1)),
        1,
        Duration::from_millis(20),
    ));
    let whole = run(&spec).unwrap().queues[0].red.packets;
    spec.warmup = Duration::from_secs(2);
    let after = run(&spec).unwrap().queues[0].red.packets;
    assert!(whole > 0);
    assert!(after.abs_diff(whole / 2) <= 2, "{after} of {whole}");
}
