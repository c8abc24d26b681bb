//! Independent losses with a fixed probability.

use super::{check_probabilities, probability, uniform, LossKind, LossModel, LossSpecError};
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;
use rand::RngCore;

/// `kind = "bernoulli"`: each packet lost independently with probability `p`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BernoulliSpec {
    /// Loss probability.
    pub p: f64,
}

impl Kind for BernoulliSpec {
    const DOC: &'static str = "independent losses: p";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        Ok(BernoulliSpec {
            p: t.f64_or("p", None)?,
        })
    }
}

impl LossKind for BernoulliSpec {
    fn validate(&self) -> Result<(), LossSpecError> {
        check_probabilities(&[("p", self.p)])
    }
    fn build(&self) -> Box<dyn LossModel> {
        Box::new(Bernoulli::new(self.p))
    }
}

/// Each packet is lost independently with probability `p`.
#[derive(Debug, Clone)]
pub struct Bernoulli {
    p: f64,
}

impl Bernoulli {
    /// A model losing each packet with probability `p` (clamped to `[0, 1]`).
    pub fn new(p: f64) -> Self {
        Bernoulli { p: probability(p) }
    }
}

impl LossModel for Bernoulli {
    fn lose(&mut self, rng: &mut dyn RngCore) -> bool {
        uniform(rng) < self.p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn measured(p: f64, n: usize, seed: u64) -> f64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut model = Bernoulli::new(p);
        (0..n).filter(|_| model.lose(&mut rng)).count() as f64 / n as f64
    }

    #[test]
    fn loss_rate_matches_p() {
        for (p, seed) in [(0.01, 1), (0.1, 2), (0.5, 3)] {
            let rate = measured(p, 200_000, seed);
            // Binomial standard deviation is at most 0.0012 here; allow four of them.
            assert!((rate - p).abs() < 0.005, "p={p} measured {rate}");
        }
    }

    #[test]
    fn zero_and_one_are_exact() {
        assert_eq!(measured(0.0, 10_000, 4), 0.0);
        assert_eq!(measured(1.0, 10_000, 5), 1.0);
    }

    #[test]
    fn same_seed_same_losses() {
        let run = |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut m = Bernoulli::new(0.3);
            (0..100).map(|_| m.lose(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }
}
