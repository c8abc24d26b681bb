//! Random loss models for links: Bernoulli and Gilbert-Elliott.

use rand::RngCore;

/// A link's random loss.
pub trait LossModel {
    /// Whether the next packet is lost; `rng` is the link's own random stream.
    fn lose(&mut self, rng: &mut dyn RngCore) -> bool;
}
