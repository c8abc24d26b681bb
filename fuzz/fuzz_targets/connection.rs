//! Live, protected connections fed arbitrary authenticated packets. Four handshakes are made
//! once (a stream and three message compositions, in memory, some data moved both ways and all
//! of it read); each input picks one, copies it and plays a list of steps: data, feedback and
//! close packets forged with the fields the fuzzer chose (or raw bytes behind a valid header),
//! sealed with the sending side's own keys so they pass authentication; forgeries in the clear;
//! time passing with the honest traffic of both sides; writes, reads, finishes and closes.
//!
//! Checked after every step, on both sides: nothing panics; a sealed datagram is opened (never
//! an authentication failure) and counted once, as received, dropped or malformed; a forgery in
//! the clear is never received; no side counts more bytes or datagrams received than were handed
//! to it; what the application read equals the connection's `bytes_delivered` and is no more
//! than the peer wrote plus the forged payloads; no more is acknowledged than was written; no
//! more is buffered than the receive buffer holds.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use qstp_proto::protection::CLEAR_HEADER_LEN;
use qstp_proto::wire::{
    Chunk, Close, ConnectionId, Data, Feedback, Packet, PacketType, MAX_ACK_RANGES, MAX_REASON_LEN,
};
use qstp_proto::{
    Config, Congestion, ConnectionHandle, Duration, Endpoint, EndpointConfig, ErrorControl, Event,
    Order, Rate, Time,
};
use std::net::SocketAddr;

/// Most steps of one input, and most honest datagrams moved each way per exchange: a bound on
/// an input's time.
const MAX_STEPS: usize = 48;
const MAX_EXCHANGE: usize = 128;

/// Both sides' buffers: small, as every input copies both endpoints.
const BUFFER: usize = 8 * 1024;

/// Varints hold 62 bits.
const VARINT_MASK: u64 = (1 << 62) - 1;

/// What the application writes.
static FILL: [u8; BUFFER] = [0x5a; BUFFER];

const CLIENT: usize = 0;
const SERVER: usize = 1;

fn address(side: usize) -> SocketAddr {
    if side == CLIENT {
        SocketAddr::from(([127, 0, 0, 1], 5000))
    } else {
        SocketAddr::from(([127, 0, 0, 1], 4433))
    }
}

/// An address the connections do not know, for spoofed datagrams.
fn stranger() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 2], 5000))
}

/// The compositions: the byte stream, then three of messages.
fn config(world: usize) -> Config {
    let (congestion, error, order) = match world {
        0 => (
            Congestion::gtfrc(Rate::ZERO),
            ErrorControl::SackFull,
            Order::Ordered,
        ),
        1 => (
            Congestion::TFRC,
            ErrorControl::SackPartial {
                deadline: Some(Duration::from_millis(300)),
                max_retransmissions: Some(2),
            },
            Order::Ordered,
        ),
        2 => (Congestion::Aimd, ErrorControl::SackFull, Order::Unordered),
        _ => (
            Congestion::gtfrc(Rate::from_mbps(2)),
            ErrorControl::None,
            Order::Ordered,
        ),
    };
    Config {
        congestion,
        error,
        order,
        // Probes (padding chunks) on the stream.
        pmtu_discovery: world == 0,
        send_buffer: BUFFER,
        recv_buffer: BUFFER,
        ..Config::default()
    }
}

const WORLDS: usize = 4;

/// Two endpoints, one connection between them, and what the harness counted.
#[derive(Clone)]
struct World {
    /// The client's endpoint, then the server's.
    endpoints: [Endpoint; 2],
    handles: [ConnectionHandle; 2],
    stream: bool,
    now: Time,
    buf: Vec<u8>,
    /// Per side: application bytes it wrote (accepted by `write` or `send_message`).
    written: [u64; 2],
    /// Per side: application bytes the harness read from it.
    read: [u64; 2],
    /// Per side: datagrams and their bytes handed to it, honest and forged.
    handed: [u64; 2],
    handed_bytes: [u64; 2],
    /// Per side: payload bytes of the forged datagrams handed to it (an upper bound).
    forged_payload: [u64; 2],
}

impl World {
    fn new(world: usize) -> World {
        let config = config(world);
        let mut client = Endpoint::new(EndpointConfig::client([1; 32]), 1);
        let server = Endpoint::new(EndpointConfig::server([2; 32], config.clone()), 2);
        let now = Time::ZERO + Duration::from_secs(1);
        let handle = client
            .connect(now, address(SERVER), config.clone())
            .expect("connect");
        let mut w = World {
            endpoints: [client, server],
            handles: [handle, ConnectionHandle(usize::MAX)],
            stream: config.supports_stream(),
            now,
            buf: Vec::new(),
            written: [0; 2],
            read: [0; 2],
            handed: [0; 2],
            handed_bytes: [0; 2],
            forged_payload: [0; 2],
        };
        w.exchange();
        // The server announces its connection once a packet of the client opened there.
        w.write(CLIENT, 6 * 1024, None);
        for _ in 0..100 {
            w.wait(5);
        }
        assert!(w.handles[SERVER].0 != usize::MAX, "the server accepted");
        w.write(SERVER, 2 * 1024, None);
        for _ in 0..100 {
            w.wait(5);
        }
        w.read(CLIENT);
        w.read(SERVER);
        // Quiet: everything delivered, read and acknowledged, so an input pays only for what it
        // asks.
        for _ in 0..100 {
            w.wait(5);
        }
        for side in [CLIENT, SERVER] {
            let conn = w.endpoints[side].connection(w.handles[side]).unwrap();
            assert!(conn.is_established(), "established");
            assert!(w.read[side] > 0, "data moved");
        }
        w.check();
        w
    }

    /// Move honest datagrams both ways at `now`, at most `MAX_EXCHANGE` each way; drain events.
    fn exchange(&mut self) {
        for _ in 0..MAX_EXCHANGE {
            let mut moved = false;
            for from in [CLIENT, SERVER] {
                let to = 1 - from;
                if let Some(t) = self.endpoints[from].poll_transmit(self.now, &mut self.buf) {
                    self.handed[to] += 1;
                    self.handed_bytes[to] += t.size as u64;
                    self.endpoints[to].handle_datagram(
                        self.now,
                        address(from),
                        &self.buf[..t.size],
                    );
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
        while self.endpoints[CLIENT].poll_event().is_some() {}
        while let Some((handle, event)) = self.endpoints[SERVER].poll_event() {
            if event == Event::Connected && self.handles[SERVER].0 == usize::MAX {
                self.handles[SERVER] = handle;
            }
        }
    }

    /// Honest traffic now, then `ms` milliseconds later with the timers due run.
    fn wait(&mut self, ms: u64) {
        self.exchange();
        self.now += Duration::from_millis(ms);
        for endpoint in &mut self.endpoints {
            if endpoint.poll_timeout().is_some_and(|t| t <= self.now) {
                endpoint.handle_timeout(self.now);
            }
        }
        self.exchange();
    }

    fn write(&mut self, side: usize, len: usize, deadline: Option<Duration>) {
        let (now, stream) = (self.now, self.stream);
        let Some(conn) = self.endpoints[side].connection_mut(self.handles[side]) else {
            return;
        };
        let data = &FILL[..len.min(FILL.len())];
        if stream {
            if let Ok(n) = conn.write(data) {
                self.written[side] += n as u64;
            }
        } else if conn.send_message_with(now, data, deadline).is_ok() {
            self.written[side] += data.len() as u64;
        }
    }

    fn read(&mut self, side: usize) {
        let stream = self.stream;
        let Some(conn) = self.endpoints[side].connection_mut(self.handles[side]) else {
            return;
        };
        let recv_buffer = conn.config().recv_buffer;
        if stream {
            let mut sink = [0u8; 4096];
            while let Ok(n @ 1..) = conn.read(&mut sink) {
                self.read[side] += n as u64;
            }
        } else {
            while let Some(message) = conn.recv_message() {
                assert!(message.len() <= recv_buffer, "a message beyond the buffer");
                self.read[side] += message.len() as u64;
            }
        }
    }

    /// The invariants, on both sides.
    fn check(&self) {
        for side in [CLIENT, SERVER] {
            let Some(conn) = self.endpoints[side].connection(self.handles[side]) else {
                continue;
            };
            let stats = conn.stats();
            let peer = 1 - side;
            assert!(
                stats.packets_received <= self.handed[side],
                "side {side}: {} datagrams received of {} handed",
                stats.packets_received,
                self.handed[side]
            );
            assert!(
                stats.bytes_received <= self.handed_bytes[side],
                "side {side}: {} bytes received of {} handed",
                stats.bytes_received,
                self.handed_bytes[side]
            );
            assert_eq!(
                stats.bytes_delivered, self.read[side],
                "side {side}: bytes_delivered is not what the application read"
            );
            assert!(
                self.read[side] <= self.written[peer] + self.forged_payload[side],
                "side {side}: read {} of {} written and {} forged",
                self.read[side],
                self.written[peer],
                self.forged_payload[side]
            );
            assert!(
                stats.bytes_acked <= self.written[side],
                "side {side}: {} bytes acknowledged of {} written",
                stats.bytes_acked,
                self.written[side]
            );
            assert!(
                conn.readable() <= conn.config().recv_buffer,
                "side {side}: {} readable, beyond the buffer",
                conn.readable()
            );
        }
    }

    /// Counters that tell what became of a datagram handed to `side`.
    fn fate(&self, side: usize) -> [u64; 5] {
        let endpoint = self.endpoints[side].stats();
        let conn = self.endpoints[side]
            .connection(self.handles[side])
            .map(|c| c.stats())
            .unwrap_or_default();
        [
            conn.packets_received,
            conn.packets_dropped,
            endpoint.malformed,
            endpoint.unknown_connection,
            endpoint.auth_failures,
        ]
    }

    /// Hand `datagram` to `to`, from its peer's address or a stranger's.
    fn hand(&mut self, to: usize, spoofed: bool, datagram: &[u8]) {
        let from = if spoofed { stranger() } else { address(1 - to) };
        self.handed[to] += 1;
        self.handed_bytes[to] += datagram.len() as u64;
        self.endpoints[to].handle_datagram(self.now, from, datagram);
    }
}

thread_local! {
    /// The handshakes, once per fuzzing thread (endpoints are not `Sync`).
    static WORLDS_MADE: [World; WORLDS] = std::array::from_fn(World::new);
}

#[derive(Arbitrary, Debug)]
enum ChunkOp {
    Stream {
        offset: u32,
        fin: bool,
    },
    Message {
        id: u16,
        offset: u16,
        total_len: u16,
    },
    Empty,
    Padding,
}

#[derive(Arbitrary, Debug)]
enum Forged {
    Data {
        packet_number: u32,
        timestamp: u32,
        rtt: u32,
        chunk: ChunkOp,
        skip_to: Option<u32>,
        previous_skipped: bool,
        payload_len: u16,
    },
    Feedback {
        sequence: u16,
        timestamp_echo: u32,
        t_delay: u32,
        x_recv: u64,
        loss_event_rate_ppb: u32,
        max_data: u64,
        /// The highest acknowledged number, then (gap, length) of each range below it.
        top: u32,
        ranges: Vec<(u8, u8)>,
    },
    Close {
        graceful: bool,
        code: u32,
        reason: Vec<u8>,
    },
    /// A valid version, type and destination, then any bytes.
    Raw { kind: u8, body: Vec<u8> },
}

#[derive(Arbitrary, Debug)]
enum Step {
    /// Sealed with the sending side's keys; `spoofed` sends it from an unknown address.
    Sealed {
        to_server: bool,
        spoofed: bool,
        packet: Forged,
    },
    /// In the clear: `bytes` as they are, or behind a valid header of a protected type
    /// (`header`), which must fail authentication.
    Clear {
        to_server: bool,
        header: Option<u8>,
        bytes: Vec<u8>,
    },
    /// Honest traffic, then time passing, milliseconds.
    Wait(u16),
    Write {
        server: bool,
        len: u16,
        /// A message's deadline, milliseconds (partial reliability only).
        deadline: Option<u16>,
    },
    Read {
        server: bool,
    },
    Finish {
        server: bool,
    },
    Close {
        server: bool,
        code: u32,
    },
}

/// The version, type and destination of a protected packet of kind `kind`.
fn header(kind: u8, destination: ConnectionId) -> Vec<u8> {
    let mut out = Vec::new();
    Packet::Close(Close {
        destination,
        graceful: false,
        code: 0,
        reason: b"",
    })
    .encode(&mut out);
    out.truncate(CLEAR_HEADER_LEN);
    let kinds = [PacketType::Data, PacketType::Feedback, PacketType::Close];
    out[1] = kinds[usize::from(kind % 3)].code();
    out
}

/// The encoded packet `forged` addressed to `destination`, and its payload's length.
fn encode(forged: &Forged, destination: ConnectionId) -> (Vec<u8>, usize) {
    static PAYLOAD: [u8; 1400] = [0xa5; 1400];
    let mut out = Vec::new();
    let payload_len = match forged {
        Forged::Data {
            packet_number,
            timestamp,
            rtt,
            chunk,
            skip_to,
            previous_skipped,
            payload_len,
        } => {
            let chunk = match *chunk {
                ChunkOp::Stream { offset, fin } => Chunk::Stream {
                    offset: u64::from(offset),
                    fin,
                },
                ChunkOp::Message {
                    id,
                    offset,
                    total_len,
                } => Chunk::Message {
                    id: u64::from(id),
                    offset: u32::from(offset),
                    total_len: u32::from(total_len),
                },
                ChunkOp::Empty => Chunk::Empty,
                ChunkOp::Padding => Chunk::Padding,
            };
            let payload = &PAYLOAD[..usize::from(*payload_len).min(PAYLOAD.len())];
            Packet::Data(Data {
                destination,
                packet_number: u64::from(*packet_number),
                timestamp: *timestamp,
                rtt: *rtt,
                chunk,
                skip_to: skip_to.map(u64::from),
                previous_skipped: *previous_skipped,
                payload,
            })
            .encode(&mut out);
            payload.len()
        }
        Forged::Feedback {
            sequence,
            timestamp_echo,
            t_delay,
            x_recv,
            loss_event_rate_ppb,
            max_data,
            top,
            ranges,
        } => {
            // Inclusive ranges, highest first, disjoint: what a decoder accepts.
            let mut ack_ranges = Vec::new();
            let mut cursor = u64::from(*top);
            for &(gap, len) in ranges.iter().take(MAX_ACK_RANGES) {
                let Some(hi) = cursor.checked_sub(u64::from(gap)) else {
                    break;
                };
                let lo = hi.saturating_sub(u64::from(len));
                ack_ranges.push((lo, hi));
                let Some(next) = lo.checked_sub(2) else { break };
                cursor = next;
            }
            Packet::Feedback(Feedback {
                destination,
                sequence: u64::from(*sequence),
                timestamp_echo: *timestamp_echo,
                t_delay: *t_delay,
                x_recv: x_recv & VARINT_MASK,
                loss_event_rate_ppb: *loss_event_rate_ppb,
                max_data: max_data & VARINT_MASK,
                ack_ranges,
            })
            .encode(&mut out);
            0
        }
        Forged::Close {
            graceful,
            code,
            reason,
        } => {
            Packet::Close(Close {
                destination,
                graceful: *graceful,
                code: *code,
                reason: &reason[..reason.len().min(MAX_REASON_LEN)],
            })
            .encode(&mut out);
            0
        }
        Forged::Raw { kind, body } => {
            out = header(*kind, destination);
            let body = &body[..body.len().min(2000)];
            out.extend_from_slice(body);
            body.len()
        }
    };
    (out, payload_len)
}

/// Play `step` on `w`.
fn play(w: &mut World, step: &Step) {
    match step {
        Step::Sealed {
            to_server,
            spoofed,
            packet,
        } => {
            let to = usize::from(*to_server);
            let from = 1 - to;
            let Some(conn) = w.endpoints[from].connection_mut(w.handles[from]) else {
                return;
            };
            let Some(destination) = conn.ids_for_fuzzing().1 else {
                return;
            };
            let (mut datagram, payload) = encode(packet, destination);
            if !conn.seal_for_fuzzing(&mut datagram) {
                return;
            }
            w.forged_payload[to] += payload as u64;
            let before = w.fate(to);
            w.hand(to, *spoofed, &datagram);
            let after = w.fate(to);
            assert_eq!(
                after[4], before[4],
                "a datagram sealed under the keys failed authentication"
            );
            let counted: u64 = (0..4).map(|i| after[i] - before[i]).sum();
            assert_eq!(
                counted, 1,
                "a sealed datagram counted {counted} times: {before:?} -> {after:?}"
            );
        }
        Step::Clear {
            to_server,
            header: kind,
            bytes,
        } => {
            let to = usize::from(*to_server);
            let mut datagram = Vec::new();
            if let Some(kind) = kind {
                let Some(destination) = w.endpoints[to]
                    .connection(w.handles[to])
                    .map(|c| c.ids_for_fuzzing().0)
                else {
                    return;
                };
                datagram = header(*kind, destination);
            }
            datagram.extend_from_slice(&bytes[..bytes.len().min(2000)]);
            let before = w.fate(to);
            w.hand(to, false, &datagram);
            if kind.is_some() {
                assert_eq!(
                    w.fate(to)[0],
                    before[0],
                    "a forgery in the clear was received"
                );
            }
        }
        Step::Wait(ms) => w.wait(u64::from(*ms)),
        Step::Write {
            server,
            len,
            deadline,
        } => w.write(
            usize::from(*server),
            usize::from(*len),
            deadline.map(|ms| Duration::from_millis(u64::from(ms))),
        ),
        Step::Read { server } => w.read(usize::from(*server)),
        Step::Finish { server } => {
            let side = usize::from(*server);
            if let Some(conn) = w.endpoints[side].connection_mut(w.handles[side]) {
                let _ = conn.finish();
            }
        }
        Step::Close { server, code } => {
            let side = usize::from(*server);
            let now = w.now;
            if let Some(conn) = w.endpoints[side].connection_mut(w.handles[side]) {
                conn.close(now, *code, b"fuzz");
            }
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    world: u8,
    steps: Vec<Step>,
}

fuzz_target!(|input: Input| {
    let mut w = WORLDS_MADE.with(|worlds| worlds[usize::from(input.world) % WORLDS].clone());
    for step in input.steps.iter().take(MAX_STEPS) {
        play(&mut w, step);
        w.check();
    }
});
