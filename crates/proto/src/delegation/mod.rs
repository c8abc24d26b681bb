//! Free & Stunts paper: soft throughput guarantees on a best-effort network
//! by delegating the congestion signals of one "Free" connection to s "Stunt" connections of
//! the same host.
//!
//! The parts that need no network, each on its own: the [`trace`] an application asks for, the
//! [`preprocess`](mod@preprocess) that makes it feasible (eqs. 1-2), the [`controller`]s that
//! turn the measured throughput into a delegation fraction (eqs. 3-4), and the
//! [`matching`](mod@matching) metrics of a run (eqs. 16-19); and the [`delegate`] step of §II-B,
//! which decides who backs off for a congestion signal, over senders whose reactions can be
//! deferred and steered ([`Steerable`]): TCP senders (`qstp_tcp::LossPolicy::Defer`) and QSTP
//! connections. None of it knows a network or a clock: the simulator's delegation hook, the
//! testbed and `qstp-net` sample the Free every control period, run the controller, and hand the
//! senders' congestion signals to the delegator.

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
