//! Telling a dead peer from a slow one within a few round trips (RFC 9002 §6.2's probe timeout).
//!
//! The idle timeout (30 s by default, longer for a crawling connection: see `idle`) is the last
//! resort. A peer that receives data answers with feedback at least once per RTT (RFC 5348 §6.2),
//! so with data in flight, silence for many probe timeouts while many packets went out means the
//! peer (or the path) is gone. Both conditions must hold: a TFRC sender slowed to a packet per
//! second by heavy loss sends too few packets in that time to be judged.

use super::{Connection, State};
use crate::time::{Duration, Time};

/// The silence before a peer is judged gone is never shorter than this, whatever the RTT.
const MIN_PEER_SILENCE: Duration = Duration::from_secs(1);

/// Silence from the peer since this side last heard it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Silence {
    /// When the first packet since the peer was last heard went out.
    since: Option<Time>,
    /// Round trips since the peer was last heard in which a packet went out: a packet counts only
    /// when sent at least one RTT after the last one counted. Packets of one burst are a single
    /// chance for the peer to answer (RFC 5348 §6.2: one report per RTT), so a burst sent just
    /// before the answers to it were lost must not pass for many unanswered round trips.
    unanswered: u64,
    /// When the last counted packet went out.
    last_counted: Option<Time>,
}

impl Silence {
    /// A packet from the peer was accepted.
    pub(crate) fn on_heard(&mut self) {
        self.since = None;
        self.unanswered = 0;
        self.last_counted = None;
    }

    /// A packet went out at `now`; `rtt` is the current round-trip time estimate.
    pub(crate) fn on_sent(&mut self, now: Time, rtt: Duration) {
        self.since.get_or_insert(now);
        if self
            .last_counted
            .map_or(true, |last| now.saturating_since(last) >= rtt)
        {
            self.unanswered += 1;
            self.last_counted = Some(now);
        }
    }

    /// When the peer started owing an answer.
    pub(crate) fn since(&self) -> Option<Time> {
        self.since
    }
}

impl Connection {
    /// When the peer will be declared gone if it stays silent: `peer_silence_ptos` probe
    /// timeouts (at least [`MIN_PEER_SILENCE`]) after the first packet it left unanswered, once
    /// packets went out in as many distinct round trips and while data is in flight.
    pub(super) fn peer_silence_deadline(&self) -> Option<Time> {
        let ptos = u64::from(self.config.peer_silence_ptos);
        if ptos == 0 || self.state != State::Established || !self.sender.has_in_flight() {
            return None;
        }
        let since = self.silence.since?;
        if self.silence.unanswered < ptos {
            return None;
        }
        let pto = self.sender.pto(&self.config);
        // RFC 9002 §6.2: each PTO without an answer is a round trip in which the peer should
        // have spoken; this many in a row is no queue and no burst of loss.
        Some(since + pto.saturating_mul(ptos).max(MIN_PEER_SILENCE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: u64) -> Time {
        Time::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn a_burst_is_one_chance_to_answer_and_spaced_packets_are_many() {
        let rtt = Duration::from_millis(80);
        let mut silence = Silence::default();
        for i in 0..20 {
            silence.on_sent(at_ms(1_000 + i), rtt);
        }
        assert_eq!(silence.unanswered, 1);
        assert_eq!(silence.since(), Some(at_ms(1_000)));
        for i in 1..=7 {
            silence.on_sent(at_ms(1_000 + 80 * i), rtt);
        }
        assert_eq!(silence.unanswered, 8);
        silence.on_heard();
        assert_eq!((silence.unanswered, silence.since()), (0, None));
        silence.on_sent(at_ms(1_600), rtt);
        assert_eq!(silence.unanswered, 1);
    }
}
