//! The driver: one thread per endpoint that owns the socket and runs the protocol endpoint.
//!
//! Each turn it reads every waiting datagram (in batches), runs due timers, drains every datagram
//! `poll_transmit` allows into one batch and hands it to the kernel, dispatches events to the
//! waiting handles, then sleeps until the earliest of socket readiness, a handle's nudge and the
//! protocol deadline. The thread has its own single-threaded tokio runtime so that the last
//! stretch before a pacing deadline can be slept precisely with the OS timer (tokio's timer
//! counts whole milliseconds, too coarse for pacing at hundreds of megabits per second).

use crate::socket::{SendBatch, UdpIo};
use crate::state::Shared;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most datagrams collected per turn before they go to the kernel.
const MAX_BATCH_DATAGRAMS: usize = 64;

/// Most receive calls per turn, so that sending is never starved by a flood.
const MAX_RECV_CALLS: usize = 16;

/// Deadlines closer than this are slept with the OS timer instead of tokio's.
const PRECISE_SLEEP: Duration = Duration::from_millis(2);

/// Start the driver thread for `socket`; returns once the socket is registered (or failed to).
pub(crate) fn spawn(
    shared: Arc<Shared>,
    socket: std::net::UdpSocket,
    tap: Option<crate::tap::Tap>,
) -> io::Result<std::net::SocketAddr> {
    let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("qstp-driver".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let driven = shared.clone();
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                runtime.block_on(async move {
                    let io = match UdpIo::new(socket) {
                        Ok(io) => io.with_tap(tap),
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return Ok(());
                        }
                    };
                    let _ = ready_tx.send(io.local_addr());
                    Driver {
                        shared: driven,
                        io,
                        batch: SendBatch::default(),
                        refused: Vec::new(),
                        too_big: Vec::new(),
                    }
                    .run()
                    .await
                })
            }));
            let why = match outcome {
                Ok(Ok(())) => "endpoint closed".to_string(),
                Ok(Err(e)) => format!("socket failed: {e}"),
                // A bug, but the handles get an error instead of waiting forever.
                Err(panic) => format!("driver panicked: {}", panic_message(&panic)),
            };
            shared.lock().stop(why);
            shared.incoming.notify_waiters();
        })?;
    ready_rx
        .recv()
        .unwrap_or_else(|_| Err(io::Error::other("driver thread failed to start")))
}

/// The text of a panic payload.
fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

struct Driver {
    shared: Arc<Shared>,
    io: UdpIo,
    batch: SendBatch,
    /// Destinations the kernel reported unreachable this turn (empty, unallocated, normally).
    refused: Vec<std::net::SocketAddr>,
    /// ICMP "too big" reports read this turn (empty, unallocated, normally).
    too_big: Vec<crate::socket::QueuedError>,
}

/// What one turn left to do.
struct Turn {
    /// The protocol's next deadline.
    deadline: Option<Instant>,
    /// The batch filled up: more datagrams may be ready at once.
    more_to_send: bool,
    /// Nothing is left to drive.
    idle: bool,
    /// A handshake this endpoint started is pending: an ICMP error may concern it.
    handshaking: bool,
}

impl Driver {
    async fn run(mut self) -> io::Result<()> {
        loop {
            self.receive()?;
            self.read_errors();
            let more_to_send = self.step();
            let blocked = match self.io.try_send(&mut self.batch) {
                Ok(()) => false,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => true,
                Err(e) => return Err(e),
            };
            let turn = self.dispatch(more_to_send);
            if turn.idle && self.batch.pending() == 0 {
                return Ok(());
            }
            if turn.more_to_send && !blocked {
                // Let the reactor look at the socket, or received feedback waits behind the burst.
                tokio::task::yield_now().await;
                continue;
            }
            self.wait(turn.deadline, blocked, turn.handshaking).await?;
        }
    }

    /// Read and feed every datagram waiting, up to a bound per turn.
    fn receive(&mut self) -> io::Result<()> {
        for _ in 0..MAX_RECV_CALLS {
            match self.io.try_recv() {
                Ok(_) => {
                    let mut state = self.shared.lock();
                    let now = state.now();
                    for (remote, datagram) in self.io.received_mut() {
                        state.proto.handle_datagram_mut(now, remote, datagram);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                // ICMP errors and the like concern one datagram only; UDP carries on.
                Err(e) if is_transient(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Fail the handshakes whose destination an ICMP "port unreachable" came back from; every
    /// other connection (a server's peers included) carries on.
    fn read_errors(&mut self) {
        self.io.take_errors(&mut self.refused, &mut self.too_big);
        if !self.refused.is_empty() {
            self.shared.lock().refuse(&self.refused);
            self.refused.clear();
        }
        if !self.too_big.is_empty() {
            let mut state = self.shared.lock();
            for report in self.too_big.drain(..) {
                if let crate::socket::QueuedError::TooBig {
                    destination,
                    mtu,
                    quoted,
                } = report
                {
                    // RFC 8899 §4.6.1: the connection believes it only if it quotes its probe.
                    state
                        .proto
                        .handle_packet_too_big(destination, mtu as usize, &quoted);
                }
            }
        }
    }

    /// Run timers and collect datagrams to send, under one lock; whether the batch filled up.
    fn step(&mut self) -> bool {
        let mut state = self.shared.lock();
        let now = state.now();
        if state.proto.poll_timeout().is_some_and(|t| t <= now) {
            state.proto.handle_timeout(now);
        }
        if !state.groups.is_empty() {
            state.run_groups(now);
        }
        let mut more_to_send = false;
        if self.batch.pending() == 0 {
            while let Some(transmit) = state.proto.poll_transmit(now, self.batch.next_buffer()) {
                let tos = state.tos_for(transmit.connection);
                self.batch.commit(
                    transmit.destination,
                    transmit.size,
                    tos,
                    transmit.connection,
                );
                if self.batch.pending() >= MAX_BATCH_DATAGRAMS {
                    more_to_send = true;
                    break;
                }
            }
        }
        if !more_to_send {
            state.retire();
        }
        more_to_send
    }

    /// Note what the kernel did with the turn's datagrams, then dispatch the turn's events, all
    /// under one lock: a task woken by a connection's end finds its close packet sent, so a
    /// program that exits right after `closed()` still tells its peer.
    fn dispatch(&mut self, more_to_send: bool) -> Turn {
        let mut state = self.shared.lock();
        state.socket_stats = self.io.stats;
        if !self.batch.too_big.is_empty() {
            let now = state.now();
            for (connection, size) in self.batch.too_big.drain(..) {
                state.proto.handle_datagram_too_big(now, connection, size);
            }
        }
        let mut wake_acceptors = false;
        while let Some((handle, event)) = state.proto.poll_event() {
            wake_acceptors |= state.dispatch(handle, event);
        }
        if wake_acceptors {
            self.shared.incoming.notify_waiters();
        }
        let deadline = if state.retiring.is_empty() {
            let due = match (state.proto.poll_timeout(), state.groups_deadline()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            due.and_then(|t| state.instant(t))
        } else {
            Some(Instant::now()) // another turn right away forgets them
        };
        Turn {
            deadline,
            more_to_send,
            idle: state.is_idle(),
            handshaking: state.handshaking(),
        }
    }

    /// Sleep until the socket is readable (or writable, when `blocked`; or has an ICMP error
    /// queued, when `handshaking`), a handle nudges the driver, or `deadline` comes.
    ///
    /// The error queue is waited on only during a handshake, the one time an error changes
    /// anything (registering that interest on every wait cost a tenth of a busy driver's CPU);
    /// otherwise errors are drained whenever the driver wakes for something else.
    async fn wait(
        &mut self,
        deadline: Option<Instant>,
        blocked: bool,
        handshaking: bool,
    ) -> io::Result<()> {
        let now = Instant::now();
        if let Some(deadline) = deadline {
            if deadline <= now {
                tokio::task::yield_now().await;
                return Ok(());
            }
            let remaining = deadline - now;
            if remaining < PRECISE_SLEEP && !blocked {
                // Datagrams and nudges wait in the kernel buffer and the Notify permit meanwhile.
                // The OS may add its timer slack (50 µs on Linux): the pacer's credit covers it,
                // and the datagrams that accumulate meanwhile leave in one GSO batch.
                std::thread::sleep(remaining);
                // The reactor only learns of socket readiness when the runtime gets control back.
                tokio::task::yield_now().await;
                return Ok(());
            }
        }
        // Wake a little early for the deadline; the precise sleep above does the rest.
        let coarse = deadline
            .and_then(|d| d.checked_sub(PRECISE_SLEEP / 2))
            .map(tokio::time::Instant::from_std);
        tokio::select! {
            ready = self.io.readable() => ready?,
            ready = self.io.writable(), if blocked => ready?,
            ready = self.io.error_ready(), if handshaking => ready?,
            () = self.shared.driver.notified() => {}
            () = sleep_until(coarse) => {}
        }
        Ok(())
    }
}

/// Sleep until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Errors that concern a single datagram, not the socket: an ICMP error left pending on the
/// socket (an unreachable port, a Packet Too Big) surfaces at the next receive too.
fn is_transient(e: &io::Error) -> bool {
    #[cfg(target_os = "linux")]
    if e.raw_os_error() == Some(libc::EMSGSIZE) {
        return true;
    }
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable
    )
}
