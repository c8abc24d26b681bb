//! Builders of whole topologies from a [`SimSpec`].

use crate::capture;
use crate::components;
use crate::error::SimError;
use crate::ids::{LinkId, NodeId};
use crate::network::{Conditioner, Network, NodeKind};
use crate::rng::{stream, StreamKind};
use crate::spec::{QueueSpec, SimSpec};
use qstp_proto::{Duration, Rate};

/// Where one flow's two ends live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowEnds {
    /// Index of the group in the spec.
    pub group: usize,
    /// Index of the flow in its group.
    pub flow: u32,
    /// The host of the sending agent.
    pub source: NodeId,
    /// The host of the receiving agent.
    pub sink: NodeId,
}

/// A built topology: the network and where its flows attach.
#[derive(Debug)]
pub struct Built {
    /// The network.
    pub network: Network,
    /// The link whose queue the run reports on.
    pub bottleneck: LinkId,
    /// Every flow, groups in order, flows in order.
    pub flows: Vec<FlowEnds>,
    /// The links that can be captured, by name (see [`crate::capture::link_names`]), and
    /// whether the edge markers have coloured the packets on them.
    pub named_links: Vec<(String, LinkId, bool)>,
}

/// The topology a spec describes (the papers' dumbbell is the only one so far).
pub fn build(spec: &SimSpec) -> Result<Built, SimError> {
    dumbbell(spec)
}

/// Capacity of the queues of the uncongested links (access, trunk, reverse path), packets.
pub const FAST_QUEUE_LIMIT: usize = 1000;

/// Rate of the uncongested links: ten times the bottleneck, at least 100 Mbit/s.
pub fn fast_rate(bottleneck: Rate) -> Rate {
    Rate::from_bps(bottleneck.bps().saturating_mul(10).max(100_000_000))
}

/// The papers' DiffServ dumbbell (QSTP paper Fig. 3).
///
/// Per flow a source host and a sink host; per group an edge router whose marker colours the
/// group's aggregate on its way to the core; the core router feeds the bottleneck link to the
/// egress router, which reaches every sink. Access links carry the group's share of the
/// propagation delay so that the base RTT is the group's `rtt`; the reverse path has the same
/// delays over uncongested links, so acknowledgements and feedback are never the bottleneck.
///
/// ```text
/// source --access--> edge(group) --trunk--> core ==bottleneck==> egress --> sink
/// ```
pub fn dumbbell(spec: &SimSpec) -> Result<Built, SimError> {
    let bottleneck = &spec.bottleneck;
    if bottleneck.rate.is_zero() {
        return Err(SimError::Invalid {
            key: "bottleneck.rate".into(),
            reason: "must be positive".into(),
        });
    }
    for group in &spec.groups {
        let access_delay = group.access.map_or(Duration::ZERO, |a| a.delay);
        if group.rtt < (bottleneck.delay + access_delay.saturating_mul(2)).saturating_mul(2) {
            return Err(SimError::RttShorterThanPath {
                group: group.name.clone(),
                rtt: group.rtt,
                bottleneck_delay: bottleneck.delay,
                access_delay,
            });
        }
        if group.access.is_some_and(|a| a.rate.is_zero()) {
            return Err(SimError::Invalid {
                key: format!("groups[{}].access.rate", group.name),
                reason: "must be positive".into(),
            });
        }
    }
    let group_names: Vec<String> = spec.groups.iter().map(|g| g.name.clone()).collect();
    let fast = fast_rate(bottleneck.rate);
    let fast_queue = QueueSpec::DropTail {
        limit: FAST_QUEUE_LIMIT,
    };
    let mut net = Network::new();
    let seed = spec.seed;
    let link = |net: &mut Network, from, to, rate, delay, queue: &QueueSpec, component: &str| {
        let index = net.links().len() as u64;
        let queue = components::queue(queue, &group_names, component)?;
        let rng = stream(seed, StreamKind::Link, index);
        Ok::<_, SimError>(net.add_link(from, to, rate, delay, queue, None, rng))
    };

    let core = net.add_node(NodeKind::Router);
    let egress = net.add_node(NodeKind::Router);
    let bottleneck_link = {
        let index = net.links().len() as u64;
        let queue = components::queue(&bottleneck.queue, &group_names, "bottleneck.queue")?;
        let loss = bottleneck
            .loss
            .as_ref()
            .map(|l| components::loss(l, "bottleneck.loss"))
            .transpose()?;
        let rng = stream(seed, StreamKind::Link, index);
        net.add_link(
            core,
            egress,
            bottleneck.rate,
            bottleneck.delay,
            queue,
            loss,
            rng,
        )
    };
    link(
        &mut net,
        egress,
        core,
        fast,
        bottleneck.delay,
        &fast_queue,
        "reverse bottleneck",
    )?;

    let mut flows = Vec::new();
    let mut named_links = vec![("bottleneck".to_string(), bottleneck_link, true)];
    for (g, group) in spec.groups.iter().enumerate() {
        let edge = net.add_node(NodeKind::Router);
        // The trunk carries the whole group: never slower than its access links together.
        let access_rate = group.access.map_or(fast, |a| a.rate);
        let trunk_rate = match group.access {
            Some(a) => Rate::from_bps(
                fast.bps()
                    .max(a.rate.bps().saturating_mul(u64::from(group.flows))),
            ),
            None => fast,
        };
        let trunk = link(
            &mut net,
            edge,
            core,
            trunk_rate,
            Duration::ZERO,
            &fast_queue,
            "trunk",
        )?;
        link(
            &mut net,
            core,
            edge,
            trunk_rate,
            Duration::ZERO,
            &fast_queue,
            "reverse trunk",
        )?;
        if let Some(marker) = &group.marker {
            let marker = components::marker(marker, &format!("groups[{}].marker", group.name))?;
            let rng = stream(seed, StreamKind::Marker, g as u64);
            net.node_mut(edge).add_conditioner(Conditioner {
                group: g as u32,
                out_link: trunk,
                marker,
                rng,
            });
        }
        // The group's rtt is all propagation: the bottleneck both ways, the receivers' access
        // links their own delay, the senders' access links the rest.
        let sink_delay = group.access.map_or(Duration::ZERO, |a| a.delay);
        let access_delay = (group.rtt - (bottleneck.delay + sink_delay).saturating_mul(2)) / 2;
        for flow in 0..group.flows {
            let source = net.add_node(NodeKind::Host);
            let sink = net.add_node(NodeKind::Host);
            let access = link(
                &mut net,
                source,
                edge,
                access_rate,
                access_delay,
                &fast_queue,
                "access",
            )?;
            link(
                &mut net,
                edge,
                source,
                access_rate,
                access_delay,
                &fast_queue,
                "reverse access",
            )?;
            let to_sink = link(
                &mut net,
                egress,
                sink,
                access_rate,
                sink_delay,
                &fast_queue,
                "egress",
            )?;
            link(
                &mut net,
                sink,
                egress,
                access_rate,
                sink_delay,
                &fast_queue,
                "reverse egress",
            )?;
            named_links.push((capture::access_name(&group.name, flow), access, false));
            named_links.push((capture::sink_name(&group.name, flow), to_sink, true));
            flows.push(FlowEnds {
                group: g,
                flow,
                source,
                sink,
            });
        }
    }
    net.compute_routes();
    Ok(Built {
        network: net,
        bottleneck: bottleneck_link,
        flows,
        named_links,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{GroupSpec, LinkSpec, Protocol};

    fn spec() -> SimSpec {
        let group = |name: &str, rtt_ms: u64, flows: u32| GroupSpec {
            name: name.into(),
            protocol: Protocol::Cbr {
                schedule: vec![(Duration::ZERO, Rate::from_kbps(100))],
            },
            flows,
            rtt: Duration::from_millis(rtt_ms),
            target: None,
            marker: None,
            start: Duration::ZERO,
            access: None,
            start_spread: None,
        };
        SimSpec {
            duration: Duration::from_secs(1),
            seed: 3,
            packet_size: 1500,
            bottleneck: LinkSpec {
                rate: Rate::from_mbps(1),
                delay: Duration::from_millis(10),
                queue: QueueSpec::DropTail { limit: 50 },
                loss: None,
            },
            groups: vec![group("near", 40, 2), group("far", 640, 3)],
            bin: Duration::from_secs(1),
            warmup: Duration::ZERO,
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
        let built = dumbbell(&spec).unwrap();
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
                .map(|&l| built.network.link(l).delay)
                .fold(Duration::ZERO, |a, b| a + b);
            assert_eq!(delay, spec.groups[ends.group].rtt);
            for &l in forward
                .iter()
                .chain(&back)
                .filter(|&&l| l != built.bottleneck)
            {
                assert_eq!(built.network.link(l).rate, fast_rate(spec.bottleneck.rate));
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
        let built = dumbbell(&spec).unwrap();
        for ends in built.flows.iter().filter(|e| e.group == 1) {
            let forward = path(&built.network, ends.source, ends.sink);
            let back = path(&built.network, ends.sink, ends.source);
            let net = &built.network;
            let delay: Duration = forward
                .iter()
                .chain(&back)
                .map(|&l| net.link(l).delay)
                .fold(Duration::ZERO, |a, b| a + b);
            assert_eq!(delay, spec.groups[1].rtt);
            // First and last hops are the flow's own access links.
            for l in [
                forward[0],
                *forward.last().unwrap(),
                back[0],
                *back.last().unwrap(),
            ] {
                assert_eq!(net.link(l).rate, Rate::from_mbps(3));
            }
            assert_eq!(
                net.link(*forward.last().unwrap()).delay,
                Duration::from_millis(5)
            );
        }
        // Too short an rtt for the access delays is refused.
        spec.groups[1].rtt = Duration::from_millis(30);
        assert!(matches!(
            dumbbell(&spec),
            Err(SimError::RttShorterThanPath { .. })
        ));
    }
}
