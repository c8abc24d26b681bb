//! `qstp-net`: QSTP over real UDP sockets, on tokio.
//!
//! An [`Endpoint`] owns one UDP socket and a driver thread that runs the sans-IO protocol core
//! (`qstp-proto`): it reads datagrams in batches (GRO where Linux offers it), runs the protocol's
//! timers, and sends every datagram the pacer allows in batches (GSO), each marked with its
//! connection's DiffServ code point. A [`Connection`] is the application's side: the ordered
//! byte stream as `AsyncRead`/`AsyncWrite` (a full send buffer makes writes wait: backpressure,
//! no unbounded queue), messages for the unordered and partially reliable compositions, the
//! target rate at connect time (in the [`Config`]) or at run time ([`Connection::set_target_rate`],
//! the QSTP paper's `setsockopt()`, §4.3), and statistics at any time.
//!
//! This crate depends on `qstp-proto` only among the qstp crates; protocol rules live there. The
//! `relay` feature adds [`relay`], an impairing UDP relay whose bottleneck is the data plane's
//! link (`qstp-dataplane`).
//!
//! ```
//! use qstp_net::{Config, Endpoint, Rate};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Endpoint::server("127.0.0.1:0".parse()?, Config::default())?;
//! let server_addr = server.local_addr();
//! let receiver = tokio::spawn(async move {
//!     let mut conn = server.accept().await.expect("a connection");
//!     let mut received = Vec::new();
//!     conn.read_to_end(&mut received).await?;
//!     conn.finish()?;
//!     Ok::<_, std::io::Error>(received)
//! });
//!
//! let client = Endpoint::bind("127.0.0.1:0".parse()?)?;
//! // QSTP with a 2 Mbit/s target rate, as negotiated with the network.
//! let mut conn = client.connect(server_addr, Config::qstp(Rate::from_mbps(2))).await?;
//! conn.write_all(b"hello over QSTP").await?;
//! conn.shutdown().await?;
//! conn.acknowledged().await?;
//! assert_eq!(receiver.await??, b"hello over QSTP");
//! # Ok(())
//! # }
//! ```

// This crate lives in real time: it reads the clock, and its maps keyed by peer address want
// RandomState's protection against chosen keys. The workspace's determinism bans (clippy.toml)
// are for the protocol core and the simulator.
#![allow(clippy::disallowed_types)]

pub mod dscp;
#[cfg(feature = "relay")]
pub mod relay;
pub mod transfer;

mod connection;
mod delegation;
mod driver;
mod endpoint;
mod error;
mod group;
mod socket;
mod state;
mod tap;

pub use connection::Connection;
pub use dscp::{Dscp, DscpError};
pub use endpoint::{Endpoint, EndpointOptions, EndpointSnapshot};
pub use error::Error;
pub use group::{Group, GroupOptions, GroupStats};
#[doc(hidden)]
#[cfg(target_os = "linux")]
pub use socket::received_tos;
pub use socket::SocketStats;
pub use tap::{Direction, Tap, Tapped};

/// The protocol core, for its configuration and time types.
pub use qstp_proto as proto;
pub use qstp_proto::{CloseReason, Config, Preset, Rate, ServerPolicy, Stats};
