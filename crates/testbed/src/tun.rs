//! TUN devices: raw IP packets in and out of the router's namespace through a file descriptor.

use crate::packet::{VnetHdr, VNET_HDR_LEN};
use crate::TestbedError;
use std::fs::{File, OpenOptions};
use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

/// `TUNSETIFF` (linux/if_tun.h: `_IOW('T', 202, int)`).
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
/// A TUN (layer 3) device.
const IFF_TUN: libc::c_short = 0x0001;
/// No packet-information header before each packet.
const IFF_NO_PI: libc::c_short = 0x1000;
/// A `struct virtio_net_hdr` before each packet, read and written (linux/if_tun.h).
const IFF_VNET_HDR: libc::c_short = 0x4000;
/// `TUNSETOFFLOAD` (`_IOW('T', 208, unsigned int)`): what the kernel may hand over unfinished.
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
/// Checksums may be left to the reader (`VNET_F_NEEDS_CSUM`).
const TUN_F_CSUM: libc::c_uint = 0x01;
/// TCP/IPv4 super-packets may be handed over whole (`VNET_GSO_TCPV4`).
const TUN_F_TSO4: libc::c_uint = 0x02;

/// What `TUNSETIFF` reads: an interface name and flags (the rest of `struct ifreq`).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// A TUN device, open for non-blocking reads and writes of whole IPv4 packets, each behind a
/// virtio-net header ([`VnetHdr`]: a write may hand the kernel a TCP super-packet to cut into
/// segments, a read may return one if [`Tun::offload`] allowed it); it exists as long as this is
/// open.
#[derive(Debug)]
pub struct Tun {
    file: File,
    name: String,
}

/// What a read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// A packet of this many bytes, with its virtio-net header.
    Packet(usize, VnetHdr),
    /// Nothing waiting.
    Empty,
}

impl Tun {
    /// Create the TUN device `name` in the calling thread's network namespace.
    pub fn create(name: &str) -> Result<Tun, TestbedError> {
        let err = |e: std::io::Error| TestbedError::Tun {
            name: name.to_string(),
            message: e.to_string(),
        };
        if name.len() >= libc::IFNAMSIZ {
            return Err(err(std::io::Error::other("name too long")));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(err)?;
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: IFF_TUN | IFF_NO_PI | IFF_VNET_HDR,
            _pad: [0; 22],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: TUNSETIFF reads a `struct ifreq`, which `IfReq` lays out (40 bytes).
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, &mut req) };
        if rc != 0 {
            return Err(err(std::io::Error::last_os_error()));
        }
        Ok(Tun {
            file,
            name: name.to_string(),
        })
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Let the kernel hand over TCP/IPv4 super-packets (and packets whose checksum is left to
    /// the reader) instead of cutting them into segments first: `TUN_F_CSUM | TUN_F_TSO4`.
    pub fn offload(&self) -> std::io::Result<()> {
        let flags = TUN_F_CSUM | TUN_F_TSO4;
        // SAFETY: TUNSETOFFLOAD takes an unsigned int by value.
        let rc = unsafe { libc::ioctl(self.file.as_raw_fd(), TUNSETOFFLOAD as _, flags) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// Read one packet into `buf` and its virtio-net header, without blocking.
    pub fn read(&mut self, buf: &mut [u8]) -> std::io::Result<Received> {
        let mut head = [0u8; VNET_HDR_LEN];
        let mut parts = [IoSliceMut::new(&mut head), IoSliceMut::new(buf)];
        match self.file.read_vectored(&mut parts) {
            Ok(n) if n >= VNET_HDR_LEN => {
                Ok(Received::Packet(n - VNET_HDR_LEN, VnetHdr::decode(&head)))
            }
            Ok(_) => Ok(Received::Empty),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(Received::Empty),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(Received::Empty),
            Err(e) => Err(e),
        }
    }

    /// Write one plain packet; whether the device took it.
    pub fn write(&mut self, packet: &[u8]) -> bool {
        self.write_parts(&VnetHdr::default(), &[packet])
    }

    /// Write one packet made of `parts` in order (at most [`crate::packet::MAX_SEGMENTS`] + 1)
    /// behind the header `hdr`, in one system call; whether the device took it whole.
    pub fn write_parts(&mut self, hdr: &VnetHdr, parts: &[&[u8]]) -> bool {
        const MOST: usize = crate::packet::MAX_SEGMENTS + 2;
        let head = hdr.encode();
        if parts.len() + 1 > MOST {
            return false;
        }
        let mut slices = [IoSlice::new(&[]); MOST];
        slices[0] = IoSlice::new(&head);
        for (s, p) in slices[1..].iter_mut().zip(parts) {
            *s = IoSlice::new(p);
        }
        let len = VNET_HDR_LEN + parts.iter().map(|p| p.len()).sum::<usize>();
        matches!(self.file.write_vectored(&slices[..parts.len() + 1]), Ok(n) if n == len)
    }

    /// Wait until a packet can be read or `timeout_ns` passed (nanosecond resolution: `ppoll`).
    pub fn wait(&self, timeout_ns: u64) {
        let mut fd = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        unsafe { libc::ppoll(&mut fd, 1, &ts, std::ptr::null()) };
    }
}

/// Ask for the finest timer slack on the calling thread (the default 50 us would add to every
/// wake-up of the router).
pub fn fine_timer_slack() {
    // SAFETY: prctl(PR_SET_TIMERSLACK, 1 ns) affects only the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Ask for real-time scheduling (SCHED_FIFO, the lowest real-time priority) on the calling
/// thread, so that compilers and other work on the machine do not delay the router's wake-ups;
/// whether it was granted. The router sleeps whenever it has nothing due, and the kernel keeps 5%
/// of each second for other work (`sched_rt_runtime_us`), so it cannot starve the machine.
pub fn realtime() -> bool {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: sched_setscheduler on the calling thread (pid 0) with a valid parameter.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}
