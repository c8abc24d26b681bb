//! Time sliding window markers, RFC 2859: a rate estimator and its two- and three-colour markers.

use super::{check_committed_and_peak, Marker, MarkerKind, MarkerSpecError, Verdict};
use crate::color::Color;
use crate::loss::uniform;
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;
use qstp_proto::{Duration, Rate, Time};
use rand::RngCore;

/// The averaging window when a scenario gives none: RFC 2859 §2.1 suggests a window on the order
/// of a second for TCP traffic.
const DEFAULT_WINDOW: Duration = Duration::from_secs(1);

/// `kind = "tsw2"`: the time-sliding-window two-colour marker of RFC 2859.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tsw2Spec {
    /// Committed target rate.
    pub cir: Rate,
    /// Averaging window.
    pub window: Duration,
}

/// `kind = "tsw3"`: the time-sliding-window three-colour marker of RFC 2859.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Tsw3Spec {
    /// Committed target rate.
    pub cir: Rate,
    /// Peak target rate.
    pub pir: Rate,
    /// Averaging window.
    pub window: Duration,
}

fn read_window(t: &mut dyn ParamTable) -> ParamResult<Duration> {
    Ok(t.opt_duration("window")?.unwrap_or(DEFAULT_WINDOW))
}

fn validate_window(window: Duration) -> Result<(), MarkerSpecError> {
    if window.is_zero() {
        return Err(MarkerSpecError::ZeroWindow);
    }
    Ok(())
}

impl Kind for Tsw2Spec {
    const DOC: &'static str = "TSW two-colour (RFC 2859): cir, window (1s)";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        Ok(Tsw2Spec {
            cir: t.rate("cir")?,
            window: read_window(t)?,
        })
    }
}

impl MarkerKind for Tsw2Spec {
    fn validate(&self) -> Result<(), MarkerSpecError> {
        if self.cir.is_zero() {
            return Err(MarkerSpecError::ZeroRate("cir"));
        }
        validate_window(self.window)
    }
    fn build(&self) -> Box<dyn Marker> {
        Box::new(Tsw2::new(self.cir, self.window))
    }
}

impl Kind for Tsw3Spec {
    const DOC: &'static str = "TSW three-colour (RFC 2859): cir, pir, window (1s)";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        Ok(Tsw3Spec {
            cir: t.rate("cir")?,
            pir: t.rate("pir")?,
            window: read_window(t)?,
        })
    }
}

impl MarkerKind for Tsw3Spec {
    fn validate(&self) -> Result<(), MarkerSpecError> {
        // RFC 2859 §2.2: the marker tests the rate against CTR, then PTR, so PTR >= CTR.
        check_committed_and_peak(self.cir, self.pir)?;
        validate_window(self.window)
    }
    fn build(&self) -> Box<dyn Marker> {
        Box::new(Tsw3::new(self.cir, self.pir, self.window))
    }
}

/// The TSW rate estimator of RFC 2859 §2.1: a moving average of the arrival rate over a window.
#[derive(Debug, Clone)]
pub struct TswRateEstimator {
    /// Estimated rate, bytes per second.
    avg_rate: f64,
    /// Averaging window, seconds.
    window: f64,
    /// Arrival of the previous packet; `None` before the first.
    t_front: Option<Time>,
}

impl TswRateEstimator {
    /// An estimator over `window` that starts at `initial` (RFC 2859 §2.1: AVG_RATE = CTR).
    pub fn new(initial: Rate, window: Duration) -> Self {
        TswRateEstimator {
            avg_rate: initial.bytes_per_sec(),
            window: window.as_secs_f64(),
            t_front: None,
        }
    }

    /// Account a packet of `size` bytes arriving at `now`; returns the new estimate, bytes/s.
    pub fn update(&mut self, now: Time, size: usize) -> f64 {
        // The window starts at the first packet rather than at time zero, so a flow starting late
        // is not seen as having been silent since the epoch.
        let since_front = self
            .t_front
            .map_or(0.0, |front| now.saturating_since(front).as_secs_f64());
        // RFC 2859 §2.1: Bytes_in_win = AVG_RATE * AVG_INTERVAL; New_bytes = Bytes_in_win +
        // pkt_size; AVG_RATE = New_bytes / (now - T_FRONT + AVG_INTERVAL); T_FRONT = now.
        let span = since_front + self.window;
        if span > 0.0 {
            self.avg_rate = (self.avg_rate * self.window + size as f64) / span;
        }
        self.t_front = Some(self.t_front.map_or(now, |front| front.max(now)));
        self.avg_rate
    }

    /// The current estimate, bytes per second.
    pub fn avg_rate(&self) -> f64 {
        self.avg_rate
    }
}

/// Two-colour TSW marker: above the committed rate, out of profile with probability
/// `(avg_rate - CTR) / avg_rate`.
#[derive(Debug, Clone)]
pub struct Tsw2 {
    estimator: TswRateEstimator,
    ctr: f64,
}

impl Tsw2 {
    /// A marker with committed target rate `cir` averaged over `window`.
    pub fn new(cir: Rate, window: Duration) -> Self {
        Tsw2 {
            estimator: TswRateEstimator::new(cir, window),
            ctr: cir.bytes_per_sec(),
        }
    }
}

impl Marker for Tsw2 {
    /// Colour-blind: the incoming colour is ignored; every packet passes.
    fn condition(
        &mut self,
        now: Time,
        size: usize,
        _incoming: Color,
        rng: &mut dyn RngCore,
    ) -> Verdict {
        Verdict::Pass(self.mark(now, size, rng))
    }
}

impl Tsw2 {
    /// Meter a packet of `size` bytes arriving at `now` and colour it.
    pub fn mark(&mut self, now: Time, size: usize, rng: &mut dyn RngCore) -> Color {
        let avg = self.estimator.update(now, size);
        // RFC 2859 §2.2 with the peak rate left out: P0 = (AVG_RATE - CTR) / AVG_RATE.
        if avg <= self.ctr {
            Color::Green
        } else if uniform(rng) < (avg - self.ctr) / avg {
            Color::Red
        } else {
            Color::Green
        }
    }
}

/// Three-colour TSW marker of RFC 2859 §2.2 with committed and peak target rates.
#[derive(Debug, Clone)]
pub struct Tsw3 {
    estimator: TswRateEstimator,
    ctr: f64,
    ptr: f64,
}

impl Tsw3 {
    /// A marker with committed and peak target rates `cir` and `pir` averaged over `window`.
    pub fn new(cir: Rate, pir: Rate, window: Duration) -> Self {
        let ctr = cir.bytes_per_sec();
        // A peak below the committed rate is refused by `validate`; here it acts as equal.
        let ptr = pir.bytes_per_sec().max(ctr);
        Tsw3 {
            estimator: TswRateEstimator::new(cir, window),
            ctr,
            ptr,
        }
    }
}

impl Marker for Tsw3 {
    /// Colour-blind: the incoming colour is ignored; every packet passes.
    fn condition(
        &mut self,
        now: Time,
        size: usize,
        _incoming: Color,
        rng: &mut dyn RngCore,
    ) -> Verdict {
        Verdict::Pass(self.mark(now, size, rng))
    }
}

impl Tsw3 {
    /// Meter a packet of `size` bytes arriving at `now` and colour it.
    pub fn mark(&mut self, now: Time, size: usize, rng: &mut dyn RngCore) -> Color {
        let avg = self.estimator.update(now, size);
        let draw = uniform(rng);
        // RFC 2859 §2.2.
        if avg <= self.ctr {
            Color::Green
        } else if avg <= self.ptr {
            // P0 = (AVG_RATE - CTR) / AVG_RATE: yellow with probability P0, else green.
            if draw < (avg - self.ctr) / avg {
                Color::Yellow
            } else {
                Color::Green
            }
        } else {
            // P1 = (AVG_RATE - PTR) / AVG_RATE red, P2 = (PTR - CTR) / AVG_RATE yellow, else green.
            let p1 = (avg - self.ptr) / avg;
            let p2 = (self.ptr - self.ctr) / avg;
            if draw < p1 {
                Color::Red
            } else if draw < p1 + p2 {
                Color::Yellow
            } else {
                Color::Green
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// Colour counts `[green, yellow, red]` of a constant stream of 1000-byte packets at `kbps`.
    fn shares(marker: &mut dyn Marker, kbps: u64, packets: u64) -> [f64; 3] {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let gap = Rate::from_kbps(kbps).transmit_time(1000);
        let mut counts = [0u64; 3];
        for i in 0..packets {
            let verdict = marker.condition(Time::ZERO + gap * i, 1000, Color::Red, &mut rng);
            counts[verdict.color().expect("markers pass every packet") as usize] += 1;
        }
        counts.map(|c| c as f64 / packets as f64)
    }

    #[test]
    fn estimator_converges_to_the_arrival_rate() {
        let mut e = TswRateEstimator::new(Rate::from_kbps(100), Duration::from_secs(1));
        let gap = Rate::from_kbps(800).transmit_time(1000);
        for i in 0..2000u64 {
            e.update(Time::ZERO + gap * i, 1000);
        }
        assert!(
            (e.avg_rate() - 100_000.0).abs() < 1_000.0,
            "{}",
            e.avg_rate()
        );
    }

    #[test]
    fn estimator_decays_over_silence() {
        let mut e = TswRateEstimator::new(Rate::from_kbps(800), Duration::from_secs(1));
        e.update(Time::ZERO, 1000);
        // After 9 s of silence the next packet sees ~1/10 of the rate.
        let avg = e.update(Time::ZERO + Duration::from_secs(9), 1000);
        assert!(
            (avg - (100_000.0 + 1000.0) / 10.0 - 100.0).abs() < 200.0,
            "{avg}"
        );
    }

    #[test]
    fn two_colour_green_share_is_ctr_over_rate() {
        let mut m = Tsw2::new(Rate::from_kbps(500), Duration::from_secs(1));
        let s = shares(&mut m, 1000, 50_000);
        assert!((s[0] - 0.5).abs() < 0.01, "{s:?}");
        assert_eq!(s[1], 0.0);
    }

    #[test]
    fn two_colour_below_ctr_is_all_green() {
        let mut m = Tsw2::new(Rate::from_kbps(500), Duration::from_secs(1));
        assert_eq!(shares(&mut m, 400, 10_000), [1.0, 0.0, 0.0]);
    }

    #[test]
    fn three_colour_shares_above_peak() {
        // 1000k against CTR 300k, PTR 600k: red 0.4, yellow 0.3, green 0.3.
        let mut m = Tsw3::new(
            Rate::from_kbps(300),
            Rate::from_kbps(600),
            Duration::from_secs(1),
        );
        let s = shares(&mut m, 1000, 50_000);
        for (got, want) in s.iter().zip([0.3, 0.3, 0.4]) {
            assert!((got - want).abs() < 0.015, "{s:?}");
        }
    }

    #[test]
    fn three_colour_between_rates_has_no_red() {
        // 500k against CTR 300k, PTR 600k: yellow 0.4, green 0.6.
        let mut m = Tsw3::new(
            Rate::from_kbps(300),
            Rate::from_kbps(600),
            Duration::from_secs(1),
        );
        let s = shares(&mut m, 500, 50_000);
        assert!((s[1] - 0.4).abs() < 0.015, "{s:?}");
        assert_eq!(s[2], 0.0);
    }
}
