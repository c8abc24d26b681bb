//! TCP for the simulator: a bulk sender and a receiver as sans-IO state machines (like
//! `qstp-proto`), with congestion control behind a trait so that NewReno now and HighSpeed, BIC,
//! CUBIC, Scalable, H-TCP, Illinois, YeAH and Compound TCP later plug in without touching the rest.
//!
//! Sequence numbers count bytes from 0; the sender always has data (a saturated bulk transfer).

use qstp_proto::{Duration, Time};

mod config;
mod newreno;
mod ranges;
mod receiver;
mod rtt;
mod scoreboard;
mod sender;
#[cfg(test)]
mod tests;

pub use config::{TcpConfig, TcpConfigError};
pub use newreno::NewReno;
pub use ranges::{SackBlocks, MAX_SACK_BLOCKS};
pub use receiver::TcpReceiver;
pub use rtt::RttEstimator;
pub use sender::{TcpSender, TcpSenderStats};

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
}

/// What a congestion control sees on an ACK.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AckSample {
    /// When the ACK arrived.
    pub now: Time,
    /// Bytes newly acknowledged (cumulatively or by SACK).
    pub acked_bytes: u64,
    /// RTT sample of this ACK, if it gave one (RFC 6298 §3: not from retransmitted segments).
    pub rtt: Option<Duration>,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// Smallest RTT seen.
    pub min_rtt: Duration,
    /// Bytes in flight before this ACK.
    pub in_flight: u64,
}

/// A TCP congestion control: the window, in bytes, and how it reacts.
pub trait CongestionControl: std::fmt::Debug + Send {
    /// The name used in scenario files (`newreno`, `cubic`, ...).
    fn name(&self) -> &'static str;
    /// Start with window `initial_cwnd` and threshold `initial_ssthresh`, bytes; the sender calls
    /// this once, before its first segment.
    fn init(&mut self, initial_cwnd: u64, initial_ssthresh: u64);
    /// Whether the window is in slow start.
    fn in_slow_start(&self) -> bool {
        self.cwnd() < self.ssthresh()
    }
    /// Congestion window, bytes.
    fn cwnd(&self) -> u64;
    /// Slow-start threshold, bytes.
    fn ssthresh(&self) -> u64;
    /// New data was acknowledged outside recovery.
    fn on_ack(&mut self, sample: &AckSample);
    /// New data was acknowledged during fast recovery (the window is the sender's business then;
    /// delay-based variants may still want the RTT sample). Does nothing by default.
    fn on_ack_in_recovery(&mut self, _sample: &AckSample) {}
    /// A loss was detected by duplicate ACKs or SACK: enter fast recovery (once per window).
    fn on_congestion_event(&mut self, now: Time, in_flight: u64);
    /// Fast recovery ended (the recovery point was acknowledged).
    fn on_recovery_end(&mut self, now: Time);
    /// The retransmission timer expired (RFC 5681 §3.1: cwnd to one segment).
    fn on_retransmission_timeout(&mut self, now: Time, in_flight: u64);
}

/// A congestion control name no variant answers to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown TCP congestion control '{name}' (known: {known})", known = KNOWN_CONGESTION_CONTROLS.join(", "))]
pub struct UnknownCongestionControl {
    /// The name asked for.
    pub name: String,
}

/// Names [`congestion_control`] accepts.
pub const KNOWN_CONGESTION_CONTROLS: &[&str] = &["newreno"];

/// The congestion control called `name` (case-insensitive), for segments of `mss` bytes.
pub fn congestion_control(
    name: &str,
    mss: u32,
) -> Result<Box<dyn CongestionControl>, UnknownCongestionControl> {
    match name.to_ascii_lowercase().as_str() {
        "newreno" | "reno" => Ok(Box::new(NewReno::new(mss))),
        _ => Err(UnknownCongestionControl {
            name: name.to_string(),
        }),
    }
}
