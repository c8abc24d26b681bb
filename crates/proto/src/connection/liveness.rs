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
    /// Packets sent since the peer was last heard.
    unanswered: u64,
}

impl Silence {
    /// A packet from the peer was accepted.
    pub(crate) fn on_heard(&mut self) {
        self.since = None;
        self.unanswered = 0;
    }

    /// A packet went out at `now`.
    pub(crate) fn on_sent(&mut self, now: Time) {
        self.since.get_or_insert(now);
        self.unanswered += 1;
    }

    /// When the peer started owing an answer.
    pub(crate) fn since(&self) -> Option<Time> {
        self.since
    }
}

impl Connection {
    /// When the peer will be declared gone if it stays silent: `peer_silence_ptos` probe
    /// timeouts (at least [`MIN_PEER_SILENCE`]) after the first packet it left unanswered, once as
    /// many packets went out and while data is in flight.
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
