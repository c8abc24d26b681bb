//! The ATM usage parameter control: the Generic Cell Rate Algorithm of ITU-T I.371 as a policer,
//! one GCRA on the peak cell rate of all cells (CLP=0+1) and, for the SBR2/SBR3 transfer
//! capabilities (the ATM Forum's VBR.2/VBR.3), one on the sustainable cell rate of the CLP=0
//! cells, which tags (SBR3) or discards (SBR2) what exceeds it.
//!
//! Colours stand for the cell loss priority: green is CLP=0, red is CLP=1 (a tagged cell is red).
//! A non-conforming cell of the peak-rate test is discarded ([`Verdict::Drop`]).
//!
//! Arithmetic is exact: each GCRA keeps its theoretical arrival time (TAT) in units of
//! nanoseconds times its own rate in bit/s, so a cell's increment T = 424 bits / rate is an
//! integer (424e9) however the rate divides; only the burst tolerance derived from the MBS is
//! rounded (down, by less than one unit), once, when the policer is made.

use super::{color_mode, ColorMode, Marker, MarkerKind, MarkerSpecError, Verdict};
use crate::aal5::CELL as CELL_BYTES;
use crate::color::Color;
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;
use qstp_proto::{Duration, Rate, Time};
use rand::RngCore;

/// `kind = "gcra"`: ATM usage parameter control by GCRA (ITU-T I.371 §6.5 and annex A).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GcraSpec {
    /// Peak cell rate of CLP=0+1 cells, as the bit rate of whole 53-byte cells.
    pub pcr: Rate,
    /// Cell delay variation tolerance of the peak-rate test (tau_PCR); zero by default.
    pub cdvt: Duration,
    /// Sustainable cell rate of CLP=0 cells (SBR2/SBR3), as a bit rate of whole cells; `None`:
    /// the peak-rate test alone (DBR, or UBR's PCR policing).
    pub scr: Option<Rate>,
    /// Maximum burst size of CLP=0 cells at the peak rate, cells (with `scr`).
    pub mbs: Option<u64>,
    /// SBR3 (the default): CLP=0 cells beyond the sustainable rate are tagged CLP=1; SBR2
    /// (`false`): they are discarded.
    pub tagging: bool,
    /// Colour-blind (the default: every arriving cell is CLP=0, as hosts send them) or
    /// colour-aware (a red cell arrives CLP=1 and is tested on the peak rate only).
    pub mode: ColorMode,
}

impl Kind for GcraSpec {
    const DOC: &'static str = "ATM UPC by GCRA (ITU-T I.371): pcr, cdvt (0), scr and mbs (cells) \
         for SBR3, tagging (true; false: SBR2 discards), mode = \"blind\" | \"aware\"";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        let pcr = t.rate("pcr")?;
        let cdvt = t.opt_duration("cdvt")?.unwrap_or(Duration::ZERO);
        let scr = t.opt_rate("scr")?;
        let mbs = t.opt_u64("mbs")?;
        if scr.is_some() && mbs.is_none() {
            return Err(t.error(
                "mbs",
                "missing (cells; a sustainable rate needs a burst size)",
            ));
        }
        if scr.is_none() && mbs.is_some() {
            return Err(t.error(
                "mbs",
                "given without scr (the burst size is the SCR test's)",
            ));
        }
        Ok(GcraSpec {
            pcr,
            cdvt,
            scr,
            mbs,
            tagging: t.opt_bool("tagging")?.unwrap_or(true),
            mode: color_mode(t)?,
        })
    }
}

impl MarkerKind for GcraSpec {
    fn validate(&self) -> Result<(), MarkerSpecError> {
        if self.pcr.is_zero() {
            return Err(MarkerSpecError::ZeroRate("pcr"));
        }
        if let Some(scr) = self.scr {
            if scr.is_zero() {
                return Err(MarkerSpecError::ZeroRate("scr"));
            }
            // ITU-T I.371 §5.4.2: the sustainable rate is at most the peak rate.
            if scr > self.pcr {
                return Err(MarkerSpecError::Param {
                    key: "scr",
                    reason: format!("{scr} is above pcr {}", self.pcr),
                });
            }
        }
        if self.mbs == Some(0) {
            return Err(MarkerSpecError::ZeroBurst("mbs"));
        }
        Ok(())
    }
    fn build(&self) -> Box<dyn Marker> {
        Box::new(Gcra::new(self))
    }
}

/// One GCRA(T, tau) in the virtual scheduling form (ITU-T I.371 annex A.1), in units of
/// nanoseconds times its rate in bit/s.
#[derive(Debug, Clone, Copy)]
struct Scheduler {
    /// The rate, bit/s (scale of every other field).
    rate: u128,
    /// Tolerance tau, scaled.
    tau: u128,
    /// Theoretical arrival time, scaled; `None` before the first cell.
    tat: Option<u128>,
}

impl Scheduler {
    fn new(rate: Rate, tau: u128) -> Self {
        Scheduler {
            rate: u128::from(rate.bps().max(1)),
            tau,
            tat: None,
        }
    }

    /// The TAT the unit of `size` bytes arriving at `now` would leave if conforming, or `None`
    /// if it does not conform (I.371 A.1: non-conforming if t_a < TAT - tau; else TAT <-
    /// max(t_a, TAT) + T).
    fn test(&self, now: Time, size: usize) -> Option<u128> {
        let arrival = u128::from(now.as_nanos()) * self.rate;
        let tat = self.tat.unwrap_or(arrival);
        if arrival + self.tau < tat {
            return None;
        }
        let increment = size as u128 * 8 * 1_000_000_000;
        Some(arrival.max(tat) + increment)
    }
}

/// The policer a [`GcraSpec`] describes.
#[derive(Debug, Clone)]
pub struct Gcra {
    peak: Scheduler,
    sustainable: Option<Scheduler>,
    tagging: bool,
    mode: ColorMode,
}

impl Gcra {
    /// The policer of `spec`.
    pub fn new(spec: &GcraSpec) -> Self {
        let peak_tau = u128::from(spec.cdvt.as_nanos()) * u128::from(spec.pcr.bps());
        let sustainable = spec.scr.map(|scr| {
            // ITU-T I.371 §5.4.2: the burst tolerance BT = (MBS - 1) (1/SCR - 1/PCR) cell
            // times, scaled by SCR:
            // (MBS - 1) x 424e9 x (PCR - SCR) / PCR.
            let (pcr, scr_bps) = (u128::from(spec.pcr.bps().max(1)), u128::from(scr.bps()));
            let cell = u128::from(CELL_BYTES) * 8 * 1_000_000_000;
            let bursts = u128::from(spec.mbs.unwrap_or(1).saturating_sub(1));
            let bt = bursts * cell * pcr.saturating_sub(scr_bps) / pcr;
            Scheduler::new(scr, bt)
        });
        Gcra {
            peak: Scheduler::new(spec.pcr, peak_tau),
            sustainable,
            tagging: spec.tagging,
            mode: spec.mode,
        }
    }

    /// Police a unit (a cell) of `size` bytes arriving at `now` with colour `incoming`.
    pub fn police(&mut self, now: Time, size: usize, incoming: Color) -> Verdict {
        // ITU-T I.371 §6.5 (SBR3): first the peak rate on CLP=0+1; a cell it refuses is discarded
        // and moves neither TAT.
        let Some(peak_tat) = self.peak.test(now, size) else {
            return Verdict::Drop;
        };
        let clp0 = match self.mode {
            ColorMode::Blind => true,
            ColorMode::Aware => incoming == Color::Green,
        };
        let color = match (&mut self.sustainable, clp0) {
            // No sustainable-rate test, or a CLP=1 cell: it passes as it came.
            (None, _) => {
                if clp0 {
                    Color::Green
                } else {
                    Color::Red
                }
            }
            (Some(_), false) => Color::Red,
            (Some(sustainable), true) => match sustainable.test(now, size) {
                Some(tat) => {
                    sustainable.tat = Some(tat);
                    Color::Green
                }
                // SBR3 tags the CLP=0 cell beyond SCR0/MBS0 (I.371 §5.3.4, §6.5); SBR2 discards
                // it (and then the peak-rate TAT does not move either: the cell was not passed).
                None if self.tagging => Color::Red,
                None => return Verdict::Drop,
            },
        };
        self.peak.tat = Some(peak_tat);
        Verdict::Pass(color)
    }
}

impl Marker for Gcra {
    fn condition(
        &mut self,
        now: Time,
        size: usize,
        incoming: Color,
        _rng: &mut dyn RngCore,
    ) -> Verdict {
        self.police(now, size, incoming)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CELL: usize = CELL_BYTES as usize;

    fn spec(pcr: Rate, scr: Option<Rate>, mbs: Option<u64>) -> GcraSpec {
        GcraSpec {
            pcr,
            cdvt: Duration::ZERO,
            scr,
            mbs,
            tagging: true,
            mode: ColorMode::Blind,
        }
    }

    /// Verdicts for `n` cells sent back to back at `rate` (cell times rounded up to the
    /// nanosecond: a shaper on a nanosecond clock is never faster than its rate).
    fn burst(gcra: &mut Gcra, rate: Rate, n: usize) -> Vec<Verdict> {
        let gap = (CELL as u64 * 8 * 1_000_000_000).div_ceil(rate.bps());
        (0..n as u64)
            .map(|i| gcra.police(Time::from_nanos(i * gap), CELL, Color::Green))
            .collect()
    }

    #[test]
    fn the_peak_test_discards_cells_sent_faster_than_pcr() {
        // 424 kbit/s is 1000 cells/s: cells 0.5 ms apart at 848 kbit/s, half of them too early.
        let mut g = Gcra::new(&spec(Rate::from_kbps(424), None, None));
        let v = burst(&mut g, Rate::from_kbps(848), 10);
        let passed = v
            .iter()
            .filter(|v| **v == Verdict::Pass(Color::Green))
            .count();
        assert_eq!(passed, 5, "{v:?}");
        assert_eq!(v[1], Verdict::Drop);
        // At exactly the peak rate every cell conforms.
        let mut g = Gcra::new(&spec(Rate::from_kbps(424), None, None));
        assert!(burst(&mut g, Rate::from_kbps(424), 100)
            .iter()
            .all(|v| *v == Verdict::Pass(Color::Green)));
    }

    #[test]
    fn a_burst_at_the_peak_rate_keeps_mbs_cells_green_then_tags() {
        // The meaning of MBS (I.371 §5.4.2): the longest burst at PCR conforming to SCR0.
        for (mbs, pcr, scr) in [
            (10, 149_760, 18_720),
            (8256, 149_760, 18_720),
            (2, 1000, 999),
        ] {
            let (pcr, scr) = (Rate::from_kbps(pcr), Rate::from_kbps(scr));
            let mut g = Gcra::new(&spec(pcr, Some(scr), Some(mbs)));
            let v = burst(&mut g, pcr, mbs as usize + 5);
            let green = v
                .iter()
                .take_while(|v| **v == Verdict::Pass(Color::Green))
                .count();
            assert_eq!(green as u64, mbs, "mbs {mbs}");
            assert_eq!(
                v[mbs as usize],
                Verdict::Pass(Color::Red),
                "tagged, not dropped"
            );
        }
    }

    #[test]
    fn sbr2_discards_what_sbr3_tags_and_colour_aware_cells_keep_their_clp() {
        let (pcr, scr) = (Rate::from_kbps(424), Rate::from_kbps(212));
        let mut s = spec(pcr, Some(scr), Some(1));
        s.tagging = false;
        let v = burst(&mut Gcra::new(&s), pcr, 4);
        assert_eq!(
            v,
            [
                Verdict::Pass(Color::Green),
                Verdict::Drop,
                Verdict::Pass(Color::Green),
                Verdict::Drop
            ]
        );
        // Colour-aware: a CLP=1 cell is tested on the peak rate only, and does not use the
        // sustainable rate's credit.
        s.tagging = true;
        s.mode = ColorMode::Aware;
        let mut g = Gcra::new(&s);
        let gap = pcr.transmit_time(CELL).as_nanos();
        assert_eq!(
            g.police(Time::from_nanos(0), CELL, Color::Red),
            Verdict::Pass(Color::Red)
        );
        assert_eq!(
            g.police(Time::from_nanos(gap), CELL, Color::Green),
            Verdict::Pass(Color::Green)
        );
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let k = Rate::from_kbps;
        let err = spec(k(100), Some(k(200)), Some(5)).validate().unwrap_err();
        assert_eq!(
            (err.field(), err.to_string().as_str()),
            ("scr", "200kbit/s is above pcr 100kbit/s")
        );
        assert_eq!(
            spec(k(100), Some(k(50)), Some(0))
                .validate()
                .unwrap_err()
                .field(),
            "mbs"
        );
        assert_eq!(
            spec(Rate::ZERO, None, None).validate().unwrap_err().field(),
            "pcr"
        );
        assert!(spec(k(100), Some(k(100)), Some(1)).validate().is_ok());
    }
}
