//! Idle detection that tells a slow peer from a vanished one.
//!
//! The rule: a connection closes once nothing was heard from the peer for the longest of
//! - the configured idle timeout;
//! - [`IDLE_SPACINGS`] times the longest recent spacing between the peer's packets, or the
//!   spacing the composition fixes for it (a fixed rate), plus an RTO (a peer sending at a very
//!   low rate is still alive);
//! - while this side has data to send or in flight, [`IDLE_SPACINGS`] times its own packet
//!   spacing at the current allowed rate, plus an RTO (the peer answers only what arrives).
//!
//! Why: under heavy loss TFRC may fall to one packet per t_mbi = 64 s (RFC 5348 §4.3 step 4),
//! longer than a 30 s idle timeout, so a fixed timeout would close live connections. TFRC gets
//! there by halving (RFC 5348 §4.4), so each spacing is at most about twice the one before and
//! three recent spacings cover the next; a fixed rate is known from the composition. No spacing
//! counts for more than t_mbi, since a TFRC sender with data never waits longer, so a vanished peer
//! is still declared gone within `IDLE_SPACINGS * 64 s + RTO` at worst, and within the configured
//! timeout when the connection was not crawling.

use crate::time::{Duration, Time};

/// How many packet spacings, ours or the peer's, the idle timeout spans at least: two would do
/// for a rate that halves (RFC 5348 §4.4, the nofeedback timer), one more absorbs a lost packet.
pub(crate) const IDLE_SPACINGS: u64 = 3;

/// RFC 5348 §4.3 step 4: t_mbi, the longest a TFRC sender with data waits between packets.
pub(crate) const T_MBI: Duration = Duration::from_secs(64);

/// How many recent spacings between the peer's packets are remembered.
const RECENT_GAPS: usize = 4;

/// When the peer was last heard and how its packets were spaced.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdleClock {
    last_heard: Option<Time>,
    /// The latest spacings between the peer's packets (each at most t_mbi), newest at `next`.
    gaps: [Duration; RECENT_GAPS],
    next: usize,
}

impl IdleClock {
    /// A packet from the peer was accepted at `now`.
    pub(crate) fn on_heard(&mut self, now: Time) {
        if let Some(last) = self.last_heard {
            self.gaps[self.next] = now.saturating_since(last).min(T_MBI);
            self.next = (self.next + 1) % RECENT_GAPS;
        }
        self.last_heard = Some(now.max(self.last_heard.unwrap_or(now)));
    }

    /// When the connection is idle: `None` before anything was heard (the configured timer rules).
    ///
    /// `peer_floor` is the spacing the composition allows the peer's packets (a fixed rate);
    /// `own_spacing` this side's packet spacing at its allowed rate if it has data to send or in
    /// flight; `rto` the retransmission timeout.
    pub(crate) fn deadline(
        &self,
        configured: Duration,
        peer_floor: Option<Duration>,
        own_spacing: Option<Duration>,
        rto: Duration,
    ) -> Option<Time> {
        let last_heard = self.last_heard?;
        let seen = self.gaps.iter().copied().max().unwrap_or(Duration::ZERO);
        let peer = seen.max(peer_floor.unwrap_or(Duration::ZERO).min(T_MBI));
        let mut timeout = configured;
        if !peer.is_zero() {
            timeout = timeout.max(peer * IDLE_SPACINGS + rto);
        }
        if let Some(own) = own_spacing {
            timeout = timeout.max(own.min(T_MBI) * IDLE_SPACINGS + rto);
        }
        Some(last_heard + timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> Time {
        Time::from_nanos(secs * 1_000_000_000)
    }

    const IDLE: Duration = Duration::from_secs(30);
    const RTO: Duration = Duration::from_millis(400);

    #[test]
    fn a_busy_peer_gets_the_configured_timeout() {
        let mut clock = IdleClock::default();
        assert_eq!(clock.deadline(IDLE, None, None, RTO), None);
        for ms in 0..10 {
            clock.on_heard(Time::from_nanos(ms * 10_000_000));
        }
        assert_eq!(
            clock.deadline(IDLE, None, None, RTO),
            Some(Time::from_nanos(90_000_000) + IDLE)
        );
    }

    #[test]
    fn a_peer_at_the_tfrc_floor_is_given_three_of_its_spacings() {
        let mut clock = IdleClock::default();
        for s in [0, 64, 128] {
            clock.on_heard(at(s));
        }
        assert_eq!(
            clock.deadline(IDLE, None, None, RTO),
            Some(at(128) + Duration::from_secs(192) + RTO)
        );
        // A burst of quick packets does not hide the long spacing seen just before.
        clock.on_heard(at(128) + Duration::from_millis(1));
        clock.on_heard(at(128) + Duration::from_millis(2));
        assert!(
            clock.deadline(IDLE, None, None, RTO).unwrap() > at(128) + Duration::from_secs(192)
        );
    }

    #[test]
    fn no_spacing_counts_for_more_than_t_mbi() {
        let mut clock = IdleClock::default();
        clock.on_heard(at(0));
        clock.on_heard(at(1_000));
        let own = Some(Duration::from_secs(500));
        assert_eq!(
            clock.deadline(IDLE, None, own, RTO),
            Some(at(1_000) + T_MBI * 3 + RTO)
        );
    }

    #[test]
    fn a_fixed_rate_peer_is_given_three_of_its_spacings_from_the_start() {
        let mut clock = IdleClock::default();
        clock.on_heard(at(5));
        let floor = Some(Duration::from_secs(40));
        assert_eq!(
            clock.deadline(IDLE, floor, None, RTO),
            Some(at(5) + Duration::from_secs(120) + RTO)
        );
    }

    #[test]
    fn a_slow_sender_waits_for_answers_to_its_own_packets() {
        let mut clock = IdleClock::default();
        clock.on_heard(at(10));
        let own = Some(Duration::from_secs(20));
        assert_eq!(
            clock.deadline(IDLE, None, own, RTO),
            Some(at(10) + Duration::from_secs(60) + RTO)
        );
        assert_eq!(clock.deadline(IDLE, None, None, RTO), Some(at(10) + IDLE));
    }
}
