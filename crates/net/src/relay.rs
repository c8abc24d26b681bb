//! An impairing UDP relay between one client and one server: it loses, duplicates, reorders,
//! delays and rate-limits datagrams, seeded so that a run can be repeated. It puts a path with
//! losses between two programs on one machine (loopback loses nothing), so that what reacts to
//! losses (TFRC, a Free & Stunts group) can be watched at work; `qstp relay` runs it from the
//! shell, and the crate's tests run through it.
//!
//! The rate limit is the data plane's own link and drop-tail queue
//! (`qstp_dataplane::link::Link`, the sans-IO port the simulator drives) driven on the wall
//! clock, as a real-time forwarder drives it: the relay and the lab share one bottleneck model.
//!
//! The relay forwards what arrives on its listening socket to the server from a socket of its
//! own, and the server's answers to the client it last heard from: one client at a time (one
//! endpoint, however many connections it opens, uses one socket). The rate limit holds on the
//! way to the server; loss, duplication, reordering and the delay hold both ways.

use qstp_dataplane::color::Color;
use qstp_dataplane::link::{Link, Offered, Pool, QueuedPacket};
use qstp_dataplane::queue::DropTail;
use qstp_proto::{Rate, Time};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::time::Instant;

/// How the relay treats datagrams (each direction independently).
#[derive(Debug, Clone, PartialEq)]
pub struct Impairment {
    /// Probability that a datagram is dropped (0 to 1).
    pub loss: f64,
    /// Probability that a datagram is delivered twice (0 to 1).
    pub duplicate: f64,
    /// Probability that a datagram is held back by `reorder_delay`, letting later ones pass (0
    /// to 1).
    pub reorder: f64,
    /// How long a reordered datagram is held back.
    pub reorder_delay: Duration,
    /// Base one-way delay.
    pub delay: Duration,
    /// Bottleneck rate in bit/s for client-to-server datagrams, `None` for no limit.
    pub rate_bps: Option<u64>,
    /// Bytes the bottleneck's drop-tail queue holds, counted in 1500-byte packets (at least one).
    pub queue_bytes: usize,
    /// Seed of the relay's random choices.
    pub seed: u64,
}

impl Impairment {
    /// A clean path through a bottleneck of `rate_bps` with a 50-packet drop-tail queue and 5 ms of
    /// delay each way.
    pub fn bottleneck(rate_bps: u64) -> Self {
        Impairment {
            rate_bps: Some(rate_bps),
            queue_bytes: 50 * 1500,
            delay: Duration::from_millis(5),
            ..Impairment::default()
        }
    }

    /// Refuse what the relay cannot do: a probability outside 0..=1 (or not a number), a rate of
    /// zero, a delay over [`MAX_DELAY`].
    pub fn check(&self) -> Result<(), String> {
        for (name, p) in [
            ("loss", self.loss),
            ("duplicate", self.duplicate),
            ("reorder", self.reorder),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{name} probability {p} is not in 0..=1"));
            }
        }
        if self.rate_bps == Some(0) {
            return Err("a bottleneck rate of 0 would carry nothing".into());
        }
        for (name, d) in [("delay", self.delay), ("reorder delay", self.reorder_delay)] {
            if d > MAX_DELAY {
                return Err(format!(
                    "{name} {d:?} is above the relay's limit of {MAX_DELAY:?}"
                ));
            }
        }
        Ok(())
    }
}

impl Default for Impairment {
    fn default() -> Self {
        Impairment {
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::from_millis(3),
            delay: Duration::ZERO,
            rate_bps: None,
            queue_bytes: 75_000,
            seed: 1,
        }
    }
}

/// Longest delay the relay applies (its held datagrams are bounded by [`MAX_HELD_BYTES`]).
pub const MAX_DELAY: Duration = Duration::from_secs(10);

/// Most bytes of datagrams held for a later release in one direction (delayed or reordered);
/// a datagram beyond is dropped and counted in `overflow`.
pub const MAX_HELD_BYTES: usize = 64 << 20;

/// Counters of one direction of a relay.
#[derive(Debug, Default)]
pub struct Counters {
    /// Datagrams sent on.
    pub forwarded: AtomicU64,
    /// Their bytes (UDP payload).
    pub forwarded_bytes: AtomicU64,
    /// Datagrams dropped at random (`loss`).
    pub lost: AtomicU64,
    /// Datagrams delivered twice.
    pub duplicated: AtomicU64,
    /// Datagrams held back and so reordered.
    pub reordered: AtomicU64,
    /// Datagrams the bottleneck's drop-tail queue had no room for.
    pub queue_drops: AtomicU64,
    /// Datagrams dropped because [`MAX_HELD_BYTES`] were held already.
    pub overflow: AtomicU64,
    /// Datagrams the socket refused to send (nothing listening, no client heard yet).
    pub send_failed: AtomicU64,
}

/// The counters of a relay at one instant (one direction, or both added).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub forwarded: u64,
    pub forwarded_bytes: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub reordered: u64,
    pub queue_drops: u64,
    pub overflow: u64,
    pub send_failed: u64,
}

impl Counts {
    /// Every datagram the relay did not deliver: lost, dropped by the queue, over the bound, or
    /// refused by the socket.
    pub fn dropped(&self) -> u64 {
        self.lost + self.queue_drops + self.overflow + self.send_failed
    }

    /// What happened since `earlier`.
    pub fn since(&self, earlier: &Counts) -> Counts {
        Counts {
            forwarded: self.forwarded - earlier.forwarded,
            forwarded_bytes: self.forwarded_bytes - earlier.forwarded_bytes,
            lost: self.lost - earlier.lost,
            duplicated: self.duplicated - earlier.duplicated,
            reordered: self.reordered - earlier.reordered,
            queue_drops: self.queue_drops - earlier.queue_drops,
            overflow: self.overflow - earlier.overflow,
            send_failed: self.send_failed - earlier.send_failed,
        }
    }

    fn add(&self, other: &Counts) -> Counts {
        Counts {
            forwarded: self.forwarded + other.forwarded,
            forwarded_bytes: self.forwarded_bytes + other.forwarded_bytes,
            lost: self.lost + other.lost,
            duplicated: self.duplicated + other.duplicated,
            reordered: self.reordered + other.reordered,
            queue_drops: self.queue_drops + other.queue_drops,
            overflow: self.overflow + other.overflow,
            send_failed: self.send_failed + other.send_failed,
        }
    }
}

impl Counters {
    /// The counters now.
    pub fn get(&self) -> Counts {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Counts {
            forwarded: load(&self.forwarded),
            forwarded_bytes: load(&self.forwarded_bytes),
            lost: load(&self.lost),
            duplicated: load(&self.duplicated),
            reordered: load(&self.reordered),
            queue_drops: load(&self.queue_drops),
            overflow: load(&self.overflow),
            send_failed: load(&self.send_failed),
        }
    }
}

/// Counters of one relay, per direction.
#[derive(Debug, Default)]
pub struct RelayStats {
    /// Client to server (through the bottleneck).
    pub to_server: Counters,
    /// Server to client.
    pub to_client: Counters,
}

impl RelayStats {
    /// Both directions added.
    pub fn total(&self) -> Counts {
        self.to_server.get().add(&self.to_client.get())
    }
}

/// A running relay; it stops when dropped.
pub struct Relay {
    /// Where the client should send.
    pub addr: SocketAddr,
    /// The server it forwards to.
    pub server: SocketAddr,
    pub stats: Arc<RelayStats>,
    /// When set, every datagram in both directions vanishes (a peer or path that died).
    pub blackhole: Arc<AtomicBool>,
    /// The first datagrams seen client-to-server (at most [`CAPTURE`]), for tests that replay or
    /// mutate them.
    pub captured: Arc<Mutex<Vec<Vec<u8>>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// Most datagrams kept in `captured`.
pub const CAPTURE: usize = 64;

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("addr", &self.addr)
            .field("server", &self.server)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Relay {
    /// Start relaying from an ephemeral loopback port to `server` (on a tokio runtime).
    pub async fn start(server: SocketAddr, impairment: Impairment) -> io::Result<Relay> {
        Relay::bind(
            "127.0.0.1:0".parse().expect("an address"),
            server,
            impairment,
        )
        .await
    }

    /// Start relaying datagrams arriving at `listen` to `server` (on a tokio runtime). Fails when
    /// the impairment is out of range (`InvalidInput`, with the reason) or a socket cannot be
    /// opened.
    pub async fn bind(
        listen: SocketAddr,
        server: SocketAddr,
        impairment: Impairment,
    ) -> io::Result<Relay> {
        impairment
            .check()
            .map_err(|why| io::Error::new(io::ErrorKind::InvalidInput, why))?;
        let front = Arc::new(udp_socket(listen)?);
        let unspecified: SocketAddr = if server.is_ipv4() {
            "0.0.0.0:0".parse().expect("an address")
        } else {
            "[::]:0".parse().expect("an address")
        };
        let back_addr = if server.ip().is_loopback() {
            SocketAddr::new(server.ip(), 0)
        } else {
            unspecified
        };
        let back = Arc::new(udp_socket(back_addr)?);
        back.connect(server).await?;
        let addr = front.local_addr()?;
        let stats = Arc::new(RelayStats::default());
        let blackhole = Arc::new(AtomicBool::new(false));
        let captured = Arc::new(Mutex::new(Vec::new()));
        let client = Arc::new(Mutex::new(None::<SocketAddr>));
        let forward = Direction {
            from: front.clone(),
            to: back.clone(),
            client: client.clone(),
            towards_server: true,
            impairment: impairment.clone(),
            stats: stats.clone(),
            blackhole: blackhole.clone(),
            captured: Some(captured.clone()),
        };
        let backward = Direction {
            from: back,
            to: front,
            client,
            towards_server: false,
            impairment: Impairment {
                rate_bps: None,
                seed: impairment.seed.wrapping_add(1),
                ..impairment
            },
            stats: stats.clone(),
            blackhole: blackhole.clone(),
            captured: None,
        };
        let tasks = vec![tokio::spawn(forward.run()), tokio::spawn(backward.run())];
        Ok(Relay {
            addr,
            server,
            stats,
            blackhole,
            captured,
            tasks,
        })
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

struct Direction {
    from: Arc<UdpSocket>,
    to: Arc<UdpSocket>,
    client: Arc<Mutex<Option<SocketAddr>>>,
    towards_server: bool,
    impairment: Impairment,
    stats: Arc<RelayStats>,
    blackhole: Arc<AtomicBool>,
    captured: Option<Arc<Mutex<Vec<Vec<u8>>>>>,
}

/// A datagram waiting for its release time; ties keep arrival order.
type Scheduled = Reverse<(Instant, u64, Vec<u8>)>;

/// The data plane's link and drop-tail queue on the wall clock, with the datagrams it holds (at
/// most its queue, the one serialising and those propagating).
struct Bottleneck {
    link: Link<Vec<u8>>,
    store: Pool<Vec<u8>>,
    epoch: Instant,
}

impl Bottleneck {
    fn new(rate_bps: u64, delay: Duration, queue_bytes: usize, seed: u64) -> Self {
        let limit = (queue_bytes / 1500).max(1);
        let link = Link::new(
            Rate::from_bps(rate_bps),
            qstp_proto::Duration::from_nanos(delay.as_nanos() as u64),
            Box::new(DropTail::new(limit)),
            None,
            ChaCha8Rng::seed_from_u64(seed),
            ChaCha8Rng::seed_from_u64(seed ^ 1),
        );
        Bottleneck {
            link,
            store: Pool::new(),
            epoch: Instant::now(),
        }
    }

    fn time(&self, at: Instant) -> Time {
        Time::ZERO + qstp_proto::Duration::from_nanos((at - self.epoch).as_nanos() as u64)
    }

    fn instant(&self, at: Time) -> Instant {
        self.epoch + Duration::from_nanos((at - Time::ZERO).as_nanos())
    }

    /// Offer a datagram at `now`; whether the queue took it.
    fn offer(&mut self, now: Instant, datagram: &[u8]) -> bool {
        let size = datagram.len() as u32;
        let id = self.store.insert(datagram.to_vec());
        let queued = QueuedPacket {
            id,
            size,
            group: 0,
            flow: 0,
            color: Color::Green,
            ecn: qstp_dataplane::ecn::Ecn::NotEct,
        };
        let now = self.time(now);
        !matches!(
            self.link.offer(now, queued, &mut self.store),
            Offered::Dropped(_)
        )
    }

    /// When the link next has work to do.
    fn next(&self) -> Option<Instant> {
        self.link.poll_timeout().map(|t| self.instant(t))
    }

    /// Do what is due by `now`; the datagrams that reached the far end, in order.
    fn arrivals(&mut self, now: Instant) -> Vec<Vec<u8>> {
        let now = self.time(now);
        self.link.handle_timeout(now, &mut self.store);
        while self.link.poll_transmit(now).is_some() {}
        let mut out = Vec::new();
        while let Some(id) = self.link.poll_arrival(now) {
            out.extend(self.store.remove(id));
        }
        out
    }
}

/// The datagrams of one direction waiting for their release, within [`MAX_HELD_BYTES`].
struct Held {
    heap: BinaryHeap<Scheduled>,
    bytes: usize,
    sequence: u64,
}

impl Held {
    /// Hold `datagram` until `release`; false (and nothing held) past the bound.
    fn push(&mut self, release: Instant, datagram: Vec<u8>) -> bool {
        if self.bytes + datagram.len() > MAX_HELD_BYTES {
            return false;
        }
        self.bytes += datagram.len();
        self.sequence += 1;
        self.heap.push(Reverse((release, self.sequence, datagram)));
        true
    }

    fn next(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    /// The next datagram due by `now`.
    fn pop_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.next()? > now {
            return None;
        }
        let Reverse((_, _, datagram)) = self.heap.pop()?;
        self.bytes -= datagram.len();
        Some(datagram)
    }
}

impl Direction {
    fn counters(&self) -> &Counters {
        if self.towards_server {
            &self.stats.to_server
        } else {
            &self.stats.to_client
        }
    }

    fn hold(&self, held: &mut Held, release: Instant, datagram: Vec<u8>) {
        if !held.push(release, datagram) {
            self.counters().overflow.fetch_add(1, Ordering::Relaxed);
        }
    }

    async fn run(self) {
        let mut rng = StdRng::seed_from_u64(self.impairment.seed);
        let mut held = Held {
            heap: BinaryHeap::new(),
            bytes: 0,
            sequence: 0,
        };
        let imp = self.impairment.clone();
        let mut bottleneck = imp
            .rate_bps
            .map(|rate| Bottleneck::new(rate, imp.delay, imp.queue_bytes, imp.seed));
        let mut buf = vec![0u8; 65_536];
        loop {
            let release = held.next();
            let link = bottleneck.as_ref().and_then(Bottleneck::next);
            let next_release = match (release, link) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            tokio::select! {
                received = self.from.recv_from(&mut buf) => {
                    // An error here is an ICMP report about an earlier send (port unreachable):
                    // that datagram was counted when its send failed, or is gone; go on.
                    let Ok((len, source)) = received else { continue };
                    if self.towards_server {
                        *self.client.lock().unwrap_or_else(|e| e.into_inner()) = Some(source);
                        if let Some(captured) = &self.captured {
                            let mut captured = captured.lock().unwrap_or_else(|e| e.into_inner());
                            if captured.len() < CAPTURE {
                                captured.push(buf[..len].to_vec());
                            }
                        }
                    }
                    if self.blackhole.load(Ordering::Relaxed) {
                        continue;
                    }
                    let counters = self.counters();
                    if rng.gen_bool(imp.loss) {
                        counters.lost.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let copies = if rng.gen_bool(imp.duplicate) {
                        counters.duplicated.fetch_add(1, Ordering::Relaxed);
                        2
                    } else {
                        1
                    };
                    let now = Instant::now();
                    if let Some(link) = bottleneck.as_mut() {
                        // Rate and delay are the link's; reordering holds back what it delivers.
                        // What was due to leave by now leaves before the new datagram queues.
                        for datagram in link.arrivals(now) {
                            let release = reordered(&mut rng, &imp, counters, now);
                            self.hold(&mut held, release, datagram);
                        }
                        for _ in 0..copies {
                            if !link.offer(now, &buf[..len]) {
                                counters.queue_drops.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        continue;
                    }
                    let mut release = now + imp.delay;
                    if rng.gen_bool(imp.reorder) {
                        counters.reordered.fetch_add(1, Ordering::Relaxed);
                        release += imp.reorder_delay;
                    }
                    for _ in 0..copies {
                        self.hold(&mut held, release, buf[..len].to_vec());
                    }
                }
                () = sleep_until(next_release) => {
                    let now = Instant::now();
                    if let Some(link) = bottleneck.as_mut() {
                        for datagram in link.arrivals(now) {
                            let release = reordered(&mut rng, &imp, self.counters(), now);
                            self.hold(&mut held, release, datagram);
                        }
                    }
                    while let Some(datagram) = held.pop_due(now) {
                        if self.blackhole.load(Ordering::Relaxed) {
                            continue;
                        }
                        self.send(&datagram).await;
                    }
                }
            }
        }
    }

    /// Send one datagram on, counting what became of it.
    async fn send(&self, datagram: &[u8]) {
        let counters = self.counters();
        let sent = if self.towards_server {
            self.to.send(datagram).await
        } else {
            let client = *self.client.lock().unwrap_or_else(|e| e.into_inner());
            match client {
                Some(client) => self.to.send_to(datagram, client).await,
                None => Err(io::ErrorKind::NotConnected.into()),
            }
        };
        match sent {
            Ok(_) => {
                counters.forwarded.fetch_add(1, Ordering::Relaxed);
                counters
                    .forwarded_bytes
                    .fetch_add(datagram.len() as u64, Ordering::Relaxed);
            }
            Err(_) => {
                counters.send_failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// A UDP socket bound to `addr` with large kernel buffers (asked for, best effort), so that bursts
/// queue instead of vanishing; on a tokio runtime.
pub fn udp_socket(addr: SocketAddr) -> io::Result<UdpSocket> {
    let domain = if addr.is_ipv4() {
        socket2::Domain::IPV4
    } else {
        socket2::Domain::IPV6
    };
    let socket = socket2::Socket::new(domain, socket2::Type::DGRAM, None)?;
    let _ = socket.set_recv_buffer_size(4 << 20);
    let _ = socket.set_send_buffer_size(4 << 20);
    socket.bind(&addr.into())?;
    socket.set_nonblocking(true)?;
    UdpSocket::from_std(socket.into())
}

/// When a datagram the bottleneck delivered at `now` leaves: now, or later if it is reordered.
fn reordered(rng: &mut StdRng, imp: &Impairment, counters: &Counters, now: Instant) -> Instant {
    if rng.gen_bool(imp.reorder) {
        counters.reordered.fetch_add(1, Ordering::Relaxed);
        now + imp.reorder_delay
    } else {
        now
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impairments_out_of_range_are_refused_with_the_reason() {
        assert!(Impairment::default().check().is_ok());
        assert!(Impairment::bottleneck(1_000_000).check().is_ok());
        let bad = |imp: Impairment| imp.check().unwrap_err();
        assert!(bad(Impairment {
            loss: 1.5,
            ..Impairment::default()
        })
        .contains("loss probability 1.5"));
        assert!(bad(Impairment {
            reorder: f64::NAN,
            ..Impairment::default()
        })
        .contains("reorder probability"));
        assert!(bad(Impairment {
            rate_bps: Some(0),
            ..Impairment::default()
        })
        .contains("carry nothing"));
        assert!(bad(Impairment {
            delay: Duration::from_secs(11),
            ..Impairment::default()
        })
        .contains("limit"));
    }

    #[test]
    fn held_datagrams_stay_within_their_bound_and_leave_in_order() {
        let now = Instant::now();
        let mut held = Held {
            heap: BinaryHeap::new(),
            bytes: 0,
            sequence: 0,
        };
        assert!(held.push(now + Duration::from_millis(2), vec![2; 10]));
        assert!(held.push(now + Duration::from_millis(1), vec![1; 10]));
        assert!(held.push(now + Duration::from_millis(1), vec![3; 10]));
        assert!(!held.push(now, vec![0; MAX_HELD_BYTES]));
        assert_eq!(held.bytes, 30);
        assert_eq!(held.pop_due(now), None);
        let later = now + Duration::from_millis(5);
        let order: Vec<u8> = std::iter::from_fn(|| held.pop_due(later))
            .map(|d| d[0])
            .collect();
        assert_eq!(order, vec![1, 3, 2]);
        assert_eq!(held.bytes, 0);
    }
}
