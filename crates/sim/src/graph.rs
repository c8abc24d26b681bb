//! A network written as a graph: nodes, unidirectional links with their own rate, delay, queue and
//! loss, edge markers on chosen links, and the hosts every flow runs between.
//!
//! Every topology the simulator runs is a [`GraphSpec`]: the papers' dumbbell is one builder of it
//! ([`crate::topology::dumbbell_graph`]), and a scenario may write its own (the lab's `[[link]]`
//! tables). Several flows may share a host (Free & Stunts' connections of one host), links may be
//! slower than the bottleneck (seed-002 access links), and a group's packets may be any size down
//! to one 53-byte cell. [`realise`] checks the graph and builds the [`Network`] from it, links in
//! the order listed (each link's random stream is named by its index).

use crate::components;
use crate::error::SimError;
use crate::ids::{LinkId, NodeId};
use crate::network::{Conditioner, Network, NodeKind};
use crate::rng::{stream, StreamKind};
use crate::spec::LinkSpec;
use qstp_dataplane::marker::MarkerSpec;
use qstp_proto::Duration;

/// Most nodes a graph may have: enough for the dumbbell of the most flows a run may have (two
/// hosts per flow), a bound on the routing tables (one entry per node on each router).
pub const MAX_NODES: usize = 2 * crate::ids::MAX_FLOWS as usize + 10_000;
/// Most links a graph may have (the dumbbell has four per flow).
pub const MAX_LINKS: usize = 4 * crate::ids::MAX_FLOWS as usize + 20_000;

/// A node of the graph.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GraphNode {
    /// Its name, unique in the graph.
    pub name: String,
    /// Hosts carry agents and end paths; routers forward.
    pub kind: NodeKind,
}

/// One direction of a link.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GraphLink {
    /// Its name, unique in the graph: what `--pcap` and summaries call it.
    pub name: String,
    /// The node at its input (index into [`GraphSpec::nodes`]).
    pub from: usize,
    /// The node at its far end.
    pub to: usize,
    /// Rate, propagation delay, queue and losses.
    pub link: LinkSpec,
    /// Whether packets on it have passed their edge marker (a capture shows their colour as a
    /// DSCP). Links leaving hosts carry unmarked packets.
    pub after_marker: bool,
}

/// The two hosts of one flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FlowPlacement {
    /// The sender's host (index into [`GraphSpec::nodes`]).
    pub source: usize,
    /// The receiver's host.
    pub sink: usize,
}

/// An edge marker: it colours (or polices) the packets of one group leaving a node over one link.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConditionerSpec {
    /// The group whose packets it meters; also names its random stream.
    pub group: usize,
    /// The node it sits at.
    pub node: usize,
    /// The link whose departing packets it meters (it must leave `node`); `None`: the link by
    /// which the group's route to its first flow's sink leaves `node`.
    pub link: Option<usize>,
    /// What it is.
    pub marker: MarkerSpec,
}

/// A whole network.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GraphSpec {
    /// Nodes, in creation order.
    pub nodes: Vec<GraphNode>,
    /// Links, in creation order.
    pub links: Vec<GraphLink>,
    /// The link whose queue the run records as `bottleneck` (index into `links`).
    pub bottleneck: usize,
    /// For each group (in the spec's order), the hosts of each of its flows.
    pub flows: Vec<Vec<FlowPlacement>>,
    /// Edge markers.
    pub conditioners: Vec<ConditionerSpec>,
}

/// The two ends of one flow in a built network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowEnds {
    /// Index of the flow's group in the spec.
    pub group: usize,
    /// The flow's number within its group.
    pub flow: u32,
    /// The sender's host.
    pub source: NodeId,
    /// The receiver's host.
    pub sink: NodeId,
    /// Propagation delay source to sink and back along the routes: the flow's base RTT.
    pub base_rtt: Duration,
}

/// A network ready to run, with what the run needs to know of it.
#[derive(Debug)]
pub struct Built {
    /// Nodes, links and routes.
    pub network: Network,
    /// The link whose queue is recorded.
    pub bottleneck: LinkId,
    /// Every flow's hosts, group by group.
    pub flows: Vec<FlowEnds>,
    /// Links by name, and whether their packets have been marked (for captures).
    pub named_links: Vec<(String, LinkId, bool)>,
}

fn invalid(key: impl Into<String>, reason: impl Into<String>) -> SimError {
    SimError::Invalid {
        key: key.into(),
        reason: reason.into(),
    }
}

impl GraphSpec {
    /// Check the graph's own consistency: names unique, indices in range, links leaving the node
    /// their conditioner sits at, flows between hosts.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.nodes.len() > MAX_NODES {
            return Err(invalid(
                "network",
                format!("{} nodes, more than {MAX_NODES}", self.nodes.len()),
            ));
        }
        if self.links.len() > MAX_LINKS {
            return Err(invalid(
                "network",
                format!("{} links, more than {MAX_LINKS}", self.links.len()),
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        for node in &self.nodes {
            if !names.insert(node.name.as_str()) {
                return Err(invalid(
                    format!("node.{}", node.name),
                    "two nodes have this name",
                ));
            }
        }
        let mut link_names = std::collections::BTreeSet::new();
        for link in &self.links {
            let key = format!("link.{}", link.name);
            if !link_names.insert(link.name.as_str()) {
                return Err(invalid(key, "two links have this name"));
            }
            if link.from >= self.nodes.len() || link.to >= self.nodes.len() {
                return Err(invalid(key, "names a node the graph does not have"));
            }
            if link.from == link.to {
                return Err(invalid(key, "goes from a node to itself"));
            }
            if link.link.rate.is_zero() {
                return Err(invalid(format!("{key}.rate"), "must be positive"));
            }
        }
        if self.bottleneck >= self.links.len() {
            return Err(invalid(
                "bottleneck",
                "names a link the graph does not have",
            ));
        }
        for (g, flows) in self.flows.iter().enumerate() {
            for f in flows {
                for (side, node) in [("source", f.source), ("sink", f.sink)] {
                    match self.nodes.get(node) {
                        Some(n) if n.kind == NodeKind::Host => {}
                        Some(n) => {
                            return Err(invalid(
                                format!("groups[{g}].{side}"),
                                format!("'{}' is a router, not a host", n.name),
                            ))
                        }
                        None => {
                            return Err(invalid(
                                format!("groups[{g}].{side}"),
                                "names a node the graph does not have",
                            ))
                        }
                    }
                }
                if f.source == f.sink {
                    return Err(invalid(
                        format!("groups[{g}]"),
                        "a flow's source and sink are the same host",
                    ));
                }
            }
        }
        for c in &self.conditioners {
            let key = format!("groups[{}].marker", c.group);
            if c.group >= self.flows.len() || c.node >= self.nodes.len() {
                return Err(invalid(
                    key,
                    "names a group or node the graph does not have",
                ));
            }
            let Some(index) = c.link else { continue };
            let Some(link) = self.links.get(index) else {
                return Err(invalid(key, "sits on a link the graph does not have"));
            };
            if link.from != c.node {
                return Err(invalid(
                    key,
                    format!("does not sit on a link leaving its node ('{}')", link.name),
                ));
            }
        }
        Ok(())
    }
}

/// Build the network `graph` describes; `group_names` are the spec's groups (CBQ classes name
/// them), `seed` names every component's random stream.
pub fn realise(graph: &GraphSpec, group_names: &[String], seed: u64) -> Result<Built, SimError> {
    graph.validate()?;
    let mut net = Network::new();
    let nodes: Vec<NodeId> = graph.nodes.iter().map(|n| net.add_node(n.kind)).collect();
    let mut ids = Vec::with_capacity(graph.links.len());
    let mut named_links = Vec::with_capacity(graph.links.len());
    for (index, l) in graph.links.iter().enumerate() {
        let component = if index == graph.bottleneck {
            "bottleneck".to_string()
        } else {
            format!("link.{}", l.name)
        };
        let queue = components::queue(&l.link.queue, group_names, &format!("{component}.queue"))?;
        let loss = l
            .link
            .loss
            .as_ref()
            .map(|loss| components::loss(loss, &format!("{component}.loss")))
            .transpose()?;
        let rng = stream(seed, StreamKind::Link, index as u64);
        let id = net.add_link(
            nodes[l.from],
            nodes[l.to],
            l.link.rate,
            l.link.delay,
            queue,
            loss,
            rng,
        );
        ids.push(id);
        named_links.push((l.name.clone(), id, l.after_marker));
    }
    net.compute_routes();
    for c in &graph.conditioners {
        let component = format!("groups[{}].marker", c.group);
        let out_link = match c.link {
            Some(index) => ids[index],
            None => {
                let toward = graph.flows[c.group].first().map(|f| nodes[f.sink]);
                toward
                    .and_then(|sink| net.node(nodes[c.node]).next_hop(sink))
                    .ok_or_else(|| {
                        invalid(
                            component.as_str(),
                            format!(
                                "'{}' has no route toward the group's sink",
                                graph.nodes[c.node].name
                            ),
                        )
                    })?
            }
        };
        let marker = components::marker(&c.marker, &component)?;
        let rng = stream(seed, StreamKind::Marker, c.group as u64);
        net.node_mut(nodes[c.node]).add_conditioner(Conditioner {
            group: c.group as u32,
            out_link,
            marker,
            rng,
        });
    }
    let mut flows = Vec::new();
    for (group, placements) in graph.flows.iter().enumerate() {
        for (flow, p) in placements.iter().enumerate() {
            let (source, sink) = (nodes[p.source], nodes[p.sink]);
            let there = path_delay(&net, source, sink);
            let back = path_delay(&net, sink, source);
            let (Some(there), Some(back)) = (there, back) else {
                return Err(invalid(
                    format!("groups[{}]", group_names.get(group).map_or("?", |s| s)),
                    format!(
                        "no route between '{}' and '{}' both ways",
                        graph.nodes[p.source].name, graph.nodes[p.sink].name
                    ),
                ));
            };
            flows.push(FlowEnds {
                group,
                flow: flow as u32,
                source,
                sink,
                base_rtt: there + back,
            });
        }
    }
    Ok(Built {
        network: net,
        bottleneck: ids[graph.bottleneck],
        flows,
        named_links,
    })
}

/// The propagation delay along the route from `from` to `to`, if there is one.
fn path_delay(net: &Network, from: NodeId, to: NodeId) -> Option<Duration> {
    let mut at = from;
    let mut delay = Duration::ZERO;
    // A route visits each node at most once.
    for _ in 0..net.node_count() {
        if at == to {
            return Some(delay);
        }
        let link = net.link(net.node(at).next_hop(to)?);
        delay += link.delay();
        at = link.to;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use qstp_dataplane::marker::TokenBucketSpec;
    use qstp_dataplane::queue::QueueSpec;
    use qstp_proto::Rate;

    fn link(name: &str, from: usize, to: usize, mbps: u64, ms: u64) -> GraphLink {
        GraphLink {
            name: name.into(),
            from,
            to,
            link: LinkSpec {
                rate: Rate::from_mbps(mbps),
                delay: Duration::from_millis(ms),
                queue: QueueSpec::drop_tail(10),
                loss: None,
                atm: None,
            },
            after_marker: true,
        }
    }

    fn node(name: &str, kind: NodeKind) -> GraphNode {
        GraphNode {
            name: name.into(),
            kind,
        }
    }

    /// Two hosts a and b behind routers r1 - r2, with the reverse path through a slower r2 -> r1.
    fn line() -> GraphSpec {
        GraphSpec {
            nodes: vec![
                node("a", NodeKind::Host),
                node("r1", NodeKind::Router),
                node("r2", NodeKind::Router),
                node("b", NodeKind::Host),
            ],
            links: vec![
                link("a-r1", 0, 1, 100, 1),
                link("r1-a", 1, 0, 100, 1),
                link("r1-r2", 1, 2, 10, 20),
                link("r2-r1", 2, 1, 10, 30),
                link("r2-b", 2, 3, 100, 2),
                link("b-r2", 3, 2, 100, 2),
            ],
            bottleneck: 2,
            flows: vec![vec![
                FlowPlacement { source: 0, sink: 3 },
                FlowPlacement { source: 0, sink: 3 },
            ]],
            conditioners: Vec::new(),
        }
    }

    #[test]
    fn flows_sharing_hosts_get_the_base_rtt_of_their_routes() {
        let built = realise(&line(), &["g".into()], 1).unwrap();
        assert_eq!(built.flows.len(), 2);
        for ends in &built.flows {
            assert_eq!(ends.source, built.flows[0].source, "one host, two flows");
            // 1 + 20 + 2 there, 2 + 30 + 1 back.
            assert_eq!(ends.base_rtt, Duration::from_millis(56));
        }
        assert_eq!(
            built.network.link(built.bottleneck).rate(),
            Rate::from_mbps(10)
        );
        assert_eq!(built.named_links[2].0, "r1-r2");
    }

    #[test]
    fn a_graph_with_no_way_back_is_refused() {
        let mut g = line();
        g.links.remove(3); // r2 -> r1
        let e = realise(&g, &["g".into()], 1).unwrap_err();
        assert!(e.to_string().contains("no route"), "{e}");
    }

    #[test]
    fn bad_graphs_are_refused_naming_the_part() {
        type Change = Box<dyn Fn(&mut GraphSpec)>;
        let cases: Vec<(Change, &str)> = vec![
            (Box::new(|g| g.nodes[1].name = "a".into()), "node.a"),
            (Box::new(|g| g.links[1].name = "a-r1".into()), "link.a-r1"),
            (Box::new(|g| g.links[0].to = 9), "link.a-r1"),
            (Box::new(|g| g.links[0].to = 0), "link.a-r1"),
            (
                Box::new(|g| g.links[2].link.rate = Rate::ZERO),
                "link.r1-r2.rate",
            ),
            (Box::new(|g| g.bottleneck = 6), "bottleneck"),
            (Box::new(|g| g.flows[0][0].sink = 2), "groups[0].sink"),
            (Box::new(|g| g.flows[0][0].sink = 0), "groups[0]"),
            (
                Box::new(|g| {
                    g.conditioners.push(ConditionerSpec {
                        group: 0,
                        node: 1,
                        link: Some(0),
                        marker: MarkerSpec::TokenBucket(TokenBucketSpec {
                            rate: Rate::from_mbps(1),
                            bucket: 3000,
                        }),
                    })
                }),
                "groups[0].marker",
            ),
        ];
        for (change, key) in cases {
            let mut g = line();
            change(&mut g);
            match g.validate() {
                Err(SimError::Invalid { key: k, .. }) => assert_eq!(k, key),
                other => panic!("expected an error at {key}, got {other:?}"),
            }
        }
    }
}
