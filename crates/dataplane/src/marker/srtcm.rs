//! Single rate three colour marker, RFC 2697, in colour-blind or colour-aware mode.

use super::bucket::{Bucket, Refill};
use super::{color_mode, ColorMode, Marker, MarkerKind, MarkerSpecError, Verdict};
use crate::color::Color;
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;
use qstp_proto::{Rate, Time};
use rand::RngCore;

/// `kind = "srtcm"`: the single-rate three-colour marker of RFC 2697.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SrtcmSpec {
    /// Committed information rate.
    pub cir: Rate,
    /// Committed burst size, bytes.
    pub cbs: u64,
    /// Excess burst size, bytes.
    pub ebs: u64,
    /// Colour-blind (the default) or colour-aware (RFC 2697 §3).
    #[serde(default)]
    pub mode: ColorMode,
}

impl Kind for SrtcmSpec {
    const DOC: &'static str =
        "srTCM (RFC 2697): cir, cbs, ebs (bytes), mode = \"blind\" | \"aware\"";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        // RFC 2697 §2: CIR, CBS and EBS.
        Ok(SrtcmSpec {
            cir: t.rate("cir")?,
            cbs: t.bytes("cbs")?,
            ebs: t.bytes("ebs")?,
            mode: color_mode(t)?,
        })
    }
}

impl MarkerKind for SrtcmSpec {
    fn validate(&self) -> Result<(), MarkerSpecError> {
        if self.cir.is_zero() {
            return Err(MarkerSpecError::ZeroRate("cir"));
        }
        // RFC 2697 §2: one of CBS and EBS must be larger than 0 (EBS = 0 alone is allowed: a
        // two-colour srTCM).
        if self.cbs == 0 && self.ebs == 0 {
            return Err(MarkerSpecError::ZeroBurst("cbs"));
        }
        Ok(())
    }
    fn build(&self) -> Box<dyn Marker> {
        Box::new(Srtcm::new(self.cir, self.cbs, self.ebs).with_mode(self.mode))
    }
}

/// Two buckets filled at one rate (CIR): C up to CBS, and E, which takes what overflows C, up to EBS.
#[derive(Debug, Clone)]
pub struct Srtcm {
    refill: Refill,
    committed: Bucket,
    excess: Bucket,
    mode: ColorMode,
}

impl Srtcm {
    /// A marker with committed rate `cir` and burst sizes `cbs` and `ebs`, bytes.
    pub fn new(cir: Rate, cbs: u64, ebs: u64) -> Self {
        // RFC 2697 §3.1: both buckets are initially full.
        Srtcm {
            refill: Refill::new(cir),
            committed: Bucket::full(cbs),
            excess: Bucket::full(ebs),
            mode: ColorMode::Blind,
        }
    }

    /// The same marker in colour mode `mode` (colour-blind unless told otherwise).
    pub fn with_mode(mut self, mode: ColorMode) -> Self {
        self.mode = mode;
        self
    }

    /// Meter a packet of `size` bytes arriving at `now` coloured `incoming` (ignored in
    /// colour-blind mode) and colour it.
    pub fn mark(&mut self, now: Time, size: usize, incoming: Color) -> Color {
        // RFC 2697 §3.1: tokens go to C while C is below CBS, else to E while E is below EBS.
        let overflow = self.committed.fill(self.refill.since_last(now));
        self.excess.fill(overflow);
        // RFC 2697 §3.2: colour-blind, every packet is metered as if green; colour-aware, a
        // packet pre-coloured yellow may only take E tokens and a red one stays red.
        let incoming = match self.mode {
            ColorMode::Blind => Color::Green,
            ColorMode::Aware => incoming,
        };
        if incoming == Color::Green && self.committed.has(size) {
            self.committed.take(size);
            Color::Green
        } else if incoming != Color::Red && self.excess.has(size) {
            self.excess.take(size);
            Color::Yellow
        } else {
            Color::Red
        }
    }
}

impl Marker for Srtcm {
    fn condition(
        &mut self,
        now: Time,
        size: usize,
        incoming: Color,
        _rng: &mut dyn RngCore,
    ) -> Verdict {
        Verdict::Pass(self.mark(now, size, incoming))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_clock::at;
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use Color::*;

    #[test]
    fn hand_computed_sequence() {
        // CIR 8 kbit/s = 1000 B/s, CBS = EBS = 1000 B, packets of 500 B.
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut m = Srtcm::new(Rate::from_bps(8_000), 1_000, 1_000);
        // Colour-blind: the incoming colour (red here, best effort) does not matter.
        let mut mark = |ms| m.condition(at(ms), 500, Red, &mut rng).color().unwrap();
        // Full buckets: two green (C 1000 -> 0), two yellow (E 1000 -> 0), then red.
        assert_eq!(
            [mark(0), mark(0), mark(0), mark(0), mark(0)],
            [Green, Green, Yellow, Yellow, Red]
        );
        // 250 ms later C holds 250 B: not enough, E empty: red.
        assert_eq!(mark(250), Red);
        // At 500 ms C holds 500 B: green.
        assert_eq!(mark(500), Green);
        // 1.5 s later 1500 B arrived: C fills to 1000, the 500 B overflow goes to E.
        assert_eq!(
            [mark(2000), mark(2000), mark(2000), mark(2000)],
            [Green, Green, Yellow, Red]
        );
    }

    #[test]
    fn excess_only_fills_once_committed_is_full() {
        let mut m = Srtcm::new(Rate::from_bps(8_000), 1_000, 1_000);
        // Empty both buckets.
        for _ in 0..4 {
            m.mark(at(0), 500, Green);
        }
        // After 900 ms C holds 900 B and E still nothing: a 950 B packet is red, a 900 B green.
        assert_eq!(m.mark(at(900), 950, Green), Red);
        assert_eq!(m.mark(at(900), 900, Green), Green);
    }

    #[test]
    fn colour_aware_never_promotes() {
        // CIR 1000 B/s, CBS = EBS = 1000 B, packets of 500 B, both buckets full.
        let blind = Srtcm::new(Rate::from_bps(8_000), 1_000, 1_000);
        let aware = blind.clone().with_mode(ColorMode::Aware);
        // Colour-blind: a red packet is green while C lasts.
        let mut m = blind;
        assert_eq!(m.mark(at(0), 500, Red), Green);
        assert_eq!(m.mark(at(0), 500, Yellow), Green);
        // RFC 2697 §3.2 colour-aware: red stays red and takes no token; yellow takes E only.
        let mut m = aware;
        assert_eq!(m.mark(at(0), 500, Red), Red);
        assert_eq!(m.mark(at(0), 500, Yellow), Yellow);
        assert_eq!(m.mark(at(0), 500, Yellow), Yellow);
        // E is empty now, C still full: yellow is not promoted, it goes red; green uses C.
        assert_eq!(m.mark(at(0), 500, Yellow), Red);
        assert_eq!(m.mark(at(0), 500, Green), Green);
        assert_eq!(m.mark(at(0), 500, Green), Green);
        // C and E empty: green is demoted to red.
        assert_eq!(m.mark(at(0), 500, Green), Red);
        // A green packet demoted when C is short but E holds enough goes yellow.
        let mut m = Srtcm::new(Rate::from_bps(8_000), 500, 1_000).with_mode(ColorMode::Aware);
        assert_eq!(m.mark(at(0), 500, Green), Green);
        assert_eq!(m.mark(at(0), 500, Green), Yellow);
    }
}
