//! The ATM cell port: the cell-level element a link runs in place of its packet queue. The
//! arithmetic it shares with the reports (AAL5 framing, the paper's estimate) is
//! [`qstp_dataplane::atm`].

mod port;

pub use port::{
    AtmSpec, BufferStats, CellPort, Phb, PortSetup, ProbeSpec, Service, VpStats, DEFAULT_PROBE,
    MAX_VC_FRAMES, MAX_WAKE,
};
