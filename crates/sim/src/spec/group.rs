//! Flow groups: flows sharing a path, an edge marker and a profile, with their access links and
//! their on/off switching.

use super::source::Protocol;
use qstp_dataplane::marker::MarkerSpec;
use qstp_proto::{Duration, Rate};

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
