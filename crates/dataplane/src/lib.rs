//! `qstp-dataplane`: the DiffServ data plane, free of any clock or scheduler, shared by the
//! simulator (`qstp-sim`) and the real-time testbed (`qstp-testbed`).
//!
//! - [`color`]: a packet's drop precedence (green, yellow, red) and its DSCP.
//! - [`ecn`]: a packet's ECN field (RFC 3168), which AQM queues mark.
//! - [`classify`]: which class a packet belongs to, by DSCP, 5-tuple or the simulator's group.
//! - [`queue`]: queue disciplines (drop-tail, RED, RIO, CBQ, ATM selective cell discard, CoDel,
//!   PIE, FQ-CoDel).
//! - [`marker`]: edge markers and policers (token bucket, srTCM, trTCM, TSW2CM, TSW3CM, GCRA):
//!   each sees a packet's incoming colour and returns a [`marker::Verdict`], pass with a colour
//!   or drop.
//! - [`loss`]: random loss models (Bernoulli, Gilbert-Elliott).
//! - [`headers`]: IPv4, IPv6, UDP and TCP headers and the internet checksum.
//! - [`pcap`]: the pcap writer of every capture, simulated or real.
//! - [`link`]: links as sans-IO ports ([`link::Port`]): the packet [`link::Link`] (queue,
//!   serialisation, loss, delay) and the pool of packets its driver keeps.
//! - [`atm`]: the ATM cell port (AAL5 segmentation, shaping, GCRA policing, selective cell
//!   discard, reassembly); [`aal5`]: AAL5 framing into 53-byte cells and the AF-over-ATM
//!   paper's throughput estimate.
//!
//! Each family of components has one registry: queues ([`queue::QueueSpec`]), markers
//! ([`marker::MarkerSpec`]) and loss models ([`loss::LossSpec`]) are enums made by [`registry!`]
//! from one `"name" => Variant(Spec)` line per kind; each kind's spec reads its own keys through a
//! [`params::ParamTable`] (the lab implements it over TOML), validates itself and builds its
//! component, all in its own file. A new queue, marker or loss model is that file and one registry
//! line; `--help`, errors and serde follow from the registry. Queues, markers and loss models are
//! `Send`, so a forwarder thread can own them.

pub mod aal5;
pub mod atm;
pub mod classify;
pub mod color;
pub mod ecn;
pub mod headers;
pub mod link;
pub mod loss;
pub mod marker;
pub mod params;
pub mod pcap;
pub mod queue;
pub mod registry;
