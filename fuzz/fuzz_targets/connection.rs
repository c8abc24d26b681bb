//! A live, protected connection fed arbitrary authenticated packets. One handshake is made once
//! (a client streaming to a server, in memory); each input forks it and plays a list of steps:
//! data, feedback and close packets forged with the fields the fuzzer chose (or raw bytes behind
//! a valid header), sealed with the sending side's own keys so they pass authentication, and
//! between them time passing with the honest traffic of both sides, writes and reads. Nothing may
//! panic, and the counters stay consistent.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use qstp_proto::wire::{
    Chunk, Close, ConnectionId, Data, Feedback, Packet, PacketType, MAX_ACK_RANGES,
};
use qstp_proto::{Config, ConnectionHandle, Duration, Endpoint, EndpointConfig, ReadError, Time};
use std::net::SocketAddr;

/// Most steps of one input, and most honest datagrams moved per step: a bound on an input's time.
const MAX_STEPS: usize = 64;
const MAX_EXCHANGE: usize = 256;

/// Varints hold 62 bits.
const VARINT_MASK: u64 = (1 << 62) - 1;

#[derive(Clone)]
struct World {
    client: Endpoint,
    server: Endpoint,
    client_handle: ConnectionHandle,
    server_handle: ConnectionHandle,
    now: Time,
    buf: Vec<u8>,
}

const CLIENT: &str = "127.0.0.1:5000";
const SERVER: &str = "127.0.0.1:4433";

fn addr(a: &str) -> SocketAddr {
    a.parse().unwrap()
}

impl World {
    /// Move honest datagrams both ways at `now`, at most `MAX_EXCHANGE`.
    fn exchange(&mut self) {
        for _ in 0..MAX_EXCHANGE {
            let mut moved = false;
            if let Some(t) = self.client.poll_transmit(self.now, &mut self.buf) {
                self.server
                    .handle_datagram(self.now, addr(CLIENT), &self.buf[..t.size]);
                moved = true;
            }
            if let Some(t) = self.server.poll_transmit(self.now, &mut self.buf) {
                self.client
                    .handle_datagram(self.now, addr(SERVER), &self.buf[..t.size]);
                moved = true;
            }
            if !moved {
                break;
            }
        }
        while self.client.poll_event().is_some() {}
        while self.server.poll_event().is_some() {}
    }

    /// Let `ms` milliseconds pass, running timers.
    fn wait(&mut self, ms: u64) {
        self.now += Duration::from_millis(ms);
        for endpoint in [&mut self.client, &mut self.server] {
            if endpoint.poll_timeout().is_some_and(|t| t <= self.now) {
                endpoint.handle_timeout(self.now);
            }
        }
        self.exchange();
    }

    fn read(&mut self) {
        let mut sink = [0u8; 16 * 1024];
        if let Some(conn) = self.server.connection_mut(self.server_handle) {
            loop {
                match conn.read(&mut sink) {
                    Ok(n) if n > 0 => {}
                    Ok(_) | Err(ReadError::Blocked) | Err(_) => break,
                }
            }
        }
    }
}

thread_local! {
    /// The handshake, once per fuzzing thread (the endpoints are not `Sync`).
    static WORLD: World = world();
}

/// The handshake: established both ways, some data moved.
fn world() -> World {
    {
        // Small windows: every input copies both endpoints, buffers included.
        let config = Config {
            send_buffer: 32 * 1024,
            recv_buffer: 32 * 1024,
            ..Config::default()
        };
        let mut client = Endpoint::new(EndpointConfig::client([1; 32]), 1);
        let server = Endpoint::new(EndpointConfig::server([2; 32], config.clone()), 2);
        let now = Time::ZERO + Duration::from_secs(1);
        let client_handle = client.connect(now, addr(SERVER), config).expect("connect");
        let mut world = World {
            client,
            server,
            client_handle,
            server_handle: ConnectionHandle(usize::MAX),
            now,
            buf: Vec::new(),
        };
        world.exchange();
        world
            .client
            .connection_mut(client_handle)
            .unwrap()
            .write(&[0x5a; 16 * 1024])
            .unwrap();
        for _ in 0..100 {
            world.wait(5);
        }
        // The server announced its connection once the client's data opened there.
        let handle = (0..4)
            .map(ConnectionHandle)
            .find(|h| world.server.connection(*h).is_some())
            .expect("an accepted connection");
        world.server_handle = handle;
        world.read();
        // Quiet: everything delivered, read and acknowledged, so an input pays only for what it
        // asks (forged packets, writes, time).
        for _ in 0..100 {
            world.wait(5);
        }
        assert!(world.server.connection(handle).unwrap().is_established());
        world
    }
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
    /// A valid type byte and destination, then any bytes.
    Raw { kind: u8, body: Vec<u8> },
}

#[derive(Arbitrary, Debug)]
enum Step {
    /// Sealed with the client's keys, to the server.
    ToServer(Forged),
    /// Sealed with the server's keys, to the client.
    ToClient(Forged),
    Wait(u8),
    Write(u16),
    Read,
    Close {
        client: bool,
        code: u32,
    },
}

/// The encoded packet `forged` addressed to `destination`.
fn encode(forged: &Forged, destination: ConnectionId) -> Vec<u8> {
    let mut out = Vec::new();
    let payload = [0xa5u8; 1400];
    match forged {
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
            Packet::Data(Data {
                destination,
                packet_number: u64::from(*packet_number),
                timestamp: *timestamp,
                rtt: *rtt,
                chunk,
                skip_to: skip_to.map(u64::from),
                previous_skipped: *previous_skipped,
                payload: &payload[..usize::from(*payload_len).min(payload.len())],
            })
            .encode(&mut out);
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
                reason: &reason[..reason.len().min(qstp_proto::wire::MAX_REASON_LEN)],
            })
            .encode(&mut out);
        }
        Forged::Raw { kind, body } => {
            // A real packet's header (version, type, destination), then the fuzzer's bytes.
            let mut header = Vec::new();
            Packet::Close(Close {
                destination,
                graceful: false,
                code: 0,
                reason: b"",
            })
            .encode(&mut header);
            out.extend_from_slice(&header[..qstp_proto::protection::CLEAR_HEADER_LEN]);
            // Data, feedback or close: the protected types.
            let kinds = [PacketType::Data, PacketType::Feedback, PacketType::Close];
            out[1] = kinds[usize::from(kind % 3)].code();
            out.extend_from_slice(&body[..body.len().min(2000)]);
        }
    }
    out
}

fuzz_target!(|steps: Vec<Step>| {
    let mut world = WORLD.with(World::clone);
    let (client_handle, server_handle) = (world.client_handle, world.server_handle);
    let mut fed = 0u64;
    for step in steps.iter().take(MAX_STEPS) {
        match step {
            Step::ToServer(forged) | Step::ToClient(forged) => {
                let to_server = matches!(step, Step::ToServer(_));
                let (from, to, from_handle, source) = if to_server {
                    (&mut world.client, &mut world.server, client_handle, CLIENT)
                } else {
                    (&mut world.server, &mut world.client, server_handle, SERVER)
                };
                let Some(conn) = from.connection_mut(from_handle) else {
                    continue;
                };
                let Some(destination) = conn.ids_for_fuzzing().1 else {
                    continue;
                };
                let mut datagram = encode(forged, destination);
                if !conn.seal_for_fuzzing(&mut datagram) {
                    continue;
                }
                if to_server {
                    fed += datagram.len() as u64;
                }
                to.handle_datagram(world.now, addr(source), &datagram);
                world.exchange();
            }
            Step::Wait(ms) => world.wait(u64::from(*ms)),
            Step::Write(len) => {
                if let Some(conn) = world.client.connection_mut(client_handle) {
                    let _ = conn.write(&vec![0x5a; usize::from(*len)]);
                }
                world.exchange();
            }
            Step::Read => world.read(),
            Step::Close { client, code } => {
                let (endpoint, handle) = if *client {
                    (&mut world.client, client_handle)
                } else {
                    (&mut world.server, server_handle)
                };
                let now = world.now;
                if let Some(conn) = endpoint.connection_mut(handle) {
                    conn.close(now, *code, b"fuzz");
                }
                world.exchange();
            }
        }
    }
    // The server read no more than the client's honest datagrams and the forged ones carried.
    if let Some(conn) = world.server.connection(server_handle) {
        let stats = conn.stats();
        let honest = world
            .client
            .connection(client_handle)
            .map_or(u64::MAX / 2, |c| c.stats().bytes_sent);
        assert!(
            stats.bytes_received <= honest.saturating_add(fed),
            "{} bytes received of {honest} sent and {fed} forged",
            stats.bytes_received
        );
    }
});
