//! DiffServ through the dumbbell: edge markers, RIO, CBQ classes, random losses.

use crate::common::{cbr, paper_rio};
use qstp_dataplane::loss::{BernoulliSpec, LossSpec};
use qstp_dataplane::marker::{MarkerSpec, TokenBucketSpec};
use qstp_dataplane::queue::{CbqClass, CbqSpec, QueueSpec};
use qstp_proto::{Duration, Rate};
use qstp_sim::spec::*;
use qstp_sim::{run, SimError};

#[test]
fn in_profile_traffic_is_green_and_protected_by_rio() {
    let mut spec = SimSpec::dumbbell(Rate::from_kbps(1000), Duration::from_millis(5), 50, 30);
    spec.packet_size = 1500;
    spec.bottleneck_mut().unwrap().queue = paper_rio();
    // A 400 kbit/s flow marked against a 500 kbit/s profile, and an unmarked 1 Mbit/s flow.
    let mut assured = GroupSpec::new(
        "assured",
        cbr(Rate::from_kbps(400)),
        1,
        Duration::from_millis(30),
    );
    assured.marker = Some(MarkerSpec::TokenBucket(TokenBucketSpec {
        rate: Rate::from_kbps(500),
        bucket: 10_000,
    }));
    spec.groups.push(assured);
    spec.groups.push(GroupSpec::new(
        "best-effort",
        cbr(Rate::from_kbps(1000)),
        1,
        Duration::from_millis(30),
    ));
    let out = run(&spec).unwrap();
    let queue = &out.queues[0];
    assert!(queue.green.packets > 900, "{queue:?}");
    // Only the start-up transient, before RIO's slow average reacts, costs green packets; red
    // packets take the losses.
    let share = |c: qstp_dataplane::queue::CodePointCounters| {
        (c.ldrops + c.edrops) as f64 / c.packets as f64
    };
    assert!(share(queue.green) < 0.05, "{queue:?}");
    assert!(share(queue.red) > 0.3, "{queue:?}");
    // The assured flow gets its 400 kbit/s (50 kB/s) once the queue has settled.
    let assured: u64 = out.flows[0].received_bytes[10..].iter().sum();
    assert!(assured >= 50_000 * 20 * 99 / 100, "{assured}");
}

#[test]
fn cbq_reports_each_class_and_holds_the_guaranteed_rate() {
    // QSTP paper §5.4: a 300 kbit/s pipe for the protected flow, the rest for UDP.
    let mut spec = SimSpec::dumbbell(Rate::from_kbps(1000), Duration::from_millis(5), 50, 20);
    spec.packet_size = 1500;
    spec.bottleneck_mut().unwrap().queue = QueueSpec::Cbq(CbqSpec {
        classes: vec![
            CbqClass {
                name: "pipe".into(),
                rate: Rate::from_kbps(300),
                borrow: true,
                groups: vec!["protected".into()],
                limit: 50,
            },
            CbqClass {
                name: "rest".into(),
                rate: Rate::from_kbps(700),
                borrow: true,
                groups: vec![],
                limit: 50,
            },
        ],
    });
    spec.groups.push(GroupSpec::new(
        "protected",
        cbr(Rate::from_kbps(300)),
        1,
        Duration::from_millis(30),
    ));
    spec.groups.push(GroupSpec::new(
        "udp",
        cbr(Rate::from_kbps(1500)),
        1,
        Duration::from_millis(30),
    ));
    let out = run(&spec).unwrap();
    let names: Vec<&str> = out.queues.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(
        names,
        vec!["bottleneck", "bottleneck/pipe", "bottleneck/rest"]
    );
    let pipe = &out.queues[1];
    assert_eq!(pipe.red.ldrops, 0, "{pipe:?}");
    assert!(out.queues[2].red.ldrops > 0);
    let protected: u64 = out.flows[0].received_bytes[3..].iter().sum();
    assert!(protected >= 37_500 * 17 * 98 / 100, "{protected}");
    // The queue lengths at the end of each bin: the overloaded class stays about full, the pipe
    // nearly empty, and the whole queue is the sum of its classes.
    let series: Vec<&str> = out.queue_series.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(series, names);
    let [whole, pipe, rest] = &out.queue_series[..] else {
        panic!("three queues")
    };
    assert!(out
        .queue_series
        .iter()
        .all(|q| q.packets.len() == 20 && q.bytes.len() == 20));
    for i in 0..20 {
        assert_eq!(whole.packets[i], pipe.packets[i] + rest.packets[i]);
        assert_eq!(whole.bytes[i], pipe.bytes[i] + rest.bytes[i]);
        assert_eq!(whole.bytes[i], whole.packets[i] * 1500);
    }
    assert!(rest.packets[5..].iter().all(|&n| n >= 45), "{rest:?}");
    assert!(pipe.packets[5..].iter().all(|&n| n <= 3), "{pipe:?}");
}

#[test]
fn a_lossy_bottleneck_loses_its_share_of_packets() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(5), 50, 20);
    spec.bottleneck_mut().unwrap().loss = Some(LossSpec::Bernoulli(BernoulliSpec { p: 0.1 }));
    spec.groups.push(GroupSpec::new(
        "udp",
        cbr(Rate::from_mbps(1)),
        1,
        Duration::from_millis(20),
    ));
    let out = run(&spec).unwrap();
    let sent = out.flows[0].packets_sent as f64;
    let received: u64 = out.flows[0].received_packets.iter().sum();
    let lost = 1.0 - received as f64 / sent;
    assert!((0.08..0.12).contains(&lost), "lost {lost}");
}

#[test]
fn invalid_components_are_refused_with_their_name() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(5), 50, 20);
    spec.bottleneck_mut().unwrap().loss = Some(LossSpec::Bernoulli(BernoulliSpec { p: 1.5 }));
    spec.groups.push(GroupSpec::new(
        "udp",
        cbr(Rate::from_mbps(1)),
        1,
        Duration::from_millis(20),
    ));
    assert!(
        matches!(run(&spec), Err(SimError::Component { component, .. }) if component == "bottleneck.loss")
    );
    spec.bottleneck_mut().unwrap().loss = None;
    spec.bottleneck_mut().unwrap().queue = QueueSpec::drop_tail(0);
    assert!(
        matches!(run(&spec), Err(SimError::Component { component, .. }) if component == "bottleneck.queue")
    );
}

#[test]
fn the_edge_marker_meters_the_group_aggregate_not_each_flow() {
    // Two 300 kbit/s flows share one 300 kbit/s profile: about half their packets are in profile.
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(5), 50, 20);
    spec.packet_size = 1500;
    let mut pair = GroupSpec::new(
        "pair",
        cbr(Rate::from_kbps(300)),
        2,
        Duration::from_millis(30),
    );
    pair.marker = Some(MarkerSpec::TokenBucket(TokenBucketSpec {
        rate: Rate::from_kbps(300),
        bucket: 10_000,
    }));
    spec.groups.push(pair);
    let out = run(&spec).unwrap();
    let queue = &out.queues[0];
    let green = queue.green.packets as f64 / (queue.green.packets + queue.red.packets) as f64;
    assert!(
        (0.45..0.56).contains(&green),
        "green share {green}: {queue:?}"
    );
}
