//! Builders of whole topologies from a [`SimSpec`]: every network is a [`GraphSpec`], and the
//! papers' DiffServ dumbbell is the one builder of it that the groups' `rtt` and `access` drive.

use crate::error::SimError;
use crate::graph;
use crate::network::LinkPort;
use crate::spec::graph::{
    ConditionerSpec, FlowPlacement, GraphLink, GraphNode, GraphSpec, NodeKind,
};
use crate::spec::{GroupSpec, LinkSpec, SimSpec, Topology};
use qstp_dataplane::atm::{AtmSpec, CellPort, Phb, PortSetup};
use qstp_dataplane::marker::Gcra;
use qstp_dataplane::marker::MarkerSpec;
use qstp_dataplane::queue::QueueSpec;
use qstp_proto::{Duration, Rate, Time};

pub use crate::graph::{Built, FlowEnds};

/// The network of `spec`, built.
pub fn build(spec: &SimSpec) -> Result<Built, SimError> {
    let group_names: Vec<String> = spec.groups.iter().map(|g| g.name.clone()).collect();
    match &spec.topology {
        Topology::Dumbbell { bottleneck } => {
            let graph = dumbbell_graph(spec, bottleneck)?;
            let mut built = graph::realise(&graph, &group_names, spec.seed)?;
            if let Some(atm) = &bottleneck.atm {
                install_atm(spec, bottleneck, atm, &mut built);
            }
            Ok(built)
        }
        Topology::Graph(graph) => {
            if graph.flows.len() != spec.groups.len() {
                return Err(SimError::Invalid {
                    key: "network".into(),
                    reason: format!(
                        "places {} groups, the spec has {}",
                        graph.flows.len(),
                        spec.groups.len()
                    ),
                });
            }
            for (group, placed) in spec.groups.iter().zip(&graph.flows) {
                if placed.len() != group.flows as usize {
                    return Err(SimError::Invalid {
                        key: format!("groups[{}].flows", group.name),
                        reason: format!("{} flows, the graph places {}", group.flows, placed.len()),
                    });
                }
                if group.access.is_some() {
                    return Err(SimError::Invalid {
                        key: format!("groups[{}].access", group.name),
                        reason: "a graph gives each link its own rate and delay".into(),
                    });
                }
            }
            graph::realise(graph, &group_names, spec.seed)
        }
    }
}

/// Make the built dumbbell's bottleneck the ATM trunk of `atm`: each group a VP (AF if its
/// marker is a GCRA with a sustainable rate, an SBR3 contract; DF otherwise, UBR), each flow a VC
/// of its group's VP, the groups' markers its VPs' usage parameter controls.
fn install_atm(spec: &SimSpec, bottleneck: &LinkSpec, atm: &AtmSpec, built: &mut Built) {
    let vps = spec
        .groups
        .iter()
        .map(|g| {
            let upc = match &g.marker {
                Some(MarkerSpec::Gcra(gcra)) => Some(Gcra::new(gcra)),
                _ => None,
            };
            (atm_phb(g), upc)
        })
        .collect();
    // Flow ids are the flows' places in `built.flows`.
    let vcs = built.flows.iter().map(|f| Some(f.group as u32)).collect();
    let hosts = atm.hosts.as_ref().map(|hosts| {
        built
            .flows
            .iter()
            .map(|f| hosts[f.group][f.flow as usize])
            .collect()
    });
    let port = CellPort::new(
        atm,
        PortSetup {
            vps,
            vcs,
            hosts,
            trunk: bottleneck.rate,
            delay: bottleneck.delay,
            warmup: Time::ZERO + spec.warmup,
        },
    );
    built.network.link_mut(built.bottleneck).port = LinkPort::Cells(Box::new(port));
}

/// The PHB of each group on an ATM trunk, as `install_atm` assigns it.
pub fn atm_phb(group: &GroupSpec) -> Phb {
    if atm_scr(group).is_some() {
        Phb::Af
    } else {
        Phb::Df
    }
}

/// The sustainable cell rate of a group's VP on an ATM trunk: its GCRA's `scr` (SBR3), if any.
pub fn atm_scr(group: &GroupSpec) -> Option<Rate> {
    match &group.marker {
        Some(MarkerSpec::Gcra(g)) => g.scr,
        _ => None,
    }
}

/// Name of the sender's access link of flow `flow` of `group` in the dumbbell.
pub(crate) fn access_name(group: &str, flow: u32) -> String {
    format!("access/{group}/{flow}")
}

/// Name of the receiver's link of flow `flow` of `group` in the dumbbell.
pub(crate) fn sink_name(group: &str, flow: u32) -> String {
    format!("sink/{group}/{flow}")
}

/// Queue limit of the uncongested links around the bottleneck, packets.
pub const FAST_QUEUE_LIMIT: usize = 1000;

/// Rate of the links around a bottleneck of rate `bottleneck`: ten times it, and at least
/// 100 Mbit/s, so they never congest.
pub fn fast_rate(bottleneck: Rate) -> Rate {
    Rate::from_bps(bottleneck.bps().saturating_mul(10).max(100_000_000))
}

/// The papers' DiffServ dumbbell as a graph. Per group, an edge router (where the group's marker
/// sits) joins the core over a trunk; per flow, a sender host and a receiver host of its own. The
/// group's `rtt` is all propagation: the bottleneck both ways, the receivers' access links their
/// own delay, the senders' access links the rest. Nodes and links are listed in the order the
/// simulator has always created them, so each link keeps its random stream. The spec's own
/// checks (rates, each group's rtt against the path) are [`crate::validate::validate`]'s, which
/// a run applies first.
pub fn dumbbell_graph(spec: &SimSpec, bottleneck: &LinkSpec) -> Result<GraphSpec, SimError> {
    let fast = fast_rate(bottleneck.rate);
    let fast_link = |rate: Rate, delay: Duration| LinkSpec {
        rate,
        delay,
        queue: QueueSpec::drop_tail(FAST_QUEUE_LIMIT),
        loss: None,
        atm: None,
    };
    let mut g = GraphSpec {
        nodes: Vec::new(),
        links: Vec::new(),
        bottleneck: 0,
        flows: Vec::with_capacity(spec.groups.len()),
        conditioners: Vec::new(),
    };
    let node = |g: &mut GraphSpec, name: String, kind: NodeKind| {
        g.nodes.push(GraphNode { name, kind });
        g.nodes.len() - 1
    };
    let link = |g: &mut GraphSpec, name: String, from: usize, to: usize, link: LinkSpec| {
        let after_marker = g.nodes[from].kind != NodeKind::Host;
        g.links.push(GraphLink {
            name,
            from,
            to,
            link,
            after_marker,
        });
        g.links.len() - 1
    };
    let core = node(&mut g, "core".into(), NodeKind::Router);
    let egress = node(&mut g, "egress".into(), NodeKind::Router);
    g.bottleneck = link(
        &mut g,
        "bottleneck".into(),
        core,
        egress,
        bottleneck.clone(),
    );
    link(
        &mut g,
        "bottleneck.reverse".into(),
        egress,
        core,
        fast_link(fast, bottleneck.delay),
    );
    for (index, group) in spec.groups.iter().enumerate() {
        let edge = node(&mut g, format!("edge/{}", group.name), NodeKind::Router);
        // The trunk carries the whole group: never slower than its access links together.
        let access_rate = group.access.map_or(fast, |a| a.rate);
        let trunk_rate = match group.access {
            Some(a) => Rate::from_bps(
                fast.bps()
                    .max(a.rate.bps().saturating_mul(u64::from(group.flows))),
            ),
            None => fast,
        };
        let trunk_name = format!("trunk/{}", group.name);
        let trunk = link(
            &mut g,
            trunk_name.clone(),
            edge,
            core,
            fast_link(trunk_rate, Duration::ZERO),
        );
        link(
            &mut g,
            format!("{trunk_name}.reverse"),
            core,
            edge,
            fast_link(trunk_rate, Duration::ZERO),
        );
        // On an ATM trunk the marker polices cells, in the trunk's port.
        if let Some(marker) = group.marker.as_ref().filter(|_| bottleneck.atm.is_none()) {
            g.conditioners.push(ConditionerSpec {
                group: index,
                node: edge,
                link: Some(trunk),
                marker: *marker,
            });
        }
        let sink_delay = group.access.map_or(Duration::ZERO, |a| a.delay);
        let access_delay = (group.rtt - (bottleneck.delay + sink_delay).saturating_mul(2)) / 2;
        let mut placed = Vec::with_capacity(group.flows as usize);
        for flow in 0..group.flows {
            let (access_name, sink_name) =
                (access_name(&group.name, flow), sink_name(&group.name, flow));
            let source = node(&mut g, format!("{access_name}.host"), NodeKind::Host);
            let sink = node(&mut g, format!("{sink_name}.host"), NodeKind::Host);
            let access = fast_link(access_rate, access_delay);
            link(&mut g, access_name.clone(), source, edge, access.clone());
            link(
                &mut g,
                format!("{access_name}.reverse"),
                edge,
                source,
                access,
            );
            let egress_link = fast_link(access_rate, sink_delay);
            link(&mut g, sink_name.clone(), egress, sink, egress_link.clone());
            link(
                &mut g,
                format!("{sink_name}.reverse"),
                sink,
                egress,
                egress_link,
            );
            placed.push(FlowPlacement { source, sink });
        }
        g.flows.push(placed);
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{LinkId, NodeId};
    use crate::network::Network;
    use crate::spec::source::{CbrSpec, Protocol};

    fn spec() -> SimSpec {
        let group = |name: &str, rtt_ms: u64, flows: u32| {
            let cbr = Protocol::Cbr(CbrSpec {
                schedule: vec![(Duration::ZERO, Rate::from_kbps(100))],
            });
            GroupSpec::new(name, cbr, flows, Duration::from_millis(rtt_ms))
        };
        SimSpec {
            duration: Duration::from_secs(1),
            seed: 3,
            packet_size: 1500,
            topology: Topology::Dumbbell {
                bottleneck: LinkSpec {
                    rate: Rate::from_mbps(1),
                    delay: Duration::from_millis(10),
                    queue: QueueSpec::drop_tail(50),
                    loss: None,
                    atm: None,
                },
            },
            groups: vec![group("near", 40, 2), group("far", 640, 3)],
            bin: Duration::from_secs(1),
            warmup: Duration::ZERO,
            delegation: None,
        }
    }

    /// The links a packet takes from `from` to `to`.
    fn path(net: &Network, from: NodeId, to: NodeId) -> Vec<LinkId> {
        let mut at = from;
        let mut links = Vec::new();
        while at != to {
            let l = net.node(at).next_hop(to).expect("a route");
            links.push(l);
            at = net.link(l).to;
            assert!(links.len() < 16, "routing loop");
        }
        links
    }

    #[test]
    fn every_flow_crosses_the_bottleneck_and_its_base_rtt_is_the_groups() {
        let spec = spec();
        let built = build(&spec).unwrap();
        assert_eq!(built.flows.len(), 5);
        for ends in &built.flows {
            let forward = path(&built.network, ends.source, ends.sink);
            let back = path(&built.network, ends.sink, ends.source);
            assert!(forward.contains(&built.bottleneck));
            assert!(
                !back.contains(&built.bottleneck),
                "the reverse path is not the bottleneck"
            );
            let delay: Duration = forward
                .iter()
                .chain(&back)
                .map(|&l| built.network.link(l).delay())
                .fold(Duration::ZERO, |a, b| a + b);
            assert_eq!(delay, spec.groups[ends.group].rtt);
            for &l in forward
                .iter()
                .chain(&back)
                .filter(|&&l| l != built.bottleneck)
            {
                assert_eq!(
                    built.network.link(l).rate(),
                    fast_rate(spec.bottleneck().unwrap().rate)
                );
            }
        }
    }

    #[test]
    fn access_links_have_their_own_rate_and_delay_and_the_rtt_is_kept() {
        let mut spec = spec();
        spec.groups[1].access = Some(crate::spec::AccessSpec {
            rate: Rate::from_mbps(3),
            delay: Duration::from_millis(5),
        });
        let built = build(&spec).unwrap();
        for ends in built.flows.iter().filter(|e| e.group == 1) {
            let forward = path(&built.network, ends.source, ends.sink);
            let back = path(&built.network, ends.sink, ends.source);
            let net = &built.network;
            let delay: Duration = forward
                .iter()
                .chain(&back)
                .map(|&l| net.link(l).delay())
                .fold(Duration::ZERO, |a, b| a + b);
            assert_eq!(delay, spec.groups[1].rtt);
            // First and last hops are the flow's own access links.
            for l in [
                forward[0],
                *forward.last().unwrap(),
                back[0],
                *back.last().unwrap(),
            ] {
                assert_eq!(net.link(l).rate(), Rate::from_mbps(3));
            }
            assert_eq!(
                net.link(*forward.last().unwrap()).delay(),
                Duration::from_millis(5)
            );
        }
        // Too short an rtt for the access delays is refused.
        spec.groups[1].rtt = Duration::from_millis(30);
        assert!(matches!(
            crate::validate::validate(&spec),
            Err(SimError::RttShorterThanPath { .. })
        ));
    }
}
