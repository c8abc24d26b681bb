//! Two rate three colour marker, RFC 2698, in colour-blind or colour-aware mode.

use super::bucket::{Bucket, Refill};
use super::{check_committed_and_peak, color_mode, ColorMode, Marker, MarkerKind};
use super::{MarkerSpecError, Verdict};
use crate::color::Color;
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;
use qstp_proto::{Rate, Time};
use rand::RngCore;

/// `kind = "trtcm"`: the two-rate three-colour marker of RFC 2698.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TrtcmSpec {
    /// Committed information rate.
    pub cir: Rate,
    /// Committed burst size, bytes.
    pub cbs: u64,
    /// Peak information rate.
    pub pir: Rate,
    /// Peak burst size, bytes.
    pub pbs: u64,
    /// Colour-blind (the default) or colour-aware (RFC 2698 §3).
    #[serde(default)]
    pub mode: ColorMode,
}

impl Kind for TrtcmSpec {
    const DOC: &'static str =
        "trTCM (RFC 2698): cir, cbs, pir, pbs (bytes), mode = \"blind\" | \"aware\"";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        Ok(TrtcmSpec {
            cir: t.rate("cir")?,
            cbs: t.bytes("cbs")?,
            pir: t.rate("pir")?,
            pbs: t.bytes("pbs")?,
            mode: color_mode(t)?,
        })
    }
}

impl MarkerKind for TrtcmSpec {
    fn validate(&self) -> Result<(), MarkerSpecError> {
        // RFC 2698 §2: PIR must be equal to or greater than CIR.
        check_committed_and_peak(self.cir, self.pir)?;
        if self.cbs == 0 {
            return Err(MarkerSpecError::ZeroBurst("cbs"));
        }
        if self.pbs == 0 {
            return Err(MarkerSpecError::ZeroBurst("pbs"));
        }
        Ok(())
    }
    fn build(&self) -> Box<dyn Marker> {
        Box::new(Trtcm::new(self.cir, self.cbs, self.pir, self.pbs).with_mode(self.mode))
    }
}

/// A peak bucket P (PIR, PBS) and a committed bucket C (CIR, CBS), each filled at its own rate.
#[derive(Debug, Clone)]
pub struct Trtcm {
    peak_refill: Refill,
    peak: Bucket,
    committed_refill: Refill,
    committed: Bucket,
    mode: ColorMode,
}

impl Trtcm {
    /// A marker with committed rate and burst `cir`, `cbs` and peak rate and burst `pir`, `pbs`.
    pub fn new(cir: Rate, cbs: u64, pir: Rate, pbs: u64) -> Self {
        // RFC 2698 §3.1: both buckets are initially full.
        Trtcm {
            peak_refill: Refill::new(pir),
            peak: Bucket::full(pbs),
            committed_refill: Refill::new(cir),
            committed: Bucket::full(cbs),
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
        // RFC 2698 §3.1: each bucket grows at its rate up to its burst size.
        self.peak.fill(self.peak_refill.since_last(now));
        self.committed.fill(self.committed_refill.since_last(now));
        // RFC 2698 §3.2: colour-blind, every packet is metered as if green; colour-aware, a
        // packet pre-coloured red stays red and a yellow one never becomes green.
        let incoming = match self.mode {
            ColorMode::Blind => Color::Green,
            ColorMode::Aware => incoming,
        };
        if incoming == Color::Red || !self.peak.has(size) {
            Color::Red
        } else if incoming == Color::Yellow || !self.committed.has(size) {
            self.peak.take(size);
            Color::Yellow
        } else {
            self.peak.take(size);
            self.committed.take(size);
            Color::Green
        }
    }
}

impl Marker for Trtcm {
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
    use qstp_proto::Duration;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use Color::*;

    #[test]
    fn hand_computed_sequence() {
        // CIR 1000 B/s, CBS 1000 B; PIR 2000 B/s, PBS 2000 B; packets of 500 B.
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut m = Trtcm::new(Rate::from_bps(8_000), 1_000, Rate::from_bps(16_000), 2_000);
        // Colour-blind: the incoming colour (red here, best effort) does not matter.
        let mut mark = |ms| m.condition(at(ms), 500, Red, &mut rng).color().unwrap();
        // Two green (C empties, P 2000 -> 1000), two yellow (P -> 0), then red.
        assert_eq!(
            [mark(0), mark(0), mark(0), mark(0), mark(0)],
            [Green, Green, Yellow, Yellow, Red]
        );
        // At 250 ms: P holds 500, C 250: yellow, P back to 0.
        assert_eq!(mark(250), Yellow);
        // At 500 ms: P 500, C 500: green.
        assert_eq!(mark(500), Green);
        // Red packets take no tokens: at 500 ms, P is empty, red; at 750 ms P 500, C 250: yellow.
        assert_eq!([mark(500), mark(750)], [Red, Yellow]);
    }

    #[test]
    fn long_run_shares_follow_the_two_rates() {
        // 3000 B/s offered against CIR 1000 B/s and PIR 2000 B/s: 1/3 green, 1/3 yellow, 1/3 red.
        // Buckets deeper than a packet, so that no token is lost to the cap in steady state.
        let mut m = Trtcm::new(Rate::from_bps(8_000), 3_000, Rate::from_bps(16_000), 3_000);
        let mut counts = [0u32; 3];
        for i in 0..30_000u64 {
            let now = Time::ZERO + Duration::from_micros(333_334) * i;
            counts[m.mark(now, 1000, Green) as usize] += 1;
        }
        for c in counts {
            assert!(c.abs_diff(10_000) < 50, "{counts:?}");
        }
    }

    #[test]
    fn colour_aware_never_promotes() {
        // CIR 1000 B/s, CBS 1000 B; PIR 2000 B/s, PBS 2000 B; packets of 500 B, buckets full.
        let blind = Trtcm::new(Rate::from_bps(8_000), 1_000, Rate::from_bps(16_000), 2_000);
        let aware = blind.clone().with_mode(ColorMode::Aware);
        // Colour-blind: a red packet is green while both buckets hold tokens.
        let mut m = blind;
        assert_eq!(m.mark(at(0), 500, Red), Green);
        // RFC 2698 §3.2 colour-aware: red stays red and takes no token.
        let mut m = aware;
        assert_eq!(m.mark(at(0), 500, Red), Red);
        // Yellow stays yellow while P lasts, taking only P tokens (C stays full).
        assert_eq!(m.mark(at(0), 500, Yellow), Yellow);
        assert_eq!(m.mark(at(0), 500, Yellow), Yellow);
        // P holds 1000 B, C 1000 B: green packets are green and take from both.
        assert_eq!(m.mark(at(0), 500, Green), Green);
        assert_eq!(m.mark(at(0), 500, Green), Green);
        // P is empty: even a green packet is red.
        assert_eq!(m.mark(at(0), 500, Green), Red);
        // 250 ms later P holds 500 B and C 250 B: a green packet is demoted to yellow.
        assert_eq!(m.mark(at(250), 500, Green), Yellow);
    }
}
