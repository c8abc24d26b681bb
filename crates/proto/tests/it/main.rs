//! The integration tests of `qstp-proto`, one module per subject, in one binary (one link
//! instead of seventeen). `support` drives two endpoints over a simulated path.

mod support;

mod bad_input;
mod bottleneck;
mod closing;
mod dead_peer;
mod delegation;
mod determinism;
mod endpoint;
mod fuzz_corpus;
mod handshake;
mod kill_switches;
mod lying_receiver;
mod messages;
mod path_mtu;
mod protection;
mod rate_control;
mod reliability_props;
mod retransmission_timer;
mod sla;
mod stream_transfer;
