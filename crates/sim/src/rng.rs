//! Per-component random streams derived from the run seed.
//!
//! Every component that draws random numbers (a queue's early-drop coin, a loss model, a marker,
//! an agent's start offset and keys) gets its own ChaCha8 stream, selected by a stable component
//! id. Adding a component therefore never shifts the numbers another one sees.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The kinds of component that own a random stream; part of the stream id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum StreamKind {
    /// A link (its queue and loss model).
    Link = 1,
    /// An edge marker.
    Marker = 2,
    /// An agent.
    Agent = 3,
    /// A host-level controller (the delegation coin of Free & Stunts).
    Host = 4,
}

/// Bits of a stream id that hold the component index; above them, the part, then the kind.
const INDEX_BITS: u32 = 48;

/// The random stream of component `index` of `kind` in the run seeded with `seed`.
pub fn stream(seed: u64, kind: StreamKind, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(((kind as u64) << 56) | (index & ((1 << INDEX_BITS) - 1)));
    rng
}

/// Another stream of the component that owns `stream`, for a part that must draw independently
/// (a link's loss model beside its queue: changing the queue must not move the loss pattern).
pub fn sibling(stream: &ChaCha8Rng, part: u8) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::from_seed(stream.get_seed());
    rng.set_stream(stream.get_stream() | (u64::from(part) << INDEX_BITS));
    rng
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a1 = stream(7, StreamKind::Link, 3).next_u64();
        let a2 = stream(7, StreamKind::Link, 3).next_u64();
        assert_eq!(a1, a2);
        assert_ne!(a1, stream(7, StreamKind::Link, 4).next_u64());
        assert_ne!(a1, stream(7, StreamKind::Agent, 3).next_u64());
        assert_ne!(a1, stream(8, StreamKind::Link, 3).next_u64());
    }

    #[test]
    fn a_sibling_stream_is_reproducible_and_independent_of_its_owner() {
        let owner = stream(7, StreamKind::Link, 3);
        let s1 = sibling(&owner, 1).next_u64();
        assert_eq!(s1, sibling(&stream(7, StreamKind::Link, 3), 1).next_u64());
        assert_ne!(s1, stream(7, StreamKind::Link, 3).next_u64());
        assert_ne!(s1, sibling(&owner, 2).next_u64());
        assert_ne!(s1, sibling(&stream(7, StreamKind::Link, 4), 1).next_u64());
    }
}
