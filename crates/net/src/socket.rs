//! The UDP socket: binding, batched receive with GRO, and batched send with GSO and a per-datagram
//! TOS byte (so every connection carries its own DSCP).
//!
//! Receiving goes through `quinn-udp` (recvmmsg and GRO on Linux). Sending builds its own
//! `sendmsg` on Linux because `quinn-udp` writes a TOS control message holding only the ECN bits,
//! which would erase the DSCP; elsewhere it falls back to one `send_to` per datagram.

use crate::tap::{Direction, Tap, Tapped};
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;

/// Largest UDP payload; a receive buffer this big holds one GRO-coalesced batch.
const MAX_UDP_PAYLOAD: usize = 65_535;

/// Most datagrams (or GRO batches) one receive call reads.
const MAX_RECV_BATCH: usize = 32;

/// Kernel socket buffer size asked for (the kernel may grant less).
const SOCKET_BUFFER: usize = 8 << 20;

/// Open a non-blocking UDP socket bound to `addr`, with large kernel buffers.
pub(crate) fn bind(addr: SocketAddr) -> io::Result<std::net::UdpSocket> {
    let domain = socket2::Domain::for_address(addr);
    let socket = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
    if addr.is_ipv6() {
        // Dual stack when bound to the unspecified address, as the OS usually does.
        let _ = socket.set_only_v6(false);
    }
    // Best effort: a smaller buffer only costs speed.
    let _ = socket.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = socket.set_send_buffer_size(SOCKET_BUFFER);
    socket.bind(&addr.into())?;
    socket.set_nonblocking(true)?;
    let socket: std::net::UdpSocket = socket.into();
    enable_error_queue(&socket);
    Ok(socket)
}

/// Have the kernel queue ICMP errors for every destination, not only a connected one (Linux's
/// IP_RECVERR): an unreachable port then shows up on the error queue with the destination it
/// concerns ([`UdpIo::take_errors`]). Best effort; without it handshakes just time out.
#[cfg(target_os = "linux")]
fn enable_error_queue(socket: &std::net::UdpSocket) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    for (level, name) in [
        (libc::IPPROTO_IP, libc::IP_RECVERR),
        (libc::IPPROTO_IPV6, libc::IPV6_RECVERR),
    ] {
        // SAFETY: setsockopt with a valid descriptor and a c_int option value.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                level,
                name,
                &on as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn enable_error_queue(_socket: &std::net::UdpSocket) {}

/// One datagram of a send batch.
#[derive(Debug, Clone, Copy)]
struct Outgoing {
    destination: SocketAddr,
    len: usize,
    tos: u8,
    /// The connection it belongs to, told if the datagram proves too large for the path.
    connection: Option<qstp_proto::ConnectionHandle>,
}

/// Datagrams waiting to be sent, each in its own reused buffer (the protocol writes straight into
/// it, and a GSO send gathers them with one iovec each); bounded by its owner.
#[derive(Debug, Default)]
pub(crate) struct SendBatch {
    buffers: Vec<Vec<u8>>,
    datagrams: Vec<Outgoing>,
    /// Index of the first datagram not yet sent.
    next: usize,
    /// Datagrams the kernel refused as larger than the interface's MTU (EMSGSIZE), with their
    /// connection: path MTU discovery hears of them (bounded: at most one per datagram batched).
    pub(crate) too_big: Vec<(qstp_proto::ConnectionHandle, usize)>,
}

impl SendBatch {
    /// The buffer the next datagram should be written into.
    pub(crate) fn next_buffer(&mut self) -> &mut Vec<u8> {
        let index = self.datagrams.len();
        if self.buffers.len() <= index {
            self.buffers.push(Vec::with_capacity(MAX_DATAGRAM_GUESS));
        }
        &mut self.buffers[index]
    }

    /// Add the datagram just written into [`SendBatch::next_buffer`], its first `len` bytes.
    pub(crate) fn commit(
        &mut self,
        destination: SocketAddr,
        len: usize,
        tos: u8,
        connection: Option<qstp_proto::ConnectionHandle>,
    ) {
        let index = self.datagrams.len();
        let len = len.min(self.buffers[index].len());
        self.datagrams.push(Outgoing {
            destination,
            len,
            tos,
            connection,
        });
    }

    /// Append a copy of one datagram.
    #[cfg(test)]
    pub(crate) fn push(&mut self, destination: SocketAddr, datagram: &[u8], tos: u8) {
        let buffer = self.next_buffer();
        buffer.clear();
        buffer.extend_from_slice(datagram);
        self.commit(destination, datagram.len(), tos, None);
    }

    /// Datagrams not yet sent.
    pub(crate) fn pending(&self) -> usize {
        self.datagrams.len() - self.next
    }

    fn clear(&mut self) {
        self.datagrams.clear();
        self.next = 0;
    }

    /// How many datagrams from `next` can go in one GSO send: same destination and TOS, equal
    /// sizes except a shorter last one after at least two equal ones, within `max_segments` and
    /// one UDP payload. A larger datagram (a path MTU probe) so always goes alone, and a refusal
    /// of its size concerns it only.
    fn gso_run(&self, max_segments: usize) -> usize {
        let first = self.datagrams[self.next];
        let mut count = 1;
        let mut total = first.len;
        for d in &self.datagrams[self.next + 1..] {
            if count >= max_segments
                || d.destination != first.destination
                || d.tos != first.tos
                || d.len > first.len
                || (d.len < first.len && count < 2)
                || total + d.len > MAX_UDP_PAYLOAD
            {
                break;
            }
            count += 1;
            total += d.len;
            if d.len < first.len {
                break; // only the last segment may be shorter
            }
        }
        count
    }

    /// The `count` datagrams starting at `next`, as slices.
    fn slices(&self, count: usize) -> impl Iterator<Item = &[u8]> {
        self.datagrams[self.next..self.next + count]
            .iter()
            .zip(&self.buffers[self.next..self.next + count])
            .map(|(d, buffer)| &buffer[..d.len])
    }
}

/// Capacity a fresh datagram buffer starts with (it grows if the protocol writes more).
const MAX_DATAGRAM_GUESS: usize = 1500;

/// Counters of the socket layer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SocketStats {
    /// Datagrams handed to the kernel.
    pub datagrams_sent: u64,
    /// Datagrams received from the kernel.
    pub datagrams_received: u64,
    /// `sendmsg`-like system calls made.
    pub send_calls: u64,
    /// Receive system calls that returned data.
    pub recv_calls: u64,
    /// Datagrams the kernel refused to send (unreachable, too big); UDP gives no other recourse.
    pub send_errors: u64,
    /// ICMP "port unreachable" reports read off the error queue (Linux).
    pub unreachable: u64,
    /// Datagrams refused as larger than the interface's MTU (EMSGSIZE), path MTU probes among
    /// them: counted by path MTU discovery, never a stall.
    pub too_big: u64,
    /// Sends that failed with an error an ICMP message had left pending on the socket, tried
    /// again.
    pub icmp_errors_pending: u64,
    /// ICMP Packet Too Big reports read off the error queue (Linux), believed or not.
    pub icmp_too_big: u64,
}

/// A bound UDP socket on the tokio reactor, with the kernel's batching features detected.
#[derive(Debug)]
pub(crate) struct UdpIo {
    socket: tokio::net::UdpSocket,
    state: quinn_udp::UdpSocketState,
    max_segments: usize,
    /// `rx_meta.len()` receive buffers of `MAX_UDP_PAYLOAD` bytes each, end to end.
    rx_buffers: Box<[u8]>,
    rx_meta: Vec<quinn_udp::RecvMeta>,
    rx_filled: usize,
    pub(crate) stats: SocketStats,
    /// Sees every datagram sent and received, if set.
    tap: Option<Tap>,
    /// The bound address, for the tap.
    local: SocketAddr,
}

impl UdpIo {
    /// Wrap a socket from [`bind`]; must run inside the tokio runtime that will drive it.
    pub(crate) fn new(socket: std::net::UdpSocket) -> io::Result<UdpIo> {
        let state = quinn_udp::UdpSocketState::new((&socket).into())?;
        let max_segments = state.max_gso_segments().clamp(1, 64);
        let socket = tokio::net::UdpSocket::from_std(socket)?;
        let local = socket.local_addr()?;
        let batch = quinn_udp::BATCH_SIZE.clamp(1, MAX_RECV_BATCH);
        Ok(UdpIo {
            socket,
            state,
            max_segments,
            rx_buffers: vec![0u8; batch * MAX_UDP_PAYLOAD].into_boxed_slice(),
            rx_meta: vec![quinn_udp::RecvMeta::default(); batch],
            rx_filled: 0,
            stats: SocketStats::default(),
            tap: None,
            local,
        })
    }

    /// Show every datagram sent and received to `tap`.
    pub(crate) fn with_tap(mut self, tap: Option<Tap>) -> UdpIo {
        self.tap = tap;
        self
    }

    /// The bound address.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Wait until the socket may have datagrams to read.
    pub(crate) async fn readable(&self) -> io::Result<()> {
        self.socket.readable().await
    }

    /// Wait until the socket may accept datagrams to send.
    pub(crate) async fn writable(&self) -> io::Result<()> {
        self.socket.writable().await
    }

    /// Wait until the kernel has an error to report (an ICMP message about a datagram sent).
    pub(crate) async fn error_ready(&self) -> io::Result<()> {
        self.socket
            .ready(tokio::io::Interest::ERROR)
            .await
            .map(|_| ())
    }

    /// Empty the kernel's error queue without blocking, appending to `refused` each destination
    /// an ICMP "port unreachable" came back for (nothing listens there), and to `too_big` each
    /// ICMP "too big" report. Costs one readiness check when no error is pending.
    #[cfg(target_os = "linux")]
    pub(crate) fn take_errors(
        &mut self,
        refused: &mut Vec<SocketAddr>,
        too_big: &mut Vec<QueuedError>,
    ) {
        use std::os::fd::AsRawFd;
        let fd = self.socket.as_raw_fd();
        for _ in 0..1024 {
            match self
                .socket
                .try_io(tokio::io::Interest::ERROR, || read_error_queue(fd))
            {
                Ok(Some(QueuedError::Refused(destination))) => {
                    self.stats.unreachable += 1;
                    refused.push(destination);
                }
                Ok(Some(report @ QueuedError::TooBig { .. })) => {
                    self.stats.icmp_too_big += 1;
                    too_big.push(report);
                }
                Ok(None) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return, // WouldBlock: the queue is empty
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn take_errors(
        &mut self,
        _refused: &mut Vec<SocketAddr>,
        _too_big: &mut Vec<QueuedError>,
    ) {
    }

    /// Read one batch of datagrams without blocking into the receive buffers; returns how many
    /// buffers were filled (`WouldBlock` when nothing was waiting). [`UdpIo::received`] lists them.
    pub(crate) fn try_recv(&mut self) -> io::Result<usize> {
        let UdpIo {
            socket,
            state,
            rx_buffers,
            rx_meta,
            rx_filled,
            stats,
            ..
        } = self;
        *rx_filled = 0;
        // On the stack, not allocated per call; the unused tail stays empty.
        let mut buffers = rx_buffers.chunks_mut(MAX_UDP_PAYLOAD);
        let mut slices: [IoSliceMut<'_>; MAX_RECV_BATCH] =
            std::array::from_fn(|_| IoSliceMut::new(buffers.next().unwrap_or_default()));
        let batch = rx_meta.len();
        let filled = socket.try_io(tokio::io::Interest::READABLE, || {
            state.recv(
                quinn_udp::UdpSockRef::from(&*socket),
                &mut slices[..batch],
                rx_meta,
            )
        })?;
        *rx_filled = filled;
        stats.recv_calls += 1;
        self.stats.datagrams_received += self.received().count() as u64;
        if let Some(tap) = &self.tap {
            let port = self.local.port();
            let local = self.local;
            tap.call(
                self.received_with_destination()
                    .map(|(remote, to, datagram)| Tapped {
                        direction: Direction::Received,
                        local: to.map_or(local, |ip| SocketAddr::new(ip, port)),
                        remote,
                        datagram,
                    }),
            );
        }
        Ok(filled)
    }

    /// The datagrams read by the last [`UdpIo::try_recv`], GRO batches split at their stride.
    pub(crate) fn received(&self) -> impl Iterator<Item = (SocketAddr, &[u8])> {
        self.received_with_destination()
            .map(|(remote, _, datagram)| (remote, datagram))
    }

    /// [`UdpIo::received`], each datagram writable (a protected one is decrypted where it lies).
    pub(crate) fn received_mut(&mut self) -> impl Iterator<Item = (SocketAddr, &mut [u8])> {
        self.rx_meta
            .iter()
            .zip(self.rx_buffers.chunks_mut(MAX_UDP_PAYLOAD))
            .take(self.rx_filled)
            .flat_map(|(meta, buf)| {
                buf[..meta.len]
                    .chunks_mut(stride(meta))
                    .map(move |datagram| (meta.addr, datagram))
            })
    }

    /// [`UdpIo::received`] with each datagram's destination IP where the OS reports it.
    fn received_with_destination(
        &self,
    ) -> impl Iterator<Item = (SocketAddr, Option<std::net::IpAddr>, &[u8])> {
        self.rx_meta
            .iter()
            .zip(self.rx_buffers.chunks(MAX_UDP_PAYLOAD))
            .take(self.rx_filled)
            .flat_map(|(meta, buf)| {
                buf[..meta.len]
                    .chunks(stride(meta))
                    .map(move |datagram| (meta.addr, meta.dst_ip, datagram))
            })
    }

    /// Send all of `batch`, waiting for the socket as needed.
    #[cfg(test)]
    pub(crate) async fn send(&mut self, batch: &mut SendBatch) -> io::Result<()> {
        loop {
            match self.try_send(batch) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.writable().await?,
                other => return other,
            }
        }
    }

    /// Send what `batch` holds, as far as the kernel takes it; `WouldBlock` leaves the rest queued
    /// for the next call, and a fully sent batch is cleared.
    pub(crate) fn try_send(&mut self, batch: &mut SendBatch) -> io::Result<()> {
        while batch.pending() > 0 {
            let run = batch.gso_run(self.max_segments);
            let first = batch.datagrams[batch.next];
            let segment = (run > 1).then_some(first.len);
            let send = || {
                send_datagrams(
                    &self.socket,
                    first.destination,
                    batch.slices(run),
                    segment,
                    first.tos,
                )
            };
            let mut result = self.socket.try_io(tokio::io::Interest::WRITABLE, send);
            if result.as_ref().is_err_and(is_too_big) {
                // An ICMP error (a Packet Too Big about some earlier datagram) leaves EMSGSIZE
                // pending on the socket, and the next send reports it whatever its size; the
                // report clears it, so only a second refusal concerns these datagrams.
                self.stats.icmp_errors_pending += 1;
                result = self.socket.try_io(tokio::io::Interest::WRITABLE, send);
            }
            match result {
                Ok(()) => {
                    self.stats.send_calls += 1;
                    self.stats.datagrams_sent += run as u64;
                    if let Some(tap) = &self.tap {
                        tap.call(batch.slices(run).map(|datagram| Tapped {
                            direction: Direction::Sent,
                            local: self.local,
                            remote: first.destination,
                            datagram,
                        }));
                    }
                    batch.next += run;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(e),
                Err(e)
                    if run > 1
                        && matches!(e.raw_os_error(), Some(code) if is_gso_refusal(code)) =>
                {
                    // The device or kernel cannot segment: send one datagram at a time from now on.
                    self.max_segments = 1;
                }
                Err(e) => {
                    // UDP is unreliable anyway: the protocol repairs or gives up on what is lost.
                    self.stats.send_errors += run as u64;
                    if is_too_big(&e) {
                        // Larger than the interface's MTU: a path MTU probe that failed, or a
                        // path that shrank (RFC 8899 §4.6); the protocol decides which.
                        self.stats.too_big += run as u64;
                        for d in &batch.datagrams[batch.next..batch.next + run] {
                            if let Some(connection) = d.connection {
                                batch.too_big.push((connection, d.len));
                            }
                        }
                    }
                    batch.next += run;
                }
            }
        }
        batch.clear();
        Ok(())
    }
}

/// The size of each datagram of a received batch (GRO glues equal-sized datagrams together; a
/// lone datagram reports no stride).
fn stride(meta: &quinn_udp::RecvMeta) -> usize {
    let stride = if meta.stride == 0 {
        meta.len
    } else {
        meta.stride
    };
    stride.max(1)
}

/// Whether a send failed because the datagram exceeds the interface's MTU (don't-fragment is set).
fn is_too_big(e: &io::Error) -> bool {
    #[cfg(target_os = "linux")]
    {
        e.raw_os_error() == Some(libc::EMSGSIZE)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = e;
        false
    }
}

#[cfg(target_os = "linux")]
fn is_gso_refusal(code: i32) -> bool {
    code == libc::EIO || code == libc::EINVAL
}

#[cfg(not(target_os = "linux"))]
fn is_gso_refusal(_code: i32) -> bool {
    false
}

/// One `sendmsg` of the `datagrams` (gathered, one iovec each) with the TOS byte and, for several
/// datagrams, the GSO segment size.
#[cfg(target_os = "linux")]
fn send_datagrams<'a>(
    socket: &tokio::net::UdpSocket,
    destination: SocketAddr,
    datagrams: impl Iterator<Item = &'a [u8]>,
    segment: Option<usize>,
    tos: u8,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;

    /// Room for two control messages (an int and a u16), 8-byte aligned as `cmsghdr` needs.
    #[repr(C, align(8))]
    struct ControlBuffer([u8; 64]);

    let address = socket2::SockAddr::from(destination);
    let mut iovecs: Vec<libc::iovec> = datagrams
        .map(|d| libc::iovec {
            iov_base: d.as_ptr() as *mut libc::c_void,
            iov_len: d.len(),
        })
        .collect();
    let mut control = ControlBuffer([0; 64]);
    // SAFETY: an all-zero msghdr is a valid empty message.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = address.as_ptr() as *mut libc::c_void;
    msg.msg_namelen = address.len();
    msg.msg_iov = iovecs.as_mut_ptr();
    msg.msg_iovlen = iovecs.len() as _;
    msg.msg_control = control.0.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = control.0.len() as _;
    let is_v4 = match destination {
        SocketAddr::V4(_) => true,
        SocketAddr::V6(a) => a.ip().to_ipv4_mapped().is_some(),
    };
    let mut used = 0usize;
    // SAFETY: the control buffer is large enough and aligned for both messages (checked by the
    // CMSG_SPACE sums below), and every pointer comes from CMSG_FIRSTHDR/CMSG_NXTHDR on `msg`.
    unsafe {
        let tos_value = tos as libc::c_int;
        let (level, kind) = if is_v4 {
            (libc::IPPROTO_IP, libc::IP_TOS)
        } else {
            (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
        };
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = level;
        (*cmsg).cmsg_type = kind;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg) as *mut libc::c_int, tos_value);
        used += libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as usize;
        if let Some(size) = segment {
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            (*cmsg).cmsg_level = libc::SOL_UDP;
            (*cmsg).cmsg_type = libc::UDP_SEGMENT;
            (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg) as *mut u16, size as u16);
            used += libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as usize;
        }
        debug_assert!(used <= control.0.len());
        msg.msg_controllen = used as _;
        loop {
            if libc::sendmsg(socket.as_raw_fd(), &msg, 0) >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// What one entry of the socket's error queue reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum QueuedError {
    /// ICMP "port unreachable" from this destination: nothing listens there.
    Refused(SocketAddr),
    /// ICMP Packet Too Big (or IPv4 "fragmentation needed") about a datagram sent to
    /// `destination`: the next hop carries IP packets of at most `mtu` bytes; `quoted` is the
    /// start of the datagram (UDP payload) as the ICMP message quoted it.
    TooBig {
        /// Where the datagram went.
        destination: SocketAddr,
        /// The next-hop MTU the router named.
        mtu: u32,
        /// The first bytes of the datagram, at most [`QUOTED_LEN`].
        quoted: Vec<u8>,
    },
}

/// Most bytes of a datagram kept from an ICMP error's quote (enough for any header).
pub(crate) const QUOTED_LEN: usize = 64;

/// One entry of the socket's error queue: an ICMP "port unreachable" or "too big" with the
/// destination of the datagram that drew it, `None` for any other error; `WouldBlock` once the
/// queue is empty.
#[cfg(target_os = "linux")]
fn read_error_queue(fd: std::os::fd::RawFd) -> io::Result<Option<QueuedError>> {
    /// Room for the control messages of one error, 8-byte aligned as `cmsghdr` needs.
    #[repr(C, align(8))]
    struct ControlBuffer([u8; 256]);

    // The start of the datagram that caused the error (MSG_TRUNC cuts the rest).
    let mut data = [0u8; QUOTED_LEN];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let mut control = ControlBuffer([0; 256]);
    // SAFETY: recvmsg into owned buffers; the name and control messages are read only within the
    // lengths the kernel returned, with unaligned reads.
    unsafe {
        let mut name: libc::sockaddr_storage = std::mem::zeroed();
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_name = &mut name as *mut libc::sockaddr_storage as *mut libc::c_void;
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = control.0.len() as _;
        let quoted = libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT);
        if quoted < 0 {
            return Err(io::Error::last_os_error());
        }
        let quoted = (quoted as usize).min(QUOTED_LEN);
        let mut refused = false;
        let mut too_big = None;
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            let c = &*cmsg;
            let is_error = (c.cmsg_level == libc::IPPROTO_IP && c.cmsg_type == libc::IP_RECVERR)
                || (c.cmsg_level == libc::IPPROTO_IPV6 && c.cmsg_type == libc::IPV6_RECVERR);
            if is_error {
                let err: libc::sock_extended_err =
                    std::ptr::read_unaligned(libc::CMSG_DATA(cmsg) as *const _);
                let from_icmp = err.ee_origin == libc::SO_EE_ORIGIN_ICMP
                    || err.ee_origin == libc::SO_EE_ORIGIN_ICMP6;
                refused |= from_icmp && err.ee_errno == libc::ECONNREFUSED as u32;
                if from_icmp && err.ee_errno == libc::EMSGSIZE as u32 {
                    too_big = Some(err.ee_info);
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
        let Some(destination) = socket_addr(&name, msg.msg_namelen) else {
            return Ok(None);
        };
        Ok(match (refused, too_big) {
            (true, _) => Some(QueuedError::Refused(destination)),
            (false, Some(mtu)) => Some(QueuedError::TooBig {
                destination,
                mtu,
                quoted: data[..quoted].to_vec(),
            }),
            (false, None) => None,
        })
    }
}

/// The address in a `sockaddr_storage` the kernel filled, IPv4-mapped IPv6 addresses as IPv4.
#[cfg(target_os = "linux")]
fn socket_addr(name: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
    let len = len as usize;
    // SAFETY: the family says which structure the kernel wrote, and its length is checked.
    unsafe {
        match name.ss_family as libc::c_int {
            libc::AF_INET if len >= std::mem::size_of::<libc::sockaddr_in>() => {
                let a: libc::sockaddr_in = std::ptr::read_unaligned(name as *const _ as *const _);
                Some(SocketAddr::V4(SocketAddrV4::new(
                    Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                    u16::from_be(a.sin_port),
                )))
            }
            libc::AF_INET6 if len >= std::mem::size_of::<libc::sockaddr_in6>() => {
                let a: libc::sockaddr_in6 = std::ptr::read_unaligned(name as *const _ as *const _);
                let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
                let port = u16::from_be(a.sin6_port);
                Some(match ip.to_ipv4_mapped() {
                    Some(v4) => SocketAddr::V4(SocketAddrV4::new(v4, port)),
                    None => SocketAddr::V6(SocketAddrV6::new(
                        ip,
                        port,
                        a.sin6_flowinfo,
                        a.sin6_scope_id,
                    )),
                })
            }
            _ => None,
        }
    }
}

/// One `send_to` per datagram (no GSO, no per-datagram TOS off Linux).
#[cfg(not(target_os = "linux"))]
fn send_datagrams<'a>(
    socket: &tokio::net::UdpSocket,
    destination: SocketAddr,
    datagrams: impl Iterator<Item = &'a [u8]>,
    _segment: Option<usize>,
    _tos: u8,
) -> io::Result<()> {
    for datagram in datagrams {
        socket.try_send_to(datagram, destination)?;
    }
    Ok(())
}

/// The TOS byte of the next datagram arriving on `socket`, which must have IP_RECVTOS set.
///
/// For tests that check each datagram's DiffServ marking from outside the endpoint.
#[doc(hidden)]
#[cfg(target_os = "linux")]
pub fn received_tos(socket: &std::net::UdpSocket) -> io::Result<u8> {
    use std::os::fd::AsRawFd;

    /// Room for the control messages of one datagram, 8-byte aligned as `cmsghdr` needs.
    #[repr(C, align(8))]
    struct ControlBuffer([u8; 128]);

    let mut data = [0u8; 2048];
    let mut control = ControlBuffer([0; 128]);
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr() as *mut _,
        iov_len: data.len(),
    };
    // SAFETY: plain recvmsg into owned buffers, then walking the kernel's control messages.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr() as *mut _;
        msg.msg_controllen = control.0.len() as _;
        if libc::recvmsg(socket.as_raw_fd(), &mut msg, 0) < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::IPPROTO_IP && (*cmsg).cmsg_type == libc::IP_TOS {
                return Ok(*libc::CMSG_DATA(cmsg));
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidData,
        "no TOS control message",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_gso_batch_arrives_as_separate_datagrams() {
        let mut a = UdpIo::new(bind("127.0.0.1:0".parse().unwrap()).unwrap()).unwrap();
        let mut b = UdpIo::new(bind("127.0.0.1:0".parse().unwrap()).unwrap()).unwrap();
        let to = b.local_addr().unwrap();
        let mut batch = SendBatch::default();
        let sizes = [1200usize, 1200, 1200, 700, 1200, 300];
        for (i, size) in sizes.iter().enumerate() {
            batch.push(to, &vec![i as u8; *size], Dscp::AF11.tos(0));
        }
        a.send(&mut batch).await.unwrap();
        assert_eq!(batch.pending(), 0);
        assert_eq!(a.stats.datagrams_sent, sizes.len() as u64);
        let mut got: Vec<Vec<u8>> = Vec::new();
        while got.len() < sizes.len() {
            b.readable().await.unwrap();
            match b.try_recv() {
                Ok(_) => got.extend(b.received().map(|(_, d)| d.to_vec())),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e}"),
            }
        }
        for (i, (d, size)) in got.iter().zip(sizes).enumerate() {
            assert_eq!(d.len(), size);
            assert!(d.iter().all(|&x| x == i as u8));
        }
    }

    #[test]
    fn gso_runs_stop_at_a_change_of_destination_size_or_tos() {
        let x: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let y: SocketAddr = "127.0.0.1:2".parse().unwrap();
        let mut batch = SendBatch::default();
        batch.push(x, &[0; 100], 0);
        batch.push(x, &[0; 100], 0);
        batch.push(x, &[0; 50], 0);
        batch.push(x, &[0; 100], 0);
        batch.push(y, &[0; 100], 0);
        batch.push(y, &[0; 100], 40);
        assert_eq!(batch.gso_run(64), 3);
        // A larger datagram first (a probe) goes alone, even with a shorter one behind it.
        batch.next = 1;
        assert_eq!(batch.gso_run(64), 1);
        batch.next = 3;
        assert_eq!(batch.gso_run(64), 1);
        batch.next = 4;
        assert_eq!(batch.gso_run(64), 1);
        batch.next = 0;
        assert_eq!(batch.gso_run(2), 2);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn each_datagram_carries_its_dscp() {
        let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        socket2::SockRef::from(&receiver)
            .set_recv_tos(true)
            .unwrap();
        let to = receiver.local_addr().unwrap();
        let mut a = UdpIo::new(bind("127.0.0.1:0".parse().unwrap()).unwrap()).unwrap();
        let mut batch = SendBatch::default();
        batch.push(to, b"assured", Dscp::AF11.tos(0));
        batch.push(to, b"expedited", Dscp::EF.tos(0));
        a.send(&mut batch).await.unwrap();
        assert_eq!(received_tos(&receiver).unwrap() >> 2, Dscp::AF11.value());
        assert_eq!(received_tos(&receiver).unwrap() >> 2, Dscp::EF.value());
    }

    use crate::dscp::Dscp;
}
