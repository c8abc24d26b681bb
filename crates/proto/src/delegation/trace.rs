//! The trace file of the Free & Stunts architecture (Free & Stunts paper §II-A): the
//! throughput an application asks for, as `(time, throughput)` points, held from one point to the
//! next.

use crate::{Duration, Rate};

/// Most points a trace may hold (a bound on memory: a point every millisecond for 16 minutes).
pub const MAX_TRACE_POINTS: usize = 1_000_000;

/// One requested throughput, from `at` until the next point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TracePoint {
    /// When the request starts, from the start of the run.
    pub at: Duration,
    /// The throughput asked for.
    pub rate: Rate,
}

/// A requested-throughput trace: points in strictly increasing time.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Trace {
    points: Vec<TracePoint>,
}

/// Why a trace was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// No point at all.
    #[error("the trace has no point")]
    Empty,
    /// More points than [`MAX_TRACE_POINTS`].
    #[error("the trace has {0} points, more than {MAX_TRACE_POINTS}")]
    TooLong(usize),
    /// Times that do not increase.
    #[error("point {index}: time {at} is not after the previous point's {previous}")]
    NotIncreasing {
        /// Index of the point (0-based).
        index: usize,
        /// Its time.
        at: Duration,
        /// The previous point's time.
        previous: Duration,
    },
    /// A line of a CSV trace that is not `seconds,throughput`.
    #[error("line {line}: {reason}")]
    Line {
        /// Line number, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// Generator parameters that describe no trace.
    #[error("{0}")]
    Parameters(String),
}

impl Trace {
    /// A trace of `points`, checked: at least one, at most [`MAX_TRACE_POINTS`], times strictly
    /// increasing.
    pub fn new(points: Vec<TracePoint>) -> Result<Trace, TraceError> {
        if points.is_empty() {
            return Err(TraceError::Empty);
        }
        if points.len() > MAX_TRACE_POINTS {
            return Err(TraceError::TooLong(points.len()));
        }
        for (index, w) in points.windows(2).enumerate() {
            if w[1].at <= w[0].at {
                return Err(TraceError::NotIncreasing {
                    index: index + 1,
                    at: w[1].at,
                    previous: w[0].at,
                });
            }
        }
        Ok(Trace { points })
    }

    /// The points.
    pub fn points(&self) -> &[TracePoint] {
        &self.points
    }

    /// The throughput asked for at `t`: the last point at or before `t` (the first point's
    /// before it).
    pub fn at(&self, t: Duration) -> Rate {
        let i = self.points.partition_point(|p| p.at <= t);
        self.points[i.saturating_sub(1)].rate
    }

    /// Steps: `rates[k]` from `at[k]` on.
    pub fn step(at: &[Duration], rates: &[Rate]) -> Result<Trace, TraceError> {
        if at.len() != rates.len() {
            return Err(TraceError::Parameters(format!(
                "{} times but {} rates",
                at.len(),
                rates.len()
            )));
        }
        Trace::new(
            at.iter()
                .zip(rates)
                .map(|(&at, &rate)| TracePoint { at, rate })
                .collect(),
        )
    }

    /// A linear ramp from `from` at `start` to `to` at `end`, a point every `every`, then held.
    pub fn ramp(
        from: Rate,
        to: Rate,
        start: Duration,
        end: Duration,
        every: Duration,
    ) -> Result<Trace, TraceError> {
        if end <= start || every.is_zero() {
            return Err(TraceError::Parameters(
                "a ramp needs end after start and a positive step".into(),
            ));
        }
        let span = (end.as_nanos() - start.as_nanos()) as f64;
        let (a, b) = (from.bps() as f64, to.bps() as f64);
        Trace::new(sampled(start, end, every, |t| {
            a + (b - a) * (t.as_nanos() - start.as_nanos()) as f64 / span
        })?)
    }

    /// `mean + amplitude x sin(2 pi t / period)` from zero to `end`, a point every `every`
    /// (negative values are held at zero).
    pub fn sine(
        mean: Rate,
        amplitude: Rate,
        period: Duration,
        end: Duration,
        every: Duration,
    ) -> Result<Trace, TraceError> {
        if period.is_zero() || every.is_zero() || end.is_zero() {
            return Err(TraceError::Parameters(
                "a sine needs a positive period, step and end".into(),
            ));
        }
        let (m, a, p) = (
            mean.bps() as f64,
            amplitude.bps() as f64,
            period.as_nanos() as f64,
        );
        Trace::new(sampled(Duration::ZERO, end, every, |t| {
            m + a * libm::sin(2.0 * std::f64::consts::PI * t.as_nanos() as f64 / p)
        })?)
    }

    /// A trace from CSV text: one `seconds,throughput` line per point, throughput in bit/s or
    /// with a unit (`4M`); blank lines, `#` comments and a header line starting with a letter
    /// (the first line that is neither) are skipped.
    pub fn from_csv(text: &str) -> Result<Trace, TraceError> {
        let mut points = Vec::new();
        let mut header_allowed = true;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let header = header_allowed && line.chars().next().is_some_and(char::is_alphabetic);
            header_allowed = false;
            if header {
                continue;
            }
            let bad = |reason: String| TraceError::Line {
                line: n + 1,
                reason,
            };
            let (time, rate) = line
                .split_once(',')
                .ok_or_else(|| bad("expected seconds,throughput".into()))?;
            let secs: f64 = time
                .trim()
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                .ok_or_else(|| bad(format!("'{}' is not a time in seconds", time.trim())))?;
            let rate = rate.trim();
            let rate = match rate.parse::<u64>() {
                Ok(bps) => Rate::from_bps(bps),
                Err(_) => Rate::parse(rate).map_err(|e| bad(format!("'{rate}': {e}")))?,
            };
            if points.len() == MAX_TRACE_POINTS {
                return Err(TraceError::TooLong(MAX_TRACE_POINTS + 1));
            }
            points.push(TracePoint {
                at: Duration::from_secs_f64(secs),
                rate,
            });
        }
        Trace::new(points)
    }
}

/// Points of `f` (bit/s) every `every` from `start` to `end` inclusive, at most
/// [`MAX_TRACE_POINTS`].
fn sampled(
    start: Duration,
    end: Duration,
    every: Duration,
    f: impl Fn(Duration) -> f64,
) -> Result<Vec<TracePoint>, TraceError> {
    let n = (end.as_nanos() - start.as_nanos()) / every.as_nanos() + 1;
    if n > MAX_TRACE_POINTS as u64 {
        return Err(TraceError::TooLong(n as usize));
    }
    Ok((0..n)
        .map(|k| {
            let at = Duration::from_nanos(start.as_nanos() + k * every.as_nanos());
            TracePoint {
                at,
                rate: Rate::from_bps(f(at).max(0.0).round() as u64),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn steps_hold_until_the_next_point() {
        let m = Rate::from_mbps;
        let t = Trace::step(&[s(0), s(40), s(80)], &[m(4), m(10), m(6)]).unwrap();
        assert_eq!(t.at(s(0)), m(4));
        assert_eq!(t.at(Duration::from_millis(39_999)), m(4));
        assert_eq!(t.at(s(40)), m(10));
        assert_eq!(t.at(s(1000)), m(6));
        assert!(matches!(
            Trace::step(&[s(0), s(0)], &[m(1), m(2)]),
            Err(TraceError::NotIncreasing { index: 1, .. })
        ));
        assert!(Trace::step(&[s(0)], &[]).is_err());
    }

    #[test]
    fn ramps_and_sines_sample_their_curve() {
        let r = Trace::ramp(Rate::from_mbps(2), Rate::from_mbps(4), s(10), s(20), s(1)).unwrap();
        assert_eq!(r.points().len(), 11);
        assert_eq!(r.at(s(15)), Rate::from_mbps(3));
        assert_eq!(r.at(s(99)), Rate::from_mbps(4));
        let w = Trace::sine(Rate::from_mbps(5), Rate::from_mbps(2), s(40), s(40), s(10)).unwrap();
        let bps: Vec<u64> = w.points().iter().map(|p| p.rate.bps()).collect();
        assert_eq!(bps, [5_000_000, 7_000_000, 5_000_000, 3_000_000, 5_000_000]);
    }

    #[test]
    fn csv_lines_are_read_or_refused_with_their_number() {
        let t = Trace::from_csv("time,throughput\n0,4000000\n# a comment\n\n40.5,10M\n").unwrap();
        assert_eq!(t.points()[1].at, Duration::from_millis(40_500));
        assert_eq!(t.points()[1].rate, Rate::from_mbps(10));
        assert_eq!(
            Trace::from_csv("0,1M\n5;2M\n"),
            Err(TraceError::Line {
                line: 2,
                reason: "expected seconds,throughput".into()
            })
        );
        assert!(matches!(
            Trace::from_csv("0,1M\n-1,2M\n"),
            Err(TraceError::Line { line: 2, .. })
        ));
        assert_eq!(Trace::from_csv("# nothing\n"), Err(TraceError::Empty));
        // A header after comments is skipped; a word among the points is an error.
        let t = Trace::from_csv("# about\nseconds,bps\n0,1M\n").unwrap();
        assert_eq!(t.points().len(), 1);
        assert!(matches!(
            Trace::from_csv("0,1M\nseconds,bps\n"),
            Err(TraceError::Line { line: 2, .. })
        ));
    }
}
