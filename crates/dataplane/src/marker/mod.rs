//! Edge markers: two-colour token bucket, srTCM (RFC 2697), trTCM (RFC 2698), TSW two- and
//! three-colour (RFC 2859), and the ATM policer GCRA (ITU-T I.371) with CLP tagging. Each conditions the packets of one class's aggregate; a marker that
//! draws random numbers is given its own random stream.
//!
//! A marker sees the colour a packet arrives with and returns a [`Verdict`]: pass it on with a
//! colour, or drop it. The markers here pass every packet; srTCM and trTCM run colour-blind by
//! default and colour-aware when their spec says so ([`ColorMode`]). A policer (one that drops
//! out-of-profile packets, such as an ATM GCRA policer tagging or discarding cells) is a marker
//! that returns [`Verdict::Drop`].

use crate::color::Color;
use crate::params::{choose, ParamResult, ParamTable};
use qstp_proto::{Rate, Time};
use rand::RngCore;

mod bucket;
mod gcra;
mod srtcm;
mod token_bucket;
mod trtcm;
mod tsw;

pub use gcra::{Gcra, GcraSpec};
pub use srtcm::{Srtcm, SrtcmSpec};
pub use token_bucket::{TokenBucketMarker, TokenBucketSpec};
pub use trtcm::{Trtcm, TrtcmSpec};
pub use tsw::{Tsw2, Tsw2Spec, Tsw3, Tsw3Spec, TswRateEstimator};

crate::registry! {
    /// An edge marker, colouring a group's aggregate, as a scenario names it by `kind`: the
    /// registry of markers. A new marker (or policer) is a file of this module (its spec
    /// implementing [`MarkerKind`] and [`crate::registry::Kind`]) and one line here.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum MarkerSpec: dyn MarkerKind, "a marker" {
        "token-bucket" => TokenBucket(TokenBucketSpec),
        "srtcm" => Srtcm(SrtcmSpec),
        "trtcm" => Trtcm(TrtcmSpec),
        "tsw2" => Tsw2(Tsw2Spec),
        "tsw3" => Tsw3(Tsw3Spec),
        "gcra" => Gcra(GcraSpec),
    }
}

/// What a marker kind's spec knows: its rules and how to build its marker.
pub trait MarkerKind: std::fmt::Debug {
    /// Check the description: the single home of the kind's rules.
    fn validate(&self) -> Result<(), MarkerSpecError>;
    /// The marker (call `validate` first; an invalid spec still builds without panicking, it
    /// just colours most packets red).
    fn build(&self) -> Box<dyn Marker>;
}

/// A committed rate (`cir`, positive) and a peak rate (`pir`) at least as large: RFC 2698 §2
/// ("the PIR must be equal to or greater than the CIR") and RFC 2859 §2.2 (PTR >= CTR).
pub(crate) fn check_committed_and_peak(cir: Rate, pir: Rate) -> Result<(), MarkerSpecError> {
    if cir.is_zero() {
        return Err(MarkerSpecError::ZeroRate("cir"));
    }
    if pir < cir {
        return Err(MarkerSpecError::PeakBelowCommitted { cir, pir });
    }
    Ok(())
}

/// `mode = "blind"` (the default) or `"aware"`: whether a three-colour marker meters a packet by
/// the colour it arrives with (RFC 2697 §3, RFC 2698 §3).
pub(crate) fn color_mode(t: &mut dyn ParamTable) -> ParamResult<ColorMode> {
    choose(
        t,
        "mode",
        "a colour mode",
        &[("blind", ColorMode::Blind), ("aware", ColorMode::Aware)],
    )
}

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
    /// Any other refused parameter of a kind, at its key.
    #[error("{reason}")]
    Param {
        /// The key.
        key: &'static str,
        /// Why it was refused.
        reason: String,
    },
}

impl MarkerSpecError {
    /// The key inside the marker's table the error is about (`cir`, `cbs`, `pir`, `window`).
    pub fn field(&self) -> &'static str {
        match self {
            MarkerSpecError::ZeroRate(key) | MarkerSpecError::ZeroBurst(key) => key,
            MarkerSpecError::PeakBelowCommitted { .. } => "pir",
            MarkerSpecError::ZeroWindow => "window",
            MarkerSpecError::Param { key, .. } => key,
        }
    }
}

impl MarkerSpec {
    /// Check the description: the single home of the markers' rules (the lab and
    /// the simulator both call it).
    pub fn validate(&self) -> Result<(), MarkerSpecError> {
        validate(self)
    }
}

/// Check a marker description before building it.
pub fn validate(spec: &MarkerSpec) -> Result<(), MarkerSpecError> {
    spec.get().validate()
}

/// Build the marker `spec` describes (call [`validate`] first; an invalid spec still builds
/// without panicking, it just colours most packets red).
pub fn build(spec: &MarkerSpec) -> Box<dyn Marker> {
    spec.get().build()
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
        assert!(validate(&MarkerSpec::TokenBucket(TokenBucketSpec {
            rate: k(500),
            bucket: 10_000
        }))
        .is_ok());
        assert_eq!(
            validate(&MarkerSpec::TokenBucket(TokenBucketSpec {
                rate: Rate::ZERO,
                bucket: 10_000
            })),
            Err(MarkerSpecError::ZeroRate("rate"))
        );
        assert_eq!(
            validate(&MarkerSpec::Srtcm(SrtcmSpec {
                cir: k(100),
                cbs: 0,
                ebs: 0,
                mode: ColorMode::Blind,
            })),
            Err(MarkerSpecError::ZeroBurst("cbs"))
        );
        assert_eq!(
            validate(&MarkerSpec::Trtcm(TrtcmSpec {
                cir: k(200),
                cbs: 1,
                pir: k(100),
                pbs: 1,
                mode: ColorMode::Aware,
            })),
            Err(MarkerSpecError::PeakBelowCommitted {
                cir: k(200),
                pir: k(100)
            })
        );
        // RFC 2697 §2: EBS = 0 alone is allowed.
        assert_eq!(
            MarkerSpec::Srtcm(SrtcmSpec {
                cir: k(100),
                cbs: 3000,
                ebs: 0,
                mode: ColorMode::Blind,
            })
            .validate(),
            Ok(())
        );
        assert_eq!(
            validate(&MarkerSpec::Tsw2(Tsw2Spec {
                cir: k(100),
                window: Duration::ZERO
            })),
            Err(MarkerSpecError::ZeroWindow)
        );
    }

    #[test]
    fn invalid_specs_build_without_panicking() {
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(1);
        for spec in [
            MarkerSpec::TokenBucket(TokenBucketSpec {
                rate: Rate::ZERO,
                bucket: 0,
            }),
            MarkerSpec::Srtcm(SrtcmSpec {
                cir: Rate::ZERO,
                cbs: 0,
                ebs: 0,
                mode: ColorMode::Aware,
            }),
            MarkerSpec::Trtcm(TrtcmSpec {
                cir: Rate::MAX,
                cbs: 0,
                pir: Rate::ZERO,
                pbs: 0,
                mode: ColorMode::Aware,
            }),
            MarkerSpec::Tsw2(Tsw2Spec {
                cir: Rate::ZERO,
                window: Duration::ZERO,
            }),
            MarkerSpec::Tsw3(Tsw3Spec {
                cir: Rate::MAX,
                pir: Rate::ZERO,
                window: Duration::ZERO,
            }),
        ] {
            let mut m = build(&spec);
            for (i, incoming) in (0..12).zip([Color::Green, Color::Yellow, Color::Red].repeat(4)) {
                m.condition(Time::from_nanos(i), 1500, incoming, &mut rng);
            }
        }
    }
}
