//! The endpoint: many connections behind one socket address, the stateless handshake cookie, and
//! routing of datagrams by connection id.
//!
//! Drivers own exactly one `Endpoint` per socket (or per simulated host port) and loop:
//! feed every received datagram to [`Endpoint::handle_datagram`], call
//! [`Endpoint::handle_timeout`] when [`Endpoint::poll_timeout`] is due, drain
//! [`Endpoint::poll_transmit`] and [`Endpoint::poll_event`].

mod cookie;
mod limiter;

use crate::config::{Config, ConfigError};
use crate::connection::{is_protected_type, Connection, Event};
use crate::protection::{KeyShare, PacketKeys, PreSharedKey, Protection, Side, Transcript};
use crate::rate::Rate;
use crate::time::{Duration, Time};
use crate::wire::{
    destination_of, Close, ConnectionId, Hello, HelloPacket, Packet, RateControl, Retry,
    KEY_MISMATCH_CODE, REFUSED_CODE,
};
use cookie::CookieJar;
use limiter::ReplyLimiter;
pub use limiter::{MAX_PREFIXES, REPLIES_PER_SECOND, REPLY_BURST};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::{IpAddr, SocketAddr};

/// Most stateless replies (retries, refusals) waiting to be sent; more are dropped.
pub const MAX_STATELESS_REPLIES: usize = 64;

/// Identifies a connection inside its endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionHandle(pub usize);

/// A datagram to send, written into the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Where to send it.
    pub destination: SocketAddr,
    /// Its length in bytes, at the start of the caller's buffer.
    pub size: usize,
    /// The connection it belongs to, `None` for stateless handshake replies.
    pub connection: Option<ConnectionHandle>,
}

/// Which compositions a server accepts from a client's hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerPolicy {
    /// Accept the fixed-rate controller, which ignores congestion (for tests and calibration).
    pub allow_fixed_rate: bool,
    /// The largest gTFRC target g (or fixed rate) accepted; `None` for no limit.
    pub max_target: Option<Rate>,
    /// Accept hellos that ask for no packet protection (the simulator's and tests'); refused by
    /// default.
    pub allow_unprotected: bool,
}

impl Default for ServerPolicy {
    /// Refuse the fixed-rate controller; accept any target.
    fn default() -> Self {
        ServerPolicy {
            allow_fixed_rate: false,
            max_target: None,
            allow_unprotected: false,
        }
    }
}

impl ServerPolicy {
    /// Accept every composition and target (test harnesses and the simulator's own flows).
    pub fn permissive() -> Self {
        ServerPolicy {
            allow_fixed_rate: true,
            max_target: None,
            allow_unprotected: true,
        }
    }

    /// Why `congestion` is refused, or `None` if it is accepted.
    pub fn refusal(&self, congestion: &RateControl) -> Option<String> {
        let rate = match *congestion {
            RateControl::Fixed { .. } if !self.allow_fixed_rate => {
                return Some("the fixed-rate controller is not accepted".into())
            }
            RateControl::Fixed { rate } => rate,
            RateControl::Gtfrc { target } => target,
            RateControl::Tfrc | RateControl::Aimd => return None,
        };
        match self.max_target {
            Some(max) if rate > max => Some(format!(
                "target {rate} is above the largest accepted, {max}"
            )),
            _ => None,
        }
    }
}

/// Endpoint-wide settings.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Secret for the stateless handshake cookie; the driver draws it from a real random source
    /// (the simulator from its seeded generator).
    pub cookie_key: [u8; 32],
    /// How long a cookie stays valid.
    pub cookie_lifetime: Duration,
    /// Most connections at once; further handshakes are refused.
    pub max_connections: usize,
    /// Most server connections from one IP address; further hellos from it are refused.
    pub max_per_address: usize,
    /// Most half-open server connections (accepted, but no packet of the client authenticated
    /// yet) at once; they hold no slot of `max_connections` and end after the handshake
    /// timeout.
    pub max_half_open: usize,
    /// Most half-open server connections from one IP address.
    pub max_half_open_per_address: usize,
    /// `Some` to accept incoming connections: the limits (buffers, timeouts, datagram size)
    /// applied to them; their composition and target come from the client's hello.
    pub server: Option<Config>,
    /// Which compositions and targets a server accepts.
    pub policy: ServerPolicy,
    /// A key both ends must hold: with one, only a peer holding the same key completes a
    /// handshake (a man in the middle cannot), and unprotected connections are refused.
    pub psk: Option<PreSharedKey>,
}

impl EndpointConfig {
    /// A client-only endpoint.
    pub fn client(cookie_key: [u8; 32]) -> Self {
        EndpointConfig {
            cookie_key,
            cookie_lifetime: Duration::from_secs(10),
            max_connections: 1024,
            max_per_address: 64,
            max_half_open: 256,
            max_half_open_per_address: 8,
            server: None,
            policy: ServerPolicy::default(),
            psk: None,
        }
    }
    /// An endpoint that also accepts connections with the given limits.
    pub fn server(cookie_key: [u8; 32], limits: Config) -> Self {
        EndpointConfig {
            server: Some(limits),
            ..EndpointConfig::client(cookie_key)
        }
    }
}

/// Why a connection could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// The configuration cannot work.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The endpoint already holds `max_connections`.
    #[error("too many connections")]
    TooManyConnections,
}

/// What an endpoint dropped without a connection to blame, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Datagrams that did not decode.
    pub malformed: u64,
    /// Datagrams for no known connection.
    pub unknown_connection: u64,
    /// Hellos without a valid, fresh cookie (answered statelessly, no state kept).
    pub cookie_challenges: u64,
    /// Hellos refused: bad cookie, unsupported composition, too many connections.
    pub refused: u64,
    /// Connections accepted.
    pub accepted: u64,
    /// Stateless replies (retries, refusals) not sent: `MAX_STATELESS_REPLIES` were waiting.
    pub stateless_dropped: u64,
    /// Stateless replies not sent: their destination's network had used its share
    /// ([`REPLY_BURST`], then [`REPLIES_PER_SECOND`] per /24 or /48).
    pub replies_limited: u64,
    /// Datagrams for a protected connection that failed authentication (also counted in that
    /// connection's stats).
    pub auth_failures: u64,
    /// Hellos refused because their pre-shared key binder did not verify, or one side had no
    /// key (also counted in `refused`); no state was kept for them.
    pub key_mismatches: u64,
}

/// Many connections behind one address.
#[derive(Debug)]
#[cfg_attr(feature = "fuzzing", derive(Clone))]
pub struct Endpoint {
    config: EndpointConfig,
    cookies: CookieJar,
    rng: ChaCha20Rng,
    connections: BTreeMap<ConnectionHandle, Connection>,
    /// Routing: the id the peer addresses a connection with. Ordered maps, not hash maps: no
    /// per-process random hash keys, so nothing here can make two runs of one seed differ, and
    /// lookups stay O(log n) whatever ids or addresses a peer picks.
    by_id: BTreeMap<ConnectionId, ConnectionHandle>,
    /// Accepted connections by client address and client id, to answer a repeated hello.
    by_client: BTreeMap<(SocketAddr, ConnectionId), ConnectionHandle>,
    /// Replies that need no connection: retries and refusals, bounded.
    stateless: VecDeque<(SocketAddr, Vec<u8>)>,
    /// The per-network bound on those replies.
    limiter: ReplyLimiter,
    next_handle: usize,
    /// Round-robin position of `poll_transmit`.
    next_to_poll: ConnectionHandle,
    stats: EndpointStats,
    /// Where a protected datagram is opened before it is decoded.
    opened: Vec<u8>,
    /// What the endpoint knows of each connection, so that no call scans them all.
    book: Book,
}

/// A connection's standing, for the limits on hellos.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    /// Holds a slot.
    Live,
    /// Accepted, but the client has not proven its keys.
    HalfOpen,
    /// Over.
    Closed,
}

/// The endpoint's books on its connections: their deadlines in time order, which may have a
/// datagram or an event, and counts by standing and address. Each call visits only the
/// connections it concerns, so a datagram costs the same with one connection or a thousand.
#[derive(Debug, Default)]
#[cfg_attr(feature = "fuzzing", derive(Clone))]
struct Book {
    /// Every connection's next deadline (`Connection::poll_timeout`), in time order.
    deadlines: BTreeSet<(Time, ConnectionHandle)>,
    deadline_of: BTreeMap<ConnectionHandle, Time>,
    /// Connections that may have a datagram to send now; any other has none until a datagram,
    /// a timeout or the application reaches it, or its deadline passes.
    sendable: BTreeSet<ConnectionHandle>,
    /// Connections that may have an event.
    eventful: BTreeSet<ConnectionHandle>,
    /// Connections the application may have changed (`connection_mut`), looked at again before
    /// the endpoint's next answer.
    touched: BTreeSet<ConnectionHandle>,
    standing: BTreeMap<ConnectionHandle, (Standing, IpAddr)>,
    live: usize,
    half_open: usize,
    /// (live or half-open, half-open) connections per peer address.
    by_address: BTreeMap<IpAddr, (usize, usize)>,
    /// Connections asked for a datagram, an event or a timeout, for cost accounting.
    visits: u64,
}

impl Book {
    /// Look at `conn` again after anything may have changed it.
    fn note(&mut self, handle: ConnectionHandle, conn: &Connection) {
        self.refresh(handle, conn);
        self.sendable.insert(handle);
    }

    /// [`Book::note`] but for whether it may send (it just said it has nothing to).
    fn refresh(&mut self, handle: ConnectionHandle, conn: &Connection) {
        if let Some(old) = self.deadline_of.remove(&handle) {
            self.deadlines.remove(&(old, handle));
        }
        if let Some(t) = conn.poll_timeout() {
            self.deadlines.insert((t, handle));
            self.deadline_of.insert(handle, t);
        }
        self.eventful.insert(handle);
        let standing = if conn.is_closed() {
            Standing::Closed
        } else if conn.is_half_open() {
            Standing::HalfOpen
        } else {
            Standing::Live
        };
        self.set_standing(handle, Some((standing, conn.remote().ip())));
    }

    fn set_standing(&mut self, handle: ConnectionHandle, new: Option<(Standing, IpAddr)>) {
        let old = match new {
            Some(new) => self.standing.insert(handle, new),
            None => self.standing.remove(&handle),
        };
        if old == new {
            return;
        }
        for (entry, sign) in [(old, -1isize), (new, 1)] {
            let Some((standing, ip)) = entry else {
                continue;
            };
            let (here, half) = self.by_address.entry(ip).or_default();
            let add = |n: &mut usize| *n = n.saturating_add_signed(sign);
            match standing {
                Standing::Live => {
                    add(&mut self.live);
                    add(here);
                }
                Standing::HalfOpen => {
                    add(&mut self.half_open);
                    add(here);
                    add(half);
                }
                Standing::Closed => {}
            }
            if *here == 0 && *half == 0 {
                self.by_address.remove(&ip);
            }
        }
    }

    /// The connections whose deadline is `now` or earlier.
    fn due(&self, now: Time) -> Vec<ConnectionHandle> {
        self.deadlines
            .range(..=(now, ConnectionHandle(usize::MAX)))
            .map(|&(_, handle)| handle)
            .collect()
    }

    /// Forget a removed connection.
    fn forget(&mut self, handle: ConnectionHandle) {
        if let Some(old) = self.deadline_of.remove(&handle) {
            self.deadlines.remove(&(old, handle));
        }
        self.sendable.remove(&handle);
        self.eventful.remove(&handle);
        self.touched.remove(&handle);
        self.set_standing(handle, None);
    }
}

impl Endpoint {
    /// A new endpoint whose generator (connection ids, key shares, skipped packet numbers) is
    /// seeded with 64 bits: for simulations and tests, whose runs must repeat. Key shares drawn
    /// from it are only as secret as the seed: a real network wants [`Endpoint::with_entropy`].
    pub fn new(config: EndpointConfig, seed: u64) -> Self {
        Endpoint::with_rng(config, ChaCha20Rng::seed_from_u64(seed))
    }

    /// A new endpoint whose generator is seeded with 256 bits the caller drew from a real random
    /// source (the operating system's): the key shares of its connections are secret.
    pub fn with_entropy(config: EndpointConfig, entropy: [u8; 32]) -> Self {
        Endpoint::with_rng(config, ChaCha20Rng::from_seed(entropy))
    }

    fn with_rng(config: EndpointConfig, rng: ChaCha20Rng) -> Self {
        Endpoint {
            cookies: CookieJar::new(config.cookie_key, config.cookie_lifetime),
            config,
            rng,
            connections: BTreeMap::new(),
            by_id: BTreeMap::new(),
            by_client: BTreeMap::new(),
            stateless: VecDeque::new(),
            limiter: ReplyLimiter::default(),
            next_handle: 0,
            next_to_poll: ConnectionHandle(0),
            stats: EndpointStats::default(),
            opened: Vec::new(),
            book: Book::default(),
        }
    }

    /// Look again at the connections the application may have changed since the last call.
    fn settle(&mut self) {
        while let Some(handle) = self.book.touched.pop_first() {
            if let Some(conn) = self.connections.get(&handle) {
                self.book.note(handle, conn);
            }
        }
    }

    /// Look at one connection again after the endpoint acted on it.
    fn note(&mut self, handle: ConnectionHandle) {
        if let Some(conn) = self.connections.get(&handle) {
            self.book.note(handle, conn);
        }
    }

    /// How many times a connection was asked for a datagram, an event or a timeout since the
    /// endpoint began: with idle connections beside a busy one, this grows with the busy one's
    /// traffic only (no call scans every connection).
    pub fn connection_visits(&self) -> u64 {
        self.book.visits
    }

    /// Start a connection to `remote`; the hello goes out on the next `poll_transmit`.
    pub fn connect(
        &mut self,
        now: Time,
        remote: SocketAddr,
        config: Config,
    ) -> Result<ConnectionHandle, ConnectError> {
        config.validate()?;
        if self.config.psk.is_some() && config.protection == Protection::Null {
            return Err(ConnectError::Config(ConfigError::Invalid {
                key: "protection",
                reason: "a pre-shared key needs packet protection".into(),
            }));
        }
        if self.live_connections() >= self.config.max_connections {
            return Err(ConnectError::TooManyConnections);
        }
        let id = self.fresh_id();
        let share = (config.protection == Protection::Aead).then(|| self.fresh_key_share());
        // Drawn only when used, so the lab's runs (no protection, no skips) keep their ids.
        let skip_seed = if config.skip_packet_numbers {
            self.rng.next_u64()
        } else {
            0
        };
        let psk = self.config.psk.clone();
        Ok(self.insert(
            Connection::new_client(now, remote, id, config, share, psk, skip_seed),
            None,
        ))
    }

    /// Feed one received datagram.
    pub fn handle_datagram(&mut self, now: Time, remote: SocketAddr, datagram: &[u8]) {
        self.settle();
        if is_protected_type(datagram) && self.protected_connection(datagram).is_some() {
            // Opened in a copy: the caller's bytes stay as they are.
            let mut scratch = std::mem::take(&mut self.opened);
            scratch.clear();
            scratch.extend_from_slice(datagram);
            self.handle_datagram_mut(now, remote, &mut scratch);
            self.opened = scratch;
            return;
        }
        self.handle_cleartext(now, remote, datagram);
    }

    /// Feed one received datagram the endpoint may overwrite: a protected one is decrypted in
    /// place, with no copy. Otherwise the same as [`Endpoint::handle_datagram`].
    pub fn handle_datagram_mut(&mut self, now: Time, remote: SocketAddr, datagram: &mut [u8]) {
        self.settle();
        // A datagram for a protected connection is opened first; nothing in it is read unless
        // it authenticates.
        if is_protected_type(datagram) {
            if let Some(handle) = self.protected_connection(datagram) {
                let Some(conn) = self.connections.get_mut(&handle) else {
                    return;
                };
                let size = datagram.len();
                let Ok(packet) = conn.open_in_place(datagram) else {
                    self.stats.auth_failures += 1;
                    return;
                };
                match Packet::decode(&datagram[packet]) {
                    Ok(packet) => conn.handle_packet(now, remote, &packet, size),
                    // Authentic but malformed: the peer's bug, not an attack.
                    Err(_) => self.stats.malformed += 1,
                }
                self.note(handle);
                return;
            }
        }
        self.handle_cleartext(now, remote, datagram);
    }

    /// The protected connection a datagram is addressed to, if any.
    fn protected_connection(&self, datagram: &[u8]) -> Option<ConnectionHandle> {
        let handle = destination_of(datagram).and_then(|id| self.by_id.get(&id).copied())?;
        self.connections
            .get(&handle)
            .is_some_and(Connection::is_protected)
            .then_some(handle)
    }

    /// A datagram read as it is: the handshake's, and every packet of unprotected connections.
    fn handle_cleartext(&mut self, now: Time, remote: SocketAddr, datagram: &[u8]) {
        let packet = match Packet::decode(datagram) {
            Ok(packet) => packet,
            Err(_) => {
                self.stats.malformed += 1;
                return;
            }
        };
        if let Packet::Hello(hello) = &packet {
            self.handle_hello(now, remote, hello, &packet, datagram);
            return;
        }
        let handle = packet
            .destination()
            .and_then(|id| self.by_id.get(&id).copied());
        match handle.and_then(|h| Some((h, self.connections.get_mut(&h)?))) {
            Some((handle, conn)) => {
                conn.handle_packet(now, remote, &packet, datagram.len());
                self.note(handle);
            }
            None => self.stats.unknown_connection += 1,
        }
    }

    /// A hello: answer a repeat, challenge without a valid cookie, else accept or refuse.
    fn handle_hello(
        &mut self,
        now: Time,
        remote: SocketAddr,
        hello: &Hello,
        packet: &Packet<'_>,
        datagram: &[u8],
    ) {
        let size = datagram.len();
        let Some(limits) = self.config.server.as_ref() else {
            self.stats.refused += 1;
            return;
        };
        // A server holding a pre-shared key answers only hellos that prove it (WireGuard's mac1
        // habit): to anyone else it says nothing, not even a retry.
        if self.config.psk.is_some() && self.key_mismatch(hello, datagram).is_some() {
            self.stats.key_mismatches += 1;
            return;
        }
        let cookie_ok = match &hello.cookie {
            None => {
                self.stats.cookie_challenges += 1;
                false
            }
            Some(cookie) if !self.cookies.verify(now, remote, hello.source, cookie) => {
                self.stats.refused += 1;
                false
            }
            Some(_) => true,
        };
        if !cookie_ok {
            // No state for an unproven address: a retry whose cookie proves it next time.
            let retry = Retry {
                destination: hello.source,
                cookie: self.cookies.mint(now, remote, hello.source),
                timestamp_echo: hello.timestamp,
            };
            self.queue_stateless(now, remote, &Packet::Retry(retry));
            return;
        }
        // Checked before anything is allocated: a client with another key costs no slot.
        if let Some(reason) = self.key_mismatch(hello, datagram) {
            self.stats.key_mismatches += 1;
            self.refuse_with(now, remote, hello.source, KEY_MISMATCH_CODE, reason);
            return;
        }
        // A repeat with a fresh cookie and a good binder: our accept was lost, the connection
        // answers again (the repeat refreshes none of its timers).
        if let Some(&handle) = self.by_client.get(&(remote, hello.source)) {
            if let Some(conn) = self.connections.get_mut(&handle) {
                conn.handle_packet(now, remote, packet, size);
                self.note(handle);
                return;
            }
        }
        let protected = hello.key_share.is_some();
        if !protected && (!self.config.policy.allow_unprotected || self.config.psk.is_some()) {
            self.refuse(
                now,
                remote,
                hello.source,
                b"unprotected connections are not accepted",
            );
            return;
        }
        // The composition is the client's; the limits are the server's (smaller datagram wins).
        let mut config = limits.clone();
        config.protection = if protected {
            Protection::Aead
        } else {
            Protection::Null
        };
        config.congestion = limits.congestion.adopt(hello.composition.congestion);
        config.error = hello.composition.error;
        config.order = hello.composition.order;
        config.max_datagram = config.max_datagram.min(usize::from(hello.max_datagram));
        if let Some(reason) = self.config.policy.refusal(&hello.composition.congestion) {
            self.refuse(now, remote, hello.source, reason.as_bytes());
            return;
        }
        if let Err(error) = config.validate() {
            self.refuse(now, remote, hello.source, error.to_string().as_bytes());
            return;
        }
        if self.live_connections() >= self.config.max_connections {
            self.refuse(now, remote, hello.source, b"too many connections");
            return;
        }
        let (from_address, half_open_here) = self
            .book
            .by_address
            .get(&remote.ip())
            .copied()
            .unwrap_or_default();
        if protected
            && (self.book.half_open >= self.config.max_half_open
                || half_open_here >= self.config.max_half_open_per_address)
        {
            self.refuse(now, remote, hello.source, b"too many unfinished handshakes");
            return;
        }
        if from_address >= self.config.max_per_address {
            self.refuse(
                now,
                remote,
                hello.source,
                b"too many connections from this address",
            );
            return;
        }
        let keys = match hello.key_share {
            None => None,
            Some(client_share) => {
                let share = self.fresh_key_share();
                let transcript = Transcript {
                    hello: &hello.transcript(),
                    client_share,
                    server_share: share.public(),
                };
                let psk = self.config.psk.as_ref();
                match PacketKeys::derive(Side::Server, &share, client_share, psk, &transcript) {
                    Ok(keys) => Some((share, keys)),
                    Err(error) => {
                        self.refuse(now, remote, hello.source, error.to_string().as_bytes());
                        return;
                    }
                }
            }
        };
        let id = self.fresh_id();
        let skip_seed = if config.skip_packet_numbers {
            self.rng.next_u64()
        } else {
            0
        };
        let conn = Connection::new_server(now, remote, id, hello, config, keys, skip_seed);
        self.insert(conn, Some((remote, hello.source)));
        self.stats.accepted += 1;
    }

    /// Why a hello's pre-shared key binder does not match this server's key, if it does not.
    fn key_mismatch(&self, hello: &Hello, datagram: &[u8]) -> Option<&'static [u8]> {
        match (&self.config.psk, &hello.binder) {
            (None, None) => None,
            (Some(psk), Some(binder)) => {
                let covered = HelloPacket::new_checked(datagram).ok()?;
                (!psk.verifies(covered.binder_covered(), binder))
                    .then_some(&b"another pre-shared key"[..])
            }
            (Some(_), None) => Some(b"a pre-shared key is required"),
            (None, Some(_)) => Some(b"this server holds no pre-shared key"),
        }
    }

    /// Refuse a proven client statelessly with a close packet.
    fn refuse(&mut self, now: Time, remote: SocketAddr, client: ConnectionId, reason: &[u8]) {
        self.refuse_with(now, remote, client, REFUSED_CODE, reason);
    }

    /// [`Endpoint::refuse`] with a given code.
    fn refuse_with(
        &mut self,
        now: Time,
        remote: SocketAddr,
        client: ConnectionId,
        code: u32,
        reason: &[u8],
    ) {
        self.stats.refused += 1;
        let reason = &reason[..reason.len().min(crate::wire::MAX_REASON_LEN)];
        let close = Close {
            destination: client,
            graceful: false,
            code,
            reason,
        };
        self.queue_stateless(now, remote, &Packet::Close(close));
    }

    fn queue_stateless(&mut self, now: Time, remote: SocketAddr, packet: &Packet<'_>) {
        if self.stateless.len() >= MAX_STATELESS_REPLIES {
            self.stats.stateless_dropped += 1;
            return;
        }
        if !self.limiter.allow(now, &remote) {
            self.stats.replies_limited += 1;
            return;
        }
        let mut bytes = Vec::with_capacity(packet.encoded_len());
        packet.encode(&mut bytes);
        self.stateless.push_back((remote, bytes));
    }

    fn insert(
        &mut self,
        conn: Connection,
        client: Option<(SocketAddr, ConnectionId)>,
    ) -> ConnectionHandle {
        let handle = ConnectionHandle(self.next_handle);
        self.next_handle += 1;
        self.by_id.insert(conn.local_id(), handle);
        if let Some(key) = client {
            self.by_client.insert(key, handle);
        }
        self.connections.insert(handle, conn);
        self.note(handle);
        handle
    }

    /// A random connection id no connection of this endpoint uses (zero is never used).
    fn fresh_id(&mut self) -> ConnectionId {
        loop {
            let id = ConnectionId(self.rng.next_u64());
            if id.0 != 0 && !self.by_id.contains_key(&id) {
                return id;
            }
        }
    }

    /// An ephemeral key pair from the endpoint's generator.
    fn fresh_key_share(&mut self) -> KeyShare {
        let mut secret = [0; 32];
        self.rng.fill_bytes(&mut secret);
        KeyShare::from_secret(secret)
    }

    /// Connections holding a slot: neither closed nor half-open.
    fn live_connections(&mut self) -> usize {
        self.settle();
        self.book.live
    }

    /// Run every timer that is due at `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        self.settle();
        let due = self.book.due(now);
        for handle in due {
            if let Some(conn) = self.connections.get_mut(&handle) {
                self.book.visits += 1;
                conn.handle_timeout(now);
                self.note(handle);
            }
        }
    }

    /// The datagram of `size` bytes just sent for `handle` was refused by the local network
    /// (EMSGSIZE) or reported too big by a validated ICMP message: path MTU discovery counts it as
    /// a failed probe or shrinks the connection's datagrams (RFC 8899 §4.6); a connection that
    /// cannot shrink closes with [`CloseReason::DatagramTooLarge`](crate::CloseReason).
    pub fn handle_datagram_too_big(&mut self, now: Time, handle: ConnectionHandle, size: usize) {
        if let Some(conn) = self.connections.get_mut(&handle) {
            conn.on_datagram_too_big(now, size);
            self.note(handle);
        }
    }

    /// An ICMP Packet Too Big (IPv6) or "fragmentation needed" (IPv4) about a datagram sent to
    /// `remote`, naming the next hop's `mtu` and quoting the datagram's first bytes. Only the
    /// connection the quote names hears of it, and believes it only if it quotes a probe on its
    /// way (RFC 8899 §4.6.1); anything else is ignored.
    pub fn handle_packet_too_big(&mut self, remote: SocketAddr, mtu: usize, quoted: &[u8]) {
        let Some(id) = crate::wire::destination_of(quoted) else {
            return;
        };
        // Rare, and believed only after validation: a scan is fine here.
        let mut touched = Vec::new();
        for (handle, conn) in &mut self.connections {
            if conn.remote() == remote && conn.remote_id() == Some(id) && !conn.is_closed() {
                conn.on_packet_too_big(mtu, quoted);
                touched.push(*handle);
            }
        }
        for handle in touched {
            self.note(handle);
        }
    }

    /// The next datagram to send, if any is allowed at `now`; written into `buf` (cleared first).
    pub fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        buf.clear();
        if let Some((destination, bytes)) = self.stateless.pop_front() {
            buf.extend_from_slice(&bytes);
            return Some(Transmit {
                destination,
                size: buf.len(),
                connection: None,
            });
        }
        self.settle();
        // A connection whose deadline passed may send (pacing), whether or not its timers ran.
        let due = self.book.due(now);
        self.book.sendable.extend(due);
        // Round robin: start after the connection that sent last, among those that may send.
        let start = self.next_to_poll;
        let mut sent = None;
        loop {
            let next = self
                .book
                .sendable
                .range(start..)
                .next()
                .or_else(|| self.book.sendable.range(..start).next())
                .copied();
            let Some(handle) = next else { break };
            let Some(conn) = self.connections.get_mut(&handle) else {
                self.book.sendable.remove(&handle);
                continue;
            };
            self.book.visits += 1;
            if conn.poll_transmit(now, buf) {
                sent = Some((handle, conn.remote()));
                self.note(handle);
                break;
            }
            // Nothing until a datagram, a timeout or the application reaches it, or its
            // deadline passes.
            self.book.sendable.remove(&handle);
            self.book.refresh(handle, conn);
        }
        let (handle, destination) = sent?;
        self.next_to_poll = ConnectionHandle(handle.0 + 1);
        Some(Transmit {
            destination,
            size: buf.len(),
            connection: Some(handle),
        })
    }

    /// When `handle_timeout` (or `poll_transmit`, for pacing) should next be called.
    pub fn poll_timeout(&self) -> Option<Time> {
        let noted = self.book.deadlines.first().map(|&(t, _)| t);
        // Connections the application changed since are asked directly (few).
        self.book
            .touched
            .iter()
            .filter_map(|h| self.connections.get(h)?.poll_timeout())
            .chain(noted)
            .min()
    }

    /// The next event; `Event::Connected` on a handle not created by `connect` announces an
    /// accepted connection.
    pub fn poll_event(&mut self) -> Option<(ConnectionHandle, Event)> {
        self.settle();
        while let Some(&handle) = self.book.eventful.first() {
            if let Some(conn) = self.connections.get_mut(&handle) {
                self.book.visits += 1;
                if let Some(event) = conn.poll_event() {
                    return Some((handle, event));
                }
            }
            self.book.eventful.remove(&handle);
        }
        None
    }

    /// A connection by handle.
    pub fn connection(&self, handle: ConnectionHandle) -> Option<&Connection> {
        self.connections.get(&handle)
    }

    /// A connection by handle, to write, read or close it.
    pub fn connection_mut(&mut self, handle: ConnectionHandle) -> Option<&mut Connection> {
        let conn = self.connections.get_mut(&handle)?;
        // Whatever the caller does to it is looked at before the endpoint's next answer.
        self.book.touched.insert(handle);
        Some(conn)
    }

    /// Several connections at once, in the order of `handles` (a delegation group steers its
    /// Free and its Stunts together: `crate::delegation`); `None` if a handle is unknown or
    /// named twice.
    pub fn connections_mut(
        &mut self,
        handles: &[ConnectionHandle],
    ) -> Option<Vec<&mut Connection>> {
        let mut found: Vec<(usize, &mut Connection)> = Vec::with_capacity(handles.len());
        for (handle, conn) in self.connections.iter_mut() {
            if let Some(i) = handles.iter().position(|h| h == handle) {
                found.push((i, conn));
            }
        }
        // A handle named twice is found once.
        if found.len() != handles.len() {
            return None;
        }
        self.book.touched.extend(handles.iter().copied());
        found.sort_by_key(|(i, _)| *i);
        Some(found.into_iter().map(|(_, c)| c).collect())
    }

    /// Forget a closed connection (its handle becomes invalid).
    pub fn remove(&mut self, handle: ConnectionHandle) -> Option<Connection> {
        let conn = self.connections.remove(&handle)?;
        self.book.forget(handle);
        self.by_id.remove(&conn.local_id());
        if let Some(client) = conn.remote_id() {
            if self.by_client.get(&(conn.remote(), client)) == Some(&handle) {
                self.by_client.remove(&(conn.remote(), client));
            }
        }
        Some(conn)
    }

    /// Datagrams dropped without a connection, and handshakes seen.
    pub fn stats(&self) -> EndpointStats {
        self.stats
    }

    /// How many connections the endpoint holds, closed ones not yet removed included.
    pub fn connection_count(&self) -> usize {
        self.connections.len()
    }
}
