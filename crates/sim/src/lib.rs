//! `qstp-sim`: a deterministic discrete-event DiffServ network simulator.
//!
//! It runs the real protocol core (`qstp-proto`, unchanged) and the TCP model (`qstp-tcp`) next to
//! UDP sources over links whose queues, edge markers and loss models are the data plane's
//! (`qstp-dataplane`). A run is a pure function of its [`SimSpec`] (which carries the seed): same
//! inputs, identical outputs. It depends on those three crates only; scenario files, metrics and
//! reports live in `qstp-lab`.
//!
//! Inside: an event [`engine`] keyed by (time, insertion order); a [`network`] of nodes and links
//! in arenas addressed by typed [`ids`]; [`agent`]s on hosts; [`topology`] builders; a recorder
//! whose memory grows with duration / bin, never with packets.
//!
//! A [`network::Link`] is a sans-IO port (offer a packet; poll when it next has work; collect the
//! packets whose serialisation or propagation ended) with no reference to the engine: the network
//! drives it with engine events here, and a real-time forwarder can drive it on a wall clock. A
//! [`network::QueueObserver`] on a link sees each enqueue, dequeue and drop.
//!
//! What a group's flows run is the registry of sources ([`spec::source::Protocol`]: tcp, the qstp
//! compositions, cbr, onoff), made like the data plane's queues, markers and loss models: each
//! kind reads its keys with the group's target as context and checks itself; [`source::agents`]
//! builds its flow's two agents (agents of a new kind plug in as [`agent::Agent::Other`]).
//!
//! The modules form layers, each importing only those below it: the foundations (ids, random
//! streams, the event heap, errors, the pure parts of [`delegation`]); the inputs ([`spec`], its
//! checks in [`validate`]); the outputs ([`output`]); the engine pieces (network, recorder, agents,
//! sources' agents, run [`hook`]s); building networks ([`graph`], [`topology`]); the packet
//! [`capture`]; and the run loop on top (`run`). `docs/ARCHITECTURE.md` lists them.
//!
//! Every network is a [`spec::GraphSpec`] (nodes, links of their own rate, delay, queue and loss,
//! markers on chosen links, several flows per host, per-group packet sizes down to a 53-byte
//! cell); the papers' dumbbell is one builder of it ([`topology::dumbbell_graph`]), a scenario may
//! write its own ([`Topology::Graph`]). Free & Stunts delegation ([`delegation`]) steers TCP
//! senders through `qstp-tcp`'s congestion-signal events (`qstp-fluid` solves the same
//! scenarios' fluid model instead of simulating packets).

pub mod output;
pub mod spec;

pub use output::{
    AtmRecord, DelayStats, FlowRecord, MessageSeries, QueueRecord, QueueSeries, QueueSojourn,
    RateSample, RunOutput, SenderSeries,
};
pub use record::Delays;
pub use spec::{AccessSpec, GroupSpec, LinkSpec, SimSpec, Switching, Topology};
pub use spec::{CbrSpec, OnOffSpec, Protocol, QstpSpec, TcpSpec};

pub mod agent;
pub mod capture;
mod components;
/// The Free & Stunts parts, which live in the protocol core (`qstp_proto::delegation`) so the
/// simulator, the testbed and `qstp-net` run the same code.
pub use qstp_proto::delegation;
pub mod engine;
pub mod error;
pub mod event;
pub mod graph;
pub mod hook;
pub mod ids;
pub mod network;
pub mod record;
pub mod rng;
mod sim;
pub mod source;
pub mod topology;
pub mod validate;
mod wheel;

pub use error::SimError;
pub use sim::{run, run_with_capture, run_with_progress};
