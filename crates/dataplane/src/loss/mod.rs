//! Random loss models for links: Bernoulli and Gilbert-Elliott.

use rand::RngCore;

mod bernoulli;
mod gilbert_elliott;

pub use bernoulli::{Bernoulli, BernoulliSpec};
pub use gilbert_elliott::{GilbertElliott, GilbertElliottSpec};

crate::registry! {
    /// A random loss model, as a scenario names it by `kind`: the registry of loss models. A new
    /// model is a file of this module (its spec implementing [`LossKind`] and
    /// [`crate::registry::Kind`]) and one line here.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum LossSpec: dyn LossKind, "a loss model" {
        "bernoulli" => Bernoulli(BernoulliSpec),
        "gilbert-elliott" => GilbertElliott(GilbertElliottSpec),
    }
}

/// What a loss model kind's spec knows: its rules and how to build its model.
pub trait LossKind: std::fmt::Debug {
    /// Check the description: the single home of the kind's rules.
    fn validate(&self) -> Result<(), LossSpecError>;
    /// The model (probabilities outside `[0, 1]` are clamped; validate first to refuse them).
    fn build(&self) -> Box<dyn LossModel>;
}

/// A link's random loss (`Send`, so that a real-time forwarder can run it on a thread of its
/// own).
pub trait LossModel: Send {
    /// Whether the next packet is lost; `rng` is the link's own random stream.
    fn lose(&mut self, rng: &mut dyn RngCore) -> bool;
}

/// Why a loss model was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LossSpecError {
    /// A probability outside `[0, 1]` (or NaN).
    #[error("{name} = {value} is not a probability in [0, 1]")]
    NotAProbability {
        /// The offending field.
        name: &'static str,
        /// Its value.
        value: f64,
    },
}

impl LossSpecError {
    /// The key inside the loss model's table the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            LossSpecError::NotAProbability { name, .. } => name,
        }
    }
}

impl LossSpec {
    /// Check the description: the single home of the loss models' rules (the lab and
    /// the simulator both call it).
    pub fn validate(&self) -> Result<(), LossSpecError> {
        validate(self)
    }
}

/// Check that every probability of `spec` lies in `[0, 1]`.
pub fn validate(spec: &LossSpec) -> Result<(), LossSpecError> {
    spec.get().validate()
}

/// Build the loss model `spec` describes (probabilities outside `[0, 1]` are clamped; call
/// [`validate`] first to refuse them instead).
pub fn build(spec: &LossSpec) -> Box<dyn LossModel> {
    spec.get().build()
}

/// Refuse the first of `fields` (`(key, value)`) that is not a probability in `[0, 1]`.
pub(crate) fn check_probabilities(fields: &[(&'static str, f64)]) -> Result<(), LossSpecError> {
    for &(name, value) in fields {
        if !(0.0..=1.0).contains(&value) {
            return Err(LossSpecError::NotAProbability { name, value });
        }
    }
    Ok(())
}

/// `p` clamped to `[0, 1]`, NaN as 0.
pub(crate) fn probability(p: f64) -> f64 {
    if p.is_nan() {
        0.0
    } else {
        p.clamp(0.0, 1.0)
    }
}

/// A uniform draw in `[0, 1)`.
pub fn uniform(rng: &mut dyn RngCore) -> f64 {
    // 53 random bits: every f64 in [0, 1) with spacing 2^-53.
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_refuses_out_of_range_probabilities() {
        assert!(validate(&LossSpec::Bernoulli(BernoulliSpec { p: 0.1 })).is_ok());
        assert_eq!(
            validate(&LossSpec::Bernoulli(BernoulliSpec { p: 1.5 })),
            Err(LossSpecError::NotAProbability {
                name: "p",
                value: 1.5
            })
        );
        let ge = LossSpec::GilbertElliott(GilbertElliottSpec {
            p_good_to_bad: 0.1,
            p_bad_to_good: f64::NAN,
            loss_good: 0.0,
            loss_bad: 1.0,
        });
        assert!(matches!(
            validate(&ge),
            Err(LossSpecError::NotAProbability {
                name: "p_bad_to_good",
                ..
            })
        ));
    }

    #[test]
    fn clamps_bad_probabilities_without_panicking() {
        assert_eq!(probability(f64::NAN), 0.0);
        assert_eq!(probability(-1.0), 0.0);
        assert_eq!(probability(3.0), 1.0);
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1);
        let mut always = build(&LossSpec::Bernoulli(BernoulliSpec { p: 7.0 }));
        assert!((0..100).all(|_| always.lose(&mut rng)));
    }
}
