//! The fixed-size list of SACK blocks an ACK carries. (The receiver's out-of-order data and the
//! sender's SACKed data are [`qstp_proto::RangeSet`]s.)

/// Most SACK blocks one ACK carries (RFC 2018 §3: at most 4 fit the option space with timestamps
/// off; 3 with timestamps).
pub const MAX_SACK_BLOCKS: usize = 4;

/// The SACK blocks of one ACK, most recent first (RFC 2018 §4), at most [`MAX_SACK_BLOCKS`];
/// a fixed array, so that building and copying an ACK never allocates.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct SackBlocks {
    len: u8,
    blocks: [(u64, u64); MAX_SACK_BLOCKS],
}

impl SackBlocks {
    /// No blocks.
    pub const fn new() -> Self {
        SackBlocks {
            len: 0,
            blocks: [(0, 0); MAX_SACK_BLOCKS],
        }
    }

    /// Append `block`; returns false (and keeps the list) when it is full.
    pub fn push(&mut self, block: (u64, u64)) -> bool {
        match self.blocks.get_mut(usize::from(self.len)) {
            Some(slot) => {
                *slot = block;
                self.len += 1;
                true
            }
            None => false,
        }
    }

    /// Remove every block.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// The blocks, most recent first.
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..usize::from(self.len)]
    }
}

impl std::ops::Deref for SackBlocks {
    type Target = [(u64, u64)];
    fn deref(&self) -> &[(u64, u64)] {
        self.as_slice()
    }
}

impl std::fmt::Debug for SackBlocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<const N: usize> PartialEq<[(u64, u64); N]> for SackBlocks {
    fn eq(&self, other: &[(u64, u64); N]) -> bool {
        self.as_slice() == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sack_blocks_hold_at_most_four() {
        let mut b = SackBlocks::new();
        for i in 0..4 {
            assert!(b.push((i, i + 1)));
        }
        assert!(!b.push((9, 10)));
        assert_eq!(b, [(0, 1), (1, 2), (2, 3), (3, 4)]);
        b.clear();
        assert!(b.is_empty());
    }
}
