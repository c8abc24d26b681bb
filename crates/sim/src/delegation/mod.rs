//! Free & Stunts (004_42e0da08314fdde6.txt): soft throughput guarantees on a best-effort network
//! by delegating the congestion signals of one "Free" TCP connection to s "Stunt" connections of
//! the same host.
//!
//! The parts that need no network, each on its own: the [`trace`] an application asks for, the
//! [`preprocess`] that makes it feasible (eqs. 1-2), the [`controller`]s that turn the measured
//! throughput into a delegation fraction (eqs. 3-4), and the [`matching`] metrics of a run
//! (eqs. 16-19); and the [`delegate`] step of §II-B, which decides who backs off for a congestion
//! signal, over TCP senders steered through their loss-response hook
//! ([`crate::tcp::LossPolicy::Defer`]). What is still to come is the host in the simulator that
//! samples the Free, runs the controller at its period and wires the senders' events to the
//! delegator, and the scenario's `[delegation]` table.

pub mod controller;
pub mod delegate;
pub mod matching;
pub mod preprocess;
pub mod trace;

pub use controller::{Controller, ControllerSpec};
pub use delegate::{Decision, Delegator, Steerable};
pub use matching::{matching, Matching};
pub use preprocess::{preprocess, Change, Check, Feasibility};
pub use trace::{Trace, TraceError, TracePoint};
