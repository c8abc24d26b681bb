//! The controllers of the Free & Stunts architecture (Free & Stunts paper §II-A): from the
//! Free connection's measured throughput and the trace, the fraction g of its congestion signals
//! to delegate to the Stunts.

use crate::Rate;

/// The controller target's margin over the trace: eq. (3) and (4) compare the throughput with
/// 1.33 T_i, since a loss at 1.33 T_i halves the rate to 0.67 T_i, "leading to the target
/// average of T_i".
pub const MARGIN: f64 = 4.0 / 3.0;

/// Which controller, and its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "kind", rename_all = "lowercase"))]
pub enum ControllerSpec {
    /// No delegation: the same connections as plain TCP (every experiment's baseline).
    None,
    /// Eq. (3): delegate everything while below 1.33 T_i, nothing above.
    OnOff,
    /// Eq. (4): a proportional-integral step of `gain` per control instant.
    Pi {
        /// K, per segment per second of error (see [`Controller::update`]).
        gain: f64,
    },
}

/// A controller's state: the delegation fraction it last gave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Controller {
    spec: ControllerSpec,
    g: f64,
}

impl Controller {
    /// A controller that delegates nothing until its first update.
    pub fn new(spec: ControllerSpec) -> Self {
        Controller { spec, g: 0.0 }
    }

    /// The fraction of congestion signals to delegate now, in [0, 1].
    pub fn fraction(&self) -> f64 {
        self.g
    }

    /// A control instant: the Free connection's throughput `x` against the trace's `target`,
    /// with segments of `segment_bits` bits; returns the new fraction.
    ///
    /// PI: g_i = g_{i-1} + K (1.33 T_i - x_i), clamped to [0, 1], with the error in segments per
    /// second. Eq. (4) is printed with the opposite sign, (x_i - 1.33 T_i), which would delegate
    /// more the further the Free runs above its target; its On/Off counterpart (eq. 3) and the
    /// text delegate when the Free is below, so the sign here follows them. The paper gives no
    /// unit for K; segments per second keeps K independent of the rate's unit.
    pub fn update(&mut self, x: Rate, target: Rate, segment_bits: u64) -> f64 {
        let goal = MARGIN * target.bps() as f64;
        let x = x.bps() as f64;
        self.g = match self.spec {
            ControllerSpec::None => 0.0,
            // Eq. (3).
            ControllerSpec::OnOff => {
                if x > goal {
                    0.0
                } else {
                    1.0
                }
            }
            ControllerSpec::Pi { gain } => {
                let error = (goal - x) / segment_bits.max(1) as f64;
                (self.g + gain * error).clamp(0.0, 1.0)
            }
        };
        self.g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_off_delegates_below_four_thirds_of_the_target() {
        let mut c = Controller::new(ControllerSpec::OnOff);
        let t = Rate::from_mbps(3);
        assert_eq!(c.update(Rate::from_mbps(3), t, 12_000), 1.0);
        assert_eq!(c.update(Rate::from_bps(3_999_999), t, 12_000), 1.0);
        assert_eq!(c.update(Rate::from_bps(4_000_001), t, 12_000), 0.0);
        let mut none = Controller::new(ControllerSpec::None);
        assert_eq!(none.update(Rate::ZERO, t, 12_000), 0.0);
    }

    #[test]
    fn pi_integrates_the_error_and_stays_a_fraction() {
        // Target 3 Mbit/s: goal 4 Mbit/s. At 2.8 Mbit/s the error is 1.2 Mbit/s = 100 segments/s.
        let mut c = Controller::new(ControllerSpec::Pi { gain: 0.001 });
        let (t, seg) = (Rate::from_mbps(3), 12_000);
        let g1 = c.update(Rate::from_bps(2_800_000), t, seg);
        assert!((g1 - 0.1).abs() < 1e-12, "{g1}");
        let g2 = c.update(Rate::from_bps(2_800_000), t, seg);
        assert!((g2 - 0.2).abs() < 1e-12, "{g2}");
        // Above the goal it gives delegation back, never below zero.
        for _ in 0..100 {
            c.update(Rate::from_mbps(10), t, seg);
        }
        assert_eq!(c.fraction(), 0.0);
        for _ in 0..100 {
            c.update(Rate::ZERO, t, seg);
        }
        assert_eq!(c.fraction(), 1.0);
    }
}
