//! placeholder
pub mod dscp;
mod socket;
