//! `qstp-proto`: the sans-IO core of QSTP, the QoS-aware transport protocol.
//!
//! Datagrams and the current time go in (`handle_*`); datagrams to send, delivered data, events
//! and the next timer deadline come out (`poll_*`). This crate never reads a clock, opens a socket,
//! spawns a thread or draws from a global random source, so the UDP endpoint (`qstp-net`), the
//! simulator (`qstp-sim`) and the tests all drive the very same code. It depends on no other qstp
//! crate.

// No unsafe code: the fuzz targets run without a memory sanitizer (fuzz/README.md).
#![forbid(unsafe_code)]

pub mod config;
pub mod delegation;
pub mod range_set;
pub mod rate;
pub mod time;

pub use config::{Config, ConfigError, Congestion, GtfrcRule, Preset, TfrcVersion};
pub use range_set::RangeSet;
pub use rate::{Rate, RateParseError};
pub use time::{Duration, DurationParseError, Time};
pub use wire::{ErrorControl, Order, RateControl};

pub mod connection;
pub mod endpoint;
pub mod protection;

pub use connection::{
    CloseReason, Connection, DelegationError, Event, ReadError, Stats, WriteError,
};
pub use endpoint::{
    ConnectError, ConnectionHandle, Endpoint, EndpointConfig, EndpointStats, ServerPolicy, Transmit,
};
pub use protection::{PreSharedKey, Protection};
pub mod cc;
pub mod delivery;
pub mod ec;
pub mod wire;
