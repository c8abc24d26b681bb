//! Shared test support: the in-memory endpoint pair and small helpers.

pub mod direct;
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

/// Drive until the server read `len` bytes of the client's stream; what it read, or `None` after
/// `limit`.
#[allow(dead_code)]
pub fn read_stream(pair: &mut Pair, len: usize, limit: qstp_proto::Duration) -> Option<Vec<u8>> {
    let mut got = vec![0u8; len];
    let mut read = 0;
    let done = pair.drive_until(limit, |p| {
        while let Ok(n) = p.server.conn_mut().read(&mut got[read..]) {
            if n == 0 {
                break;
            }
            read += n;
        }
        read == len
    });
    done.then_some(got)
}
