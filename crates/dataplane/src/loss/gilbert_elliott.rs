//! The two-state Gilbert-Elliott burst-loss channel.

use super::{check_probabilities, probability, uniform, LossKind, LossModel, LossSpecError};
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;
use rand::RngCore;

/// `kind = "gilbert-elliott"`: a two-state channel, good and bad, each with its loss
/// probability.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GilbertElliottSpec {
    /// Probability, per packet, of moving from the good to the bad state.
    pub p_good_to_bad: f64,
    /// Probability, per packet, of moving from the bad to the good state.
    pub p_bad_to_good: f64,
    /// Loss probability in the good state.
    pub loss_good: f64,
    /// Loss probability in the bad state.
    pub loss_bad: f64,
}

impl Kind for GilbertElliottSpec {
    const DOC: &'static str =
        "two-state Gilbert-Elliott channel: p_good_to_bad, p_bad_to_good, loss_good (0), loss_bad (1)";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        Ok(GilbertElliottSpec {
            p_good_to_bad: t.f64_or("p_good_to_bad", None)?,
            p_bad_to_good: t.f64_or("p_bad_to_good", None)?,
            loss_good: t.f64_or("loss_good", Some(0.0))?,
            loss_bad: t.f64_or("loss_bad", Some(1.0))?,
        })
    }
}

impl LossKind for GilbertElliottSpec {
    fn validate(&self) -> Result<(), LossSpecError> {
        check_probabilities(&[
            ("p_good_to_bad", self.p_good_to_bad),
            ("p_bad_to_good", self.p_bad_to_good),
            ("loss_good", self.loss_good),
            ("loss_bad", self.loss_bad),
        ])
    }
    fn build(&self) -> Box<dyn LossModel> {
        Box::new(GilbertElliott::new(
            self.p_good_to_bad,
            self.p_bad_to_good,
            self.loss_good,
            self.loss_bad,
        ))
    }
}

/// A Markov channel with a good and a bad state, each with its own loss probability.
///
/// Per packet, the channel first loses (or not) the packet with its current state's probability,
/// then moves to the other state with that state's transition probability. It starts good.
#[derive(Debug, Clone)]
pub struct GilbertElliott {
    p_good_to_bad: f64,
    p_bad_to_good: f64,
    loss_good: f64,
    loss_bad: f64,
    bad: bool,
}

impl GilbertElliott {
    /// A channel with the given per-packet transition and loss probabilities (clamped to `[0, 1]`).
    pub fn new(p_good_to_bad: f64, p_bad_to_good: f64, loss_good: f64, loss_bad: f64) -> Self {
        GilbertElliott {
            p_good_to_bad: probability(p_good_to_bad),
            p_bad_to_good: probability(p_bad_to_good),
            loss_good: probability(loss_good),
            loss_bad: probability(loss_bad),
            bad: false,
        }
    }

    /// Long-run share of packets lost: `pi_bad * loss_bad + pi_good * loss_good`.
    pub fn stationary_loss(&self) -> f64 {
        let total = self.p_good_to_bad + self.p_bad_to_good;
        if total == 0.0 {
            // The chain never moves: it stays in the good state it started in.
            return self.loss_good;
        }
        let pi_bad = self.p_good_to_bad / total;
        pi_bad * self.loss_bad + (1.0 - pi_bad) * self.loss_good
    }

    /// Whether the channel is in its bad state.
    pub fn is_bad(&self) -> bool {
        self.bad
    }
}

impl LossModel for GilbertElliott {
    fn lose(&mut self, rng: &mut dyn RngCore) -> bool {
        let loss = if self.bad {
            self.loss_bad
        } else {
            self.loss_good
        };
        let lost = uniform(rng) < loss;
        let leave = if self.bad {
            self.p_bad_to_good
        } else {
            self.p_good_to_bad
        };
        if uniform(rng) < leave {
            self.bad = !self.bad;
        }
        lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn measured_loss_is_the_stationary_loss() {
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        let mut model = GilbertElliott::new(0.01, 0.1, 0.001, 0.5);
        let expected = model.stationary_loss();
        // pi_bad = 0.01 / 0.11; loss = pi_bad * 0.5 + (1 - pi_bad) * 0.001.
        assert!((expected - (0.5 / 11.0 + 0.001 * 10.0 / 11.0)).abs() < 1e-12);
        let n = 500_000;
        let lost = (0..n).filter(|_| model.lose(&mut rng)).count() as f64 / n as f64;
        assert!(
            (lost - expected).abs() < 0.004,
            "expected {expected}, measured {lost}"
        );
    }

    #[test]
    fn losses_come_in_bursts() {
        // Bad state loses everything and lasts 10 packets on average: runs of losses average 10.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut model = GilbertElliott::new(0.01, 0.1, 0.0, 1.0);
        let (mut runs, mut lost, mut previous) = (0u64, 0u64, false);
        for _ in 0..500_000 {
            let l = model.lose(&mut rng);
            if l {
                lost += 1;
                if !previous {
                    runs += 1;
                }
            }
            previous = l;
        }
        let mean_burst = lost as f64 / runs as f64;
        assert!((mean_burst - 10.0).abs() < 1.0, "mean burst {mean_burst}");
    }

    #[test]
    fn frozen_chain_stays_good() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut model = GilbertElliott::new(0.0, 0.0, 0.0, 1.0);
        assert_eq!(model.stationary_loss(), 0.0);
        assert!((0..1000).all(|_| !model.lose(&mut rng)));
        assert!(!model.is_bad());
    }
}
