//! A scenario's own network: `[[link]]` tables instead of `[bottleneck]`, and groups placed on
//! named hosts. It becomes a [`GraphSpec`] for the simulator.

use super::fields::{FieldError, FieldResult, Fields};
use super::network;
use qstp_dataplane::queue::QueueSpec;
use qstp_proto::Duration;
use qstp_sim::spec::graph::{ConditionerSpec, FlowPlacement, GraphLink, GraphNode, GraphSpec};
use qstp_sim::spec::NodeKind;
use qstp_sim::topology::FAST_QUEUE_LIMIT;
use qstp_sim::{GroupSpec, LinkSpec};
use toml::Value;

/// Most `[[link]]` tables in one file.
const MAX_LINKS: usize = 10_000;

/// One `[[link]]`: both directions of a duplex link.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LinkDoc {
    name: String,
    from: String,
    to: String,
    forward: LinkSpec,
    reverse: LinkSpec,
    bottleneck: bool,
}

/// Where a group's flows run: the hosts named by its `source` and `sink`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hosts {
    pub source: String,
    pub sink: String,
}

/// A node or link name: non-empty, no '.', so that it can stand in a dotted key.
fn check_name(f: &Fields, key: &str, name: &str) -> FieldResult<()> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_/".contains(c))
    {
        return Err(f.error(key, "use letters, digits, '-', '_' or '/' only"));
    }
    Ok(())
}

/// Read the `[[link]]` tables, if the file has any.
pub(crate) fn links(f: &mut Fields) -> FieldResult<Option<Vec<LinkDoc>>> {
    let Some(items) = f.opt_array("link")? else {
        return Ok(None);
    };
    if items.is_empty() {
        return Err(f.error("link", "at least one [[link]] is needed"));
    }
    if items.len() > MAX_LINKS {
        return Err(f.error("link", format!("more than {MAX_LINKS} links")));
    }
    let mut out: Vec<LinkDoc> = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::Table(t) = item else {
            return Err(f.error("link", format!("element {i} is not a table")));
        };
        let label = t
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| i.to_string());
        let mut l = Fields::new(format!("link.{label}"), t);
        let name = l.str("name")?;
        check_name(&l, "name", &name)?;
        if out.iter().any(|o| o.name == name) {
            return Err(l.error("name", format!("two links are named '{name}'")));
        }
        let from = l.str("from")?;
        check_name(&l, "from", &from)?;
        let to = l.str("to")?;
        check_name(&l, "to", &to)?;
        if from == to {
            return Err(l.error("to", "a link joins two different nodes"));
        }
        let forward = direction(&mut l, None)?;
        let reverse = match l.opt_table("reverse")? {
            Some(mut r) => {
                let spec = direction(&mut r, Some(&forward))?;
                r.finish()?;
                spec
            }
            None => LinkSpec {
                queue: default_queue(),
                loss: None,
                atm: None,
                ..forward.clone()
            },
        };
        let bottleneck = l.opt_bool("bottleneck")?.unwrap_or(false);
        l.finish()?;
        out.push(LinkDoc {
            name,
            from,
            to,
            forward,
            reverse,
            bottleneck,
        });
    }
    Ok(Some(out))
}

/// The queue of a link direction that gives none: the uncongested drop-tail of the dumbbell's
/// access links.
fn default_queue() -> QueueSpec {
    QueueSpec::drop_tail(FAST_QUEUE_LIMIT)
}

/// One direction's rate, delay, queue and loss; a reverse direction takes the forward one's rate
/// and delay when it gives none.
fn direction(f: &mut Fields, forward: Option<&LinkSpec>) -> FieldResult<LinkSpec> {
    let rate = match (f.opt_rate("rate")?, forward) {
        (Some(rate), _) => rate,
        (None, Some(forward)) => forward.rate,
        (None, None) => return Err(f.error("rate", "missing")),
    };
    if rate.is_zero() {
        return Err(f.error("rate", "must be positive"));
    }
    let delay = f
        .opt_duration("delay")?
        .or(forward.map(|l| l.delay))
        .unwrap_or(Duration::ZERO);
    let queue = f
        .opt_table("queue")?
        .map(network::queue)
        .transpose()?
        .unwrap_or_else(default_queue);
    let loss = f.opt_table("loss")?.map(network::loss).transpose()?;
    Ok(LinkSpec {
        rate,
        delay,
        queue,
        loss,
        atm: None,
    })
}

/// The graph of `links`, with each group's flows on its hosts and its marker at the first router
/// after its source host. Nodes are numbered in order of first mention; a node that a group names
/// as its `source` or `sink` is a host, every other one a router.
pub(crate) fn graph(
    links: &[LinkDoc],
    groups: &[GroupSpec],
    hosts: &[Hosts],
) -> FieldResult<GraphSpec> {
    let mut nodes: Vec<GraphNode> = Vec::new();
    let index_of =
        |name: &str, nodes: &mut Vec<GraphNode>| match nodes.iter().position(|n| n.name == name) {
            Some(i) => i,
            None => {
                nodes.push(GraphNode {
                    name: name.to_string(),
                    kind: NodeKind::Router,
                });
                nodes.len() - 1
            }
        };
    let mut graph_links = Vec::with_capacity(links.len() * 2);
    for l in links {
        let (from, to) = (index_of(&l.from, &mut nodes), index_of(&l.to, &mut nodes));
        for (name, from, to, spec) in [
            (l.name.clone(), from, to, &l.forward),
            (format!("{}.reverse", l.name), to, from, &l.reverse),
        ] {
            graph_links.push(GraphLink {
                name,
                from,
                to,
                link: spec.clone(),
                after_marker: true,
            });
        }
    }
    // Hosts first, so that a marker can tell whether its edge is a router.
    for (group, h) in groups.iter().zip(hosts) {
        for (key, name) in [("source", &h.source), ("sink", &h.sink)] {
            let Some(node) = nodes.iter_mut().find(|n| n.name == *name) else {
                return Err(FieldError::new(
                    format!("group.{}.{key}", group.name),
                    format!("no link reaches a node named '{name}'"),
                ));
            };
            node.kind = NodeKind::Host;
        }
    }
    let mut flows = Vec::with_capacity(groups.len());
    let mut conditioners = Vec::new();
    for (index, (group, h)) in groups.iter().zip(hosts).enumerate() {
        let host = |name: &str| nodes.iter().position(|n| n.name == name).unwrap_or(0);
        let (source, sink) = (host(&h.source), host(&h.sink));
        if source == sink {
            return Err(FieldError::new(
                format!("group.{}.sink", group.name),
                "the source and the sink are the same host",
            ));
        }
        flows.push(vec![FlowPlacement { source, sink }; group.flows as usize]);
        if let Some(marker) = group.marker {
            // The edge router: the far end of the source host's first link.
            let edge = graph_links
                .iter()
                .find(|l| l.from == source)
                .map(|l| l.to)
                .expect("the host was found on a link, so one leaves it");
            if nodes[edge].kind == NodeKind::Host {
                return Err(FieldError::new(
                    format!("group.{}.marker", group.name),
                    format!(
                        "the marker sits at the router after host '{}', but '{}' is a host",
                        h.source, nodes[edge].name
                    ),
                ));
            }
            conditioners.push(ConditionerSpec {
                group: index,
                node: edge,
                link: None,
                marker,
            });
        }
    }
    for l in &mut graph_links {
        // Packets leaving a host are not marked yet.
        l.after_marker = nodes[l.from].kind != NodeKind::Host;
    }
    let marked: Vec<usize> = links
        .iter()
        .enumerate()
        .filter(|(_, l)| l.bottleneck)
        .map(|(i, _)| 2 * i)
        .collect();
    let bottleneck = match marked.as_slice() {
        [one] => *one,
        [] => {
            // The slowest forward direction, the first of equals.
            (0..links.len())
                .min_by_key(|&i| links[i].forward.rate.bps())
                .map(|i| 2 * i)
                .expect("at least one link")
        }
        [_, second, ..] => {
            return Err(FieldError::new(
                format!("link.{}.bottleneck", links[second / 2].name),
                "only one link may be the bottleneck",
            ))
        }
    };
    Ok(GraphSpec {
        nodes,
        links: graph_links,
        bottleneck,
        flows,
        conditioners,
    })
}
