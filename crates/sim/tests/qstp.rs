//! The real protocol core over the simulated network.

mod common;

use common::{dumbbell, group, newreno, paper_rio};
use qstp_proto::{Config, Duration, Preset, Rate};
use qstp_sim::{run, MarkerSpec, Protocol, QueueSpec};

fn qstp(preset: Preset, target: Rate) -> Protocol {
    Protocol::Qstp {
        name: preset.name().into(),
        config: Config::preset(preset, target),
    }
}

#[test]
fn a_qstp_flow_transfers_data_over_the_simulated_network() {
    let mut spec = dumbbell(Rate::from_mbps(2), Duration::from_millis(10), 50, 30);
    spec.packet_size = 1500;
    spec.groups.push(group(
        "qstp",
        qstp(Preset::Qstp, Rate::ZERO),
        1,
        Duration::from_millis(40),
    ));
    let out = run(&spec).unwrap();
    let flow = &out.flows[0];
    let received: u64 = flow.received_bytes.iter().sum();
    let delivered: u64 = flow.delivered_bytes.iter().sum();
    // Alone on the link, it fills most of it once past slow start, and the application gets
    // nearly all of what crossed the network, in order.
    let late: u64 = flow.delivered_bytes[10..].iter().sum();
    assert!(
        late as f64 > 0.7 * 250_000.0 * 20.0,
        "goodput {late} bytes in 20 s"
    );
    assert!(
        delivered as f64 > 0.9 * received as f64 * (1500.0 - 100.0) / 1500.0,
        "{delivered} of {received}"
    );
    assert!(flow.packets_sent > 1000);
}

#[test]
fn a_message_composition_delivers_too() {
    let mut spec = dumbbell(Rate::from_mbps(2), Duration::from_millis(10), 50, 20);
    spec.packet_size = 1500;
    spec.groups.push(group(
        "tfrc",
        qstp(Preset::Tfrc, Rate::ZERO),
        1,
        Duration::from_millis(40),
    ));
    let out = run(&spec).unwrap();
    let late: u64 = out.flows[0].delivered_bytes[5..].iter().sum();
    assert!(late as f64 > 0.5 * 250_000.0 * 15.0, "goodput {late}");
}

#[test]
fn qstp_runs_are_deterministic() {
    let mut spec = dumbbell(Rate::from_mbps(1), Duration::from_millis(10), 30, 10);
    spec.groups.push(group(
        "qstp",
        qstp(Preset::Qstp, Rate::from_kbps(300)),
        2,
        Duration::from_millis(40),
    ));
    spec.groups
        .push(group("tcp", newreno(), 2, Duration::from_millis(40)));
    assert_eq!(run(&spec).unwrap(), run(&spec).unwrap());
}

#[test]
fn gtfrc_holds_its_target_against_a_tcp_aggregate() {
    // QSTP paper §5.2 / Fig. 4(c): one QSTP flow with a 500 kbit/s target against 15 TCP flows
    // with 300 kbit/s, token bucket markers (10^4 B), RIO, 1000 kbit/s bottleneck, RTT 30 ms.
    let mut spec = dumbbell(Rate::from_kbps(1000), Duration::from_millis(5), 50, 60);
    spec.packet_size = 1500;
    spec.bottleneck.queue = paper_rio();
    let mut q = group(
        "qstp",
        qstp(Preset::Qstp, Rate::from_kbps(500)),
        1,
        Duration::from_millis(30),
    );
    q.marker = Some(MarkerSpec::TokenBucket {
        rate: Rate::from_kbps(500),
        bucket: 10_000,
    });
    q.target = Some(Rate::from_kbps(500));
    let mut tcp = group("tcp", newreno(), 15, Duration::from_millis(30));
    tcp.marker = Some(MarkerSpec::TokenBucket {
        rate: Rate::from_kbps(300),
        bucket: 10_000,
    });
    tcp.target = Some(Rate::from_kbps(300));
    spec.groups.push(q);
    spec.groups.push(tcp);
    let out = run(&spec).unwrap();
    let received: u64 = out.flows[0].received_bytes[20..].iter().sum();
    let rate = received as f64 * 8.0 / 40.0;
    assert!(rate > 0.9 * 500_000.0, "qstp got {rate} bit/s");
}

#[test]
fn qstp_keeps_its_cbq_pipe_while_udp_floods_and_borrows_the_rest_otherwise() {
    // QSTP paper §5.4 / Fig. 7, time scaled down: a 300 kbit/s borrowing class for QSTP, the rest
    // for a UDP flow at 300 kbit/s that floods at 1000 kbit/s for t in [20, 40) s.
    let mut spec = dumbbell(Rate::from_kbps(1000), Duration::from_millis(5), 50, 60);
    spec.packet_size = 1500;
    let class = |name: &str, kbps, groups: Vec<String>| qstp_sim::CbqClass {
        name: name.into(),
        rate: Rate::from_kbps(kbps),
        borrow: true,
        groups,
        limit: 50,
    };
    spec.bottleneck.queue = QueueSpec::Cbq {
        classes: vec![
            class("pipe", 300, vec!["qstp".into()]),
            class("rest", 700, vec![]),
        ],
    };
    spec.groups.push(group(
        "qstp",
        qstp(Preset::Qstp, Rate::from_kbps(300)),
        1,
        Duration::from_millis(30),
    ));
    let schedule = vec![
        (Duration::ZERO, Rate::from_kbps(300)),
        (Duration::from_secs(20), Rate::from_kbps(1000)),
        (Duration::from_secs(40), Rate::from_kbps(300)),
    ];
    spec.groups.push(group(
        "udp",
        Protocol::Cbr { schedule },
        1,
        Duration::from_millis(30),
    ));
    let out = run(&spec).unwrap();
    let kbps = |from: usize, to: usize| {
        out.flows[0].received_bytes[from..to].iter().sum::<u64>() as f64 * 8.0
            / 1000.0
            / (to - from) as f64
    };
    assert!(
        kbps(10, 20) > 650.0,
        "borrows the idle capacity: {}",
        kbps(10, 20)
    );
    let flooded = kbps(25, 40);
    assert!(
        (285.0..330.0).contains(&flooded),
        "holds its pipe: {flooded}"
    );
}
