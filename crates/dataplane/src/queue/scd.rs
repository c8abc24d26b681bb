//! Selective cell discard: an ATM switch's output buffer that, above a threshold, refuses the
//! cells of low loss priority (CLP=1) and keeps its remaining room for CLP=0 cells
//! (AF-over-ATM paper §2: SCD discards CLP=1 cells "in advance to the cell discard by the
//! buffer overflow").
//!
//! Colours stand for the cell loss priority as the GCRA policer sets it ([`crate::marker::Gcra`]):
//! green is CLP=0; red, and yellow (which ATM does not have), are CLP=1. Early and partial packet
//! discard, which act on whole AAL5 frames, are not part of this queue.

use super::Queued;
use super::{read_limit, validate_limit, DropTail, QueueDiscipline, QueueKind, QueueSpecError};
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;

/// The threshold when a scenario gives none: 90% of the buffer, as on the KDD testbed's switch
/// (AF-over-ATM paper §3.2).
pub const DEFAULT_SCD_THRESHOLD: f64 = 0.9;

/// `kind = "scd"`: a FIFO of `limit` cells (or packets) that takes CLP=1 (red) ones only while it
/// holds fewer than `threshold` x `limit`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScdSpec {
    /// Capacity, cells (or packets).
    pub limit: usize,
    /// Fraction of `limit` above which arriving CLP=1 cells are discarded, in (0, 1].
    pub threshold: f64,
}

impl Kind for ScdSpec {
    const DOC: &'static str =
        "ATM selective cell discard: limit (cells), threshold (0.9 of limit; CLP=1/red cells dropped above it)";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        Ok(ScdSpec {
            limit: read_limit(t)?,
            threshold: t.f64_or("threshold", Some(DEFAULT_SCD_THRESHOLD))?,
        })
    }
}

impl QueueKind for ScdSpec {
    fn validate(&self) -> Result<(), QueueSpecError> {
        validate_limit(self.limit, None)?;
        if !(self.threshold > 0.0 && self.threshold <= 1.0) {
            return Err(QueueSpecError::Param {
                key: "threshold",
                reason: format!("{} is outside (0, 1]", self.threshold),
            });
        }
        Ok(())
    }
    fn build<P: Queued + 'static>(&self, _group_names: &[String]) -> Box<dyn QueueDiscipline<P>> {
        Box::new(scd::<P>(self.limit, self.threshold))
    }
}

/// The selective-cell-discard buffer: a drop-tail FIFO of `limit` cells refusing CLP=1 cells from
/// `threshold` x `limit` cells on (rounded up: at least one cell of room for them).
pub fn scd<P>(limit: usize, threshold: f64) -> DropTail<P> {
    DropTail::with_threshold(limit, threshold_cells(limit, threshold))
}

/// The occupancy, in cells (or packets), from which a buffer of `limit` with the threshold
/// `fraction` refuses CLP=1 cells: rounded up, and at least one.
pub fn threshold_cells(limit: usize, fraction: f64) -> usize {
    ((limit as f64 * fraction.clamp(0.0, 1.0)).ceil() as usize).max(1)
}

#[cfg(test)]
mod tests {
    use super::super::test_packet::*;
    use super::super::DropKind;
    use super::*;
    use crate::color::Color;
    use qstp_proto::Time;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn clp1_cells_stop_at_the_threshold_and_clp0_cells_at_the_limit() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        // 10 cells, threshold 90%: red cells fit while fewer than 9 are held.
        let mut q = scd(10, 0.9);
        for i in 0..9 {
            assert!(q.enqueue(Time::ZERO, pkt(i, Color::Red), &mut rng).is_ok());
        }
        let (_, kind) = q
            .enqueue(Time::ZERO, pkt(9, Color::Red), &mut rng)
            .unwrap_err();
        assert_eq!(kind, DropKind::Early);
        assert!(q
            .enqueue(Time::ZERO, pkt(10, Color::Yellow), &mut rng)
            .is_err());
        assert!(q
            .enqueue(Time::ZERO, pkt(11, Color::Green), &mut rng)
            .is_ok());
        let (_, kind) = q
            .enqueue(Time::ZERO, pkt(12, Color::Green), &mut rng)
            .unwrap_err();
        assert_eq!(kind, DropKind::Overflow);
        assert_eq!(q.counters(Color::Red).edrops, 1);
        assert_eq!(q.counters(Color::Green).ldrops, 1);
        // Threshold 1: SCD is plain drop-tail.
        let mut q = scd(2, 1.0);
        for i in 0..2 {
            assert!(q.enqueue(Time::ZERO, pkt(i, Color::Red), &mut rng).is_ok());
        }
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn a_threshold_outside_the_unit_interval_is_refused_by_key() {
        for threshold in [0.0, 1.5, f64::NAN] {
            let err = ScdSpec {
                limit: 10,
                threshold,
            }
            .validate()
            .unwrap_err();
            assert_eq!(err.field(), "threshold");
        }
    }
}
