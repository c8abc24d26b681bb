//! Ending a connection: the graceful close once both streams are delivered and acknowledged, the
//! abort, the peer's close, and the timeouts; a closed connection repeats its close packet a few
//! times to a peer that keeps talking, until the drain timer ends.

use super::{CloseReason, Connection, Event, Role, State, Timer};
use crate::time::{Duration, Time};
use crate::wire::{Close, Packet, KEY_MISMATCH_CODE, MAX_REASON_LEN};

/// How many times a closed connection sends its close again, on its timer or to answer the
/// peer's packets, until the peer's own close confirms it.
const CLOSE_REPEATS: u32 = 8;

/// The shortest wait between two repeats of the close.
const MIN_CLOSE_REPEAT: Duration = Duration::from_millis(50);

/// The close this side sends, and how often it may still repeat it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Closing {
    /// The close packet of this side, once decided.
    sent: Option<OutgoingClose>,
    /// The close packet should go out on the next transmit.
    due: bool,
    /// Repeats left.
    repeats_left: u32,
    /// Time between two timer-driven repeats.
    repeat_interval: Duration,
}

/// The fields of this side's close packet.
#[derive(Debug, Clone)]
struct OutgoingClose {
    graceful: bool,
    code: u32,
    reason: Vec<u8>,
}

impl Closing {
    /// The drain period is over: stay silent from now on.
    pub(crate) fn stop_answering(&mut self) {
        self.due = false;
        self.repeats_left = 0;
    }
}

impl Connection {
    /// End the connection with `reason`, telling the peer with a close packet.
    pub(super) fn close_with_packet(
        &mut self,
        now: Time,
        reason: CloseReason,
        graceful: bool,
        code: u32,
        text: &[u8],
    ) {
        let text = &text[..text.len().min(MAX_REASON_LEN)];
        if self.remote_id.is_some() {
            self.closing.sent = Some(OutgoingClose {
                graceful,
                code,
                reason: text.to_vec(),
            });
            self.closing.due = true;
            self.closing.repeats_left = CLOSE_REPEATS;
        }
        self.enter_closed(now, reason);
        // Repeat the close until the peer's close confirms it, then linger long enough to
        // answer a peer whose packets cross ours.
        let interval = self.sender.rto(&self.config).max(MIN_CLOSE_REPEAT);
        self.closing.repeat_interval = interval;
        if self.closing.sent.is_some() {
            self.timers.set(Timer::CloseRepeat, now + interval);
        }
        self.timers.set(
            Timer::Drain,
            now + interval.saturating_mul(u64::from(CLOSE_REPEATS) + 1),
        );
    }

    /// The close-repeat timer fired: send the close again while repeats are left.
    pub(super) fn on_close_repeat_timeout(&mut self, now: Time) {
        self.timers.stop(Timer::CloseRepeat);
        if self.closing.sent.is_some() && self.closing.repeats_left > 0 {
            self.closing.repeats_left -= 1;
            self.closing.due = true;
            self.timers
                .set(Timer::CloseRepeat, now + self.closing.repeat_interval);
        }
    }

    /// End the connection without telling the peer (it is gone or never answered).
    pub(super) fn close_silently(&mut self, reason: CloseReason, now: Time) {
        self.enter_closed(now, reason);
    }

    fn enter_closed(&mut self, _now: Time, reason: CloseReason) {
        self.timers.stop_all();
        self.events.push(Event::Closed(reason.clone()));
        self.state = State::Closed(reason);
    }

    /// The peer's close packet.
    pub(super) fn on_close(&mut self, now: Time, close: &Close<'_>) -> bool {
        if self.state == State::Handshaking {
            if self.role == Role::Client {
                // The server refused the hello (unsupported composition, too many connections,
                // another pre-shared key).
                let reason = if close.code == KEY_MISMATCH_CODE {
                    CloseReason::KeyMismatch
                } else {
                    CloseReason::Refused
                };
                self.close_silently(reason, now);
                return true;
            }
            return false;
        }
        if close.graceful {
            // The peer read our whole stream and had its own acknowledged: confirm and end. Its
            // word also acknowledges our stream's tail, whose last acknowledgement may be lost.
            let confirmed = self
                .sender
                .stream
                .as_mut()
                .map_or(true, |stream| stream.on_all_delivered());
            if !confirmed {
                let reason = CloseReason::ProtocolViolation(
                    "graceful close before our stream was wholly sent".into(),
                );
                self.close_with_packet(
                    now,
                    reason,
                    false,
                    0,
                    b"graceful close before the stream ended",
                );
                return true;
            }
            self.close_with_packet(now, CloseReason::Graceful, true, 0, b"");
        } else {
            let reason = CloseReason::PeerClosed {
                code: close.code,
                reason: String::from_utf8_lossy(close.reason).into_owned(),
            };
            self.close_silently(reason, now);
        }
        true
    }

    /// A packet reached a closed connection: the peer's close confirms ours; anything else means
    /// the peer missed our close, so repeat it (bounded).
    pub(super) fn on_packet_while_closed(&mut self, packet: &Packet<'_>) {
        if matches!(packet, Packet::Close(_)) {
            self.timers.stop(Timer::CloseRepeat);
            self.closing.repeats_left = 0;
            return;
        }
        if self.closing.sent.is_some() && self.closing.repeats_left > 0 {
            self.closing.repeats_left -= 1;
            self.closing.due = true;
        }
    }

    /// Close gracefully once both streams finished and every byte was delivered and acknowledged.
    pub(super) fn check_graceful_close(&mut self, now: Time) {
        if self.state != State::Established || !self.sender.all_acked() {
            return;
        }
        // Stream compositions also wait until the peer's stream was read to its end; message
        // compositions have no end marker, so the side that finished ends the connection.
        if self.receiver.stream.is_some() && !self.peer_stream_consumed() {
            return;
        }
        self.close_with_packet(now, CloseReason::Graceful, true, 0, b"");
    }

    /// This side's close packet, if due.
    pub(super) fn poll_close_packet(&mut self, buf: &mut Vec<u8>) -> bool {
        if !self.closing.due {
            return false;
        }
        self.closing.due = false;
        let (Some(close), Some(destination)) = (&self.closing.sent, self.remote_id) else {
            return false;
        };
        let packet = Close {
            destination,
            graceful: close.graceful,
            code: close.code,
            reason: &close.reason,
        };
        Packet::Close(packet).encode(buf);
        true
    }
}
