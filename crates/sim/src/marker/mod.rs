//! Edge markers: two-colour token bucket, srTCM (RFC 2697), trTCM (RFC 2698), TSW two- and
//! three-colour (RFC 2859). Each conditions the packets of one class's aggregate; a marker that
//! draws random numbers is given its own random stream.
//!
//! A marker sees the colour a packet arrives with and returns a [`Verdict`]: pass it on with a
//! colour, or drop it. The markers here pass every packet; srTCM and trTCM run colour-blind by
//! default and colour-aware when their spec says so ([`ColorMode`]). A policer (one that drops
//! out-of-profile packets, such as an ATM GCRA policer tagging or discarding cells) is a marker
//! that returns [`Verdict::Drop`].

use crate::color::Color;
use crate::spec::MarkerSpec;
use qstp_proto::{Rate, Time};
use rand::RngCore;

mod bucket;
mod srtcm;
mod token_bucket;
mod trtcm;
mod tsw;

pub use srtcm::Srtcm;
pub use token_bucket::TokenBucketMarker;
pub use trtcm::Trtcm;
pub use tsw::{Tsw2, Tsw3, TswRateEstimator};

/// What a marker decides for one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Forward the packet with this colour.
    Pass(Color),
    /// Discard the packet (a policer's out-of-profile action).
    Drop,
}

impl Verdict {
    /// The colour of a passed packet; `None` for a drop.
    pub fn color(self) -> Option<Color> {
        match self {
            Verdict::Pass(color) => Some(color),
            Verdict::Drop => None,
        }
    }
}

/// Whether a meter looks at the colour a packet arrives with.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ColorMode {
    /// RFC 2697 §3 / RFC 2698 §3 colour-blind: the incoming colour is ignored.
    #[default]
    Blind,
    /// RFC 2697 §3 / RFC 2698 §3 colour-aware: a packet pre-coloured yellow or red is never
    /// promoted to a better colour.
    Aware,
}

/// An edge conditioner's meter and marker (or policer); `Send`, so that a real-time forwarder
/// can run it on a thread of its own.
pub trait Marker: Send {
    /// Decide for a packet of `size` bytes arriving at `now` coloured `incoming` (red, best
    /// effort, unless an upstream marker coloured it): pass it with a colour, or drop it.
    fn condition(
        &mut self,
        now: Time,
        size: usize,
        incoming: Color,
        rng: &mut dyn RngCore,
    ) -> Verdict;
}

/// Why a marker description was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MarkerSpecError {
    /// A rate of zero would colour every packet out of profile.
    #[error("must be a positive rate")]
    ZeroRate(&'static str),
    /// A bucket that can hold no byte (RFC 2697 §2: one of CBS and EBS must be larger than 0;
    /// RFC 2698 §2: both CBS and PBS must be).
    #[error("must be positive")]
    ZeroBurst(&'static str),
    /// RFC 2698 §2: the peak rate must be at least the committed rate.
    #[error("pir {pir} is below cir {cir}")]
    PeakBelowCommitted {
        /// The committed rate.
        cir: Rate,
        /// The peak rate.
        pir: Rate,
    },
    /// The TSW averaging window is zero.
    #[error("the averaging window must be positive")]
    ZeroWindow,
}

impl MarkerSpecError {
    /// The key inside the marker's table the error is about (`cir`, `cbs`, `pir`, `window`).
    pub fn field(&self) -> &'static str {
        match self {
            MarkerSpecError::ZeroRate(key) | MarkerSpecError::ZeroBurst(key) => key,
            MarkerSpecError::PeakBelowCommitted { .. } => "pir",
            MarkerSpecError::ZeroWindow => "window",
        }
    }
}

impl MarkerSpec {
    /// Check the description: the single home of the markers' rules (the lab and
    /// [`crate::run`] both call it).
    pub fn validate(&self) -> Result<(), MarkerSpecError> {
        validate(self)
    }
}

/// Check a marker description before building it.
pub fn validate(spec: &MarkerSpec) -> Result<(), MarkerSpecError> {
    use MarkerSpecError::*;
    match *spec {
        MarkerSpec::TokenBucket { rate, bucket } => {
            if rate.is_zero() {
                return Err(ZeroRate("rate"));
            }
            if bucket == 0 {
                return Err(ZeroBurst("bucket"));
            }
        }
        MarkerSpec::Srtcm { cir, cbs, ebs, .. } => {
            if cir.is_zero() {
                return Err(ZeroRate("cir"));
            }
            // RFC 2697 §2: one of CBS and EBS must be larger than 0 (EBS = 0 alone is allowed:
            // a two-colour srTCM).
            if cbs == 0 && ebs == 0 {
                return Err(ZeroBurst("cbs"));
            }
        }
        MarkerSpec::Trtcm {
            cir, cbs, pir, pbs, ..
        } => {
            if cir.is_zero() {
                return Err(ZeroRate("cir"));
            }
            // RFC 2698 §2: PIR must be equal to or greater than CIR.
            if pir < cir {
                return Err(PeakBelowCommitted { cir, pir });
            }
            if cbs == 0 {
                return Err(ZeroBurst("cbs"));
            }
            if pbs == 0 {
                return Err(ZeroBurst("pbs"));
            }
        }
        MarkerSpec::Tsw2 { cir, window } => {
            if cir.is_zero() {
                return Err(ZeroRate("cir"));
            }
            if window.is_zero() {
                return Err(ZeroWindow);
            }
        }
        MarkerSpec::Tsw3 { cir, pir, window } => {
            if cir.is_zero() {
                return Err(ZeroRate("cir"));
            }
            // RFC 2859 §2.2: the marker tests the rate against CTR, then PTR, so PTR >= CTR.
            if pir < cir {
                return Err(PeakBelowCommitted { cir, pir });
            }
            if window.is_zero() {
                return Err(ZeroWindow);
            }
        }
    }
    Ok(())
}

/// Build the marker `spec` describes (call [`validate`] first; an invalid spec still builds
/// without panicking, it just colours most packets red).
pub fn build(spec: &MarkerSpec) -> Box<dyn Marker> {
    match *spec {
        MarkerSpec::TokenBucket { rate, bucket } => Box::new(TokenBucketMarker::new(rate, bucket)),
        MarkerSpec::Srtcm {
            cir,
            cbs,
            ebs,
            mode,
        } => Box::new(Srtcm::new(cir, cbs, ebs).with_mode(mode)),
        MarkerSpec::Trtcm {
            cir,
            cbs,
            pir,
            pbs,
            mode,
        } => Box::new(Trtcm::new(cir, cbs, pir, pbs).with_mode(mode)),
        MarkerSpec::Tsw2 { cir, window } => Box::new(Tsw2::new(cir, window)),
        MarkerSpec::Tsw3 { cir, pir, window } => Box::new(Tsw3::new(cir, pir, window)),
    }
}

#[cfg(test)]
pub(crate) mod test_clock {
    use qstp_proto::{Duration, Time};

    /// The instant `ms` milliseconds after time zero.
    pub fn at(ms: u64) -> Time {
        Time::ZERO + Duration::from_millis(ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qstp_proto::{Duration, Rate};

    #[test]
    fn validate_refuses_nonsense() {
        let k = Rate::from_kbps;
        assert!(validate(&MarkerSpec::TokenBucket {
            rate: k(500),
            bucket: 10_000
        })
        .is_ok());
        assert_eq!(
            validate(&MarkerSpec::TokenBucket {
                rate: Rate::ZERO,
                bucket: 10_000
            }),
            Err(MarkerSpecError::ZeroRate("rate"))
        );
        assert_eq!(
            validate(&MarkerSpec::Srtcm {
                cir: k(100),
                cbs: 0,
                ebs: 0,
                mode: ColorMode::Blind,
            }),
            Err(MarkerSpecError::ZeroBurst("cbs"))
        );
        assert_eq!(
            validate(&MarkerSpec::Trtcm {
                cir: k(200),
                cbs: 1,
                pir: k(100),
                pbs: 1,
                mode: ColorMode::Aware,
            }),
            Err(MarkerSpecError::PeakBelowCommitted {
                cir: k(200),
                pir: k(100)
            })
        );
        // RFC 2697 §2: EBS = 0 alone is allowed.
        assert_eq!(
            MarkerSpec::Srtcm {
                cir: k(100),
                cbs: 3000,
                ebs: 0,
                mode: ColorMode::Blind,
            }
            .validate(),
            Ok(())
        );
        assert_eq!(
            validate(&MarkerSpec::Tsw2 {
                cir: k(100),
                window: Duration::ZERO
            }),
            Err(MarkerSpecError::ZeroWindow)
        );
    }

    #[test]
    fn invalid_specs_build_without_panicking() {
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1);
        for spec in [
            MarkerSpec::TokenBucket {
                rate: Rate::ZERO,
                bucket: 0,
            },
            MarkerSpec::Srtcm {
                cir: Rate::ZERO,
                cbs: 0,
                ebs: 0,
                mode: ColorMode::Aware,
            },
            MarkerSpec::Trtcm {
                cir: Rate::MAX,
                cbs: 0,
                pir: Rate::ZERO,
                pbs: 0,
                mode: ColorMode::Aware,
            },
            MarkerSpec::Tsw2 {
                cir: Rate::ZERO,
                window: Duration::ZERO,
            },
            MarkerSpec::Tsw3 {
                cir: Rate::MAX,
                pir: Rate::ZERO,
                window: Duration::ZERO,
            },
        ] {
            let mut m = build(&spec);
            for (i, incoming) in (0..12).zip([Color::Green, Color::Yellow, Color::Red].repeat(4)) {
                m.condition(Time::from_nanos(i), 1500, incoming, &mut rng);
            }
        }
    }
}
