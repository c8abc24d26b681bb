//! The endpoint handle: bind a socket, connect, accept, and read endpoint-wide statistics.

use crate::connection::Connection;
use crate::dscp::Dscp;
use crate::error::Error;
use crate::group::{Group, GroupOptions};
use crate::socket::{self, SocketStats};
use crate::state::{Shared, Slot, State};
use crate::tap::Tap;
use qstp_proto::{
    CloseReason, Config, EndpointConfig, EndpointStats, PreSharedKey, Rate, ServerPolicy,
};
use rand::RngCore;
use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Instant;
use tokio::sync::Notify;

/// How an endpoint is set up.
#[derive(Debug, Clone)]
pub struct EndpointOptions {
    /// Accept incoming connections with these limits (buffers, timeouts, datagram size); the
    /// composition and target come from each client. `None` makes a client-only endpoint.
    pub accept: Option<Config>,
    /// The code point of every datagram; `None` marks connections with a target rate AF11 and
    /// the others CS0 (best effort).
    pub dscp: Option<Dscp>,
    /// Most connections at once.
    pub max_connections: usize,
    /// Which compositions and targets incoming connections may ask for (by default the
    /// fixed-rate controller is refused, unprotected connections too, and any target accepted).
    pub policy: ServerPolicy,
    /// A key both ends must hold: only a peer with the same key completes a handshake, so a man
    /// in the middle cannot (without one, packets are still encrypted and authenticated, but the
    /// first peer to answer is trusted).
    pub psk: Option<PreSharedKey>,
    /// A hook that sees every datagram sent and received (a packet capture); none by default,
    /// and then the driver does no work for it.
    pub tap: Option<Tap>,
}

impl Default for EndpointOptions {
    fn default() -> Self {
        EndpointOptions {
            accept: None,
            dscp: None,
            max_connections: 1024,
            policy: ServerPolicy::default(),
            psk: None,
            tap: None,
        }
    }
}

/// A UDP socket carrying any number of QSTP connections; cheap to clone.
///
/// A background thread (the driver) owns the socket and the protocol state; it stops once every
/// `Endpoint` clone and every [`Connection`] is gone.
#[derive(Debug)]
pub struct Endpoint {
    shared: Arc<Shared>,
    local_addr: SocketAddr,
}

/// Statistics of an endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndpointSnapshot {
    /// What the protocol dropped or refused without a connection to blame.
    pub protocol: EndpointStats,
    /// What the socket layer did.
    pub socket: SocketStats,
    /// Connections the endpoint holds state for, accepted or not.
    pub connections: usize,
}

impl Endpoint {
    /// A client-only endpoint on `addr` (use port 0 for any): it connects but never accepts (its
    /// [`accept`](Endpoint::accept) returns `None` at once, and handshakes sent to it go
    /// unanswered); use [`server`](Endpoint::server) or [`bind_with`](Endpoint::bind_with) with
    /// `accept` set to take connections.
    pub fn bind(addr: SocketAddr) -> Result<Endpoint, Error> {
        Endpoint::bind_with(addr, EndpointOptions::default())
    }

    /// An endpoint on `addr` that also accepts connections with the limits of `accept`.
    pub fn server(addr: SocketAddr, accept: Config) -> Result<Endpoint, Error> {
        Endpoint::bind_with(
            addr,
            EndpointOptions {
                accept: Some(accept),
                ..EndpointOptions::default()
            },
        )
    }

    /// An endpoint on `addr` set up by `options`.
    pub fn bind_with(addr: SocketAddr, options: EndpointOptions) -> Result<Endpoint, Error> {
        if let Some(limits) = &options.accept {
            limits.validate().map_err(|e| Error::Connect(e.into()))?;
        }
        let socket = socket::bind(addr)?;
        // The handshake cookie key must be unpredictable to anyone off this host.
        let mut cookie_key = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut cookie_key);
        let mut config = match options.accept.clone() {
            Some(limits) => EndpointConfig::server(cookie_key, limits),
            None => EndpointConfig::client(cookie_key),
        };
        config.max_connections = options.max_connections;
        config.policy = options.policy;
        config.psk = options.psk.clone();
        // Key shares are drawn from a generator seeded by the operating system: 256 bits.
        let mut entropy = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut entropy);
        let state = State {
            proto: qstp_proto::Endpoint::with_entropy(config, entropy),
            epoch: Instant::now(),
            slots: HashMap::new(),
            incoming: VecDeque::new(),
            accepting: options.accept.is_some(),
            endpoint_handles: 1,
            dscp: options.dscp,
            stopped: None,
            socket_stats: SocketStats::default(),
            retiring: Vec::new(),
            connecting: Vec::new(),
            psk: options.psk.is_some(),
            groups: Vec::new(),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            driver: Notify::new(),
            incoming: Notify::new(),
        });
        let local_addr = crate::driver::spawn(shared.clone(), socket, options.tap)?;
        Ok(Endpoint { shared, local_addr })
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Open a connection to `remote` with `config` (its composition, limits and target rate);
    /// resolves once the handshake completes. Where the operating system reports it (Linux), an
    /// ICMP "port unreachable" from `remote` fails it at once with [`Error::NothingListens`]
    /// instead of after the handshake timeout.
    pub async fn connect(&self, remote: SocketAddr, config: Config) -> Result<Connection, Error> {
        let handle = {
            let mut state = self.shared.lock();
            if let Some(why) = &state.stopped {
                return Err(Error::EndpointStopped(why.clone()));
            }
            let now = state.now();
            let handle = state.proto.connect(now, remote, config)?;
            let tos = state.dscp_for(handle).tos(0);
            state.slots.insert(
                handle,
                Slot {
                    tos,
                    ..Slot::default()
                },
            );
            state.connecting.push(handle);
            handle
        };
        self.shared.driver.notify_one();
        let connection = Connection::new(self.shared.clone(), handle);
        poll_fn(|cx| {
            let mut state = self.shared.lock();
            let stopped = state.stopped.clone();
            let Some(slot) = state.slots.get_mut(&handle) else {
                return Poll::Ready(Err(Error::EndpointStopped("connection vanished".into())));
            };
            if let Some(destination) = slot.refused {
                return Poll::Ready(Err(Error::NothingListens(destination)));
            }
            if let Some(reason) = slot.closed.clone() {
                // Answers came but none authenticated: another pre-shared key, or a middlebox.
                let forged = state
                    .proto
                    .connection(handle)
                    .map_or(0, |c| c.stats().auth_failures);
                if reason == CloseReason::HandshakeTimeout && forged > 0 {
                    return Poll::Ready(Err(Error::HandshakeNotAuthenticated(forged)));
                }
                if reason == CloseReason::HandshakeTimeout && state.psk {
                    return Poll::Ready(Err(Error::ConnectTimeoutWithKey));
                }
                return Poll::Ready(Err(Error::from_close(&reason).unwrap_or(Error::Finished)));
            }
            if slot.connected {
                return Poll::Ready(Ok(()));
            }
            if let Some(why) = stopped {
                return Poll::Ready(Err(Error::EndpointStopped(why)));
            }
            slot.watch(cx.waker());
            Poll::Pending
        })
        .await?;
        Ok(connection)
    }

    /// The next accepted connection; `None` at once on a client-only endpoint (see
    /// [`accepts`](Endpoint::accepts)), and `None` once the endpoint stopped.
    pub async fn accept(&self) -> Option<Connection> {
        loop {
            let notified = self.shared.incoming.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.shared.lock();
                if let Some(handle) = state.incoming.pop_front() {
                    return Some(Connection::new(self.shared.clone(), handle));
                }
                if state.stopped.is_some() || !state.accepting {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// Whether this endpoint takes incoming connections (it was made with accept limits).
    pub fn accepts(&self) -> bool {
        self.shared.lock().accepting
    }

    /// Counters of the protocol endpoint and the socket, and the number of connections held.
    pub fn stats(&self) -> EndpointSnapshot {
        let state = self.shared.lock();
        EndpointSnapshot {
            protocol: state.proto.stats(),
            socket: state.socket_stats,
            connections: state.slots.len(),
        }
    }

    /// Make `free` the Free of a delegation group whose Stunts are `stunts`, all connections of
    /// this endpoint with byte streams, following `target` (Free & Stunts paper: a soft
    /// guarantee on a best-effort path, paid by the application's other connections; see
    /// [`Group`]). Refused with the reason for a Stunt of another endpoint or already in a
    /// group, a member closed, or a composition without a byte stream.
    pub fn group(
        &self,
        free: &Connection,
        stunts: &[&Connection],
        target: Rate,
        options: GroupOptions,
    ) -> Result<Group, Error> {
        Group::start(self.shared.clone(), free, stunts, target, options)
    }

    /// Why the driver stopped, if it has.
    pub fn stopped(&self) -> Option<String> {
        self.shared.lock().stopped.clone()
    }
}

impl Clone for Endpoint {
    fn clone(&self) -> Self {
        self.shared.lock().endpoint_handles += 1;
        Endpoint {
            shared: self.shared.clone(),
            local_addr: self.local_addr,
        }
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.endpoint_handles -= 1;
        if state.endpoint_handles == 0 {
            state.stop_accepting();
        }
        drop(state);
        self.shared.incoming.notify_waiters();
        self.shared.driver.notify_one();
    }
}
