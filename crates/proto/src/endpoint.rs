//! The endpoint: many connections behind one socket address, the stateless handshake cookie, and
//! routing of datagrams by connection id.
//!
//! Drivers own exactly one `Endpoint` per socket (or per simulated host port) and loop:
//! feed every received datagram to [`Endpoint::handle_datagram`], call
//! [`Endpoint::handle_timeout`] when [`Endpoint::poll_timeout`] is due, drain
//! [`Endpoint::poll_transmit`] and [`Endpoint::poll_event`].

use crate::config::{Config, ConfigError};
use crate::connection::{Connection, Event};
use crate::time::{Duration, Time};
use std::net::SocketAddr;

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
    /// `Some` to accept incoming connections: the limits (buffers, timeouts, datagram size)
    /// applied to them; their composition and target come from the client's hello.
    pub server: Option<Config>,
}

impl EndpointConfig {
    /// A client-only endpoint.
    pub fn client(cookie_key: [u8; 32]) -> Self {
        EndpointConfig { cookie_key, cookie_lifetime: Duration::from_secs(10), max_connections: 1024, server: None }
    }
    /// An endpoint that also accepts connections with the given limits.
    pub fn server(cookie_key: [u8; 32], limits: Config) -> Self {
        EndpointConfig { server: Some(limits), ..EndpointConfig::client(cookie_key) }
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
}

/// Many connections behind one address.
#[derive(Debug)]
pub struct Endpoint {
    _private: (),
}

#[allow(unused_variables)]
impl Endpoint {
    /// A new endpoint; `seed` feeds its random generator (connection ids).
    pub fn new(config: EndpointConfig, seed: u64) -> Self {
        todo!()
    }

    /// Start a connection to `remote`; the hello goes out on the next `poll_transmit`.
    pub fn connect(&mut self, now: Time, remote: SocketAddr, config: Config) -> Result<ConnectionHandle, ConnectError> {
        todo!()
    }

    /// Feed one received datagram.
    pub fn handle_datagram(&mut self, now: Time, remote: SocketAddr, datagram: &[u8]) {
        todo!()
    }

    /// Run every timer that is due at `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        todo!()
    }

    /// The next datagram to send, if any is allowed at `now`; written into `buf` (cleared first).
    pub fn poll_transmit(&mut self, now: Time, buf: &mut Vec<u8>) -> Option<Transmit> {
        todo!()
    }

    /// When `handle_timeout` (or `poll_transmit`, for pacing) should next be called.
    pub fn poll_timeout(&self) -> Option<Time> {
        todo!()
    }

    /// The next event; `Event::Connected` on a handle not created by `connect` announces an
    /// accepted connection.
    pub fn poll_event(&mut self) -> Option<(ConnectionHandle, Event)> {
        todo!()
    }

    /// A connection by handle.
    pub fn connection(&self, handle: ConnectionHandle) -> Option<&Connection> {
        todo!()
    }

    /// A connection by handle, to write, read or close it.
    pub fn connection_mut(&mut self, handle: ConnectionHandle) -> Option<&mut Connection> {
        todo!()
    }

    /// Forget a closed connection (its handle becomes invalid).
    pub fn remove(&mut self, handle: ConnectionHandle) -> Option<Connection> {
        todo!()
    }

    /// Datagrams dropped without a connection, and handshakes seen.
    pub fn stats(&self) -> EndpointStats {
        todo!()
    }
}
