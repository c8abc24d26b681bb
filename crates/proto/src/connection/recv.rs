//! The receiver path: validation of data packets, the duplicate filter, the TFRC receiver,
//! reassembly, and feedback (once per RTT and on new loss events, with SACK ranges).

use super::{Connection, Event, State};
use crate::cc::TfrcReceiver;
use crate::config::Config;
use crate::delivery::{DeliveryError, MessageReassembler, StreamReassembler};
use crate::ec::ReceivedPackets;
use crate::time::{Duration, Time};
use crate::wire::{Chunk, Data, Feedback, Packet, MAX_ACK_RANGES};

/// A data packet numbered this far beyond the largest received is refused (out of window).
pub(crate) const PACKET_NUMBER_WINDOW: u64 = 1 << 20;

/// Ranges of received packet numbers remembered for the duplicate filter and SACK.
const RECEIVED_RANGES: usize = 4 * MAX_ACK_RANGES;

/// What became of a data packet's payload.
enum Reassembly {
    /// Buffered (or a duplicate of buffered data).
    Buffered,
    /// Refused for lack of buffer space: the sender will send it again.
    NoRoom,
    /// Refused as inconsistent with what was received, or of the wrong kind for this connection.
    Invalid,
}

/// The receiving half of a connection.
#[derive(Debug, Clone)]
pub(crate) struct Receiver {
    received: ReceivedPackets,
    tfrc: TfrcReceiver,
    /// Reassembly of the peer's byte stream (stream compositions).
    pub(crate) stream: Option<StreamReassembler>,
    /// Reassembly of the peer's messages (message compositions).
    pub(crate) messages: Option<MessageReassembler>,
    /// Feedback should go out on the next transmit.
    feedback_due: bool,
    /// Sequence number of the next feedback.
    next_feedback_sequence: u64,
    /// The window last advertised.
    advertised_max_data: u64,
    /// Advertise again once the window grew by this much (a window update).
    window_update_step: u64,
    /// Where the peer's stream ends, once its fin arrived.
    fin_offset: Option<u64>,
    /// Stream bytes the application read.
    pub(crate) bytes_read: u64,
    /// `Finished` was announced.
    finished_reported: bool,
}

impl Receiver {
    /// The receiver of a connection with `config`.
    pub(crate) fn new(config: &Config) -> Self {
        let stream_mode = config.supports_stream();
        let per_packet = config.payload_per_packet();
        let stream = stream_mode.then(|| StreamReassembler::new(config.recv_buffer));
        let messages = (!stream_mode)
            .then(|| MessageReassembler::new(config.order, config.recv_buffer, per_packet));
        let window_update_step = if stream_mode {
            (config.recv_buffer / 4).max(1) as u64
        } else {
            (config.recv_buffer / per_packet / 4).max(1) as u64
        };
        let mut receiver = Receiver {
            received: ReceivedPackets::new(RECEIVED_RANGES),
            tfrc: TfrcReceiver::new(config.segment_size()),
            stream,
            messages,
            feedback_due: false,
            next_feedback_sequence: 0,
            advertised_max_data: 0,
            window_update_step,
            fin_offset: None,
            bytes_read: 0,
            finished_reported: false,
        };
        receiver.advertised_max_data = receiver.max_data();
        receiver
    }

    /// The segment size was negotiated down: measure with the new one.
    pub(crate) fn resize_segment(&mut self, config: &Config) {
        self.tfrc = TfrcReceiver::new(config.segment_size());
    }

    /// What this side lets the peer send: stream bytes or message ids below this.
    fn max_data(&self) -> u64 {
        match (&self.stream, &self.messages) {
            (Some(stream), _) => stream.max_data(),
            (None, Some(messages)) => messages.max_data(),
            (None, None) => 0,
        }
    }

    /// The application read: if the window grew enough, tell the peer without waiting for data.
    pub(crate) fn consider_window_update(&mut self) {
        if self.max_data() >= self.advertised_max_data + self.window_update_step {
            self.feedback_due = true;
        }
    }
}

impl Connection {
    /// A data packet for this connection; false if it was dropped.
    pub(super) fn on_data(&mut self, now: Time, data: &Data<'_>, size: usize) -> bool {
        if self.state != State::Established {
            // A client drops data racing ahead of a lost accept; it will be sent again.
            return false;
        }
        let largest = self.receiver.received.largest().unwrap_or(0);
        if data.packet_number > largest.saturating_add(PACKET_NUMBER_WINDOW) {
            return false;
        }
        if self.receiver.received.contains(data.packet_number) {
            // A duplicate (or too old to tell): the network already delivered it once.
            return false;
        }
        let buffered = match self.reassemble(data) {
            Reassembly::Buffered => true,
            Reassembly::NoRoom => false,
            Reassembly::Invalid => return false,
        };
        // Recorded (and so acknowledged) only once the data is safely buffered: refused data is
        // left out of the SACK ranges so the sender sends it again.
        if buffered {
            self.receiver.received.insert(data.packet_number);
        }
        // The network delivered the packet whether or not the buffer had room: TFRC measures the
        // path (RFC 5348 §5: loss events are packets the network lost), so a slow reader must not
        // look like congestion.
        let sender_rtt = Duration::from_micros(u64::from(data.rtt));
        if data.previous_skipped && data.packet_number > 0 {
            // RFC 9000 §21.4: the sender never sent the number before this one; the network did
            // not lose it. Left out of the SACK ranges, so acknowledging it stays a lie. (Or it
            // was a path MTU probe, whose loss is no congestion either: RFC 8899 §4.4.)
            self.receiver.tfrc.on_skipped(now, data.packet_number - 1);
        }
        if data.chunk == Chunk::Padding {
            // RFC 8899 §4.4: a probe is acknowledged (it is in the SACK ranges now) but is no
            // part of loss detection nor of the receive rate; the next packet covers its number.
            return buffered;
        }
        // RFC 5348 §6.1: feedback at once for the first packet and on a new loss event.
        if self
            .receiver
            .tfrc
            .on_data(now, data.packet_number, data.timestamp, sender_rtt, size)
        {
            self.receiver.feedback_due = true;
        }
        if !buffered {
            return false;
        }
        self.announce_receive_progress();
        true
    }

    /// Put the payload where it belongs, or say why it could not be.
    fn reassemble(&mut self, data: &Data<'_>) -> Reassembly {
        if let (Some(skip_to), Some(messages)) = (data.skip_to, self.receiver.messages.as_mut()) {
            // The sender gave up on (or, without error control, no longer holds) messages below.
            // Applied before the fragment: it may be what makes room for it, and a skip point is
            // true whether or not this fragment can be taken (it only ever grows).
            messages.skip_to(skip_to);
        }
        let result = match data.chunk {
            Chunk::Stream { offset, fin } => {
                let Some(stream) = self.receiver.stream.as_mut() else {
                    return Reassembly::Invalid;
                };
                let result = stream.insert(offset, data.payload, fin).map(|_| ());
                if result.is_ok() && fin {
                    self.receiver.fin_offset =
                        Some(offset.saturating_add(data.payload.len() as u64));
                }
                result
            }
            Chunk::Message {
                id,
                offset,
                total_len,
            } => {
                let Some(messages) = self.receiver.messages.as_mut() else {
                    return Reassembly::Invalid;
                };
                messages.insert(id, offset, total_len, data.payload)
            }
            Chunk::Empty | Chunk::Padding => Ok(()),
        };
        match result {
            Ok(()) => Reassembly::Buffered,
            Err(DeliveryError::Full | DeliveryError::BeyondWindow) => Reassembly::NoRoom,
            Err(DeliveryError::Inconsistent(_)) => Reassembly::Invalid,
        }
    }

    /// Announce `Readable` and `Finished` as data arrives.
    fn announce_receive_progress(&mut self) {
        if let Some(stream) = &self.receiver.stream {
            if stream.readable() > 0 {
                self.events.push(Event::Readable);
            }
            let complete = self
                .receiver
                .fin_offset
                .is_some_and(|end| self.receiver.bytes_read + stream.readable() as u64 >= end);
            if complete && !self.receiver.finished_reported {
                self.receiver.finished_reported = true;
                self.events.push(Event::Finished);
            }
        } else if self
            .receiver
            .messages
            .as_ref()
            .is_some_and(|m| m.has_deliverable())
        {
            // Message compositions: only once a whole message can be taken.
            self.events.push(Event::Readable);
        }
    }

    /// Whether every byte of the peer's stream was received and read by the application.
    pub(super) fn peer_stream_consumed(&self) -> bool {
        self.receiver
            .stream
            .as_ref()
            .is_some_and(|s| s.is_finished())
    }

    /// Timers of the receiving half: the feedback timer.
    pub(super) fn receiver_timeouts(&mut self, now: Time) {
        if self.receiver.tfrc.poll_timeout().is_some_and(|t| t <= now)
            && self.receiver.tfrc.handle_timeout(now)
        {
            self.receiver.feedback_due = true;
        }
    }

    /// The earliest deadline of the receiving half.
    pub(super) fn receiver_poll_timeout(&self) -> Option<Time> {
        if self.receiver.feedback_due {
            return Some(self.last_now);
        }
        self.receiver.tfrc.poll_timeout()
    }

    /// Feedback, if due (RFC 5348 §6.2).
    pub(super) fn poll_feedback(&mut self, now: Time, buf: &mut Vec<u8>) -> bool {
        if !self.receiver.feedback_due || self.state != State::Established {
            return false;
        }
        let Some(destination) = self.remote_id else {
            return false;
        };
        self.receiver.feedback_due = false;
        let report = self.receiver.tfrc.feedback(now);
        let max_data = self.receiver.max_data();
        self.receiver.advertised_max_data = max_data;
        let sequence = self.receiver.next_feedback_sequence;
        self.receiver.next_feedback_sequence += 1;
        let feedback = Feedback {
            destination,
            sequence,
            timestamp_echo: report.timestamp_echo,
            t_delay: u32::try_from(report.t_delay.as_micros()).unwrap_or(u32::MAX),
            x_recv: report.x_recv.bps(),
            loss_event_rate_ppb: (report.loss_event_rate.clamp(0.0, 1.0) * 1e9).round() as u32,
            max_data,
            ack_ranges: self.receiver.received.ranges(MAX_ACK_RANGES),
        };
        Packet::Feedback(feedback).encode(buf);
        true
    }
}
