//! `qstp-sim`: a deterministic discrete-event DiffServ network simulator.
//!
//! It runs the real protocol core (`qstp-proto`, unchanged) next to TCP and UDP sources over links,
//! queues (drop-tail, RED, RIO, CBQ), edge markers and loss models. A run is a pure function of its
//! [`SimSpec`] (which carries the seed): same inputs, identical outputs. It depends on `qstp-proto`
//! only; scenario files, metrics and reports live in `qstp-lab`.
//!
//! Inside: an event [`engine`] keyed by (time, insertion order); a [`network`] of nodes and links
//! in arenas addressed by typed [`ids`]; [`agent`]s on hosts; [`topology`] builders; a recorder
//! whose memory grows with duration / bin, never with packets.
//!
//! A [`network::Link`] is a sans-IO port (offer a packet; poll when it next has work; collect the
//! packets whose serialisation or propagation ended) with no reference to the engine: the network
//! drives it with engine events here, and a real-time forwarder can drive it on a wall clock.
//! Around it the data plane has the seams such a forwarder needs: markers see a packet's incoming
//! colour and return a verdict, pass with a colour or drop ([`marker::Verdict`], so a policer
//! plugs in); queues and edge conditioners find a packet's class through a [`classify::Classifier`]
//! (by DSCP or 5-tuple as well as by the simulator's group); a [`network::QueueObserver`] on a
//! link sees each enqueue, dequeue and drop; queues, markers and loss models are `Send`.
//!
//! Each family of components has one registry: queues ([`QueueSpec`]), markers ([`MarkerSpec`])
//! and loss models ([`LossSpec`]) are enums made by [`registry!`] from one `"name" => Variant(Spec)`
//! line per kind; each kind's spec reads its own keys through a [`params::ParamTable`] (the lab
//! implements it over TOML), validates itself and builds its component, all in its own file. A new
//! queue, marker or loss model is that file and one registry line; `--help`, errors and serde
//! follow from the registry. What a group's flows run is the registry of sources
//! ([`source::Protocol`]: tcp, the qstp compositions, cbr, onoff), made the same way: each kind
//! reads its keys with the group's target as context, checks itself and builds its flow's two
//! agents (agents of a new kind plug in as [`agent::Agent::Other`]).
//!
//! Seams for what builds on it: [`qstp_tcp`] is a sans-IO TCP whose congestion controls live in a
//! registry ([`qstp_tcp::REGISTRY`]: one file and one entry per control, parameters from the scenario)
//! and whose sender can be steered from outside (congestion-signal events, deferred or delegated
//! window reductions, per-round samples: what a host-level controller such as loss delegation
//! needs); its SACK scoreboard does O(log W) work per ACK. Every network is a
//! [`graph::GraphSpec`] (nodes, links of their own rate, delay, queue and loss, markers on chosen
//! links, several flows per host, per-group packet sizes down to a 53-byte cell); the papers'
//! dumbbell is one builder of it ([`topology::dumbbell_graph`]), a scenario may write its own
//! ([`Topology::Graph`]).

pub mod spec;

pub use spec::*;

pub mod agent;
pub mod atm;
pub mod capture;
mod components;
pub mod delegation;
pub mod engine;
pub mod error;
pub mod event;
pub mod fluid;
pub mod graph;
pub mod ids;
pub mod network;
pub mod record;
pub mod rng;
mod sim;
pub mod source;
pub mod topology;
pub mod validate;

pub use error::SimError;
pub use sim::{run, run_with_capture, run_with_progress};
