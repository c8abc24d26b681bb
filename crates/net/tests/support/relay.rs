//! The crate's impairing relay ([`qstp_net::relay`]), and a loopback socket for tests that talk
//! to it in plain UDP.

#[allow(unused_imports)]
pub use qstp_net::relay::{Impairment, Relay};

/// A loopback UDP socket with large kernel buffers, so bursts queue instead of vanishing.
pub fn big_socket() -> tokio::net::UdpSocket {
    qstp_net::relay::udp_socket("127.0.0.1:0".parse().unwrap()).unwrap()
}
