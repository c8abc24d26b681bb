//! A tap on an endpoint's socket: a hook the driver calls with every datagram it hands to the
//! kernel or reads from it (for packet captures such as `qstp send --pcap`).

use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Which way a tapped datagram went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Handed to the kernel for sending.
    Sent,
    /// Read from the kernel.
    Received,
}

/// One datagram as the tap sees it: the UDP payload exactly as on the wire (protected).
#[derive(Debug, Clone, Copy)]
pub struct Tapped<'a> {
    /// Which way it went.
    pub direction: Direction,
    /// This side's address: the bound address for sent datagrams (its IP may be unspecified),
    /// the datagram's destination address for received ones where the OS reports it.
    pub local: SocketAddr,
    /// The peer's address.
    pub remote: SocketAddr,
    /// The UDP payload.
    pub datagram: &'a [u8],
}

/// A hook called on the endpoint's driver thread with every datagram sent and received, in
/// order; it holds up the driver while it runs, so it must be quick and never block (copy the
/// datagram into a bounded queue, for instance). Cheap to clone: clones share the hook.
#[derive(Clone)]
pub struct Tap(Arc<Mutex<Hook>>);

/// What a [`Tap`] calls.
type Hook = dyn FnMut(&Tapped<'_>) + Send;

impl Tap {
    /// A tap calling `hook`.
    pub fn new(hook: impl FnMut(&Tapped<'_>) + Send + 'static) -> Tap {
        Tap(Arc::new(Mutex::new(hook)))
    }

    /// Call the hook on each datagram of `datagrams`.
    pub(crate) fn call<'a>(&self, datagrams: impl Iterator<Item = Tapped<'a>>) {
        let mut hook = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for datagram in datagrams {
            hook(&datagram);
        }
    }
}

impl fmt::Debug for Tap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tap")
    }
}
