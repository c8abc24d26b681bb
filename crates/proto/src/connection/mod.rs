//! One QSTP connection: handshake, transfer, flow control, close; statistics at any time.
//!
//! A `Connection` lives inside an `Endpoint`, which routes datagrams to it and collects what it
//! wants to send. The application side is `write`/`read` for the ordered byte stream and
//! `send_message`/`recv_message` for messages.

use crate::config::Config;
use crate::rate::Rate;
use crate::time::{Duration, Time};
use std::net::SocketAddr;

/// Something the application should know about a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The handshake completed: data can flow.
    Connected,
    /// Stream bytes or messages are ready to read.
    Readable,
    /// Send-buffer space became free after a write was refused.
    Writable,
    /// The peer finished its stream: once the data buffered so far is read, `read` returns 0.
    Finished,
    /// Every byte this side wrote (and finished) was acknowledged by the peer.
    AllAcknowledged,
    /// The target rate g stopped (`false`) or started again (`true`) being met: the connection
    /// kept losing while sending at or below g and its receiver reported less than g.
    TargetMet(bool),
    /// The connection is over; the handle stays valid until the endpoint drops it.
    Closed(CloseReason),
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// Both sides finished and every byte was delivered and acknowledged.
    Graceful,
    /// This side aborted with [`Connection::close`].
    LocallyClosed,
    /// The peer aborted.
    PeerClosed {
        /// The peer's application error code.
        code: u32,
        /// The peer's reason, lossily decoded.
        reason: String,
    },
    /// Nothing was heard from the peer for the idle timeout.
    IdleTimeout,
    /// With data in flight, the peer answered nothing for several probe timeouts (RFC 9002 §6.2)
    /// while packets kept going out: it stopped answering (crashed, killed, or the path is gone).
    PeerUnresponsive {
        /// How long the peer had been silent.
        silent_for: Duration,
    },
    /// The handshake got no answer in time.
    HandshakeTimeout,
    /// The server refused the connection (for instance, an unsupported composition).
    Refused,
    /// The server refused the connection because the two sides hold different pre-shared keys,
    /// or only one side holds one.
    KeyMismatch,
    /// The peer broke the protocol.
    ProtocolViolation(String),
    /// The local network refused datagrams of `size` bytes (EMSGSIZE: larger than the
    /// interface's MTU) and the connection may not send smaller ones: its datagram size is
    /// pinned, or already the 1200-byte base of path MTU discovery.
    DatagramTooLarge {
        /// The refused datagram's size in bytes (UDP payload).
        size: usize,
    },
}

/// Why a write was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The send buffer is full; retry after [`Event::Writable`].
    #[error("send buffer full")]
    Blocked,
    /// The stream was finished; no more data may be written.
    #[error("stream already finished")]
    Finished,
    /// The connection is closed.
    #[error("connection closed: {0:?}")]
    Closed(CloseReason),
    /// This composition has no byte stream (stream needs sack-full + ordered) or no such message.
    #[error("not supported by this composition: {0}")]
    Unsupported(&'static str),
    /// A message larger than the send buffer or than the peer's receive buffer.
    #[error("message of {0} bytes exceeds the send buffer or the peer's receive buffer")]
    TooLarge(usize),
}

/// Why nothing could be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// Nothing to read yet; retry after [`Event::Readable`].
    #[error("no data available yet")]
    Blocked,
    /// The connection closed before the stream finished.
    #[error("connection closed: {0:?}")]
    Closed(CloseReason),
    /// This composition has no byte stream.
    #[error("not supported by this composition: {0}")]
    Unsupported(&'static str),
}

/// Counters and rate-control state, readable at any time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// Datagrams sent, of any kind.
    pub packets_sent: u64,
    /// Data packets that carried data sent before (each in a new packet number).
    pub packets_retransmitted: u64,
    /// Data packets the sender declared lost.
    pub packets_lost: u64,
    /// Datagrams received and accepted.
    pub packets_received: u64,
    /// Datagrams dropped: malformed, truncated, replayed, out of window, unknown connection.
    pub packets_dropped: u64,
    /// Feedback that lied: ranges naming packets never sent (clipped away, the rest kept), or a
    /// sequence number jumping further ahead than any honest receiver would (ignored whole).
    pub bogus_acks: u64,
    /// Datagrams that failed authentication (forged, corrupted, replayed, or keyed with another
    /// pre-shared key), an accept among them: dropped unread.
    pub auth_failures: u64,
    /// Bytes of datagrams sent.
    pub bytes_sent: u64,
    /// Bytes of datagrams received.
    pub bytes_received: u64,
    /// Application bytes written and acknowledged by the peer.
    pub bytes_acked: u64,
    /// Application bytes delivered to this side's application.
    pub bytes_delivered: u64,
    /// Current allowed sending rate X.
    pub rate: Rate,
    /// Rate from the TFRC throughput equation (RFC 5348 §3.1), zero before the first loss.
    pub x_calc: Rate,
    /// Receive rate reported by the peer.
    pub x_recv: Rate,
    /// Loss event rate p as seen by the peer's receiver.
    pub loss_event_rate: f64,
    /// Feedbacks that reported a higher loss event rate p than the feedback accepted before them
    /// (the first with p > 0 among them): the new loss events this sender learnt of. Between loss
    /// events the receiver's p only falls or holds (RFC 5348 §5.4: the open interval counts only
    /// when it lengthens the mean), so each rise marks at least one new event; it is a lower
    /// bound, since several events between two feedbacks count once and an event ending an
    /// interval longer than the older intervals' mean leaves p about where it was. Read-only: no
    /// field on the wire carries it.
    pub loss_event_rate_increases: u64,
    /// Smoothed round-trip time.
    pub rtt: Duration,
    /// The gTFRC target g (zero if none).
    pub target: Rate,
    /// Whether the rate controller is still in slow start.
    pub slow_start: bool,
    /// Whether the target rate g is being met (true without a target): false after a run of
    /// feedbacks reporting losses and a receive rate short of g while the rate was at most g.
    pub target_met: bool,
    /// The receive rate X_recv of the latest feedback judged against the target.
    pub delivered_rate: Rate,
    /// The largest datagram data packets use now, bytes of UDP payload: the size path MTU
    /// discovery confirmed (1200 at first), or the configured size when it is off.
    pub datagram_size: usize,
    /// Path MTU probes sent, acknowledged and lost, and falls back to the base size.
    pub pmtu: PmtuCounters,
}

mod close;
mod delegation;
mod events;
mod handshake;
mod honesty;
mod idle;
mod liveness;
mod pmtu;
mod recv;
mod rto;
mod send;
mod skip;
mod sla;
mod stats;
mod timers;

use crate::protection::{KeyShare, PacketKeys, PreSharedKey, ProtectionError};
use crate::wire::{ConnectionId, Packet, PacketType};
use close::Closing;
pub use delegation::DelegationError;
use events::EventQueue;
use handshake::Handshake;
use idle::IdleClock;
pub use pmtu::{PmtuCounters, BASE_DATAGRAM};
use recv::Receiver;
use send::Sender;
use stats::Counters;
use timers::{Timer, TimerTable};

/// Which side opened the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// This side sent the hello.
    Client,
    /// This side accepted the hello.
    Server,
}

/// Where the connection is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// The client waits for the server's accept.
    Handshaking,
    /// Data may flow both ways.
    Established,
    /// Over; a close packet may still be repeated to the peer until the drain timer ends.
    Closed(CloseReason),
}

/// Whether an encoded packet is of a kind protection seals: data, feedback and close (the
/// handshake's hello, retry and accept travel in the clear).
pub(crate) fn is_protected_type(packet: &[u8]) -> bool {
    matches!(
        crate::wire::peek_type(packet),
        Ok(PacketType::Data | PacketType::Feedback | PacketType::Close)
    )
}

/// One QSTP connection.
///
/// Compositions with full reliability and ordered delivery carry one byte stream each way
/// (`write`/`read`); the others carry messages (`send_message`/`recv_message`). A stream
/// connection closes gracefully once both sides finished and every byte was read and
/// acknowledged; a message connection once the side that finished had every message
/// acknowledged or abandoned (messages carry no end marker, so that side decides).
#[derive(Debug)]
#[cfg_attr(feature = "fuzzing", derive(Clone))]
pub struct Connection {
    role: Role,
    state: State,
    config: Config,
    remote: SocketAddr,
    /// The id the peer puts on packets to this side.
    local_id: ConnectionId,
    /// The id this side puts on packets to the peer (a client learns it from the accept).
    remote_id: Option<ConnectionId>,
    timers: TimerTable,
    events: EventQueue,
    counters: Counters,
    handshake: Handshake,
    sender: Sender,
    receiver: Receiver,
    closing: Closing,
    /// When the peer was last heard, for idle detection.
    idle: IdleClock,
    /// Whether the peer still answers what is sent (RFC 9002 §6.2).
    silence: liveness::Silence,
    /// The latest time the driver passed in (for deadlines computed without a `now`).
    last_now: Time,
    /// Packet keys once derived (a server's from its start, a client's from the accept).
    keys: Option<PacketKeys>,
    /// Client: its key share, until the accept arrives.
    key_share: Option<KeyShare>,
    /// The pre-shared key both sides must hold, if any.
    psk: Option<PreSharedKey>,
    /// Server: the client has not yet proven it holds the keys (no packet of it has
    /// authenticated). Such a connection is not announced and holds no slot (RFC 9000 §21.6:
    /// a server's handshake completes only on the client's proof).
    awaiting_proof: bool,
}

impl Connection {
    /// A client connection whose hello goes out on the next transmit.
    pub(crate) fn new_client(
        now: Time,
        remote: SocketAddr,
        local_id: ConnectionId,
        config: Config,
        key_share: Option<KeyShare>,
        psk: Option<PreSharedKey>,
        skip_seed: u64,
    ) -> Connection {
        let mut conn = Connection::new(Role::Client, now, remote, local_id, None, config);
        conn.enable_skips(skip_seed);
        conn.key_share = key_share;
        conn.psk = psk;
        conn.start_handshake(now);
        conn
    }

    /// A server connection for a hello whose cookie checked out; the accept goes out next.
    pub(crate) fn new_server(
        now: Time,
        remote: SocketAddr,
        local_id: ConnectionId,
        hello: &crate::wire::Hello,
        config: Config,
        keys: Option<(KeyShare, PacketKeys)>,
        skip_seed: u64,
    ) -> Connection {
        let mut conn = Connection::new(
            Role::Server,
            now,
            remote,
            local_id,
            Some(hello.source),
            config,
        );
        if let Some((share, keys)) = keys {
            conn.key_share = Some(share);
            conn.keys = Some(keys);
            conn.awaiting_proof = true;
        }
        conn.enable_skips(skip_seed);
        conn.accept_hello(now, hello);
        conn
    }

    fn new(
        role: Role,
        now: Time,
        remote: SocketAddr,
        local_id: ConnectionId,
        remote_id: Option<ConnectionId>,
        config: Config,
    ) -> Connection {
        let mut timers = TimerTable::default();
        timers.set(Timer::Idle, now + config.idle_timeout);
        Connection {
            role,
            state: State::Handshaking,
            remote,
            local_id,
            remote_id,
            timers,
            events: EventQueue::default(),
            counters: Counters::default(),
            handshake: Handshake::new(now),
            sender: Sender::new(now, &config),
            receiver: Receiver::new(&config),
            closing: Closing::default(),
            idle: IdleClock::default(),
            silence: liveness::Silence::default(),
            last_now: now,
            config,
            keys: None,
            key_share: None,
            psk: None,
            awaiting_proof: false,
        }
    }

    /// Skip a packet number now and then (RFC 9000 §21.4) if the configuration asks for it.
    fn enable_skips(&mut self, seed: u64) {
        if self.config.skip_packet_numbers {
            self.sender.skips = Some(skip::Skips::new(seed));
        }
        if self.config.check_receiver {
            self.sender.check_receiver();
        }
    }

    /// The id the peer addresses this connection with.
    pub(crate) fn local_id(&self) -> ConnectionId {
        self.local_id
    }

    /// The peer's connection id, once known.
    pub(crate) fn remote_id(&self) -> Option<ConnectionId> {
        self.remote_id
    }

    /// A datagram routed here by its destination id; `size` is the datagram's length.
    pub(crate) fn handle_packet(
        &mut self,
        now: Time,
        remote: SocketAddr,
        packet: &Packet<'_>,
        size: usize,
    ) {
        self.last_now = self.last_now.max(now);
        if remote != self.remote {
            // No migration: a packet from another address is spoofed or misrouted.
            self.counters.packets_dropped += 1;
            return;
        }
        if let State::Closed(_) = self.state {
            if matches!(packet, Packet::Close(_)) {
                // The peer's confirmation of our close.
                self.counters.packets_received += 1;
            } else {
                self.counters.packets_dropped += 1;
            }
            self.on_packet_while_closed(packet);
            return;
        }
        // Only an opened datagram of a protected connection is a data, feedback or close packet
        // here: its sender holds the keys.
        let authenticated = self.keys.is_some()
            && matches!(
                packet,
                Packet::Data(_) | Packet::Feedback(_) | Packet::Close(_)
            );
        if authenticated && self.awaiting_proof {
            // Announced before the packet acts, so a close that proves the keys follows it.
            self.awaiting_proof = false;
            self.timers.stop(Timer::HandshakeTimeout);
            self.events.push(Event::Connected);
        }
        if authenticated {
            // The server answered under the keys, so it has our proof.
            self.sender.proof = send::Proof::Done;
        }
        let accepted = match packet {
            Packet::Hello(hello) => self.on_duplicate_hello(hello),
            Packet::Retry(retry) => self.on_retry(now, retry),
            Packet::Accept(accept) => self.on_accept(now, accept),
            Packet::Data(data) => self.on_data(now, data, size),
            Packet::Feedback(feedback) => self.on_feedback(now, feedback),
            Packet::Close(close) => self.on_close(now, close),
        };
        if accepted {
            self.counters.packets_received += 1;
            self.counters.bytes_received += size as u64;
            // A repeated hello refreshes nothing: whoever saw one could otherwise keep a
            // connection that never goes on alive by sending it again.
            if !self.is_closed() && !matches!(packet, Packet::Hello(_)) {
                self.idle.on_heard(now);
                self.silence.on_heard();
                self.timers.set(Timer::Idle, now + self.config.idle_timeout);
            }
        } else {
            self.counters.packets_dropped += 1;
        }
        self.check_graceful_close(now);
    }

    /// Seal the encoded packet in `buf` with this connection's sending keys, as it does before
    /// sending its own; false if it has none. For the fuzz targets, which forge authenticated
    /// packets of one side to feed the other.
    #[cfg(feature = "fuzzing")]
    pub fn seal_for_fuzzing(&mut self, buf: &mut Vec<u8>) -> bool {
        match self.keys.as_mut() {
            Some(keys) if buf.len() >= crate::protection::CLEAR_HEADER_LEN => {
                keys.seal(buf);
                true
            }
            _ => false,
        }
    }

    /// The ids this connection is addressed with and addresses its peer with (the fuzz targets').
    #[cfg(feature = "fuzzing")]
    pub fn ids_for_fuzzing(&self) -> (ConnectionId, Option<ConnectionId>) {
        (self.local_id, self.remote_id)
    }

    /// Whether datagrams for this connection must be opened before they are read.
    pub(crate) fn is_protected(&self) -> bool {
        self.keys.is_some()
    }

    /// Open a protected datagram in place (see [`PacketKeys::open_in_place`]); a failure is
    /// counted and the datagram dropped.
    pub(crate) fn open_in_place(
        &mut self,
        datagram: &mut [u8],
    ) -> Result<std::ops::Range<usize>, ProtectionError> {
        let keys = self.keys.as_mut().ok_or(ProtectionError::Forged)?;
        let opened = keys.open_in_place(datagram);
        if opened.is_err() {
            self.counters.auth_failures += 1;
            self.counters.packets_dropped += 1;
        }
        opened
    }

    /// Run every timer due at `now`.
    pub(crate) fn handle_timeout(&mut self, now: Time) {
        self.last_now = self.last_now.max(now);
        if self.timers.is_expired(Timer::Drain, now) {
            self.timers.stop(Timer::Drain);
            self.timers.stop(Timer::CloseRepeat);
            self.closing.stop_answering();
        }
        if self.timers.is_expired(Timer::CloseRepeat, now) {
            self.on_close_repeat_timeout(now);
        }
        if self.is_closed() {
            return;
        }
        if self.timers.is_expired(Timer::Idle, now) {
            // A peer that is slow rather than gone gets longer (see `idle`): look again then.
            let rto = self.sender.rto(&self.config);
            let peer_floor = match self.config.congestion {
                // Both sides run the composition of the hello: the peer's rate is this one.
                crate::config::Congestion::Fixed { rate } => {
                    Some(rate.transmit_time(self.config.segment_size()))
                }
                _ => None,
            };
            match self.idle.deadline(
                self.config.idle_timeout,
                peer_floor,
                self.own_packet_spacing(),
                rto,
            ) {
                Some(deadline) if deadline > now => self.timers.set(Timer::Idle, deadline),
                _ => {
                    self.close_silently(CloseReason::IdleTimeout, now);
                    return;
                }
            }
        }
        if self.peer_silence_deadline().is_some_and(|t| t <= now) {
            let silent_for = now.saturating_since(self.silence.since().unwrap_or(now));
            self.close_silently(CloseReason::PeerUnresponsive { silent_for }, now);
            return;
        }
        if self.timers.is_expired(Timer::HandshakeTimeout, now) {
            self.close_silently(CloseReason::HandshakeTimeout, now);
            return;
        }
        if self.timers.is_expired(Timer::HelloRetransmit, now) {
            self.timers.stop(Timer::HelloRetransmit);
            self.handshake.hello_due = true;
        }
        if self.state == State::Established {
            self.sender_timeouts(now);
            self.receiver_timeouts(now);
        }
    }

    /// The next datagram this connection wants to send at `now`, written into `buf` (cleared first).
    pub(crate) fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> bool {
        self.last_now = self.last_now.max(now);
        buf.clear();
        let sent = self.poll_close_packet(buf)
            || self.poll_handshake_packet(now, buf)
            || self.poll_feedback(now, buf)
            || self.poll_data(now, buf);
        if sent {
            if let Some(keys) = self.keys.as_mut() {
                // Everything after the handshake is sealed; the accept carries its own proof.
                if is_protected_type(buf) {
                    keys.seal(buf);
                }
            }
            self.sender.pmtu.on_probe_sealed(buf);
            self.counters.packets_sent += 1;
            self.counters.bytes_sent += buf.len() as u64;
            let rtt = self.sender.rate.state().rtt;
            self.silence.on_sent(now, rtt);
        }
        sent
    }

    /// When `handle_timeout` or `poll_transmit` should next run.
    pub(crate) fn poll_timeout(&self) -> Option<Time> {
        let mut next = self.timers.next();
        if let Some(t) = self.peer_silence_deadline() {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        if self.state == State::Established {
            for t in [self.sender_poll_timeout(), self.receiver_poll_timeout()]
                .into_iter()
                .flatten()
            {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        next
    }

    /// The next event for the application.
    pub(crate) fn poll_event(&mut self) -> Option<Event> {
        self.events.pop()
    }

    /// Queue stream bytes; returns how many were accepted (less than `data.len()` when the send
    /// buffer fills, [`WriteError::Blocked`] when none fit).
    pub fn write(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        self.check_writable()?;
        let Some(stream) = self.sender.stream.as_mut() else {
            return Err(WriteError::Unsupported(
                "the byte stream needs sack-full + ordered",
            ));
        };
        if stream.is_finished() {
            return Err(WriteError::Finished);
        }
        if data.is_empty() {
            return Ok(0);
        }
        let written = stream.write(data);
        if written == 0 {
            self.sender.write_blocked = true;
            return Err(WriteError::Blocked);
        }
        if written < data.len() {
            self.sender.write_blocked = true;
        }
        self.sender.has_work = true;
        Ok(written)
    }

    /// Mark the end of this side's stream.
    pub fn finish(&mut self) -> Result<(), WriteError> {
        self.check_writable()?;
        if self.sender.finished {
            return Err(WriteError::Finished);
        }
        self.sender.finished = true;
        if let Some(stream) = self.sender.stream.as_mut() {
            stream.finish();
        }
        self.sender.has_work = true;
        let now = self.last_now;
        self.check_graceful_close(now);
        Ok(())
    }

    /// Read delivered stream bytes in order; `Ok(0)` means the peer finished and all was read.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<usize, ReadError> {
        let Some(stream) = self.receiver.stream.as_mut() else {
            return Err(ReadError::Unsupported(
                "the byte stream needs sack-full + ordered",
            ));
        };
        if buf.is_empty() {
            return Ok(0);
        }
        let n = stream.read(buf);
        if n > 0 {
            self.receiver.bytes_read += n as u64;
            self.counters.bytes_delivered += n as u64;
            self.receiver.consider_window_update();
            let now = self.last_now;
            self.check_graceful_close(now);
            return Ok(n);
        }
        if stream.is_finished() {
            return Ok(0);
        }
        match &self.state {
            State::Closed(reason) => Err(ReadError::Closed(reason.clone())),
            _ => Err(ReadError::Blocked),
        }
    }

    /// Queue one message (the unit of partial reliability and of unordered delivery).
    pub fn send_message(&mut self, now: Time, data: &[u8]) -> Result<(), WriteError> {
        self.send_message_with(now, data, None)
    }

    /// Queue one message given up on `deadline` after `now` (partial reliability only); `None`
    /// uses the connection's deadline, if any.
    pub fn send_message_with(
        &mut self,
        now: Time,
        data: &[u8],
        deadline: Option<Duration>,
    ) -> Result<(), WriteError> {
        self.last_now = self.last_now.max(now);
        self.check_writable()?;
        let deadline = match (self.config.error, deadline) {
            (crate::wire::ErrorControl::SackPartial { .. }, Some(d)) => Some(now + d),
            (
                crate::wire::ErrorControl::SackPartial {
                    deadline: Some(d), ..
                },
                None,
            ) => Some(now + d),
            (_, Some(_)) => {
                return Err(WriteError::Unsupported(
                    "a message deadline needs partial reliability (sack-partial)",
                ))
            }
            (_, None) => None,
        };
        let Some(queue) = self.sender.messages.as_mut() else {
            return Err(WriteError::Unsupported(
                "this composition carries a byte stream, not messages",
            ));
        };
        if self.sender.finished {
            return Err(WriteError::Finished);
        }
        // The peer reassembles a message whole: one larger than its buffer could never arrive.
        let peer_limit = self.sender.peer_recv_window.unwrap_or(u64::MAX);
        if data.len() > self.config.send_buffer
            || data.len() > u32::MAX as usize
            || data.len() as u64 > peer_limit
        {
            return Err(WriteError::TooLarge(data.len()));
        }
        match queue.push(now, data, deadline) {
            Ok(_) => {
                self.sender.has_work = true;
                Ok(())
            }
            Err(_) => {
                self.sender.write_blocked = true;
                Err(WriteError::Blocked)
            }
        }
    }

    /// Take the next delivered message, if any.
    pub fn recv_message(&mut self) -> Option<Vec<u8>> {
        let message = self.receiver.messages.as_mut()?.pop()?;
        self.counters.bytes_delivered += message.len() as u64;
        self.receiver.consider_window_update();
        Some(message)
    }

    /// Abort the connection, telling the peer `code` and `reason` (at most 128 bytes are sent).
    pub fn close(&mut self, now: Time, code: u32, reason: &[u8]) {
        self.last_now = self.last_now.max(now);
        if self.is_closed() {
            return;
        }
        self.close_with_packet(now, CloseReason::LocallyClosed, false, code, reason);
    }

    /// Change the target rate g at run time (the paper's setsockopt); ignored without gTFRC.
    pub fn set_target_rate(&mut self, target: Rate) {
        if let crate::config::Congestion::Gtfrc { target: t, .. } = &mut self.config.congestion {
            *t = target;
            self.sender.rate.set_target(target);
        }
    }

    /// RTT samples the sender took from feedback so far (RFC 5348 §4.3 step 2) and the latest
    /// (zero before the first): cheaper than [`Connection::stats`] for a caller that follows
    /// every sample.
    pub fn latest_rtt(&self) -> (u64, Duration) {
        (self.counters.rtt_samples, self.counters.latest_rtt)
    }

    /// Counters and rate-control state.
    pub fn stats(&self) -> Stats {
        let mut stats = self
            .counters
            .snapshot(self.sender.rate.state(), self.sender.acked_bytes());
        stats.target_met = self.sender.sla.met();
        stats.delivered_rate = self.sender.sla.delivered();
        stats.datagram_size = self.sender.pmtu.current();
        stats.pmtu = self.sender.pmtu.counters;
        stats
    }

    /// The composition and limits in force (for an accepted connection, those negotiated).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The peer's address.
    pub fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// Whether the handshake completed and the connection is not closed (a protected server
    /// connection completes on the client's first authenticated packet).
    pub fn is_established(&self) -> bool {
        self.state == State::Established && !self.awaiting_proof
    }

    /// Server: whether the client has yet to prove it holds the keys (a half-open connection).
    pub fn is_half_open(&self) -> bool {
        self.awaiting_proof && !self.is_closed()
    }

    /// Whether the connection has ended (see [`Event::Closed`]).
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed(_))
    }

    /// Why the connection ended, once it has.
    pub fn close_reason(&self) -> Option<&CloseReason> {
        match &self.state {
            State::Closed(reason) => Some(reason),
            _ => None,
        }
    }

    /// Bytes that `write` would accept now.
    pub fn send_capacity(&self) -> usize {
        if self.is_closed() || self.sender.finished {
            return 0;
        }
        if let Some(stream) = &self.sender.stream {
            stream.free_space()
        } else if let Some(queue) = &self.sender.messages {
            queue.free_space()
        } else {
            0
        }
    }

    /// In-order stream bytes ready to read (zero for message compositions).
    pub fn readable(&self) -> usize {
        self.receiver.stream.as_ref().map_or(0, |s| s.readable())
    }

    fn check_writable(&self) -> Result<(), WriteError> {
        match &self.state {
            State::Closed(reason) => Err(WriteError::Closed(reason.clone())),
            _ => Ok(()),
        }
    }
}
