//! The state shared by an endpoint's driver and its handles: the protocol endpoint itself, one
//! slot of wakers and flags per connection, and the queue of accepted connections.
//!
//! Everything sits behind one mutex, held only for short, non-blocking protocol calls; handles
//! register their waker under the same lock the driver holds while dispatching events, so no
//! wake-up is lost.

use crate::dscp::Dscp;
use crate::socket::SocketStats;
use qstp_proto::{CloseReason, ConnectionHandle, Event, Time};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};
use std::task::Waker;
use std::time::Instant;
use tokio::sync::Notify;

/// What the driver and the handles share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    /// Wakes the driver: something was written, read, closed or dropped.
    pub(crate) driver: Notify,
    /// Wakes `accept` callers.
    pub(crate) incoming: Notify,
}

impl Shared {
    /// Lock the state; a panic elsewhere never poisons it for good (the data stays consistent
    /// because every critical section is a single protocol call plus bookkeeping).
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The protocol endpoint and the bookkeeping around it.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) proto: qstp_proto::Endpoint,
    /// Time zero of the protocol clock.
    pub(crate) epoch: Instant,
    pub(crate) slots: HashMap<ConnectionHandle, Slot>,
    /// Accepted connections not yet taken by `accept`; bounded by the endpoint's connection limit.
    pub(crate) incoming: VecDeque<ConnectionHandle>,
    /// Whether new connections are welcome (a server endpoint with a live handle).
    pub(crate) accepting: bool,
    /// Live `Endpoint` handles; the driver stops when none is left and no connection remains.
    pub(crate) endpoint_handles: usize,
    /// The code point for every connection; `None` picks one by target rate.
    pub(crate) dscp: Option<Dscp>,
    /// Why the driver stopped, once it has.
    pub(crate) stopped: Option<String>,
    pub(crate) socket_stats: SocketStats,
    /// Closed connections with no handle left, forgotten once their last datagrams went out.
    pub(crate) retiring: Vec<ConnectionHandle>,
    /// Connections opened by `connect` whose handshake may still be pending (empty, normally):
    /// only while one is does the driver wait on the socket's error queue.
    pub(crate) connecting: Vec<ConnectionHandle>,
    /// Whether this endpoint holds a pre-shared key (its hellos carry a binder).
    pub(crate) psk: bool,
    /// Free & Stunts delegation groups of this endpoint's connections (at most one per
    /// connection, so bounded by the connection limit).
    pub(crate) groups: Vec<crate::delegation::GroupState>,
}

/// Wakers and flags of one connection.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    pub(crate) connected: bool,
    pub(crate) closed: Option<CloseReason>,
    pub(crate) all_acknowledged: bool,
    /// This side finished its stream.
    pub(crate) finished: bool,
    /// No handle is left: remove the connection once closed.
    pub(crate) dropped: bool,
    pub(crate) tos: u8,
    pub(crate) reader: Option<Waker>,
    pub(crate) writer: Option<Waker>,
    pub(crate) message_reader: Option<Waker>,
    /// Tasks waiting for the handshake, acknowledgement or the close.
    pub(crate) watchers: Vec<Waker>,
    /// The handshake's destination answered with ICMP "port unreachable": nothing listens there.
    pub(crate) refused: Option<SocketAddr>,
}

impl Slot {
    fn wake_all(&mut self) {
        for waker in [
            self.reader.take(),
            self.writer.take(),
            self.message_reader.take(),
        ]
        .into_iter()
        .flatten()
        {
            waker.wake();
        }
        self.wake_watchers();
    }

    fn wake_watchers(&mut self) {
        for waker in self.watchers.drain(..) {
            waker.wake();
        }
    }

    /// Remember `waker` as a watcher, once.
    pub(crate) fn watch(&mut self, waker: &Waker) {
        if !self.watchers.iter().any(|w| w.will_wake(waker)) {
            self.watchers.push(waker.clone());
        }
    }
}

/// `addr` with an IPv4-mapped IPv6 address written as IPv4, as the error queue reports it.
fn canonical(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => addr,
        },
        SocketAddr::V4(_) => addr,
    }
}

/// Store `waker` in `slot` unless it would wake the same task already.
pub(crate) fn register(slot: &mut Option<Waker>, waker: &Waker) {
    match slot {
        Some(existing) if existing.will_wake(waker) => {}
        _ => *slot = Some(waker.clone()),
    }
}

impl State {
    /// The protocol clock now.
    pub(crate) fn now(&self) -> Time {
        Time::from_nanos(u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// The wall-clock instant of protocol time `t`; `None` beyond what the clock can represent.
    pub(crate) fn instant(&self, t: Time) -> Option<Instant> {
        self.epoch
            .checked_add(std::time::Duration::from_nanos(t.as_nanos()))
    }

    /// The TOS byte for a connection's datagrams (and CS0 for stateless replies).
    pub(crate) fn tos_for(&self, handle: Option<ConnectionHandle>) -> u8 {
        match handle.and_then(|h| self.slots.get(&h)) {
            Some(slot) => slot.tos,
            None => self.dscp.unwrap_or(Dscp::CS0).tos(0),
        }
    }

    /// The code point a connection gets under this endpoint's policy.
    pub(crate) fn dscp_for(&self, handle: ConnectionHandle) -> Dscp {
        let has_target = self
            .proto
            .connection(handle)
            .is_some_and(|c| !c.config().congestion.target().is_zero());
        self.dscp.unwrap_or(Dscp::default_for(has_target))
    }

    /// Act on one protocol event; returns whether `accept` callers should be woken.
    pub(crate) fn dispatch(&mut self, handle: ConnectionHandle, event: Event) -> bool {
        if !self.slots.contains_key(&handle) {
            return self.dispatch_unknown(handle, event);
        }
        let slot = self.slots.get_mut(&handle).expect("checked above");
        match event {
            Event::Connected => {
                slot.connected = true;
                slot.wake_watchers();
            }
            Event::Readable | Event::Finished => {
                for waker in [slot.reader.take(), slot.message_reader.take()]
                    .into_iter()
                    .flatten()
                {
                    waker.wake();
                }
            }
            Event::Writable => {
                if let Some(waker) = slot.writer.take() {
                    waker.wake();
                }
            }
            Event::AllAcknowledged => {
                slot.all_acknowledged = true;
                slot.wake_watchers();
            }
            // Read from the connection's stats (`target_met`) when the application asks.
            Event::TargetMet(_) => {}
            Event::Closed(reason) => {
                slot.closed = Some(reason);
                slot.wake_all();
                if slot.dropped {
                    self.retiring.push(handle);
                }
            }
        }
        false
    }

    /// An event for a connection with no slot: a newly accepted one, or one already forgotten.
    fn dispatch_unknown(&mut self, handle: ConnectionHandle, event: Event) -> bool {
        match event {
            Event::Connected => {
                let tos = self.dscp_for(handle).tos(0);
                let mut slot = Slot {
                    connected: true,
                    tos,
                    ..Slot::default()
                };
                if self.accepting {
                    self.slots.insert(handle, slot);
                    self.incoming.push_back(handle);
                    return true;
                }
                // Nobody will take it: refuse politely, then forget it once closed.
                let now = self.now();
                if let Some(conn) = self.proto.connection_mut(handle) {
                    conn.close(now, 0, b"not accepting connections");
                }
                slot.dropped = true;
                self.slots.insert(handle, slot);
            }
            Event::Closed(_) => self.retiring.push(handle),
            _ => {}
        }
        false
    }

    /// The kernel reported these destinations unreachable: fail the handshakes still waiting for
    /// one of them (the connect call returns [`crate::Error::NothingListens`]). Established and
    /// accepted connections are left alone: a stray ICMP error does not end them.
    pub(crate) fn refuse(&mut self, destinations: &[SocketAddr]) {
        for handle in &self.connecting {
            let Some(slot) = self.slots.get_mut(handle) else {
                continue;
            };
            if slot.connected || slot.closed.is_some() || slot.refused.is_some() {
                continue;
            }
            let Some(conn) = self.proto.connection(*handle) else {
                continue;
            };
            let remote = canonical(conn.remote());
            if !conn.is_established() && !conn.is_closed() && destinations.contains(&remote) {
                slot.refused = Some(remote);
                slot.wake_watchers();
            }
        }
    }

    /// Whether a handshake this endpoint started is still pending (forgetting those that are not).
    pub(crate) fn handshaking(&mut self) -> bool {
        let slots = &self.slots;
        self.connecting.retain(|handle| {
            slots
                .get(handle)
                .is_some_and(|s| !s.connected && s.closed.is_none() && s.refused.is_none())
        });
        !self.connecting.is_empty()
    }

    /// Drop the retiring connections from the protocol endpoint and the slots.
    pub(crate) fn retire(&mut self) {
        for handle in std::mem::take(&mut self.retiring) {
            self.slots.remove(&handle);
            self.proto.remove(handle);
        }
    }

    /// The last handle of a connection went away: close it unless it is finishing gracefully.
    pub(crate) fn release(&mut self, handle: ConnectionHandle) {
        let now = self.now();
        let Some(slot) = self.slots.get_mut(&handle) else {
            return;
        };
        slot.dropped = true;
        if slot.closed.is_some() {
            self.retiring.push(handle);
            return;
        }
        if !slot.finished {
            if let Some(conn) = self.proto.connection_mut(handle) {
                conn.close(now, 0, b"connection dropped");
            }
        }
    }

    /// Whether the driver has nothing left to do.
    pub(crate) fn is_idle(&self) -> bool {
        self.endpoint_handles == 0 && self.slots.is_empty()
    }

    /// The last endpoint handle went away: stop accepting and close what was never accepted.
    pub(crate) fn stop_accepting(&mut self) {
        self.accepting = false;
        while let Some(handle) = self.incoming.pop_front() {
            self.release(handle);
        }
    }

    /// Mark the driver as stopped and wake everyone waiting on it.
    pub(crate) fn stop(&mut self, why: String) {
        self.stopped = Some(why);
        for slot in self.slots.values_mut() {
            slot.wake_all();
        }
    }
}
