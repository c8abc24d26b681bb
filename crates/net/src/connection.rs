//! The connection handle: the ordered byte stream as `AsyncRead`/`AsyncWrite`, messages,
//! the target rate at run time, statistics, finish and close.

use crate::dscp::Dscp;
use crate::error::Error;
use crate::state::{register, Shared, Slot, State};
use qstp_proto::{CloseReason, Config, ConnectionHandle, Rate, ReadError, Stats, WriteError};
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// One QSTP connection; clones share it, and it closes when the last clone is dropped (after
/// delivering what was written if the stream was finished).
///
/// One task may read and another write at the same time (through two clones); two tasks reading
/// at once are not supported.
#[derive(Debug, Clone)]
pub struct Connection {
    inner: Arc<Handle>,
}

/// The part whose drop releases the connection.
#[derive(Debug)]
struct Handle {
    shared: Arc<Shared>,
    handle: ConnectionHandle,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared.lock().release(self.handle);
        self.shared.driver.notify_one();
    }
}

impl Connection {
    pub(crate) fn new(shared: Arc<Shared>, handle: ConnectionHandle) -> Connection {
        Connection {
            inner: Arc::new(Handle { shared, handle }),
        }
    }

    fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// The protocol connection's handle.
    pub(crate) fn handle(&self) -> ConnectionHandle {
        self.inner.handle
    }

    /// Whether this connection is one of the endpoint behind `shared`.
    pub(crate) fn belongs_to(&self, shared: &Arc<Shared>) -> bool {
        Arc::ptr_eq(&self.inner.shared, shared)
    }

    /// Run `f` on the protocol connection and its slot, or fail if either is gone.
    fn with<T>(&self, f: impl FnOnce(&mut State, ConnectionHandle) -> T) -> T {
        let mut state = self.shared().lock();
        f(&mut state, self.inner.handle)
    }

    /// The error for a connection that can no longer be used.
    fn gone(state: &State, handle: ConnectionHandle) -> Error {
        if let Some(reason) = state.slots.get(&handle).and_then(|s| s.closed.as_ref()) {
            return Error::from_close(reason).unwrap_or(Error::Finished);
        }
        Error::EndpointStopped(
            state
                .stopped
                .clone()
                .unwrap_or_else(|| "connection vanished".into()),
        )
    }

    /// The peer's address.
    pub fn remote(&self) -> Result<SocketAddr, Error> {
        self.with(|state, h| {
            state
                .proto
                .connection(h)
                .map(|c| c.remote())
                .ok_or_else(|| Self::gone(state, h))
        })
    }

    /// Counters and rate-control state, readable while the connection runs.
    pub fn stats(&self) -> Result<Stats, Error> {
        self.with(|state, h| {
            state
                .proto
                .connection(h)
                .map(|c| c.stats())
                .ok_or_else(|| Self::gone(state, h))
        })
    }

    /// The composition and limits in force (for an accepted connection, those negotiated).
    pub fn config(&self) -> Result<Config, Error> {
        self.with(|state, h| {
            state
                .proto
                .connection(h)
                .map(|c| c.config().clone())
                .ok_or_else(|| Self::gone(state, h))
        })
    }

    /// Change the target rate g at run time, as the QSTP paper's `setsockopt()` does (§4.3).
    pub fn set_target_rate(&self, target: Rate) -> Result<(), Error> {
        self.with(|state, h| match state.proto.connection_mut(h) {
            Some(conn) => {
                conn.set_target_rate(target);
                Ok(())
            }
            None => Err(Self::gone(state, h)),
        })?;
        self.shared().driver.notify_one();
        Ok(())
    }

    /// Mark this connection's datagrams with `dscp` from now on.
    pub fn set_dscp(&self, dscp: Dscp) {
        self.with(|state, h| {
            if let Some(slot) = state.slots.get_mut(&h) {
                slot.tos = dscp.tos(0);
            }
        });
    }

    /// The code point this connection's datagrams carry.
    pub fn dscp(&self) -> Dscp {
        self.with(|state, h| {
            let tos = state.slots.get(&h).map_or(0, |s| s.tos);
            Dscp::new(tos >> 2).unwrap_or(Dscp::CS0)
        })
    }

    /// Why the connection ended, once it has.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.with(|state, h| state.slots.get(&h).and_then(|s| s.closed.clone()))
    }

    /// Queue one message (for the unordered and partially reliable compositions); waits while the
    /// send buffer is full.
    pub async fn send_message(&self, data: &[u8]) -> Result<(), Error> {
        poll_fn(|cx| {
            let mut state = self.shared().lock();
            let h = self.inner.handle;
            let now = state.now();
            let result = match state.proto.connection_mut(h) {
                Some(conn) => conn.send_message(now, data),
                None => return Poll::Ready(Err(Self::gone(&state, h))),
            };
            match result {
                Ok(()) => Poll::Ready(Ok(())),
                Err(WriteError::Blocked) => match pending_slot(&mut state, h) {
                    Ok(slot) => {
                        register(&mut slot.writer, cx.waker());
                        Poll::Pending
                    }
                    Err(e) => Poll::Ready(Err(e)),
                },
                Err(e) => Poll::Ready(Err(e.into())),
            }
        })
        .await?;
        self.shared().driver.notify_one();
        Ok(())
    }

    /// The next delivered message; `Ok(None)` once the connection ended gracefully.
    pub async fn recv_message(&self) -> Result<Option<Vec<u8>>, Error> {
        poll_fn(|cx| {
            let mut state = self.shared().lock();
            let h = self.inner.handle;
            let message = match state.proto.connection_mut(h) {
                Some(conn) => conn.recv_message(),
                None => return Poll::Ready(Err(Self::gone(&state, h))),
            };
            if let Some(message) = message {
                self.shared().driver.notify_one();
                return Poll::Ready(Ok(Some(message)));
            }
            let stopped = state.stopped.clone();
            let Some(slot) = state.slots.get_mut(&h) else {
                return Poll::Ready(Err(Self::gone(&state, h)));
            };
            if let Some(reason) = &slot.closed {
                return Poll::Ready(Error::from_close(reason).map_or(Ok(None), Err));
            }
            if let Some(why) = stopped {
                return Poll::Ready(Err(Error::EndpointStopped(why)));
            }
            register(&mut slot.message_reader, cx.waker());
            Poll::Pending
        })
        .await
    }

    /// End this side's stream (what was written is still delivered); idempotent.
    pub fn finish(&self) -> Result<(), Error> {
        self.with(|state, h| {
            let result = match state.proto.connection_mut(h) {
                Some(conn) => conn.finish(),
                None => return Err(Self::gone(state, h)),
            };
            match result {
                Ok(()) | Err(WriteError::Finished) => {
                    if let Some(slot) = state.slots.get_mut(&h) {
                        slot.finished = true;
                    }
                    Ok(())
                }
                Err(e) => Err(e.into()),
            }
        })?;
        self.shared().driver.notify_one();
        Ok(())
    }

    /// Wait until the peer acknowledged every byte this side wrote and finished (or the
    /// connection closed gracefully); fails if it closed any other way.
    pub async fn acknowledged(&self) -> Result<(), Error> {
        self.wait_for(|slot| slot.all_acknowledged).await
    }

    /// Wait until the connection is over; `Ok` for a graceful end. The close packet this side
    /// sends (its own, or its confirmation of the peer's) is with the kernel by then, so a
    /// program may exit as soon as this returns.
    pub async fn closed(&self) -> Result<(), Error> {
        self.wait_for(|_| false).await
    }

    /// Wait until `done` holds for the slot, or the connection closes.
    async fn wait_for(&self, done: impl Fn(&Slot) -> bool) -> Result<(), Error> {
        poll_fn(|cx| {
            let mut state = self.shared().lock();
            let h = self.inner.handle;
            let stopped = state.stopped.clone();
            let Some(slot) = state.slots.get_mut(&h) else {
                return Poll::Ready(Err(Self::gone(&state, h)));
            };
            if done(slot) {
                return Poll::Ready(Ok(()));
            }
            if let Some(reason) = &slot.closed {
                return Poll::Ready(Error::from_close(reason).map_or(Ok(()), Err));
            }
            if let Some(why) = stopped {
                return Poll::Ready(Err(Error::EndpointStopped(why)));
            }
            slot.watch(cx.waker());
            Poll::Pending
        })
        .await
    }

    /// Abort the connection, telling the peer `code` and `reason` ([`closed`](Self::closed)
    /// returns once the close has left).
    pub fn close(&self, code: u32, reason: &[u8]) {
        self.with(|state, h| {
            let now = state.now();
            if let Some(conn) = state.proto.connection_mut(h) {
                conn.close(now, code, reason);
            }
        });
        self.shared().driver.notify_one();
    }
}

/// The slot of a connection that is waiting for buffer space or data, or why it cannot wait.
fn pending_slot(state: &mut State, h: ConnectionHandle) -> Result<&mut Slot, Error> {
    if let Some(why) = &state.stopped {
        return Err(Error::EndpointStopped(why.clone()));
    }
    if let Some(reason) = state.slots.get(&h).and_then(|s| s.closed.as_ref()) {
        return Err(Error::from_close(reason).unwrap_or(Error::Finished));
    }
    state
        .slots
        .get_mut(&h)
        .ok_or_else(|| Error::EndpointStopped("connection vanished".into()))
}

impl AsyncRead for Connection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut state = self.shared().lock();
        let h = self.inner.handle;
        let result = match state.proto.connection_mut(h) {
            Some(conn) => conn.read(buf.initialize_unfilled()),
            None => return Poll::Ready(Err(Self::gone(&state, h).into())),
        };
        match result {
            Ok(n) => {
                buf.advance(n);
                drop(state);
                if n > 0 {
                    // Freed receive-buffer space may open the peer's window.
                    self.shared().driver.notify_one();
                }
                Poll::Ready(Ok(()))
            }
            Err(ReadError::Blocked) => match pending_slot(&mut state, h) {
                Ok(slot) => {
                    register(&mut slot.reader, cx.waker());
                    Poll::Pending
                }
                Err(e) => Poll::Ready(Err(e.into())),
            },
            // A graceful close after the peer finished: end of stream.
            Err(ReadError::Closed(CloseReason::Graceful)) => Poll::Ready(Ok(())),
            Err(e) => Poll::Ready(Err(Error::from(e).into())),
        }
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let mut state = self.shared().lock();
        let h = self.inner.handle;
        let result = match state.proto.connection_mut(h) {
            Some(conn) => conn.write(data),
            None => return Poll::Ready(Err(Self::gone(&state, h).into())),
        };
        match result {
            Ok(n) => {
                drop(state);
                self.shared().driver.notify_one();
                Poll::Ready(Ok(n))
            }
            // Backpressure: the send buffer is full until the peer acknowledges.
            Err(WriteError::Blocked) => match pending_slot(&mut state, h) {
                Ok(slot) => {
                    register(&mut slot.writer, cx.waker());
                    Poll::Pending
                }
                Err(e) => Poll::Ready(Err(e.into())),
            },
            Err(e) => Poll::Ready(Err(Error::from(e).into())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Written bytes are already in the protocol's send buffer, which the driver drains.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.finish().map_err(io::Error::from))
    }
}
