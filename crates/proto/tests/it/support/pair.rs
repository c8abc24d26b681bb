//! Two endpoints on a shared fake clock, joined by two simulated one-way paths.
//!
//! Each path has a propagation delay, Bernoulli loss, duplication, reordering (an extra delay for
//! some packets) and an optional bottleneck rate with a bounded queue, all drawn from one seeded
//! generator, so a test is a pure function of its seed. `step()` moves every datagram the
//! endpoints want to send onto its path, delivers what is due, runs due timers, then advances the
//! clock to the earliest next arrival or wakeup.

#![allow(dead_code)]

use qstp_proto::{
    Config, Connection, ConnectionHandle, Duration, Endpoint, EndpointConfig, Event, Rate,
    ServerPolicy, Time,
};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::net::SocketAddr;

/// Which way a datagram travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// Client to server.
    ToServer,
    /// Server to client.
    ToClient,
}

/// The behaviour of one direction of the path.
#[derive(Debug, Clone)]
pub struct PathModel {
    /// One-way propagation delay.
    pub delay: Duration,
    /// Probability that a datagram is lost.
    pub loss: f64,
    /// Probability that a datagram arrives twice.
    pub duplicate: f64,
    /// Probability that a datagram is held back by `reorder_delay` (so later ones overtake it).
    pub reorder: f64,
    /// Extra delay of a reordered datagram.
    pub reorder_delay: Duration,
    /// Bottleneck rate; `None` for an infinitely fast link.
    pub rate: Option<Rate>,
    /// Most datagrams waiting at the bottleneck; more are dropped (drop-tail).
    pub queue_limit: usize,
    /// A targeted loss: datagrams for which this returns true (given the send time) are lost.
    pub drop_if: Option<fn(Time, &[u8]) -> bool>,
    /// Probability that one bit of a datagram is flipped on the way (a corrupting relay).
    pub corrupt: f64,
    /// A middlebox (or a lying peer) that rewrites every datagram on the way.
    pub rewrite: Option<fn(&mut Vec<u8>)>,
}

impl Default for PathModel {
    fn default() -> Self {
        PathModel {
            delay: Duration::from_millis(10),
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::from_millis(5),
            rate: None,
            queue_limit: 50,
            drop_if: None,
            corrupt: 0.0,
            rewrite: None,
        }
    }
}

impl PathModel {
    /// A lossless path with one-way `delay`.
    pub fn with_delay(delay: Duration) -> Self {
        PathModel {
            delay,
            ..PathModel::default()
        }
    }
}

/// What happened on one direction of the path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathStats {
    /// Datagrams the sender handed to the path.
    pub sent: u64,
    /// Bytes the sender handed to the path.
    pub bytes_sent: u64,
    /// Datagrams lost at random.
    pub lost: u64,
    /// Datagrams dropped because the bottleneck queue was full.
    pub queue_drops: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Datagrams with a bit flipped.
    pub corrupted: u64,
    /// Datagrams delivered (copies included).
    pub delivered: u64,
}

/// One side of the pair.
#[derive(Debug)]
pub struct Side {
    /// Its endpoint.
    pub endpoint: Endpoint,
    /// Its address.
    pub addr: SocketAddr,
    /// The connection of interest: from `connect` on the client, the first accepted on the server.
    pub handle: Option<ConnectionHandle>,
    /// Every event seen, with the time it was polled.
    pub events: Vec<(Time, ConnectionHandle, Event)>,
}

impl Side {
    /// The connection of interest.
    pub fn conn(&self) -> &Connection {
        self.endpoint
            .connection(self.handle.expect("no connection yet"))
            .expect("connection removed")
    }
    /// The connection of interest, mutably.
    pub fn conn_mut(&mut self) -> &mut Connection {
        self.endpoint
            .connection_mut(self.handle.expect("no connection yet"))
            .expect("connection removed")
    }
    /// Whether `event` was seen on the connection of interest.
    pub fn saw(&self, event: &Event) -> bool {
        self.events
            .iter()
            .any(|(_, h, e)| Some(*h) == self.handle && e == event)
    }
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    arrival: Time,
    sequence: u64,
    direction: Direction,
    datagram: Vec<u8>,
}

/// A client and a server endpoint joined by two paths, on one fake clock.
#[derive(Debug)]
pub struct Pair {
    /// The shared clock.
    pub time: Time,
    /// The client side.
    pub client: Side,
    /// The server side.
    pub server: Side,
    /// Client to server path.
    pub to_server: PathModel,
    /// Server to client path.
    pub to_client: PathModel,
    /// What happened client to server.
    pub to_server_stats: PathStats,
    /// What happened server to client.
    pub to_client_stats: PathStats,
    /// When set, every datagram handed to a path is recorded here (for replay tests).
    pub capture: Option<Vec<(Time, Direction, Vec<u8>)>>,
    /// When set, every datagram that reached an endpoint is recorded here.
    pub arrivals: Option<Vec<(Time, Direction, Vec<u8>)>>,
    in_flight: BinaryHeap<Reverse<InFlight>>,
    /// Departure times of datagrams waiting at each bottleneck.
    queues: [VecDeque<Time>; 2],
    sequence: u64,
    rng: ChaCha8Rng,
    buf: Vec<u8>,
    /// Steps in which the clock could not advance past a wakeup already due (a busy loop).
    pub stalls: u64,
}

impl Pair {
    /// A client endpoint and a server endpoint accepting with `server_limits`, joined by `path`
    /// in both directions; `seed` drives the paths and the endpoints' generators.
    pub fn new(server_limits: Config, path: PathModel, seed: u64) -> Pair {
        let client = Endpoint::new(
            EndpointConfig::client([1; 32]),
            seed.wrapping_mul(3).wrapping_add(1),
        );
        let server = Endpoint::new(
            EndpointConfig {
                // The harness's stories use every composition, the fixed-rate one included.
                policy: ServerPolicy::permissive(),
                ..EndpointConfig::server([2; 32], server_limits)
            },
            seed.wrapping_mul(5).wrapping_add(2),
        );
        Pair::with_endpoints(client, server, path, seed)
    }

    /// A pair around endpoints built by the test.
    pub fn with_endpoints(client: Endpoint, server: Endpoint, path: PathModel, seed: u64) -> Pair {
        Pair {
            time: Time::from_nanos(1_000_000_000),
            client: Side {
                endpoint: client,
                addr: "10.0.0.1:5000".parse().unwrap(),
                handle: None,
                events: Vec::new(),
            },
            server: Side {
                endpoint: server,
                addr: "10.0.0.2:4433".parse().unwrap(),
                handle: None,
                events: Vec::new(),
            },
            to_server: path.clone(),
            to_client: path,
            to_server_stats: PathStats::default(),
            to_client_stats: PathStats::default(),
            capture: None,
            arrivals: None,
            in_flight: BinaryHeap::new(),
            queues: [VecDeque::new(), VecDeque::new()],
            sequence: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            buf: Vec::new(),
            stalls: 0,
        }
    }

    /// The client connects with `config`.
    pub fn connect(&mut self, config: Config) -> ConnectionHandle {
        let handle = self
            .client
            .endpoint
            .connect(self.time, self.server.addr, config)
            .expect("connect");
        self.client.handle = Some(handle);
        handle
    }

    /// Connect and drive until both sides are established (panics after 10 simulated seconds).
    pub fn connect_and_establish(&mut self, config: Config) {
        self.connect(config);
        let established = self.drive_until(Duration::from_secs(10), |p| {
            p.server.handle.is_some()
                && p.client.conn().is_established()
                && p.server.conn().is_established()
        });
        assert!(established, "handshake did not complete");
    }

    /// One round: advance the clock to the next arrival or wakeup, then deliver what is due, run
    /// due timers and send until quiet. Returns false when nothing at all is left to happen.
    pub fn step(&mut self) -> bool {
        self.settle();
        let next = [
            self.in_flight.peek().map(|f| f.0.arrival),
            self.client.endpoint.poll_timeout(),
            self.server.endpoint.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .min();
        match next {
            None => return false,
            Some(t) if t > self.time => self.time = t,
            Some(_) => {
                // A wakeup is due yet nothing happened: step the clock so the test still ends.
                self.stalls += 1;
                self.time += Duration::from_micros(1);
            }
        }
        self.settle();
        true
    }

    /// At the current time, run due timers, send and deliver until nothing more happens.
    fn settle(&mut self) {
        for _ in 0..10_000 {
            self.run_due_timers();
            let mut progress = self.transmit_all();
            progress |= self.deliver_due();
            self.collect_events();
            if !progress {
                break;
            }
        }
    }

    /// Step until `done` holds or `limit` of simulated time passed; returns whether `done` held.
    pub fn drive_until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&mut Pair) -> bool,
    ) -> bool {
        let end = self.time + limit;
        loop {
            if done(self) {
                return true;
            }
            if self.time >= end || !self.step() {
                return done(self);
            }
        }
    }

    /// Step until nothing is left to happen or `limit` passed.
    pub fn drive(&mut self, limit: Duration) {
        let end = self.time + limit;
        while self.time < end && self.step() {}
    }

    /// Hand a datagram to a path as if an endpoint had sent it (never lost on the way).
    pub fn inject(&mut self, direction: Direction, datagram: Vec<u8>) {
        // Injected by the attacker beside the path: its random losses do not apply.
        self.enqueue_as(direction, datagram, true);
    }

    fn transmit_all(&mut self) -> bool {
        let mut progress = false;
        let mut buf = std::mem::take(&mut self.buf);
        while let Some(transmit) = self.client.endpoint.poll_transmit(self.time, &mut buf) {
            assert_eq!(transmit.destination, self.server.addr);
            self.enqueue(Direction::ToServer, buf[..transmit.size].to_vec());
            progress = true;
        }
        while let Some(transmit) = self.server.endpoint.poll_transmit(self.time, &mut buf) {
            assert_eq!(transmit.destination, self.client.addr);
            self.enqueue(Direction::ToClient, buf[..transmit.size].to_vec());
            progress = true;
        }
        self.buf = buf;
        progress
    }

    fn enqueue(&mut self, direction: Direction, datagram: Vec<u8>) {
        self.enqueue_as(direction, datagram, false);
    }

    fn enqueue_as(&mut self, direction: Direction, mut datagram: Vec<u8>, injected: bool) {
        if let Some(log) = self.capture.as_mut() {
            log.push((self.time, direction, datagram.clone()));
        }
        let (model, stats, queue) = match direction {
            Direction::ToServer => (
                &self.to_server,
                &mut self.to_server_stats,
                &mut self.queues[0],
            ),
            Direction::ToClient => (
                &self.to_client,
                &mut self.to_client_stats,
                &mut self.queues[1],
            ),
        };
        stats.sent += 1;
        stats.bytes_sent += datagram.len() as u64;
        if !injected
            && (model.drop_if.is_some_and(|drop| drop(self.time, &datagram))
                || chance(&mut self.rng, model.loss))
        {
            stats.lost += 1;
            return;
        }
        if let Some(rewrite) = model.rewrite {
            rewrite(&mut datagram);
        }
        if chance(&mut self.rng, model.corrupt) && !datagram.is_empty() {
            let at = (self.rng.next_u64() % datagram.len() as u64) as usize;
            datagram[at] ^= 1 << (self.rng.next_u64() % 8);
            stats.corrupted += 1;
        }
        let mut departure = self.time;
        if let Some(rate) = model.rate {
            while queue.front().is_some_and(|t| *t <= self.time) {
                queue.pop_front();
            }
            if queue.len() >= model.queue_limit {
                stats.queue_drops += 1;
                return;
            }
            let start = queue.back().copied().unwrap_or(self.time).max(self.time);
            departure = start + rate.transmit_time(datagram.len());
            queue.push_back(departure);
        }
        let copies = if chance(&mut self.rng, model.duplicate) {
            stats.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut arrival = departure + model.delay;
            if chance(&mut self.rng, model.reorder) {
                arrival += model.reorder_delay;
            }
            self.sequence += 1;
            self.in_flight.push(Reverse(InFlight {
                arrival,
                sequence: self.sequence,
                direction,
                datagram: datagram.clone(),
            }));
        }
    }

    fn deliver_due(&mut self) -> bool {
        let mut progress = false;
        while self
            .in_flight
            .peek()
            .is_some_and(|f| f.0.arrival <= self.time)
        {
            let Reverse(flight) = self.in_flight.pop().expect("peeked");
            progress = true;
            if let Some(log) = self.arrivals.as_mut() {
                log.push((self.time, flight.direction, flight.datagram.clone()));
            }
            match flight.direction {
                Direction::ToServer => {
                    self.to_server_stats.delivered += 1;
                    self.server.endpoint.handle_datagram(
                        self.time,
                        self.client.addr,
                        &flight.datagram,
                    );
                }
                Direction::ToClient => {
                    self.to_client_stats.delivered += 1;
                    self.client.endpoint.handle_datagram(
                        self.time,
                        self.server.addr,
                        &flight.datagram,
                    );
                }
            }
        }
        progress
    }

    fn run_due_timers(&mut self) {
        for side in [&mut self.client, &mut self.server] {
            if side.endpoint.poll_timeout().is_some_and(|t| t <= self.time) {
                side.endpoint.handle_timeout(self.time);
            }
        }
    }

    fn collect_events(&mut self) {
        for side in [&mut self.client, &mut self.server] {
            while let Some((handle, event)) = side.endpoint.poll_event() {
                if side.handle.is_none() && event == Event::Connected {
                    side.handle = Some(handle);
                }
                side.events.push((self.time, handle, event));
            }
        }
    }
}

/// True with probability `p`, from 53 random bits.
fn chance(rng: &mut ChaCha8Rng, p: f64) -> bool {
    p > 0.0 && ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
}
