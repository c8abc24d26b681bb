//! ATM: the cell port an ATM trunk runs ([`CellPort`], a [`crate::link::Port`]), with its
//! spec and counters. Its arithmetic (AAL5 framing, the paper's estimate) is [`crate::aal5`].

mod port;

pub use port::{
    AtmSpec, BufferStats, CellPort, Phb, PortSetup, ProbeSpec, Service, VpStats, DEFAULT_PROBE,
    MAX_VC_FRAMES, MAX_WAKE,
};
