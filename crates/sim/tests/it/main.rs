//! The integration tests of `qstp-sim`, one module per subject, in one binary. `common` builds
//! the groups and queues they share (the fluid model's tests use it too).

mod aqm;
mod common;

mod bbr_vegas;
mod delegation;
mod diffserv;
mod high_speed;
mod network;
mod qstp;
mod serde;
mod tcp;
