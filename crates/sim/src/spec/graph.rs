//! A network written as a graph: nodes, unidirectional links with their own rate, delay, queue and
//! loss, edge markers on chosen links, and the hosts every flow runs between.
//!
//! Every topology the simulator runs is a [`GraphSpec`]: the papers' dumbbell is one builder of it
//! (the `topology` module's `dumbbell_graph`), and a scenario may write its own (the lab's
//! `[[link]]` tables). Several flows may share a host (Free & Stunts' connections of one host),
//! links may be slower than the bottleneck (seed-002 access links), and a group's packets may be
//! any size down to one 53-byte cell. [`GraphSpec::validate`] checks the graph's own consistency;
//! the `graph` module builds the network from it.

use super::LinkSpec;
use crate::error::SimError;
use qstp_dataplane::marker::MarkerSpec;

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

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKind {
    /// An end system; agents attach to it.
    Host,
    /// A router.
    Router,
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
