//! Free & Stunts (004_42e0da08314fdde6.txt): soft throughput guarantees on a best-effort network
//! by delegating the congestion signals of one "Free" TCP connection to s "Stunt" connections of
//! the same host.
//!
//! The parts that need no network, each on its own: the [`trace`] an application asks for, the
//! [`preprocess`] that makes it feasible (eqs. 1-2), the [`controller`]s that turn the measured
//! throughput into a delegation fraction (eqs. 3-4), and the [`matching`] metrics of a run
//! (eqs. 16-19). The delegation itself acts on the TCP senders' congestion signals through the
//! sender's loss-response hook ([`crate::tcp::LossPolicy`]).

pub mod controller;
pub mod matching;
pub mod preprocess;
pub mod trace;

pub use controller::{Controller, ControllerSpec};
pub use matching::{matching, Matching};
pub use preprocess::{preprocess, Change, Check, Feasibility};
pub use trace::{Trace, TraceError, TracePoint};
