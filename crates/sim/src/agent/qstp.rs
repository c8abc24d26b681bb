//! qstp agents: the real protocol core (`qstp-proto`, unchanged) on simulated hosts.
//!
//! Each side owns one `Endpoint` bound to a synthetic address (198.18.0.0/15, the benchmarking
//! range of RFC 2544). The client connects with its group's `Config` and its application keeps
//! the send buffer full; the server accepts with the same limits and its application reads
//! everything as soon as it is readable.

use super::{Binding, Ctx};
use crate::network::{Packet, Payload};
use crate::output::RateSample;
use crate::record::Recorder;
use qstp_dataplane::headers::UDP_IP_HEADER;
use qstp_proto::wire::MAX_DATA_HEADER;
use qstp_proto::{Config, ConnectionHandle, Endpoint, Event, Rate, Time};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

/// Bytes of zeros the saturated application writes.
static ZEROS: [u8; 16 * 1024] = [0; 16 * 1024];

/// Most datagrams or writes taken in one go, a guard against a core that never says "enough".
const MAX_BATCH: usize = 1 << 16;

/// The client and server addresses of flow number `flow` (counted across groups).
pub fn addresses(flow: u32) -> (SocketAddr, SocketAddr) {
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0));
    let client = Ipv4Addr::from(base + 2 * flow);
    let server = Ipv4Addr::from(base + 2 * flow + 1);
    (
        SocketAddr::V4(SocketAddrV4::new(client, 40_000)),
        SocketAddr::V4(SocketAddrV4::new(server, 4433)),
    )
}

/// Hand every datagram the endpoint lets out at `now` to the network.
fn transmit(endpoint: &mut Endpoint, binding: &Binding, ctx: &mut Ctx) {
    for _ in 0..MAX_BATCH {
        let mut buffer = ctx.network.packets.take_buffer();
        match endpoint.poll_transmit(ctx.now, &mut buffer) {
            Some(t) => {
                buffer.truncate(t.size);
                let size = t.size as u32 + UDP_IP_HEADER;
                ctx.send(
                    binding.node,
                    binding.packet(ctx.now, size, Payload::Datagram(buffer)),
                );
            }
            None => {
                ctx.network.packets.give_buffer(&mut buffer);
                return;
            }
        }
    }
}

/// Hand the endpoint the datagram `packet` carries from `remote`, then return its buffer.
fn receive(endpoint: &mut Endpoint, remote: SocketAddr, ctx: &mut Ctx, packet: Packet) {
    if let Payload::Datagram(bytes) = &packet.payload {
        endpoint.handle_datagram(ctx.now, remote, bytes);
    }
    ctx.network.packets.recycle(packet.payload);
}

/// Run the endpoint's timers if one is due at `now`.
fn run_due_timers(endpoint: &mut Endpoint, now: Time) {
    if endpoint.poll_timeout().is_some_and(|t| t <= now) {
        endpoint.handle_timeout(now);
    }
}

/// The sending side of a qstp flow.
#[derive(Debug)]
pub struct QstpClient {
    /// Its flow.
    pub binding: Binding,
    endpoint: Endpoint,
    config: Config,
    remote: SocketAddr,
    handle: Option<ConnectionHandle>,
    /// Loss events (`Stats::loss_event_rate_increases`) already recorded.
    loss_events: u64,
    /// RTT samples already recorded.
    rtt_samples: u64,
    /// Whether its loss events wait for a delegation group (set before it starts).
    defer_losses: bool,
    /// The rate the application writes messages at (`None`: it keeps the buffer full).
    message_rate: Option<Rate>,
    /// When a paced application writes its next message (from the connection's establishment).
    next_message: Option<Time>,
    /// The message being written, one per datagram (for compositions without a byte stream):
    /// zeros, stamped with the instant it is written.
    message: Vec<u8>,
}

impl QstpClient {
    /// A client that will connect to `remote` with `config`.
    pub fn new(binding: Binding, endpoint: Endpoint, config: Config, remote: SocketAddr) -> Self {
        // One message per datagram: the datagram less the largest data header.
        let message_size = config.max_datagram.saturating_sub(MAX_DATA_HEADER).max(1);
        QstpClient {
            binding,
            endpoint,
            config,
            remote,
            handle: None,
            loss_events: 0,
            rtt_samples: 0,
            defer_losses: false,
            message_rate: None,
            next_message: None,
            message: vec![0; message_size.min(ZEROS.len())],
        }
    }

    /// The same client whose application writes one message every `size * 8 / rate` (a
    /// video-like flow) instead of keeping the send buffer full; `None` keeps it saturated.
    pub fn paced(mut self, rate: Option<Rate>) -> Self {
        self.message_rate = rate;
        self
    }

    /// Hold the connection's loss events for a delegation group
    /// (`qstp_proto::Connection::defer_loss_events`) from its start.
    pub fn defer_loss_events(&mut self) {
        self.defer_losses = true;
    }

    /// The connection, once connecting.
    pub fn connection_mut(&mut self) -> Option<&mut qstp_proto::Connection> {
        self.handle.and_then(|h| self.endpoint.connection_mut(h))
    }

    /// Loss events the connection holds for its delegation group (read without marking the
    /// connection for the endpoint's next visit, as `connection_mut` would: this runs after
    /// every packet of a group member).
    pub fn deferred_loss_events(&self) -> usize {
        self.handle
            .and_then(|h| self.endpoint.connection(h))
            .map_or(0, |c| c.deferred_loss_events())
    }

    /// Bytes the peer acknowledged so far.
    pub fn bytes_acked(&self) -> u64 {
        self.handle
            .and_then(|h| self.endpoint.connection(h))
            .map_or(0, |c| c.stats().bytes_acked)
    }

    pub(super) fn start(&mut self, ctx: &mut Ctx) {
        // The configuration was validated when the run was built; a refusal leaves the flow idle.
        self.handle = self
            .endpoint
            .connect(ctx.now, self.remote, self.config.clone())
            .ok();
        if self.defer_losses {
            let now = ctx.now;
            // The group was validated for byte streams, so this cannot be refused; a refusal
            // would leave the flow outside the group.
            if let Some(conn) = self.connection_mut() {
                let _ = conn.defer_loss_events(now, true);
            }
        }
        self.pump(ctx);
    }

    pub(super) fn on_packet(&mut self, ctx: &mut Ctx, packet: Packet) {
        receive(&mut self.endpoint, self.remote, ctx, packet);
        self.record_rtt(ctx);
        self.pump(ctx);
    }

    /// Record the RTT sample the last feedback gave, if it gave one.
    fn record_rtt(&mut self, ctx: &mut Ctx) {
        let Some(connection) = self.handle.and_then(|h| self.endpoint.connection(h)) else {
            return;
        };
        let (samples, latest) = connection.latest_rtt();
        if samples > self.rtt_samples {
            self.rtt_samples = samples;
            ctx.recorder.on_rtt(self.binding.flow, ctx.now, latest);
        }
    }

    pub(super) fn on_timer(&mut self, ctx: &mut Ctx) {
        run_due_timers(&mut self.endpoint, ctx.now);
        self.pump(ctx);
    }

    pub(super) fn poll_timeout(&self) -> Option<Time> {
        let endpoint = self.endpoint.poll_timeout();
        match (endpoint, self.next_message) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Drain events, refill the send buffer, send what may go.
    fn pump(&mut self, ctx: &mut Ctx) {
        while self.endpoint.poll_event().is_some() {}
        self.fill(ctx);
        transmit(&mut self.endpoint, &self.binding, ctx);
    }

    /// The application: a saturated one writes until the connection refuses; a paced one
    /// writes each message when due (one the connection refuses is lost to the application, as
    /// a live video frame would be).
    fn fill(&mut self, ctx: &mut Ctx) {
        let now = ctx.now;
        let Some(connection) = self.handle.and_then(|h| self.endpoint.connection_mut(h)) else {
            return;
        };
        if !connection.is_established() {
            return;
        }
        let stream = connection.config().supports_stream();
        // Messages carry the instant they were written, for the receiver to count them by.
        let stamped = !stream && self.message.len() >= 8;
        let interval = self
            .message_rate
            .filter(|_| !stream)
            .map(|rate| rate.transmit_time(self.message.len()));
        for _ in 0..MAX_BATCH {
            if stream {
                let room = connection.send_capacity().min(ZEROS.len());
                if room == 0 || !matches!(connection.write(&ZEROS[..room]), Ok(n) if n > 0) {
                    return;
                }
                continue;
            }
            if let Some(interval) = interval {
                let due = *self.next_message.get_or_insert(now);
                if due > now {
                    return;
                }
                self.next_message = Some(due + interval.max(qstp_proto::Duration::from_nanos(1)));
            }
            if stamped {
                self.message[..8].copy_from_slice(&now.as_nanos().to_le_bytes());
            }
            match connection.send_message(now, &self.message) {
                Ok(()) if stamped => ctx.recorder.on_message_written(self.binding.flow, now),
                Ok(()) => {}
                Err(_) if interval.is_some() => {}
                Err(_) => return,
            }
        }
    }

    /// Record the rate controller's state as that at the end of bin `bin`, with the loss events
    /// learnt of since the last sample.
    pub(crate) fn sample(&mut self, bin: usize, recorder: &mut Recorder) {
        let stats = self
            .handle
            .and_then(|h| self.endpoint.connection(h))
            .filter(|c| c.is_established())
            .map(|c| c.stats());
        let new_events = stats.as_ref().map_or(0, |s| {
            s.loss_event_rate_increases.saturating_sub(self.loss_events)
        });
        self.loss_events += new_events;
        let sample = stats.map(|s| RateSample {
            // What the sender paces at: X, under the configured cap if any.
            rate_bps: self
                .config
                .max_rate
                .map_or(s.rate, |cap| s.rate.min(cap))
                .bps(),
            x_recv_bps: s.x_recv.bps(),
            loss_event_rate_ppb: (s.loss_event_rate * 1e9).round() as u64,
            rtt_ns: s.rtt.as_nanos(),
        });
        recorder.on_rate_sample(self.binding.flow, bin, sample, new_events);
    }

    pub(super) fn finish(&self, recorder: &mut Recorder) {
        if let Some(connection) = self.handle.and_then(|h| self.endpoint.connection(h)) {
            let stats = connection.stats();
            recorder.set_sent(
                self.binding.flow,
                stats.packets_sent,
                stats.packets_retransmitted,
            );
        }
    }
}

/// The receiving side of a qstp flow.
#[derive(Debug)]
pub struct QstpServer {
    /// Its flow.
    pub binding: Binding,
    endpoint: Endpoint,
    remote: SocketAddr,
    connections: Vec<ConnectionHandle>,
}

impl QstpServer {
    /// A server expecting its client at `remote`.
    pub fn new(binding: Binding, endpoint: Endpoint, remote: SocketAddr) -> Self {
        QstpServer {
            binding,
            endpoint,
            remote,
            connections: Vec::new(),
        }
    }

    pub(super) fn on_packet(&mut self, ctx: &mut Ctx, packet: Packet) {
        ctx.recorder
            .on_received(self.binding.flow, ctx.now, packet.size, packet.sent);
        receive(&mut self.endpoint, self.remote, ctx, packet);
        self.pump(ctx);
    }

    pub(super) fn on_timer(&mut self, ctx: &mut Ctx) {
        run_due_timers(&mut self.endpoint, ctx.now);
        self.pump(ctx);
    }

    pub(super) fn poll_timeout(&self) -> Option<Time> {
        self.endpoint.poll_timeout()
    }

    /// Note accepted connections, read everything delivered, send what may go.
    fn pump(&mut self, ctx: &mut Ctx) {
        while let Some((handle, event)) = self.endpoint.poll_event() {
            if event == Event::Connected && !self.connections.contains(&handle) {
                self.connections.push(handle);
            }
        }
        for &handle in &self.connections {
            let Some(connection) = self.endpoint.connection_mut(handle) else {
                continue;
            };
            let delivered = drain(connection, ctx.scratch, &mut |written| {
                ctx.recorder
                    .on_message_delivered(self.binding.flow, written)
            });
            ctx.recorder
                .on_delivered(self.binding.flow, ctx.now, delivered);
        }
        transmit(&mut self.endpoint, &self.binding, ctx);
    }
}

/// The draining application: read every delivered byte or message, telling `on_message` the
/// instant each stamped message was written; returns the bytes read.
fn drain(
    connection: &mut qstp_proto::Connection,
    scratch: &mut Vec<u8>,
    on_message: &mut dyn FnMut(Time),
) -> u64 {
    let mut total = 0u64;
    if connection.config().supports_stream() {
        scratch.resize(64 * 1024, 0);
        for _ in 0..MAX_BATCH {
            match connection.read(scratch) {
                Ok(n) if n > 0 => total += n as u64,
                _ => break,
            }
        }
    } else {
        for _ in 0..MAX_BATCH {
            match connection.recv_message() {
                Some(message) => {
                    total += message.len() as u64;
                    if let Some(stamp) = message.get(..8).and_then(|s| s.try_into().ok()) {
                        on_message(Time::from_nanos(u64::from_le_bytes(stamp)));
                    }
                }
                None => break,
            }
        }
    }
    total
}
