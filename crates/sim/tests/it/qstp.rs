//! The real protocol core over the simulated network.

use crate::common::{newreno, paper_rio};
use qstp_dataplane::loss::BernoulliSpec;
use qstp_dataplane::marker::{MarkerSpec, TokenBucketSpec};
use qstp_dataplane::queue::{CbqSpec, QueueSpec};
use qstp_proto::{Config, Duration, Preset, Rate};
use qstp_sim::run;
use qstp_sim::spec::source::{CbrSpec, Protocol, QstpSpec};
use qstp_sim::spec::*;

fn qstp(preset: Preset, target: Rate) -> Protocol {
    Protocol::Qstp(QstpSpec {
        name: preset.name().into(),
        config: Config::preset(preset, target),
        message_rate: None,
    })
}

#[test]
fn a_qstp_flow_transfers_data_over_the_simulated_network() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(2), Duration::from_millis(10), 50, 30);
    spec.packet_size = 1500;
    spec.groups.push(GroupSpec::new(
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

/// One flow of 1200-byte messages written at `rate` with `error` on a 2 Mbit/s, 40 ms path
/// behind 50 packets, for 20 s: its messages' written and delivered counts.
fn message_flow(error: qstp_proto::ErrorControl, rate: Rate) -> (u64, u64, u64) {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(2), Duration::from_millis(10), 50, 20);
    spec.packet_size = 1300;
    let mut config = Config::qstp(Rate::from_kbps(500));
    config.error = error;
    config.order = qstp_proto::Order::Unordered;
    spec.groups.push(GroupSpec::new(
        "video",
        Protocol::Qstp(QstpSpec {
            name: "qstp".into(),
            config,
            message_rate: Some(rate),
        }),
        1,
        Duration::from_millis(40),
    ));
    let out = run(&spec).unwrap();
    let m = out.flows[0]
        .messages
        .as_ref()
        .expect("a message flow counts its messages");
    // Bins 5-17: settled by the end.
    let written: u64 = m.written[5..18].iter().sum();
    let delivered: u64 = m.delivered[5..18].iter().sum();
    let bytes: u64 = out.flows[0].delivered_bytes[5..18].iter().sum();
    (written, delivered, bytes)
}

#[test]
fn a_paced_message_flow_writes_at_its_rate_and_a_deadline_gives_up_what_cannot_arrive() {
    let full = qstp_proto::ErrorControl::SackFull;
    // 1 Mbit/s of messages on a 2 Mbit/s path: every one arrives, at the rate written.
    let (written, delivered, bytes) = message_flow(full, Rate::from_mbps(1));
    assert!(written > 0);
    assert_eq!(delivered, written);
    assert!(
        (bytes as f64 / (1e6 / 8.0 * 13.0) - 1.0).abs() < 0.05,
        "{bytes}"
    );
    // 3 Mbit/s of messages: a third cannot fit. With a 200 ms deadline the sender gives those up
    // (QSTP paper §3, partial reliability) and the rest arrive.
    let partial = qstp_proto::ErrorControl::SackPartial {
        deadline: Some(Duration::from_millis(200)),
        max_retransmissions: None,
    };
    let (written, delivered, _) = message_flow(partial, Rate::from_mbps(3));
    let share = delivered as f64 / written as f64;
    assert!(share > 0.4 && share < 0.8, "{delivered} of {written}");
}

#[test]
fn a_message_composition_delivers_too() {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(2), Duration::from_millis(10), 50, 20);
    spec.packet_size = 1500;
    spec.groups.push(GroupSpec::new(
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
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(1), Duration::from_millis(10), 30, 10);
    spec.groups.push(GroupSpec::new(
        "qstp",
        qstp(Preset::Qstp, Rate::from_kbps(300)),
        2,
        Duration::from_millis(40),
    ));
    spec.groups.push(GroupSpec::new(
        "tcp",
        newreno(),
        2,
        Duration::from_millis(40),
    ));
    assert_eq!(run(&spec).unwrap(), run(&spec).unwrap());
}

#[test]
fn gtfrc_holds_its_target_against_a_tcp_aggregate() {
    // QSTP paper §5.2 / Fig. 4(c): one QSTP flow with a 500 kbit/s target against 15 TCP flows
    // with 300 kbit/s, token bucket markers (10^4 B), RIO, 1000 kbit/s bottleneck, RTT 30 ms.
    let mut spec = SimSpec::dumbbell(Rate::from_kbps(1000), Duration::from_millis(5), 50, 60);
    spec.packet_size = 1500;
    spec.bottleneck_mut().unwrap().queue = paper_rio();
    let mut q = GroupSpec::new(
        "qstp",
        qstp(Preset::Qstp, Rate::from_kbps(500)),
        1,
        Duration::from_millis(30),
    );
    q.marker = Some(MarkerSpec::TokenBucket(TokenBucketSpec {
        rate: Rate::from_kbps(500),
        bucket: 10_000,
    }));
    q.target = Some(Rate::from_kbps(500));
    let mut tcp = GroupSpec::new("tcp", newreno(), 15, Duration::from_millis(30));
    tcp.marker = Some(MarkerSpec::TokenBucket(TokenBucketSpec {
        rate: Rate::from_kbps(300),
        bucket: 10_000,
    }));
    tcp.target = Some(Rate::from_kbps(300));
    spec.groups.push(q);
    spec.groups.push(tcp);
    let out = run(&spec).unwrap();
    let received: u64 = out.flows[0].received_bytes[20..].iter().sum();
    let rate = received as f64 * 8.0 / 40.0;
    assert!(rate > 0.9 * 500_000.0, "qstp got {rate} bit/s");
    // The qstp sender's RTT samples, one per feedback, about one per RTT (some 200 in the 60 s
    // at about 290 ms, the RIO queue's waits included): none shorter than the 30 ms path.
    let rtt = out.flows[0].rtt.unwrap();
    assert!(rtt.samples > 150 && rtt.p50_ns >= 30_000_000, "{rtt:?}");
}

#[test]
fn qstp_keeps_its_cbq_pipe_while_udp_floods_and_borrows_the_rest_otherwise() {
    // QSTP paper §5.4 / Fig. 7, time scaled down: a 300 kbit/s borrowing class for QSTP, the rest
    // for a UDP flow at 300 kbit/s that floods at 1000 kbit/s for t in [20, 40) s.
    let mut spec = SimSpec::dumbbell(Rate::from_kbps(1000), Duration::from_millis(5), 50, 60);
    spec.packet_size = 1500;
    let class = |name: &str, kbps, groups: Vec<String>| qstp_dataplane::queue::CbqClass {
        name: name.into(),
        rate: Rate::from_kbps(kbps),
        borrow: true,
        groups,
        limit: 50,
    };
    spec.bottleneck_mut().unwrap().queue = QueueSpec::Cbq(CbqSpec {
        classes: vec![
            class("pipe", 300, vec!["qstp".into()]),
            class("rest", 700, vec![]),
        ],
    });
    spec.groups.push(GroupSpec::new(
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
    spec.groups.push(GroupSpec::new(
        "udp",
        Protocol::Cbr(CbrSpec { schedule }),
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

/// The sender's series, sampled once per bin from `Connection::stats()`: on a lossless path
/// (the rate capped below the link, so the queue never overflows) the allowed rate X follows
/// what arrives and p stays 0; on a path losing 1% of packets p and the loss events appear.
#[test]
fn a_qstp_senders_rate_rtt_and_p_are_sampled_every_bin() {
    let seconds = 20;
    let warmup = 5;
    let flow_with = |loss: Option<qstp_dataplane::loss::LossSpec>| {
        let mut spec =
            SimSpec::dumbbell(Rate::from_mbps(2), Duration::from_millis(10), 50, seconds);
        spec.packet_size = 1500;
        spec.bottleneck_mut().unwrap().loss = loss;
        let mut config = Config::qstp(Rate::from_kbps(500));
        config.max_rate = Some(Rate::from_mbps(1));
        spec.groups.push(GroupSpec::new(
            "qstp",
            Protocol::Qstp(QstpSpec {
                name: "qstp".into(),
                config,
                message_rate: None,
            }),
            1,
            Duration::from_millis(40),
        ));
        run(&spec).unwrap().flows.remove(0)
    };
    let clean = flow_with(None);
    let s = &clean.sender;
    assert_eq!(s.rate.len(), seconds as usize);
    assert!(
        s.rate.iter().all(Option::is_some),
        "established in the first bin"
    );
    let late = &s.rate[warmup..];
    let mean_rate =
        late.iter().map(|r| r.unwrap().rate_bps as f64).sum::<f64>() / late.len() as f64;
    let throughput = clean.received_bytes[warmup..].iter().sum::<u64>() as f64 * 8.0
        / (seconds as usize - warmup) as f64;
    let ratio = mean_rate / throughput;
    assert!(
        (0.85..=1.15).contains(&ratio),
        "X {mean_rate:.0} bit/s, throughput {throughput:.0} bit/s"
    );
    assert!(late.iter().all(|r| r.unwrap().loss_event_rate_ppb == 0));
    assert!(late.iter().all(|r| r.unwrap().x_recv_bps > 500_000));
    assert_eq!(s.loss_events, vec![0; seconds as usize]);
    // The smoothed RTT, once per bin: about the 40 ms base RTT plus serialisation.
    assert!(s.rtt_samples[warmup..].iter().all(|&n| n == 1));
    assert!(s.rtt_ns[warmup..]
        .iter()
        .all(|&r| (40_000_000..60_000_000).contains(&r)));
    // No window: cwnd is TCP's.
    assert!(s.cwnd_bytes.is_empty());

    let lossy = flow_with(Some(qstp_dataplane::loss::LossSpec::Bernoulli(
        BernoulliSpec { p: 0.01 },
    )));
    let late = &lossy.sender.rate[warmup..];
    assert!(late.iter().all(|r| r.unwrap().loss_event_rate_ppb > 0));
    let events: u64 = lossy.sender.loss_events.iter().sum();
    assert!(
        events > 5 && events <= lossy.packets_retransmitted.max(1) * 2,
        "{events} loss events"
    );
}
