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

use qstp_proto::{Duration, Rate};

use crate::source::Protocol;
use qstp_dataplane::loss::LossSpec;
use qstp_dataplane::marker::MarkerSpec;
use qstp_dataplane::queue::QueueSpec;

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
    pub delegation: Option<crate::delegation::DelegationSpec>,
}

/// The network a run simulates.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Topology {
    /// The papers' DiffServ dumbbell ([`crate::topology::dumbbell_graph`]): each flow from its
    /// own host through its group's edge router, over this one bottleneck link, to its own host;
    /// each group's `rtt` (and `access`) set the delays around the bottleneck.
    Dumbbell {
        /// The shared bottleneck link.
        bottleneck: LinkSpec,
    },
    /// Any graph; the groups' `rtt` and `access` do not apply (the links' delays make each flow's
    /// round trip).
    Graph(crate::graph::GraphSpec),
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
    /// An ATM trunk carried cell by cell ([`crate::atm`]): the link's rate is then the trunk's
    /// cell rate (headers included), its `queue` and `loss` are not used, and each group's
    /// marker is the usage parameter control of its VP. Only the dumbbell's bottleneck can be one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atm: Option<qstp_dataplane::atm::AtmSpec>,
}

/// Flows sharing a path, an edge marker and a profile.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GroupSpec {
    /// Name, unique in the scenario.
    pub name: String,
    /// What each flow runs.
    pub protocol: Protocol,
    /// How many flows.
    pub flows: u32,
    /// Base round-trip time of the path (propagation only, no queueing).
    pub rtt: Duration,
    /// Negotiated rate of the group (reports, and the gTFRC floor of each flow is carried in the
    /// protocol's config).
    pub target: Option<Rate>,
    /// The edge marker for the group's aggregate; `None` sends every packet best effort, which
    /// queues treat as out-of-profile (red).
    pub marker: Option<MarkerSpec>,
    /// When the flows start (each flow adds a seeded offset of up to `start_spread`).
    pub start: Duration,
    /// Flows start at a seeded offset within this span after `start`; `None`: one `rtt`.
    pub start_spread: Option<Duration>,
    /// Each flow's own access links (sender side and receiver side); `None`: uncongested links
    /// at ten times the bottleneck rate carrying all the propagation delay off the bottleneck.
    pub access: Option<AccessSpec>,
    /// Size of the group's data packets on the wire, bytes; `None`: the spec's `packet_size`.
    pub packet_size: Option<usize>,
    /// Switch each flow's application on and off (TCP groups); `None`: always on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onoff: Option<Switching>,
}

impl GroupSpec {
    /// A group of `flows` flows running `protocol` over base RTT `rtt`: unmarked, no target,
    /// starting at 0 with the default spread, default access links and packet size, always on.
    pub fn new(name: &str, protocol: Protocol, flows: u32, rtt: Duration) -> GroupSpec {
        GroupSpec {
            name: name.into(),
            protocol,
            flows,
            rtt,
            target: None,
            marker: None,
            start: Duration::ZERO,
            access: None,
            start_spread: None,
            packet_size: None,
            onoff: None,
        }
    }
}

/// A flow whose application alternates between having data to send and having none: the
/// cross traffic of the Free & Stunts experiments (Free & Stunts paper §IV), "turned on and
/// off every 10 seconds randomized with a uniform distribution". Each flow starts on, at its
/// start time; while off, its sender sends no new data (it still finishes recovering what is in
/// flight).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Switching {
    /// Length of an on period (its mean when `random`).
    pub on: Duration,
    /// Length of an off period (its mean when `random`).
    pub off: Duration,
    /// Draw each period uniformly between zero and twice its length, from the flow's own random
    /// stream (the paper says "uniform" and gives the mean only); otherwise every period is
    /// exactly `on` or `off`, and the flows of a group switch together.
    pub random: bool,
    /// How many of the group's flows switch (its first ones); the others send all along.
    /// `None`: every flow. (The paper's "8 of the cross-traffic connections ... randomized ...
    /// with the exception of 2 cross-traffic flows which were continuous".)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<u32>,
}

/// The access links of a group's flows: each flow's sender reaches the edge, and the egress
/// reaches each flow's receiver, over a link of this rate and one-way delay (both directions).
/// The group's `rtt` stays the whole base round trip: what the bottleneck and the access delays
/// do not account for is added to the sender's access link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AccessSpec {
    /// Rate of each access link.
    pub rate: Rate,
    /// One-way delay of each access link.
    pub delay: Duration,
}
