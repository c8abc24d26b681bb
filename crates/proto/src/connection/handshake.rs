//! The handshake: the client's hello (sent again with the server's cookie after a retry, and on a
//! backed-off timer while unanswered), the server's accept, and what each side learns from it.

use super::{CloseReason, Connection, Event, Role, State, Timer};
use crate::protection::{PacketKeys, Side, Transcript, BINDER_LEN, TAG_LEN};
use crate::time::{Duration, Time};
use crate::wire::{Accept, AcceptKeys, Composition, Cookie, Hello, Packet, Retry, MIN_DATAGRAM};

/// Most retries a client follows in one handshake (a server sends one per cookie-less hello).
const MAX_RETRIES: u32 = 3;

/// The longest wait between two hellos.
const MAX_HELLO_BACKOFF: Duration = Duration::from_secs(2);

/// Handshake progress of either side.
#[derive(Debug, Clone)]
pub(crate) struct Handshake {
    /// When the connection started.
    started: Time,
    /// Client: the cookie from the server's retry.
    cookie: Option<Cookie>,
    /// Client: a hello should go out on the next transmit.
    pub(crate) hello_due: bool,
    /// Client: hellos sent so far.
    hellos_sent: u32,
    /// Client: retries followed so far.
    retries: u32,
    /// Server: an accept should go out on the next transmit.
    accept_due: bool,
    /// Server: the timestamp of the latest hello, echoed in the accept.
    hello_timestamp: u32,
}

impl Handshake {
    /// A handshake starting at `now`.
    pub(crate) fn new(now: Time) -> Self {
        Handshake {
            started: now,
            cookie: None,
            hello_due: false,
            hellos_sent: 0,
            retries: 0,
            accept_due: false,
            hello_timestamp: 0,
        }
    }
}

impl Connection {
    /// Client: queue the first hello and arm the handshake timeout.
    pub(super) fn start_handshake(&mut self, now: Time) {
        self.handshake.hello_due = true;
        self.timers.set(
            Timer::HandshakeTimeout,
            self.handshake.started + self.config.handshake_timeout,
        );
        self.timers.set(
            Timer::Idle,
            now + self.config.idle_timeout.max(self.config.handshake_timeout),
        );
    }

    /// Server: the connection exists once the cookie checked out; the accept goes out next. A
    /// protected one is announced only once the client's first packet authenticates, and is
    /// dropped if none does within the handshake timeout.
    pub(super) fn accept_hello(&mut self, now: Time, hello: &Hello) {
        self.state = State::Established;
        self.handshake.accept_due = true;
        self.handshake.hello_timestamp = hello.timestamp;
        self.sender.set_peer_window(&self.config, hello.recv_window);
        self.sender.rebuild_rate_controller(now, &self.config, None);
        if self.awaiting_proof {
            self.timers
                .set(Timer::HandshakeTimeout, now + self.config.handshake_timeout);
        } else {
            self.events.push(Event::Connected);
        }
    }

    /// Server: the client sent its hello again (our accept was lost); answer it again.
    pub(super) fn on_duplicate_hello(&mut self, hello: &Hello) -> bool {
        if self.role != Role::Server || Some(hello.source) != self.remote_id {
            return false;
        }
        self.handshake.accept_due = true;
        self.handshake.hello_timestamp = hello.timestamp;
        true
    }

    /// Client: the server wants proof of our address; send the hello again with its cookie.
    pub(super) fn on_retry(&mut self, _now: Time, retry: &Retry) -> bool {
        if self.role != Role::Client
            || self.state != State::Handshaking
            || self.handshake.retries >= MAX_RETRIES
        {
            return false;
        }
        self.handshake.retries += 1;
        self.handshake.cookie = Some(retry.cookie);
        self.handshake.hello_due = true;
        true
    }

    /// Client: the server accepted; learn its id, limits and a first RTT sample.
    pub(super) fn on_accept(&mut self, now: Time, accept: &Accept) -> bool {
        if self.role != Role::Client || self.state != State::Handshaking {
            return false;
        }
        if !self.accept_keys(now, accept) {
            // Forged, keyed with another pre-shared key, or stripped of its keys (a downgrade):
            // dropped, and the handshake goes on waiting for the real accept.
            self.counters.auth_failures += 1;
            return false;
        }
        let max_datagram = usize::from(accept.max_datagram);
        if max_datagram < MIN_DATAGRAM {
            let reason =
                format!("accept offers a {max_datagram}-byte datagram, below {MIN_DATAGRAM}");
            self.close_with_packet(
                now,
                CloseReason::ProtocolViolation(reason),
                false,
                0,
                b"datagram too small",
            );
            return true;
        }
        self.remote_id = Some(accept.source);
        self.config.max_datagram = self.config.max_datagram.min(max_datagram);
        // RFC 5348 §4.2: the first RTT sample may come from the handshake.
        let rtt = wire_rtt_sample(now.wire_micros(), accept.timestamp_echo, 0);
        self.sender
            .set_peer_window(&self.config, accept.recv_window);
        self.sender.rebuild_rate_controller(now, &self.config, rtt);
        if self.keys.is_some() {
            // The server holds no slot for us until a packet of ours authenticates: if the
            // application sends nothing within about an RTT, an empty packet goes.
            let wait = rtt.unwrap_or(self.config.initial_rtt);
            self.sender.proof = super::send::Proof::DueAt(now + wait);
        }
        self.receiver.resize_segment(&self.config);
        self.state = State::Established;
        self.timers.stop(Timer::HelloRetransmit);
        self.timers.stop(Timer::HandshakeTimeout);
        self.events.push(Event::Connected);
        true
    }

    /// Client: derive the packet keys from the accept's key share and check the server's
    /// confirmation; true when the accept may be acted on (also when neither side asked for keys).
    fn accept_keys(&mut self, now: Time, accept: &Accept) -> bool {
        let (share, offered) = match (&self.key_share, &accept.keys) {
            (None, None) => return true,
            (Some(share), Some(offered)) => (share, offered),
            _ => return false,
        };
        let hello = self.own_hello(now).transcript();
        let transcript = Transcript {
            hello: &hello,
            client_share: share.public(),
            server_share: offered.share,
        };
        let Ok(keys) = PacketKeys::derive(
            Side::Client,
            share,
            offered.share,
            self.psk.as_ref(),
            &transcript,
        ) else {
            return false;
        };
        let mut encoded = Vec::with_capacity(accept.buffer_len());
        Packet::Accept(accept.clone()).encode(&mut encoded);
        if !keys.check_confirmation(Accept::confirmed_bytes(&encoded), &offered.confirmation) {
            return false;
        }
        self.keys = Some(keys);
        // The secret is not needed any more.
        self.key_share = None;
        true
    }

    /// The client's hello as it stands (the timestamp is `now`'s).
    fn own_hello(&self, now: Time) -> Hello {
        Hello {
            source: self.local_id,
            composition: Composition {
                congestion: self.config.congestion.negotiated(),
                error: self.config.error,
                order: self.config.order,
            },
            max_datagram: u16::try_from(self.config.max_datagram).unwrap_or(u16::MAX),
            recv_window: self.config.recv_buffer as u64,
            timestamp: now.wire_micros(),
            cookie: self.handshake.cookie,
            key_share: self.key_share.as_ref().map(|k| k.public()),
            // Filled in once the rest is encoded (see `poll_handshake_packet`).
            binder: self.psk.as_ref().map(|_| [0; BINDER_LEN]),
        }
    }

    /// The hello (client) or accept (server) if one is due.
    pub(super) fn poll_handshake_packet(&mut self, now: Time, buf: &mut Vec<u8>) -> bool {
        if self.state == State::Handshaking && self.role == Role::Client && self.handshake.hello_due
        {
            Packet::Hello(self.own_hello(now)).encode(buf);
            if let Some(psk) = &self.psk {
                Hello::bind(buf, |covered| psk.binder(covered));
            }
            self.handshake.hello_due = false;
            // RFC 6298 §5.5: back off the retransmission timer, doubling each time.
            let backoff = self
                .config
                .initial_rtt
                .saturating_mul(2)
                .saturating_mul(1 << self.handshake.hellos_sent.min(16));
            self.handshake.hellos_sent += 1;
            self.timers
                .set(Timer::HelloRetransmit, now + backoff.min(MAX_HELLO_BACKOFF));
            return true;
        }
        if self.role == Role::Server && self.handshake.accept_due && !self.is_closed() {
            let Some(client_id) = self.remote_id else {
                return false;
            };
            let accept = Accept {
                destination: client_id,
                source: self.local_id,
                max_datagram: u16::try_from(self.config.max_datagram).unwrap_or(u16::MAX),
                recv_window: self.config.recv_buffer as u64,
                timestamp_echo: self.handshake.hello_timestamp,
                keys: self.key_share.as_ref().map(|share| AcceptKeys {
                    share: share.public(),
                    confirmation: [0; TAG_LEN],
                }),
            };
            Packet::Accept(accept).encode(buf);
            if let Some(keys) = &self.keys {
                let tag = keys.confirmation(Accept::confirmed_bytes(buf));
                let at = buf.len() - TAG_LEN;
                buf[at..].copy_from_slice(&tag);
            }
            self.handshake.accept_due = false;
            return true;
        }
        false
    }
}

/// An RTT sample from wrapping microsecond timestamps: `now - echo - delay`, or `None` when the
/// echo lies in the future or more than half the clock's range back (a bogus echo).
pub(crate) fn wire_rtt_sample(now_micros: u32, echo: u32, delay_micros: u32) -> Option<Duration> {
    let sample = now_micros.wrapping_sub(echo).wrapping_sub(delay_micros);
    if sample >= 1 << 31 {
        None
    } else {
        Some(Duration::from_micros(u64::from(sample.max(1))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtt_samples_survive_clock_wrap() {
        assert_eq!(
            wire_rtt_sample(1_000, 400, 100),
            Some(Duration::from_micros(500))
        );
        // The echo was taken just before the 32-bit microsecond clock wrapped.
        assert_eq!(
            wire_rtt_sample(200, u32::MAX - 99, 0),
            Some(Duration::from_micros(300))
        );
        // A delay longer than the whole round trip is a lie.
        assert_eq!(wire_rtt_sample(1_000, 400, 700), None);
        assert_eq!(wire_rtt_sample(5, 5, 0), Some(Duration::from_micros(1)));
    }
}
