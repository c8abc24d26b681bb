//! `qstp-sim`: a deterministic discrete-event DiffServ network simulator.
//!
//! It runs the real protocol core (`qstp-proto`, unchanged) next to TCP and UDP sources over links,
//! queues (drop-tail, RED, RIO, CBQ), edge markers and loss models. A run is a pure function of its
//! [`SimSpec`] (which carries the seed): same inputs, identical outputs. It depends on `qstp-proto`
//! only; scenario files, metrics and reports live in `qstp-lab`.

pub mod spec;

pub use spec::*;
pub mod loss;
pub mod marker;
pub mod queue;
pub mod tcp;
