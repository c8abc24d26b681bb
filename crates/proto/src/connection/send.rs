//! The sender path: paced data packets (retransmissions first, then new data within the peer's
//! window), and what feedback from the peer's receiver changes.

use super::handshake::wire_rtt_sample;
use super::pmtu::{PathMtu, TooBig, BASE_DATAGRAM};
use super::rto::RtoEstimator;
use super::sla::SlaMonitor;
use super::{Connection, Event, State};
use crate::cc::{self, FeedbackReport, Pacer, RateController};
use crate::config::Config;
use crate::delivery::{MessageSendQueue, StreamSendBuffer};
use crate::ec::{AckError, SackSender, SentChunk, SentPacket};
use crate::rate::Rate;
use crate::time::{Duration, Time};
use crate::wire::{Chunk, Data, ErrorControl, Feedback, Packet};

/// The wait between two window probes grows to at most 2^this RTOs.
const MAX_PROBE_BACKOFF: u32 = 6;

/// The retransmission timeout doubles on consecutive expiries up to 2^this RTOs.
const MAX_RTO_BACKOFF: u32 = 6;

/// The backed-off retransmission timeout never exceeds this (RFC 6298 §2.5: at least 60 s).
const MAX_RTO: Duration = Duration::from_secs(60);

/// Consecutive retransmission timeouts after which data packets larger than the base size are
/// suspected of falling into a black hole (RFC 8899 §4.3).
const BLACK_HOLE_TIMEOUTS: u32 = 2;

/// Most packets outstanding at once, whatever the buffers allow.
const MAX_OUTSTANDING_CAP: usize = 1 << 20;

/// A client's proof that it holds the packet keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proof {
    /// Nothing to prove (the server was heard, or the connection is not protected).
    Done,
    /// A packet should go out by then, empty if the application sent nothing.
    DueAt(Time),
    /// One went out; if everything sent is lost before the server is heard, another goes.
    Sent,
}

/// The sending half of a connection.
#[derive(Clone, Debug)]
pub(crate) struct Sender {
    pub(crate) rate: Box<dyn RateController>,
    pacer: Pacer,
    sack: SackSender,
    /// The byte stream's send buffer (stream compositions).
    pub(crate) stream: Option<StreamSendBuffer>,
    /// The message queue (message compositions).
    pub(crate) messages: Option<MessageSendQueue>,
    /// The next packet number; every packet takes a fresh one, retransmissions included.
    next_packet_number: u64,
    /// Packet numbers left unused now and then (RFC 9000 §21.4); `None` without protection.
    pub(crate) skips: Option<super::skip::Skips>,
    /// The receiver's reports checked against the SACK ranges (`Config::check_receiver`).
    pub(crate) check: Option<super::honesty::ReceiverCheck>,
    /// Whether loss events wait for a delegation group's decision (module `delegation`).
    pub(crate) defer_losses: bool,
    /// Flow control: stream bytes or message ids below this may be sent.
    peer_max_data: u64,
    /// The peer's receive buffer from the handshake: no message larger can ever be delivered.
    pub(crate) peer_recv_window: Option<u64>,
    /// Sequence of the newest feedback accepted (older or replayed feedback is dropped).
    last_feedback_sequence: Option<u64>,
    /// Most packets outstanding at once (bounds the scoreboard).
    max_outstanding: usize,
    /// Something may be sendable: data written, window opened, retransmission queued.
    pub(crate) has_work: bool,
    /// Client of a protected connection: where its proof of the keys stands (the server holds
    /// no slot for it until one of its packets authenticates).
    pub(crate) proof: Proof,
    /// The rate controller was told the sender is data-limited since the last packet.
    data_limited_signalled: bool,
    /// A write was refused or cut short: announce `Writable` once space frees up.
    pub(crate) write_blocked: bool,
    /// The application finished its side.
    pub(crate) finished: bool,
    /// `AllAcknowledged` was announced.
    all_acked_reported: bool,
    /// When to probe a peer whose window is closed (nothing in flight, data waiting).
    probe_at: Option<Time>,
    /// Probes sent since data last flowed (each doubles the wait before the next).
    probes: u32,
    /// Retransmission timer expiries since new data was last acknowledged (each doubles the
    /// wait before the next, RFC 6298 §5.5).
    rto_backoff: u32,
    /// Whether the target rate is met.
    pub(crate) sla: SlaMonitor,
    /// The sender ran out of data at least once since the last feedback.
    limited_since_feedback: bool,
    /// The loss event rate p of the newest feedback accepted, parts per billion (0 before any).
    pub(crate) last_loss_event_rate_ppb: u32,
    /// SRTT and RTTVAR for the retransmission timeout (RFC 6298 §2).
    rto_estimator: RtoEstimator,
    /// When the retransmission timer last expired, while backed off.
    last_rto_expiry: Option<Time>,
    /// Size of the latest data packet: pacing checks the next one against it, since the size of
    /// a packet is only known once it is built.
    last_data_size: usize,
    /// Scratch space for a packet's payload.
    payload: Vec<u8>,
    /// Path MTU discovery: the size data packets use, and the probes for a larger one.
    pub(crate) pmtu: PathMtu,
    /// The packet before the next was a probe: the next one says so, so that the receiver leaves
    /// the probe's number out of loss detection if the probe was lost.
    after_probe: bool,
}

impl Sender {
    /// Check the receiver's reports against the SACK ranges from now on.
    pub(super) fn check_receiver(&mut self) {
        let own_loss_history = self.stream.is_some();
        let mut check = super::honesty::ReceiverCheck::new(own_loss_history);
        check.defer_events(self.defer_losses && own_loss_history);
        self.check = Some(check);
        if own_loss_history {
            self.sack.list_acked_packets();
        }
    }

    /// Keep the sender's own loss history of a byte stream for a delegation group, without
    /// checking the receiver (module `delegation`).
    pub(super) fn keep_own_history(&mut self) {
        let mut check = super::honesty::ReceiverCheck::history_only();
        check.defer_events(self.defer_losses);
        self.check = Some(check);
        self.sack.list_acked_packets();
    }

    /// Whether the client's proof of the keys must go out at `now`.
    fn proof_due(&self, now: Time) -> bool {
        matches!(self.proof, Proof::DueAt(at) if at <= now)
    }

    /// The sender of a connection with `config`.
    pub(crate) fn new(now: Time, config: &Config) -> Self {
        let stream_mode = config.supports_stream();
        let per_packet = config.payload_per_packet();
        let max_outstanding = (2 * config.send_buffer / per_packet).clamp(64, MAX_OUTSTANDING_CAP);
        let pmtu = PathMtu::new(config.pmtu_discovery, BASE_DATAGRAM, config.max_datagram);
        Sender {
            rate: cc::build(&config.congestion, pmtu.current(), None, now),
            pacer: Pacer::new(config.max_burst),
            sack: SackSender::new(config.error, max_outstanding),
            stream: stream_mode.then(|| StreamSendBuffer::new(config.send_buffer)),
            messages: (!stream_mode).then(|| MessageSendQueue::new(config.send_buffer)),
            next_packet_number: 0,
            skips: None,
            check: None,
            defer_losses: false,
            peer_max_data: 0,
            peer_recv_window: None,
            last_feedback_sequence: None,
            max_outstanding,
            has_work: false,
            proof: Proof::Done,
            data_limited_signalled: false,
            write_blocked: false,
            finished: false,
            all_acked_reported: false,
            probe_at: None,
            probes: 0,
            rto_backoff: 0,
            sla: SlaMonitor::default(),
            limited_since_feedback: false,
            last_loss_event_rate_ppb: 0,
            rto_estimator: RtoEstimator::default(),
            last_rto_expiry: None,
            last_data_size: pmtu.current(),
            payload: Vec::with_capacity(config.max_datagram),
            pmtu,
            after_probe: false,
        }
    }

    /// Start the rate controller afresh, with a first RTT sample if the handshake gave one.
    pub(crate) fn rebuild_rate_controller(
        &mut self,
        now: Time,
        config: &Config,
        rtt: Option<Duration>,
    ) {
        self.rate = cc::build(&config.congestion, self.pmtu.current(), rtt, now);
        if let Some(rtt) = rtt.filter(|r| !r.is_zero()) {
            // RFC 6298 §2.2: the handshake's round trip is the first measurement.
            self.rto_estimator.on_sample(rtt);
        }
        self.pacer = Pacer::new(config.max_burst);
    }

    /// The peer's initial receive window, from the handshake.
    pub(crate) fn set_peer_window(&mut self, config: &Config, recv_window: u64) {
        self.peer_recv_window = Some(recv_window);
        self.peer_max_data = if self.stream.is_some() {
            recv_window
        } else {
            // Message windows count message ids: a window's worth of full-size packets.
            let per_packet = config.payload_per_packet() as u64;
            (recv_window / per_packet).max(1)
        };
    }

    /// Application bytes the peer acknowledged.
    pub(crate) fn acked_bytes(&self) -> u64 {
        match (&self.stream, &self.messages) {
            (Some(stream), _) => stream.acked_bytes(),
            (None, Some(queue)) => queue.acked_bytes(),
            (None, None) => 0,
        }
    }

    /// Everything written was acknowledged (or abandoned) and the application finished.
    pub(crate) fn all_acked(&self) -> bool {
        if !self.finished {
            return false;
        }
        match (&self.stream, &self.messages) {
            (Some(stream), _) => stream.all_acked(),
            (None, Some(queue)) => queue.all_acked(),
            (None, None) => true,
        }
    }

    /// The retransmission timeout, SRTT + 4 RTTVAR and at least `config.min_rto` (RFC 6298 §2).
    ///
    /// Feedback comes once per RTT (RFC 5348 §6.2), so an acknowledgement can take up to two
    /// RTTs; the minimum (1 s by default, RFC 6298 §2.4) covers that on short paths.
    pub(crate) fn rto(&self, config: &Config) -> Duration {
        self.rto_estimator.rto(config.min_rto)
    }

    /// The probe timeout (RFC 9002 §6.2.1), the unit of a peer's silence.
    pub(crate) fn pto(&self, config: &Config) -> Duration {
        self.rto_estimator.pto(config.initial_rtt)
    }

    /// Whether data packets are in flight, unacknowledged and not yet declared lost.
    pub(crate) fn has_in_flight(&self) -> bool {
        self.sack.outstanding() > 0
    }

    /// When the retransmission timer expires: an RTO after the oldest outstanding packet left,
    /// and, after expiries without progress, no sooner than the backed-off timeout after the
    /// last one (RFC 6298 §5.5 doubles it, §5.6 restarts the timer from the expiry).
    fn retransmission_deadline(&self, config: &Config) -> Option<Time> {
        let base = self.rto(config);
        let oldest = self.sack.poll_timeout(base)?;
        let backed_off = base
            .saturating_mul(1 << self.rto_backoff)
            .min(MAX_RTO.max(base));
        Some(
            self.last_rto_expiry
                .map_or(oldest, |last| oldest.max(last + backed_off)),
        )
    }

    /// The retransmission timer expired at `now`: back off (RFC 6298 §5.5), at most 2^6 times.
    fn on_retransmission_timeout(&mut self, now: Time) {
        self.rto_backoff = (self.rto_backoff + 1).min(MAX_RTO_BACKOFF);
        self.last_rto_expiry = Some(now);
    }

    /// New data was acknowledged: the timeout is computed afresh from the RTT (RFC 6298 §5.7).
    fn on_progress(&mut self) {
        self.rto_backoff = 0;
        self.last_rto_expiry = None;
    }
}

impl Connection {
    /// Timers of the sending half: the rate controller's and the retransmission timer.
    pub(super) fn sender_timeouts(&mut self, now: Time) {
        if self.sender.rate.poll_timeout().is_some_and(|t| t <= now) {
            self.sender.rate.handle_timeout(now);
        }
        if self
            .sender
            .retransmission_deadline(&self.config)
            .is_some_and(|t| t <= now)
        {
            // Every packet outstanding longer than one RTO is lost; the back-off only spaces the
            // expiries, so a dead path is not probed once per RTO.
            let lost = self
                .sender
                .sack
                .handle_timeout(now, self.sender.rto(&self.config));
            self.counters.packets_lost += lost;
            self.give_up_unrepaired();
            if lost > 0 {
                self.sender.on_retransmission_timeout(now);
                self.sender.has_work = true;
                if self.sender.rto_backoff >= BLACK_HOLE_TIMEOUTS
                    && self.sender.pmtu.on_black_hole()
                {
                    // RFC 8899 §4.3: whole packets keep vanishing: perhaps only large ones do.
                    self.on_datagram_size_changed();
                }
            }
        }
        let probe_timeout = self.sender.rto(&self.config);
        self.sender.pmtu.on_timeout(now, probe_timeout);
        self.abandon_expired(now);
    }

    /// Data packets changed size (path MTU discovery): TFRC's s follows (RFC 5348 §4.1).
    fn on_datagram_size_changed(&mut self) {
        let size = self.sender.pmtu.current();
        self.sender.rate.set_segment_size(size);
    }

    /// An ICMP Packet Too Big (or IPv4 "fragmentation needed") came back from the path, naming
    /// `mtu` (an IP packet size) and quoting the start of the datagram it concerns; believed only
    /// if it quotes the probe on its way (RFC 8899 §4.6.1).
    pub(crate) fn on_packet_too_big(&mut self, mtu: usize, quoted: &[u8]) {
        let headers = match self.remote {
            std::net::SocketAddr::V6(a) if a.ip().to_ipv4_mapped().is_none() => 48,
            _ => 28,
        };
        self.sender
            .pmtu
            .on_packet_too_big(mtu.saturating_sub(headers), quoted);
    }

    /// The local network refused to send a datagram of `size` bytes for this connection
    /// (EMSGSIZE), or a validated ICMP Packet Too Big said it does not pass (RFC 8899 §4.6).
    pub(crate) fn on_datagram_too_big(&mut self, now: Time, size: usize) {
        if self.is_closed() {
            return;
        }
        match self.sender.pmtu.on_too_big(size) {
            TooBig::ProbeFailed | TooBig::Ignored => {}
            TooBig::Shrunk => {
                // The refused packet is lost; the SACK repairs it in smaller packets.
                self.on_datagram_size_changed();
                self.sender.has_work = true;
            }
            TooBig::Fatal => {
                self.close_silently(super::CloseReason::DatagramTooLarge { size }, now);
            }
        }
    }

    /// The earliest deadline of the sending half.
    pub(super) fn sender_poll_timeout(&self) -> Option<Time> {
        let mut next = self.sender.rate.poll_timeout();
        next = min_time(next, self.sender.retransmission_deadline(&self.config));
        next = min_time(
            next,
            self.sender.pmtu.poll_timeout(self.sender.rto(&self.config)),
        );
        if let (ErrorControl::SackPartial { .. }, Some(queue)) =
            (self.config.error, &self.sender.messages)
        {
            // Partial reliability: a message is given up at its deadline, not at the next packet;
            // deadlines may be per message, so the earliest queued counts, not the oldest message's.
            next = min_time(next, queue.next_expiry());
        }
        if let Some(probe) = self.sender.probe_at.filter(|t| *t > self.last_now) {
            next = min_time(next, Some(probe));
        }
        if let Proof::DueAt(at) = self.sender.proof {
            next = min_time(next, Some(at));
        }
        if self.wants_to_send() {
            let pace = self.sender.pacer.next_send_time(
                self.last_now,
                self.sending_rate(),
                self.sender.last_data_size,
            );
            next = min_time(next, Some(pace));
        }
        next
    }

    /// The spacing of this side's packets at the allowed rate, if it has data to send or in flight.
    pub(super) fn own_packet_spacing(&self) -> Option<Duration> {
        let has_unsent = match (&self.sender.stream, &self.sender.messages) {
            (Some(stream), _) => stream.has_unsent(),
            (None, Some(queue)) => queue.has_unsent(),
            (None, None) => false,
        };
        let busy = has_unsent
            || self.sender.sack.outstanding() > 0
            || self.sender.sack.has_retransmissions();
        busy.then(|| {
            self.sending_rate()
                .transmit_time(self.config.segment_size())
        })
    }

    /// The rate the pacer follows: the congestion control's allowed rate X, under the
    /// configured cap if any.
    fn sending_rate(&self) -> Rate {
        let allowed = self.sender.rate.allowed_rate();
        match self.config.max_rate {
            Some(cap) => allowed.min(cap),
            None => allowed,
        }
    }

    /// Whether a data packet might go out if pacing allowed it.
    fn wants_to_send(&self) -> bool {
        self.state == State::Established
            && self.remote_id.is_some()
            && (self.sender.has_work
                || self.sender.sack.has_retransmissions()
                || self.sender.probe_at.is_some_and(|t| t <= self.last_now)
                || self.sender.proof_due(self.last_now))
    }

    /// Partial reliability: give up on messages past their deadline or retransmission limit.
    fn abandon_expired(&mut self, now: Time) {
        if let ErrorControl::SackPartial {
            max_retransmissions,
            ..
        } = self.config.error
        {
            if let Some(queue) = self.sender.messages.as_mut() {
                if queue.abandon(now, max_retransmissions) > 0 {
                    self.sender.has_work = true;
                }
            }
        }
    }

    /// The next data packet, if pacing at the allowed rate X lets one out at `now`.
    pub(super) fn poll_data(&mut self, now: Time, buf: &mut Vec<u8>) -> bool {
        let Some(destination) = self.remote_id.filter(|_| self.wants_to_send()) else {
            return false;
        };
        let rate = self.sending_rate();
        if self
            .sender
            .pacer
            .next_send_time(now, rate, self.sender.last_data_size)
            > now
        {
            return false;
        }
        if self.poll_probe(now, destination, rate, buf) {
            return true;
        }
        if self.sender.proof == Proof::Sent && self.sender.sack.outstanding() == 0 {
            // Everything sent since the accept was lost, and the server not heard: prove again.
            self.sender.proof = Proof::DueAt(now);
        }
        // QSTP paper §4, Fig. 2: packets to retransmit go ahead of new data.
        self.abandon_expired(now);
        let mut payload = std::mem::take(&mut self.sender.payload);
        payload.clear();
        let picked = match self.next_retransmission(now, &mut payload) {
            Some(chunk) => {
                self.counters.packets_retransmitted += 1;
                Some(chunk)
            }
            None => self.next_new_data(&mut payload),
        };
        let picked = match picked {
            Some(chunk) => {
                self.sender.probe_at = None;
                self.sender.probes = 0;
                Some(chunk)
            }
            None => (self.empty_packet_needed(now) || self.sender.proof_due(now))
                .then_some((Chunk::Empty, SentChunk::Empty)),
        };
        if picked.is_some() && matches!(self.sender.proof, Proof::DueAt(_)) {
            self.sender.proof = Proof::Sent;
        }
        let Some((chunk, sent_chunk)) = picked else {
            self.sender.payload = payload;
            self.sender.has_work = false;
            if !self.sender.data_limited_signalled {
                // RFC 5348 §8.2.1: a send opportunity without data.
                self.sender.rate.on_data_limited(now);
                self.sender.data_limited_signalled = true;
                self.sender.limited_since_feedback = true;
            }
            return false;
        };
        let (packet_number, skipped) = match self.sender.skips.as_mut() {
            Some(skips) => skips.number_for(self.sender.next_packet_number),
            None => (self.sender.next_packet_number, false),
        };
        // RFC 9000 §21.4: a sender that runs its own loss history says nothing of its skips, so
        // no receiver can steer around them; one that believes its receiver's must tell it.
        let previous_skipped = match self.sender.check.as_mut() {
            Some(check) if skipped && check.own_loss_history() => {
                check.on_not_loss(packet_number - 1);
                false
            }
            _ => skipped,
        };
        // The probe before this packet, if lost, is no congestion loss (RFC 8899 §4.4).
        let previous_skipped = previous_skipped || std::mem::take(&mut self.sender.after_probe);
        self.sender.next_packet_number = packet_number + 1;
        let skip_to = self.advertised_skip();
        let rtt_micros =
            u32::try_from(self.sender.rate.state().rtt.as_micros()).unwrap_or(u32::MAX);
        let data = Data {
            destination,
            packet_number,
            // RFC 5348 §3.2.1: every data packet carries a timestamp and the sender's RTT estimate.
            timestamp: now.wire_micros(),
            rtt: rtt_micros,
            chunk,
            skip_to,
            previous_skipped,
            payload: &payload,
        };
        Packet::Data(data).encode(buf);
        let size = buf.len();
        self.sender.payload = payload;
        self.sender.sack.on_sent(SentPacket {
            packet_number,
            sent: now,
            size,
            chunk: sent_chunk,
        });
        if let (Some(_), Some(queue)) = (skip_to, self.sender.messages.as_mut()) {
            queue.on_packet_sent(packet_number);
        }
        self.sender.pacer.on_sent(now, rate, size);
        self.sender.last_data_size = size;
        self.sender.rate.on_packet_sent(now, size);
        self.sender.data_limited_signalled = false;
        true
    }

    /// A path MTU probe (RFC 8899 §4.1), if one is due and data in flight will bring the
    /// feedback that acknowledges it.
    fn poll_probe(
        &mut self,
        now: Time,
        destination: crate::wire::ConnectionId,
        rate: Rate,
        buf: &mut Vec<u8>,
    ) -> bool {
        if self.sender.sack.outstanding() == 0 || self.sender.after_probe {
            return false;
        }
        let next = self.sender.next_packet_number;
        if self
            .sender
            .skips
            .as_ref()
            .is_some_and(|s| s.skips(next) || s.skips(next + 1))
        {
            // The packet after a probe must be free to say the probe is no loss.
            return false;
        }
        let Some(size) = self.sender.pmtu.probe_due(now) else {
            return false;
        };
        let header = Data::header_len(&Chunk::Padding, false);
        let padding = size
            .saturating_sub(header + self.config.packet_overhead())
            .min(crate::wire::MAX_DATAGRAM);
        let mut payload = std::mem::take(&mut self.sender.payload);
        payload.clear();
        payload.resize(padding, 0);
        let rtt_micros =
            u32::try_from(self.sender.rate.state().rtt.as_micros()).unwrap_or(u32::MAX);
        Packet::Data(Data {
            destination,
            packet_number: next,
            timestamp: now.wire_micros(),
            rtt: rtt_micros,
            chunk: Chunk::Padding,
            skip_to: None,
            previous_skipped: std::mem::take(&mut self.sender.after_probe),
            payload: &payload,
        })
        .encode(buf);
        self.sender.payload = payload;
        self.sender.next_packet_number = next + 1;
        self.sender.after_probe = true;
        self.sender.sack.on_untracked_sent(next);
        if let Some(check) = self.sender.check.as_mut() {
            // RFC 8899 §4.4: a lost probe is no congestion.
            check.on_not_loss(next);
        }
        self.sender.pmtu.on_probe_sent(now, next, size);
        self.sender.pacer.on_sent(now, rate, buf.len());
        self.sender.rate.on_packet_sent(now, buf.len());
        true
    }

    /// The skip point advertised to the receiver (message compositions that give up on data).
    fn advertised_skip(&self) -> Option<u64> {
        match (self.config.error, &self.sender.messages) {
            (ErrorControl::SackFull, _) | (_, None) => None,
            (_, Some(queue)) => Some(queue.skip_to()),
        }
    }

    /// A chunk from the retransmission queue the buffers still want delivered.
    fn next_retransmission(
        &mut self,
        now: Time,
        payload: &mut Vec<u8>,
    ) -> Option<(Chunk, SentChunk)> {
        while let Some(chunk) = self.sender.sack.next_retransmission() {
            payload.clear();
            match chunk {
                SentChunk::Stream { offset, len, fin } => {
                    // Datagrams may have shrunk since the chunk was first sent (RFC 8899 §4.3):
                    // what does not fit goes back first in line.
                    let header = Data::header_len(&Chunk::Stream { offset, fin }, false);
                    let room = (self.sender.pmtu.current() - self.config.packet_overhead())
                        .saturating_sub(header)
                        .max(1) as u32;
                    let (len, fin, rest) = if len > room {
                        let rest = SentChunk::Stream {
                            offset: offset + u64::from(room),
                            len: len - room,
                            fin,
                        };
                        (room, false, Some(rest))
                    } else {
                        (len, fin, None)
                    };
                    let stream = self.sender.stream.as_ref()?;
                    if stream.copy_range(offset, len, payload) {
                        if let Some(rest) = rest {
                            self.sender.sack.requeue_remainder(rest);
                        }
                        let sent = SentChunk::Stream { offset, len, fin };
                        return Some((Chunk::Stream { offset, fin }, sent));
                    }
                }
                SentChunk::Message {
                    id,
                    offset,
                    len,
                    total_len,
                } => {
                    let queue = self.sender.messages.as_mut()?;
                    if !queue.copy_fragment(id, offset, len, payload) {
                        continue;
                    }
                    let count = queue.on_retransmitted(id);
                    if let ErrorControl::SackPartial {
                        max_retransmissions: Some(limit),
                        ..
                    } = self.config.error
                    {
                        if count > limit {
                            queue.abandon(now, Some(limit));
                            continue;
                        }
                    }
                    return Some((
                        Chunk::Message {
                            id,
                            offset,
                            total_len,
                        },
                        chunk,
                    ));
                }
                SentChunk::Empty => {}
            }
        }
        None
    }

    /// Never-sent data within the peer's window and the outstanding limit.
    fn next_new_data(&mut self, payload: &mut Vec<u8>) -> Option<(Chunk, SentChunk)> {
        if self.sender.sack.outstanding() >= self.sender.max_outstanding {
            return None;
        }
        // The plaintext a datagram has room for once protection added its sequence and tag.
        let segment = self.sender.pmtu.current() - self.config.packet_overhead();
        let has_skip = self.advertised_skip().is_some();
        let max_data = self.sender.peer_max_data;
        payload.clear();
        if let Some(stream) = self.sender.stream.as_mut() {
            let header = Data::header_len(
                &Chunk::Stream {
                    offset: u64::MAX,
                    fin: true,
                },
                has_skip,
            );
            let (offset, fin) =
                stream.next_unsent(segment.saturating_sub(header), max_data, payload)?;
            let len = payload.len() as u32;
            return Some((
                Chunk::Stream { offset, fin },
                SentChunk::Stream { offset, len, fin },
            ));
        }
        let queue = self.sender.messages.as_mut()?;
        let header = Data::header_len(
            &Chunk::Message {
                id: u64::MAX,
                offset: u32::MAX,
                total_len: u32::MAX,
            },
            has_skip,
        );
        let (id, offset, total_len) =
            queue.next_unsent(segment.saturating_sub(header), max_data, payload)?;
        let len = payload.len() as u32;
        Some((
            Chunk::Message {
                id,
                offset,
                total_len,
            },
            SentChunk::Message {
                id,
                offset,
                len,
                total_len,
            },
        ))
    }

    /// With nothing to send, whether an empty data packet must go anyway: to tell the receiver a
    /// new skip point (else it may wait for abandoned messages forever), or to probe a peer whose
    /// window is closed (its window update may have been lost), at most once per RTO.
    fn empty_packet_needed(&mut self, now: Time) -> bool {
        if self.sender.sack.outstanding() > 0 {
            // Packets in flight will bring feedback, and with it the window and skip confirmation.
            self.sender.probe_at = None;
            return false;
        }
        if self.advertised_skip().is_some()
            && self
                .sender
                .messages
                .as_ref()
                .is_some_and(|q| q.skip_unconfirmed())
        {
            return true;
        }
        let has_unsent = match (&self.sender.stream, &self.sender.messages) {
            (Some(stream), _) => stream.has_unsent(),
            (None, Some(queue)) => queue.has_unsent(),
            (None, None) => false,
        };
        if !has_unsent {
            self.sender.probe_at = None;
            return false;
        }
        // RFC 6298 §5.5-style backoff: the wait doubles with every unanswered probe.
        let rto = self.sender.rto(&self.config);
        match self.sender.probe_at {
            Some(at) if at <= now => {
                self.sender.probes = (self.sender.probes + 1).min(MAX_PROBE_BACKOFF);
                // Re-armed once the probe was answered (or declared lost).
                self.sender.probe_at = None;
                true
            }
            Some(_) => false,
            None => {
                self.sender.probe_at = Some(now + rto.saturating_mul(1 << self.sender.probes));
                false
            }
        }
    }

    /// Losses error control will not repair (no error control): delivery gives up on them.
    fn give_up_unrepaired(&mut self) {
        while let Some(chunk) = self.sender.sack.next_unrepaired() {
            if let (SentChunk::Message { id, .. }, Some(queue)) =
                (chunk, self.sender.messages.as_mut())
            {
                queue.on_lost(id);
            }
        }
    }

    /// Close because the peer broke the protocol: `reason` for this side, `wire` for the peer.
    fn close_for_violation(&mut self, now: Time, reason: String, wire: &[u8]) {
        self.close_with_packet(
            now,
            crate::connection::CloseReason::ProtocolViolation(reason),
            false,
            0,
            wire,
        );
    }

    /// Feedback from the peer's receiver (RFC 5348 §4.3 at the sender, and the SACK ranges).
    pub(super) fn on_feedback(&mut self, now: Time, feedback: &Feedback) -> bool {
        if self.state != State::Established {
            return false;
        }
        let expected = self
            .sender
            .last_feedback_sequence
            .map_or(0, |last| last + 1);
        if feedback.sequence < expected {
            // Stale, reordered or replayed feedback.
            return false;
        }
        if feedback.sequence - expected > MAX_FEEDBACK_SEQUENCE_JUMP {
            // No honest receiver loses this many feedbacks in a row: believing the jump would
            // make every later, honest feedback look stale.
            self.counters.bogus_acks += 1;
            return false;
        }
        // Ranges naming packets never sent are clipped, not fatal: a spoofed data packet numbered
        // far ahead makes an honest receiver acknowledge it, and its report stays useful.
        let (ranges, clipped) = clip_to_sent(&feedback.ack_ranges, self.sender.sack.largest_sent());
        if clipped {
            self.counters.bogus_acks += 1;
        }
        if let Some(skipped) = self
            .sender
            .skips
            .as_ref()
            .and_then(|s| s.acknowledged(&ranges))
        {
            // RFC 9000 §21.4: acknowledging a number never sent is an optimistic acknowledgement.
            let reason = format!("the peer acknowledged packet {skipped}, which was never sent");
            self.close_for_violation(now, reason, b"optimistic acknowledgement");
            return true;
        }
        let result = match self.sender.sack.on_ack(now, &ranges) {
            Ok(result) => result,
            Err(AckError::NeverSent) | Err(AckError::Malformed) => return false,
        };
        let before = self.sender.pmtu.current();
        self.sender.pmtu.on_ack(&ranges);
        if self.sender.pmtu.current() != before {
            self.on_datagram_size_changed();
        }
        self.sender.last_feedback_sequence = Some(feedback.sequence);
        self.counters.packets_lost += result.lost_packets;
        if result.acked_packets > 0 {
            self.sender.on_progress();
        }
        // RFC 5348 §4.3 step 2: R_sample = (t_now - t_recvdata) - t_delay.
        let measured =
            wire_rtt_sample(now.wire_micros(), feedback.timestamp_echo, feedback.t_delay);
        if let Some(sample) = measured.filter(|r| !r.is_zero()) {
            // Every data packet has a fresh number and timestamp, so the echo names one
            // transmission and Karn's rule (RFC 6298 §3) is kept.
            self.sender.rto_estimator.on_sample(sample);
            self.counters.rtt_samples += 1;
            self.counters.latest_rtt = sample;
        }
        let rtt_sample = measured.unwrap_or_else(|| self.sender.rate.state().rtt);
        let mut x_recv = Rate::from_bps(feedback.x_recv);
        let mut ppb = feedback.loss_event_rate_ppb.min(1_000_000_000);
        if let Some(check) = self.sender.check.as_mut() {
            let rtt = Some(self.sender.rate.state().rtt)
                .filter(|r| !r.is_zero())
                .unwrap_or(rtt_sample);
            // The judging window (module `honesty`): RTO = SRTT + 4 RTTVAR (RFC 6298 §2.3).
            let window = self.sender.rto_estimator.rto(Duration::ZERO);
            check.on_acked(
                now,
                result.acked_bytes,
                &result.acked_list,
                (rtt, window),
                self.config.segment_size(),
            );
            x_recv = check.cap_x_recv(now, x_recv, rtt, self.config.segment_size());
            if let Some(reason) = check.judge(f64::from(ppb) / 1e9) {
                self.close_for_violation(now, reason, b"loss reports contradict acknowledgements");
                return true;
            }
            if check.own_loss_history() {
                // The smaller of the two (module `honesty`): the receiver's p also counts the
                // skipped numbers, ours also counts packets whose acknowledgement was lost.
                let ours = (check.loss_event_rate() * 1e9).round() as u32;
                ppb = if self.sender.defer_losses {
                    // In a delegation group the sender's own history is the one that holds,
                    // gives and takes loss events (module `delegation`).
                    ours
                } else {
                    ppb.min(ours)
                };
            }
        }
        if ppb > self.sender.last_loss_event_rate_ppb {
            // Between loss events p only falls or holds (RFC 5348 §5.4): a rise is a new event.
            self.counters.loss_event_rate_increases += 1;
        }
        self.sender.last_loss_event_rate_ppb = ppb;
        let report = FeedbackReport {
            rtt_sample,
            x_recv,
            loss_event_rate: f64::from(ppb) / 1e9,
        };
        self.sender.rate.on_feedback(now, &report);
        let limited = std::mem::take(&mut self.sender.limited_since_feedback);
        if let Some(met) = self
            .sender
            .sla
            .on_feedback(&self.sender.rate.state(), limited)
        {
            self.events.push(Event::TargetMet(met));
        }
        for chunk in &result.acked {
            match *chunk {
                SentChunk::Stream { offset, len, fin } => {
                    if let Some(stream) = self.sender.stream.as_mut() {
                        stream.on_acked(offset, len, fin);
                    }
                }
                SentChunk::Message {
                    id, offset, len, ..
                } => {
                    if let Some(queue) = self.sender.messages.as_mut() {
                        queue.on_acked(id, offset, len);
                    }
                }
                SentChunk::Empty => {}
            }
        }
        if let (Some(largest), Some(queue)) = (result.largest_acked, self.sender.messages.as_mut())
        {
            queue.on_packet_acked(largest);
        }
        self.give_up_unrepaired();
        if feedback.max_data > self.sender.peer_max_data {
            self.sender.peer_max_data = feedback.max_data;
        }
        self.sender.has_work = true;
        if self.sender.write_blocked && self.send_capacity() > 0 {
            self.sender.write_blocked = false;
            self.events.push(Event::Writable);
        }
        if !self.sender.all_acked_reported && self.sender.all_acked() {
            self.sender.all_acked_reported = true;
            self.events.push(Event::AllAcknowledged);
        }
        true
    }
}

/// The earlier of two optional deadlines.
pub(crate) fn min_time(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Most feedback sequence numbers a feedback may skip ahead of the next one expected.
pub(crate) const MAX_FEEDBACK_SEQUENCE_JUMP: u64 = 4096;

/// `ranges` (highest first) without packet numbers above `largest_sent`, and whether any were cut;
/// borrowed as they are in the common, honest case.
fn clip_to_sent(
    ranges: &[(u64, u64)],
    largest_sent: Option<u64>,
) -> (std::borrow::Cow<'_, [(u64, u64)]>, bool) {
    use std::borrow::Cow;
    let Some(largest) = largest_sent else {
        return (Cow::Borrowed(&[]), !ranges.is_empty());
    };
    // Highest first: only the first range can reach above the largest packet sent.
    if ranges.first().map_or(true, |&(_, hi)| hi <= largest) {
        return (Cow::Borrowed(ranges), false);
    }
    let kept = ranges
        .iter()
        .filter(|&&(lo, _)| lo <= largest)
        .map(|&(lo, hi)| (lo, hi.min(largest)))
        .collect();
    (Cow::Owned(kept), true)
}
