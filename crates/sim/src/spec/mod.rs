//! What one simulation run is asked to do.
//!
//! This is the boundary between the simulator and the lab: `qstp-lab` turns a scenario file (with
//! its sweep point and run number) into a [`SimSpec`]; the simulator turns a `SimSpec` into a
//! `RunOutput` (the `output` module); the lab computes the papers' metrics from it. A run is a
//! pure function of its `SimSpec` (which carries the seed).
//!
//! The topology is the papers' DiffServ dumbbell ([`Topology::Dumbbell`]) or any graph
//! ([`Topology::Graph`]). In the dumbbell, each group's flows go from their own sources through
//! an edge router (where the group's marker colours the aggregate) over one bottleneck link to
//! their sinks; the group's `rtt` is the base round-trip time of that path.
//!
//! The inputs layer of the crate, just above its foundations: a spec is data, read and checked
//! without building anything. Its parts are a file each: the [`group`]s, the [`graph`] of a
//! written network, what each group's flows run ([`source`], the registry of sources), and a
//! [`delegation`] group. They import only the crate's foundations (`error`, `ids`, and the pure
//! parts of `delegation`), never the engine.

pub mod delegation;
pub mod graph;
pub mod group;
pub mod source;

pub use delegation::{DelegationSpec, SignalPath};
pub use graph::{ConditionerSpec, FlowPlacement, GraphLink, GraphNode, GraphSpec, NodeKind};
pub use group::{AccessSpec, GroupSpec, Switching};
pub use source::{CbrSpec, OnOffSpec, Protocol, QstpSpec, TcpSpec};

use qstp_dataplane::loss::LossSpec;
use qstp_dataplane::queue::QueueSpec;
use qstp_proto::{Duration, Rate};

/// One simulation run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimSpec {
    /// Simulated time to run.
    pub duration: Duration,
    /// Seed of this run; every random stream of the run derives from it.
    pub seed: u64,
    /// Size of data packets on the wire, bytes (a group may set its own).
    pub packet_size: usize,
    /// The network: the papers' dumbbell around one bottleneck, or any graph.
    pub topology: Topology,
    /// The flow groups.
    pub groups: Vec<GroupSpec>,
    /// Width of the bins of the recorded series.
    pub bin: Duration,
    /// Time left out of the queue counters at the start of the run (the lab's warm-up; the
    /// per-bin series cover the whole run and the lab leaves the warm-up out of their means).
    pub warmup: Duration,
    /// A Free & Stunts delegation group, if the run has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegation: Option<DelegationSpec>,
}

/// The network a run simulates.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Topology {
    /// The papers' DiffServ dumbbell (the `topology` module's `dumbbell_graph` builds it): each
    /// flow from its own host through its group's edge router, over this one bottleneck link, to
    /// its own host; each group's `rtt` (and `access`) set the delays around the bottleneck.
    Dumbbell {
        /// The shared bottleneck link.
        bottleneck: LinkSpec,
    },
    /// Any graph; the groups' `rtt` and `access` do not apply (the links' delays make each flow's
    /// round trip).
    Graph(GraphSpec),
}

impl SimSpec {
    /// A dumbbell of a bottleneck at `rate` with propagation delay `delay` and a drop-tail queue
    /// of `limit` packets, no groups yet: `seconds` long, seed 1, 1000-byte packets, 1 s bins, no
    /// warm-up.
    pub fn dumbbell(rate: Rate, delay: Duration, limit: usize, seconds: u64) -> SimSpec {
        SimSpec {
            duration: Duration::from_secs(seconds),
            seed: 1,
            packet_size: 1000,
            topology: Topology::Dumbbell {
                bottleneck: LinkSpec {
                    rate,
                    delay,
                    queue: QueueSpec::drop_tail(limit),
                    loss: None,
                    atm: None,
                },
            },
            groups: Vec::new(),
            bin: Duration::from_secs(1),
            warmup: Duration::ZERO,
            delegation: None,
        }
    }

    /// The link whose queue the run records as `bottleneck` (`None` only in a graph whose
    /// bottleneck index is out of range, which validation refuses).
    pub fn bottleneck(&self) -> Option<&LinkSpec> {
        match &self.topology {
            Topology::Dumbbell { bottleneck } => Some(bottleneck),
            Topology::Graph(g) => g.links.get(g.bottleneck).map(|l| &l.link),
        }
    }

    /// The bottleneck link, to change it.
    pub fn bottleneck_mut(&mut self) -> Option<&mut LinkSpec> {
        match &mut self.topology {
            Topology::Dumbbell { bottleneck } => Some(bottleneck),
            Topology::Graph(g) => g.links.get_mut(g.bottleneck).map(|l| &mut l.link),
        }
    }

    /// The size of group `group`'s data packets on the wire, bytes.
    pub fn packet_size_of(&self, group: &GroupSpec) -> usize {
        group.packet_size.unwrap_or(self.packet_size)
    }

    /// The TCP payload of a full segment of group `group`, bytes.
    pub fn segment_payload_of(&self, group: &GroupSpec) -> u64 {
        qstp_dataplane::headers::tcp_payload(self.packet_size_of(group) as u64)
    }
}

/// A link: a serialisation rate, a propagation delay, a queue and an optional loss model.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkSpec {
    /// Serialisation rate.
    pub rate: Rate,
    /// One-way propagation delay (part of every group's rtt, not added to it).
    pub delay: Duration,
    /// Queue discipline at the link's input.
    pub queue: QueueSpec,
    /// Random losses on the link, after the queue.
    pub loss: Option<LossSpec>,
    /// An ATM trunk carried cell by cell ([`qstp_dataplane::atm`]): the link's rate is then the
    /// trunk's cell rate (headers included), its `queue` and `loss` are not used, and each group's
    /// marker is the usage parameter control of its VP. Only the dumbbell's bottleneck can be one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atm: Option<qstp_dataplane::atm::AtmSpec>,
}
