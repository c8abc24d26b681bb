//! Scenarios written as graphs: `[[link]]` tables and groups on named hosts.

use super::tests::{expect_invalid, plan};
use super::*;
use qstp_sim::spec::NodeKind;

const LINE: &str = r#"
name = "line"
duration = "10s"
[[link]]
name = "up"
from = "a"
to = "r1"
rate = "100M"
delay = "1ms"
[[link]]
name = "core"
from = "r1"
to = "r2"
rate = "10M"
delay = "10ms"
queue = { kind = "droptail", limit = 30 }
reverse = { rate = "1M", delay = "20ms" }
[[link]]
name = "down"
from = "r2"
to = "b"
rate = "100M"
[[group]]
name = "G"
protocol = "tcp"
flows = 3
source = "a"
sink = "b"
marker = { kind = "token-bucket", rate = "1M", bucket = 3000 }
"#;

fn line_with(old: &str, new: &str) -> String {
    assert!(LINE.contains(old), "{old}");
    LINE.replacen(old, new, 1)
}

#[test]
fn links_become_a_graph_of_both_directions_with_flows_on_shared_hosts() {
    let p = plan(LINE).unwrap();
    let s = p.base();
    let Topology::Graph(g) = &s.topology else {
        panic!("a graph")
    };
    let names: Vec<&str> = g.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a", "r1", "r2", "b"]);
    let kinds: Vec<NodeKind> = g.nodes.iter().map(|n| n.kind).collect();
    use NodeKind::{Host, Router};
    assert_eq!(kinds, [Host, Router, Router, Host]);
    assert_eq!(g.links.len(), 6);
    assert_eq!(g.links[3].name, "core.reverse");
    assert_eq!(g.links[3].link.rate, qstp_proto::Rate::from_mbps(1));
    assert_eq!(g.links[3].link.delay, Duration::from_millis(20));
    assert!(!g.links[0].after_marker, "leaving host a");
    // No link is marked: the slowest forward direction is the bottleneck.
    assert_eq!(g.links[g.bottleneck].name, "core");
    assert_eq!(s.bottleneck().rate, qstp_proto::Rate::from_mbps(10));
    // Three flows on one host pair; the marker at the router after the source host.
    assert_eq!(g.flows[0].len(), 3);
    assert!(g.flows[0].iter().all(|f| f.source == 0 && f.sink == 3));
    assert_eq!(g.conditioners.len(), 1);
    assert_eq!(g.conditioners[0].node, 1);
    // It runs, and each flow's base RTT is the links' delays there and back: 11 + 21.
    let out = qstp_sim::run(&s.spec(0)).unwrap();
    assert_eq!(out.flows.len(), 3);
    assert!(out
        .flows
        .iter()
        .all(|f| f.received_bytes.iter().sum::<u64>() > 0));
}

#[test]
fn a_marked_bottleneck_wins_over_the_slowest_link() {
    let p = plan(&line_with(
        "rate = \"100M\"\n[[group]]",
        "rate = \"100M\"\nbottleneck = true\n[[group]]",
    ))
    .unwrap();
    let Topology::Graph(g) = &p.base().topology else {
        panic!("a graph")
    };
    assert_eq!(g.links[g.bottleneck].name, "down");
}

#[test]
fn a_graph_refuses_what_only_a_dumbbell_means_and_names_the_key() {
    expect_invalid(
        &format!(
            "{LINE}[bottleneck]\nrate = \"1M\"\nqueue = {{ kind = \"droptail\", limit = 5 }}\n"
        ),
        "bottleneck",
        "not both",
    );
    expect_invalid(
        &line_with("source = \"a\"", "source = \"a\"\nrtt = \"30ms\""),
        "group.G.rtt",
        "links' delays",
    );
    expect_invalid(
        &line_with("sink = \"b\"", "sink = \"nowhere\""),
        "group.G.sink",
        "no link reaches a node named 'nowhere'",
    );
    expect_invalid(
        &line_with("sink = \"b\"", "sink = \"a\""),
        "group.G.sink",
        "same host",
    );
    expect_invalid(
        &line_with("name = \"down\"", "name = \"core\""),
        "link.core.name",
        "two links",
    );
    expect_invalid(
        &line_with("name = \"down\"", "name = \"do.wn\""),
        "link.do.wn.name",
        "letters",
    );
    expect_invalid(
        &line_with("rate = \"10M\"", "rate = \"0k\""),
        "link.core.rate",
        "positive",
    );
    expect_invalid(
        &line_with("rate = \"10M\"", "rate = \"10M\"\nbottleneck = true").replacen(
            "rate = \"100M\"\n[[group]]",
            "rate = \"100M\"\nbottleneck = true\n[[group]]",
            1,
        ),
        "link.down.bottleneck",
        "only one",
    );
    // The marker's router must be a router.
    expect_invalid(
        &line_with("to = \"r1\"", "to = \"b\""),
        "group.G.marker",
        "is a host",
    );
    // A dumbbell refuses hosts.
    let dumbbell = "name = \"d\"\nduration = \"10s\"\n[bottleneck]\nrate = \"1M\"\nqueue = { kind = \"droptail\", limit = 5 }\n[[group]]\nname = \"G\"\nprotocol = \"cbr\"\nrate = \"100k\"\nrtt = \"20ms\"\nsource = \"a\"\n";
    expect_invalid(dumbbell, "group.G.source", "[[link]]");
    expect_invalid(
        "name = \"d\"\nduration = \"10s\"\n[[group]]\nname = \"G\"\nprotocol = \"cbr\"\nrate = \"1k\"\nrtt = \"20ms\"\n",
        "bottleneck",
        "[[link]] tables",
    );
}

#[test]
fn a_cbq_link_in_a_graph_is_checked_under_its_own_key() {
    expect_invalid(
        &line_with(
            "queue = { kind = \"droptail\", limit = 30 }",
            "queue = { kind = \"cbq\", classes = [{ name = \"c\", rate = \"1M\", borrow = true, groups = [\"X\"], limit = 10 }] }",
        ),
        "link.core.queue.classes.c.groups",
        "lists 'X', which is not a group",
    );
}

#[test]
fn a_group_may_send_packets_of_its_own_size_down_to_a_cell() {
    let text = line_with(
        "protocol = \"tcp\"",
        "protocol = \"cbr\"\nrate = \"424k\"\npacket_size = 53",
    )
    .replace(
        "marker = { kind = \"token-bucket\", rate = \"1M\", bucket = 3000 }\n",
        "",
    );
    let p = plan(&text).unwrap();
    let spec = p.base().spec(0);
    assert_eq!(spec.packet_size_of(&spec.groups[0]), 53);
    let out = qstp_sim::run(&spec).unwrap();
    // 424 kbit/s in 53-byte packets is 1000 packets a second per flow, each counted at 53 bytes.
    let f = &out.flows[0];
    let packets: u64 = f.received_packets.iter().sum();
    let bytes: u64 = f.received_bytes.iter().sum();
    assert!((9_900..=10_000).contains(&packets), "{packets}");
    assert_eq!(bytes, packets * 53);
    expect_invalid(
        &line_with("flows = 3", "flows = 3\npacket_size = 0"),
        "group.G.packet_size",
        "outside",
    );
}
