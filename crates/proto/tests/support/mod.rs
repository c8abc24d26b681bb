//! Shared test support: the in-memory endpoint pair and small helpers.

pub mod pair;

#[allow(unused_imports)]
pub use pair::{Direction, Pair, PathModel, PathStats, Side};

/// Deterministic test bytes: a pattern that makes misplaced or repeated bytes visible.
#[allow(dead_code)]
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0] ^ seed ^ (i / 251) as u8)
        .collect()
}

/// The default configuration without packet protection, for stories whose path model or
/// assertions read the packets on the wire (which protection makes unreadable).
#[allow(dead_code)]
pub fn cleartext() -> qstp_proto::Config {
    qstp_proto::Config {
        protection: qstp_proto::Protection::Null,
        ..qstp_proto::Config::default()
    }
}
