//! The testbed end to end: real namespaces, the router, kernel TCP. These tests need root and
//! /dev/net/tun; elsewhere each prints why it did not run and returns.

use qstp_lab::scenario::{parse, Overrides};
use qstp_testbed::{
    check_privileges, ns, run_with, Classification, Options, SimSpec, TestbedError,
};

/// `None` when the testbed can run here; else the reason, printed by the caller.
fn skip_reason() -> Option<String> {
    check_privileges().err().map(|e| e.to_string())
}

macro_rules! require_testbed {
    ($name:literal) => {
        if let Some(reason) = skip_reason() {
            eprintln!("SKIPPED {}: {reason}", $name);
            return;
        }
    };
}

fn spec(toml: &str) -> SimSpec {
    let plan = parse(toml, "test.toml", &Overrides::default()).expect("a valid scenario");
    plan.points[0].scenario.spec(0)
}

/// One kernel-TCP flow through a 10 Mbit/s bottleneck, 20 ms one way, drop-tail.
fn one_flow(congestion: &str, duration: &str) -> String {
    format!(
        r#"
name = "testbed-one-flow"
duration = "{duration}"
warmup = "1s"
[bottleneck]
rate = "10M"
delay = "20ms"
queue = {{ kind = "droptail", limit = 50 }}
[[group]]
name = "T"
protocol = "tcp"
flows = 1
rtt = "40ms"
congestion = "{congestion}"
"#
    )
}

fn leftovers(prefix: &str) -> Vec<String> {
    ns::list()
        .expect("ip netns list")
        .into_iter()
        .filter(|n| n.starts_with(prefix))
        .collect()
}

#[test]
fn a_setup_that_fails_midway_leaves_no_namespace() {
    require_testbed!("a_setup_that_fails_midway_leaves_no_namespace");
    let prefix = format!("{}f", ns::unique_prefix());
    let options = Options {
        prefix: Some(prefix.clone()),
        fail_mid_setup: true,
        ..Options::default()
    };
    let result = run_with(&spec(&one_flow("reno", "2s")), &options);
    assert!(matches!(result, Err(TestbedError::Injected)), "{result:?}");
    assert_eq!(leftovers(&prefix), Vec::<String>::new());
}

#[test]
fn a_congestion_control_the_kernel_lacks_is_refused_naming_the_available_ones() {
    require_testbed!("a_congestion_control_the_kernel_lacks_is_refused");
    let prefix = format!("{}c", ns::unique_prefix());
    let options = Options {
        prefix: Some(prefix.clone()),
        ..Options::default()
    };
    let err = run_with(&spec(&one_flow("scalable", "2s")), &options).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("'scalable' is not available"), "{text}");
    assert!(text.contains("reno"), "names what is available: {text}");
    assert_eq!(
        leftovers(&prefix),
        Vec::<String>::new(),
        "nothing was created"
    );
}

#[test]
fn one_reno_flow_fills_the_bottleneck_and_leaves_nothing_behind() {
    require_testbed!("one_reno_flow_fills_the_bottleneck_and_leaves_nothing_behind");
    let prefix = format!("{}r", ns::unique_prefix());
    let options = Options {
        prefix: Some(prefix.clone()),
        ..Options::default()
    };
    let s = spec(&one_flow("newreno", "4s"));
    let run = run_with(&s, &options).expect("the testbed runs");
    assert_eq!(leftovers(&prefix), Vec::<String>::new());

    let flow = &run.output.flows[0];
    // Goodput after the 1 s warm-up, over the 3 s left (bins of 100 ms).
    let bytes: u64 = flow.delivered_bytes.iter().skip(10).sum();
    let goodput = bytes as f64 * 8.0 / 3.0;
    let rate = 10e6;
    eprintln!(
        "goodput {:.2} Mbit/s; router {:?}",
        goodput / 1e6,
        run.report.router
    );
    assert!(
        (0.6 * rate..=1.05 * rate).contains(&goodput),
        "goodput {goodput:.0} bit/s is not within 60-105% of {rate}"
    );
    // What the router forwarded is what crossed the bottleneck, and it kept its schedule well
    // enough: the median departure within a millisecond.
    let fwd = &run.report.router.forward;
    assert!(fwd.packets > 1000, "{fwd:?}");
    assert!(fwd.departure_error_p50_ns < 1_000_000, "{fwd:?}");
    // Every packet read (super-packets cut into their segments) decoded as the run's, and the
    // devices took every packet and super-packet written.
    let bwd = &run.report.router.backward;
    assert_eq!((fwd.foreign, fwd.write_failures), (0, 0), "{fwd:?}");
    assert_eq!((bwd.foreign, bwd.write_failures), (0, 0), "{bwd:?}");
    assert_eq!(run.report.groups[0].congestion.as_deref(), Some("reno"));
    assert_eq!(run.output.queues[0].name, "bottleneck");
}

#[test]
fn namespaces_of_a_run_whose_process_is_gone_are_removed() {
    require_testbed!("namespaces_of_a_run_whose_process_is_gone_are_removed");
    // A pid that existed and ended: a run killed with SIGKILL would leave such names.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let name = format!("qtb{dead}x0-r");
    let alive = format!("{}-r", ns::unique_prefix());
    ns::ip(&["netns", "add", &name]).unwrap();
    ns::ip(&["netns", "add", &alive]).unwrap();
    let removed = ns::remove_stale().unwrap();
    let left = ns::list().unwrap();
    let _ = ns::ip(&["netns", "del", &alive]);
    let _ = ns::ip(&["netns", "del", &name]);
    assert!(removed.contains(&name), "{removed:?}");
    assert!(!left.contains(&name));
    assert!(left.contains(&alive), "this process's own namespaces stay");
}

#[test]
fn a_qstp_flow_with_a_target_holds_it_beside_kernel_tcp() {
    require_testbed!("a_qstp_flow_with_a_target_holds_it_beside_kernel_tcp");
    let prefix = format!("{}q", ns::unique_prefix());
    let options = Options {
        prefix: Some(prefix.clone()),
        ..Options::default()
    };
    // A 2 Mbit/s AF bottleneck: the qstp flow's 1 Mbit/s is marked in profile, two unmarked
    // reno flows compete for the rest.
    let s = spec(
        r#"
name = "testbed-qstp"
duration = "7s"
warmup = "2s"
[bottleneck]
rate = "2M"
delay = "10ms"
queue = { kind = "rio", limit = 50, in = [20, 40, 0.02], out = [10, 20, 0.1] }
[[group]]
name = "Q"
protocol = "qstp"
rtt = "40ms"
target = "1M"
marker = { kind = "token-bucket", rate = "1M", bucket = 10000 }
[[group]]
name = "T"
protocol = "tcp"
flows = 2
rtt = "40ms"
"#,
    );
    let run = run_with(&s, &options).expect("the testbed runs");
    assert_eq!(leftovers(&prefix), Vec::<String>::new());
    // Goodput after the 2 s warm-up, over the 5 s left (bins of 100 ms).
    let goodput = |f: usize| {
        let bytes: u64 = run.output.flows[f].delivered_bytes.iter().skip(20).sum();
        bytes as f64 * 8.0 / 5.0
    };
    let (q, t) = (goodput(0), goodput(1) + goodput(2));
    eprintln!(
        "qstp {:.0} kbit/s, tcp {:.0} kbit/s; router {:?}",
        q / 1e3,
        t / 1e3,
        run.report.router
    );
    assert!(
        q >= 0.8e6,
        "the qstp flow's {q:.0} bit/s is far below its 1 Mbit/s target"
    );
    assert!(t > 0.2e6, "the TCP flows got {t:.0} bit/s: they starved");
    assert!(q + t <= 2.05e6, "more than the bottleneck: {q:.0} + {t:.0}");
    assert!(run.output.flows[0].packets_sent > 0);
    // The rate controller is sampled in every bin once connected, backpressure or not.
    let sampled = run.output.flows[0].sender.rate.iter().flatten().count();
    assert!(sampled >= 60, "{sampled} of 70 bins have a rate sample");
}

#[test]
fn a_free_of_one_endpoint_outruns_its_stunts_through_the_router() {
    require_testbed!("a_free_of_one_endpoint_outruns_its_stunts_through_the_router");
    let prefix = format!("{}g", ns::unique_prefix());
    let options = Options {
        prefix: Some(prefix.clone()),
        ..Options::default()
    };
    // A Free asking 5 Mbit/s and two Stunts of one qstp-net endpoint on a 10 Mbit/s bottleneck:
    // a fair share is 3.3 Mbit/s each; the on/off controller delegates every loss event while
    // the Free is below its target (Free & Stunts paper eq. 3).
    let s = spec(
        r#"
name = "testbed-group"
duration = "14s"
warmup = "4s"
packet_size = 1500
[bottleneck]
rate = "10M"
delay = "10ms"
queue = { kind = "droptail", limit = 60 }
[[group]]
name = "F"
protocol = "tfrc-sack"
rtt = "40ms"
[[group]]
name = "S"
protocol = "tfrc-sack"
flows = 2
rtt = "40ms"
[delegation]
free = "F"
stunts = "S"
controller = { kind = "onoff", period = "250ms" }
trace = { kind = "step", at = ["0s"], rate = ["5M"] }
"#,
    );
    let run = run_with(&s, &options).expect("the testbed runs");
    assert_eq!(leftovers(&prefix), Vec::<String>::new());
    // Each member's packets reached the router from its own address (its own flow's counters).
    // 10 s after the warm-up: over 5 s (an 8 s run) the Free fell short of 1.3 times the mean
    // Stunt once in three runs on a busy machine.
    let received = |f: usize| -> u64 { run.output.flows[f].received_bytes.iter().skip(40).sum() };
    let (free, stunts) = (received(0), (received(1) + received(2)) / 2);
    let group = run.report.delegation.as_ref().expect("the group's report");
    let record = run.output.delegation.as_ref().expect("the group's record");
    eprintln!(
        "Free {:.0} kbit/s, mean Stunt {:.0} kbit/s; {group:?}",
        free as f64 * 8.0 / 10e3,
        stunts as f64 * 8.0 / 10e3
    );
    assert!(received(1) > 0 && received(2) > 0, "a Stunt sent nothing");
    assert!(
        free as f64 > 1.3 * stunts as f64,
        "the Free's {free} bytes are not well above the mean Stunt's {stunts}"
    );
    // The group formed within the first second and settled loss events.
    assert!(group.formed_at_s.is_some_and(|t| t < 1.0), "{group:?}");
    assert_eq!(group.members_stunts, 2);
    assert!(record.delegated > 0, "{record:?}");
    // One sample per control instant, the target the trace's.
    assert_eq!(record.samples.len(), 56);
    assert!(record.samples.iter().all(|&(_, t)| t == 5e6));
    assert!(run.output.flows.iter().all(|f| f.packets_sent > 0));
}

#[test]
fn packets_classified_by_dscp_get_their_groups_marker() {
    require_testbed!("packets_classified_by_dscp_get_their_groups_marker");
    // Two UDP groups marking AF21 and AF31: A's marker passes everything in profile, B's
    // almost nothing (a 1-packet bucket refilled at 8 kbit/s).
    let toml = r#"
name = "testbed-dscp"
duration = "3s"
warmup = "1s"
[bottleneck]
rate = "20M"
delay = "5ms"
queue = { kind = "droptail", limit = 1000 }
[[group]]
name = "A"
protocol = "cbr"
rate = "2M"
rtt = "20ms"
marker = { kind = "token-bucket", rate = "100M", bucket = 1000000 }
[[group]]
name = "B"
protocol = "cbr"
rate = "2M"
rtt = "20ms"
marker = { kind = "token-bucket", rate = "8k", bucket = 1500 }
[testbed]
classify = "dscp"
dscp = { A = "AF21", B = "AF31" }
"#;
    let plan = parse(toml, "test.toml", &Overrides::default()).expect("a valid scenario");
    let scenario = &plan.points[0].scenario;
    assert_eq!(scenario.testbed.dscp, vec![Some(18), Some(26)]);
    let prefix = format!("{}d", ns::unique_prefix());
    let options = Options {
        prefix: Some(prefix.clone()),
        classification: Classification {
            by_dscp: true,
            dscp: scenario.testbed.dscp.clone(),
        },
        ..Options::default()
    };
    let run = run_with(&scenario.spec(0), &options).expect("the run");
    assert_eq!(run.report.classify, "dscp");
    assert_eq!(run.report.groups[1].dscp, Some(26));
    let fwd = &run.report.router.forward;
    assert_eq!(fwd.foreign, 0, "every packet's DSCP named a group: {fwd:?}");
    // After the warm-up, 2 s of each group: about 330 packets of 1500 bytes at 2 Mbit/s.
    let q = &run.output.queues[0];
    let (green, red) = (q.green.packets, q.red.packets);
    eprintln!("green {green}, red {red}");
    assert!(
        (250..=420).contains(&green),
        "A's packets in profile: {q:?}"
    );
    assert!(
        (250..=420).contains(&red),
        "B's packets out of profile: {q:?}"
    );
    assert_eq!(leftovers(&prefix), Vec::<String>::new());
}

#[test]
fn codel_marks_the_ecn_flows_packets_and_drops_the_others() {
    require_testbed!("codel_marks_the_ecn_flows_packets_and_drops_the_others");
    // Two ECN-capable kernel flows (tcp_ecn=1 on both hosts, RFC 3168 §6.1.1) and two without,
    // 10 Mbit/s through CoDel with ECN: the queue marks the first (the router writes CE into their
    // headers) and drops the others' packets (RFC 3168 §5).
    let toml = r#"
name = "testbed-codel-ecn"
duration = "6s"
warmup = "1s"
[bottleneck]
rate = "10M"
delay = "10ms"
queue = { kind = "codel", limit = 1000, ecn = true }
[[group]]
name = "E"
protocol = "tcp"
flows = 2
rtt = "40ms"
congestion = "reno"
tcp = { ecn = true }
[[group]]
name = "N"
protocol = "tcp"
flows = 2
rtt = "40ms"
congestion = "reno"
"#;
    let prefix = format!("{}e", ns::unique_prefix());
    let options = Options {
        prefix: Some(prefix.clone()),
        ..Options::default()
    };
    let run = run_with(&spec(toml), &options).expect("the run");
    assert_eq!(leftovers(&prefix), Vec::<String>::new());
    assert!(run.report.groups[0].tcp.ecn && !run.report.groups[1].tcp.ecn);
    let q = &run.output.queues[0];
    let router = &run.report.router;
    eprintln!("queue {q:?}; CE written {}", router.ce_marked);
    // Every packet is red (no marker); the queue counts marks and early drops after the warm-up.
    assert!(q.red.marks > 0, "the ECN flows' packets were marked: {q:?}");
    assert!(q.red.edrops > 0, "the others' packets were dropped: {q:?}");
    assert_eq!(q.red.ldrops, 0, "{q:?}");
    // The router wrote each mark into a packet (more over the whole run than after the warm-up;
    // none came CE from a sender).
    assert!(router.ce_marked >= q.red.marks, "{router:?}");
    // Marked, not dropped: the ECN flows resend nothing, the others do.
    let resent = |g: usize| -> u64 {
        run.output
            .flows
            .iter()
            .filter(|f| f.group == g)
            .map(|f| f.packets_retransmitted)
            .sum()
    };
    assert_eq!(resent(0), 0, "ECN flows");
    assert!(resent(1) > 0, "flows without ECN");
}
