//! `qstp-tcp`: TCP for the simulator: a bulk sender and a receiver as sans-IO state machines (like
//! `qstp-proto`), with congestion control behind a trait: NewReno, HighSpeed, BIC, Scalable,
//! CUBIC, H-TCP, Illinois, YeAH, Compound TCP, BBR v1 and Vegas, one file each, listed in
//! [`REGISTRY`].
//!
//! Sequence numbers count bytes from 0; the sender always has data (a saturated bulk transfer).

mod bbr;
mod bic;
mod cc;
mod compound;
mod config;
mod cubic;
mod ecn;
mod highspeed;
mod htcp;
mod illinois;
mod newreno;
mod receiver;
mod rtt;
mod sack;
mod scalable;
mod scoreboard;
mod sender;
mod steer;
#[cfg(test)]
mod tests;
mod vegas;
mod yeah;

pub use bbr::{Bbr, Mode as BbrMode};
pub use bic::Bic;
pub use cc::{
    known_names, lookup, AckSample, CaState, CcError, CcSpec, CongestionControl, Param, ParamKind,
    Params, RateSample, Registered, RoundSample,
};
pub use compound::Compound;
pub use config::{
    CcRttSample, Recovery, RtoRule, RttSample, TcpConfig, TcpConfigError, TcpOptions,
};
pub use cubic::Cubic;
pub use ecn::EcnFlags;
pub use highspeed::HighSpeed;
pub use htcp::Htcp;
pub use illinois::Illinois;
pub use newreno::NewReno;
pub use receiver::TcpReceiver;
pub use rtt::RttEstimator;
pub use sack::{SackBlocks, MAX_SACK_BLOCKS};
pub use scalable::Scalable;
pub use sender::{LossPolicy, Signal, TcpEvent, TcpSender, TcpSenderStats};
pub use vegas::Vegas;
pub use yeah::Yeah;

/// A TCP segment, data or pure ACK, as the simulator carries it (no bytes, just sizes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// First byte carried (data segments).
    pub seq: u64,
    /// Payload bytes carried; 0 for a pure ACK.
    pub len: u32,
    /// Cumulative acknowledgement: next byte expected (ACK segments).
    pub ack: u64,
    /// SACK blocks `[start, end)`, most recent first, at most [`MAX_SACK_BLOCKS`].
    pub sack: SackBlocks,
    /// Advertised receive window, bytes.
    pub window: u64,
    /// Whether this is sent again (for statistics only; TCP itself cannot tell).
    pub retransmission: bool,
    /// A SYN (from the sender) or SYN-ACK (from the receiver) of the opening handshake
    /// ([`TcpConfig::handshake`]); it carries no data and takes no sequence space here.
    pub syn: bool,
    /// ECN bits: ECT and CE of its IP header, ECE and CWR of its TCP header (RFC 3168).
    pub ecn: EcnFlags,
}

/// Every congestion control the simulator knows, in the order `--help` lists them.
pub const REGISTRY: &[Registered] = &[
    newreno::ENTRY,
    highspeed::ENTRY,
    bic::ENTRY,
    scalable::ENTRY,
    cubic::ENTRY,
    htcp::ENTRY,
    illinois::ENTRY,
    yeah::ENTRY,
    compound::ENTRY,
    bbr::ENTRY,
    vegas::ENTRY,
];
