//! Builds the [`Network`] a [`GraphSpec`] describes: [`realise`] checks the graph and builds its
//! nodes, links (in the order listed: each link's random stream is named by its index), routes
//! and edge markers, and finds each flow's hosts and base RTT.

use crate::components;
use crate::error::SimError;
use crate::ids::{LinkId, NodeId};
use crate::network::{Conditioner, Network};
use crate::rng::{stream, StreamKind};
use crate::spec::graph::GraphSpec;
use qstp_proto::Duration;

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
    use crate::spec::graph::{ConditionerSpec, FlowPlacement, GraphLink, GraphNode, NodeKind};
    use crate::spec::LinkSpec;
    use qstp_dataplane::marker::{MarkerSpec, TokenBucketSpec};
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
