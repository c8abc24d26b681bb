//! Random loss models for links: Bernoulli and Gilbert-Elliott.

use crate::spec::LossSpec;
use rand::RngCore;

mod bernoulli;
mod gilbert_elliott;

pub use bernoulli::Bernoulli;
pub use gilbert_elliott::GilbertElliott;

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
    /// [`crate::run`] both call it).
    pub fn validate(&self) -> Result<(), LossSpecError> {
        validate(self)
    }
}

/// Check that every probability of `spec` lies in `[0, 1]`.
pub fn validate(spec: &LossSpec) -> Result<(), LossSpecError> {
    let fields: &[(&'static str, f64)] = match spec {
        LossSpec::Bernoulli { p } => &[("p", *p)],
        LossSpec::GilbertElliott {
            p_good_to_bad,
            p_bad_to_good,
            loss_good,
            loss_bad,
        } => &[
            ("p_good_to_bad", *p_good_to_bad),
            ("p_bad_to_good", *p_bad_to_good),
            ("loss_good", *loss_good),
            ("loss_bad", *loss_bad),
        ],
    };
    for &(name, value) in fields {
        if !(0.0..=1.0).contains(&value) {
            return Err(LossSpecError::NotAProbability { name, value });
        }
    }
    Ok(())
}

/// Build the loss model `spec` describes (probabilities outside `[0, 1]` are clamped; call
/// [`validate`] first to refuse them instead).
pub fn build(spec: &LossSpec) -> Box<dyn LossModel> {
    match *spec {
        LossSpec::Bernoulli { p } => Box::new(Bernoulli::new(p)),
        LossSpec::GilbertElliott {
            p_good_to_bad,
            p_bad_to_good,
            loss_good,
            loss_bad,
        } => Box::new(GilbertElliott::new(
            p_good_to_bad,
            p_bad_to_good,
            loss_good,
            loss_bad,
        )),
    }
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
pub(crate) fn uniform(rng: &mut dyn RngCore) -> f64 {
    // 53 random bits: every f64 in [0, 1) with spacing 2^-53.
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_refuses_out_of_range_probabilities() {
        assert!(validate(&LossSpec::Bernoulli { p: 0.1 }).is_ok());
        assert_eq!(
            validate(&LossSpec::Bernoulli { p: 1.5 }),
            Err(LossSpecError::NotAProbability {
                name: "p",
                value: 1.5
            })
        );
        let ge = LossSpec::GilbertElliott {
            p_good_to_bad: 0.1,
            p_bad_to_good: f64::NAN,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
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
        let mut always = build(&LossSpec::Bernoulli { p: 7.0 });
        assert!((0..100).all(|_| always.lose(&mut rng)));
    }
}
