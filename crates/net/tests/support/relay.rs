//! A UDP relay between one client and one server that loses, duplicates, reorders, delays and
//! rate-limits datagrams, seeded so a run can be repeated.
//!
//! The rate limit is the data plane's own link and drop-tail queue (`qstp_dataplane::link::Link`,
//! the sans-IO port the simulator drives) driven on the wall clock, as a real-time forwarder drives it: the tests and the
//! lab share one bottleneck model.

use qstp_dataplane::color::Color;
use qstp_dataplane::link::{Link, Offered, Pool, QueuedPacket};
use qstp_dataplane::queue::DropTail;
use qstp_proto::{Rate, Time};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::time::Instant;

/// How the relay treats datagrams (each direction independently).
#[derive(Debug, Clone)]
pub struct Impairment {
    /// Probability that a datagram is dropped.
    pub loss: f64,
    /// Probability that a datagram is delivered twice.
    pub duplicate: f64,
    /// Probability that a datagram is held back by `reorder_delay`, letting later ones pass.
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

/// Counters of one relay.
#[derive(Debug, Default)]
pub struct RelayStats {
    pub forwarded: AtomicU64,
    pub lost: AtomicU64,
    pub duplicated: AtomicU64,
    pub reordered: AtomicU64,
    pub queue_drops: AtomicU64,
}

/// A running relay; it stops when dropped.
pub struct Relay {
    /// Where the client should send.
    pub addr: SocketAddr,
    pub stats: Arc<RelayStats>,
    /// When set, every datagram in both directions vanishes (a peer or path that died).
    pub blackhole: Arc<AtomicBool>,
    /// The first datagrams seen client-to-server, for tests that replay or mutate them.
    pub captured: Arc<Mutex<Vec<Vec<u8>>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// Most datagrams kept in `captured`.
const CAPTURE: usize = 64;

impl Relay {
    /// Start relaying to `server`.
    pub async fn start(server: SocketAddr, impairment: Impairment) -> Relay {
        let front = Arc::new(big_socket());
        let back = Arc::new(big_socket());
        back.connect(server).await.unwrap();
        let addr = front.local_addr().unwrap();
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
        Relay {
            addr,
            stats,
            blackhole,
            captured,
            tasks,
        }
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

impl Direction {
    async fn run(self) {
        let mut rng = StdRng::seed_from_u64(self.impairment.seed);
        let mut heap: BinaryHeap<Scheduled> = BinaryHeap::new();
        let mut sequence = 0u64;
        let imp = self.impairment.clone();
        let mut bottleneck = imp
            .rate_bps
            .map(|rate| Bottleneck::new(rate, imp.delay, imp.queue_bytes, imp.seed));
        let mut buf = vec![0u8; 65_536];
        loop {
            let release = heap.peek().map(|Reverse((at, _, _))| *at);
            let link = bottleneck.as_ref().and_then(Bottleneck::next);
            let next_release = match (release, link) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            tokio::select! {
                received = self.from.recv_from(&mut buf) => {
                    let Ok((len, source)) = received else { continue };
                    if self.towards_server {
                        *self.client.lock().unwrap() = Some(source);
                        if let Some(captured) = &self.captured {
                            let mut captured = captured.lock().unwrap();
                            if captured.len() < CAPTURE {
                                captured.push(buf[..len].to_vec());
                            }
                        }
                    }
                    if self.blackhole.load(Ordering::Relaxed) {
                        continue;
                    }
                    let imp = &self.impairment;
                    if rng.gen_bool(imp.loss) {
                        self.stats.lost.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let copies = if rng.gen_bool(imp.duplicate) {
                        self.stats.duplicated.fetch_add(1, Ordering::Relaxed);
                        2
                    } else {
                        1
                    };
                    let now = Instant::now();
                    if let Some(link) = bottleneck.as_mut() {
                        // Rate and delay are the link's; reordering holds back what it delivers.
                        // What was due to leave by now leaves before the new datagram queues.
                        for datagram in link.arrivals(now) {
                            sequence += 1;
                            let release = held(&mut rng, imp, &self.stats, now);
                            heap.push(Reverse((release, sequence, datagram)));
                        }
                        for _ in 0..copies {
                            if !link.offer(now, &buf[..len]) {
                                self.stats.queue_drops.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        continue;
                    }
                    let mut release = now + imp.delay;
                    if rng.gen_bool(imp.reorder) {
                        self.stats.reordered.fetch_add(1, Ordering::Relaxed);
                        release += imp.reorder_delay;
                    }
                    for _ in 0..copies {
                        sequence += 1;
                        heap.push(Reverse((release, sequence, buf[..len].to_vec())));
                    }
                }
                () = sleep_until(next_release) => {
                    let now = Instant::now();
                    if let Some(link) = bottleneck.as_mut() {
                        for datagram in link.arrivals(now) {
                            sequence += 1;
                            let release = held(&mut rng, &imp, &self.stats, now);
                            heap.push(Reverse((release, sequence, datagram)));
                        }
                    }
                    while heap.peek().is_some_and(|Reverse((at, _, _))| *at <= now) {
                        let Reverse((_, _, datagram)) = heap.pop().unwrap();
                        if self.blackhole.load(Ordering::Relaxed) {
                            continue;
                        }
                        let sent = if self.towards_server {
                            self.to.send(&datagram).await
                        } else {
                            let client = *self.client.lock().unwrap();
                            match client {
                                Some(client) => self.to.send_to(&datagram, client).await,
                                None => continue,
                            }
                        };
                        if sent.is_ok() {
                            self.stats.forwarded.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        }
    }
}

/// A loopback UDP socket with large kernel buffers, so bursts queue instead of vanishing.
pub fn big_socket() -> UdpSocket {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
    let _ = socket.set_recv_buffer_size(4 << 20);
    let _ = socket.set_send_buffer_size(4 << 20);
    socket
        .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    socket.set_nonblocking(true).unwrap();
    UdpSocket::from_std(socket.into()).unwrap()
}

/// When a datagram the bottleneck delivered at `now` leaves: now, or later if it is reordered.
fn held(rng: &mut StdRng, imp: &Impairment, stats: &RelayStats, now: Instant) -> Instant {
    if rng.gen_bool(imp.reorder) {
        stats.reordered.fetch_add(1, Ordering::Relaxed);
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
