//! The connection's counters, turned into [`Stats`] with the rate controller's state.

use super::Stats;
use crate::cc::RateState;
use crate::rate::Rate;
use crate::time::Duration;

/// What the connection counts itself; the rate fields of [`Stats`] come from the rate controller.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counters {
    pub(crate) packets_sent: u64,
    pub(crate) packets_retransmitted: u64,
    pub(crate) packets_lost: u64,
    pub(crate) packets_received: u64,
    pub(crate) packets_dropped: u64,
    pub(crate) bogus_acks: u64,
    pub(crate) auth_failures: u64,
    pub(crate) bytes_sent: u64,
    pub(crate) bytes_received: u64,
    pub(crate) bytes_delivered: u64,
    pub(crate) loss_event_rate_increases: u64,
    /// RTT samples the sender took from feedback (RFC 5348 §4.3 step 2), and the latest.
    pub(crate) rtt_samples: u64,
    pub(crate) latest_rtt: Duration,
}

impl Counters {
    /// The statistics at this moment.
    pub(crate) fn snapshot(&self, rate: RateState, bytes_acked: u64) -> Stats {
        Stats {
            packets_sent: self.packets_sent,
            packets_retransmitted: self.packets_retransmitted,
            packets_lost: self.packets_lost,
            packets_received: self.packets_received,
            packets_dropped: self.packets_dropped,
            bogus_acks: self.bogus_acks,
            auth_failures: self.auth_failures,
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            bytes_acked,
            bytes_delivered: self.bytes_delivered,
            rate: rate.rate,
            x_calc: rate.x_calc,
            x_recv: rate.x_recv,
            loss_event_rate: rate.loss_event_rate,
            rtt: rate.rtt,
            target: rate.target,
            slow_start: rate.slow_start,
            loss_event_rate_increases: self.loss_event_rate_increases,
            target_met: true,
            delivered_rate: Rate::ZERO,
            datagram_size: 0,
            pmtu: Default::default(),
        }
    }
}
