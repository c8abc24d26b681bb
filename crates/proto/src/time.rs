//! Points in time and spans of time, in nanoseconds.
//!
//! The protocol core never reads a clock: the driver (UDP endpoint, simulator, test harness) passes
//! `now` into every entry point. `Time` counts from an epoch the driver chooses.

use core::fmt;
use core::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};
use core::str::FromStr;

/// A point in time, in nanoseconds since the driver's epoch.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(u64);

/// A span of time, in nanoseconds.
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(u64);

impl Time {
    /// The driver's epoch.
    pub const ZERO: Time = Time(0);
    /// A time later than any the protocol will see.
    pub const MAX: Time = Time(u64::MAX);

    /// A time `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Time(nanos)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Seconds since the epoch, as a float (for reports and plots).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// Microseconds since the epoch, truncated to 32 bits: the wire timestamp (wraps every ~71 min).
    pub const fn wire_micros(self) -> u32 {
        (self.0 / 1_000) as u32
    }

    /// The span from `earlier` to `self`, or zero if `earlier` is later.
    pub const fn saturating_since(self, earlier: Time) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, saturating at [`Time::MAX`].
    pub const fn saturating_add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);
    /// The longest span representable.
    pub const MAX: Duration = Duration(u64::MAX);

    /// A span of `nanos` nanoseconds.
    pub const fn from_nanos(nanos: u64) -> Self {
        Duration(nanos)
    }
    /// A span of `micros` microseconds.
    pub const fn from_micros(micros: u64) -> Self {
        Duration(micros.saturating_mul(1_000))
    }
    /// A span of `millis` milliseconds.
    pub const fn from_millis(millis: u64) -> Self {
        Duration(millis.saturating_mul(1_000_000))
    }
    /// A span of `secs` seconds.
    pub const fn from_secs(secs: u64) -> Self {
        Duration(secs.saturating_mul(1_000_000_000))
    }
    /// A span of `secs` seconds given as a float; negative and NaN become zero, huge values saturate.
    pub fn from_secs_f64(secs: f64) -> Self {
        if secs.is_nan() || secs <= 0.0 {
            Duration(0)
        } else {
            let ns = secs * 1e9;
            if ns >= u64::MAX as f64 {
                Duration::MAX
            } else {
                Duration(ns as u64)
            }
        }
    }

    /// Nanoseconds in this span.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// Whole microseconds in this span.
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
    /// Whole milliseconds in this span.
    pub const fn as_millis(self) -> u64 {
        self.0 / 1_000_000
    }
    /// Seconds in this span, as a float.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Whether this span is zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    /// `self * k`, saturating.
    pub const fn saturating_mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
    /// `self - other`, or zero.
    pub const fn saturating_sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }
    /// `self * f` for a non-negative float factor, saturating.
    pub fn mul_f64(self, f: f64) -> Duration {
        Duration::from_secs_f64(self.as_secs_f64() * f)
    }

    /// Parse a human duration: `180s`, `30ms`, `1.5s`, `250us`, `2min`, `100ns`.
    ///
    /// A bare number is refused: a duration always carries its unit.
    pub fn parse(text: &str) -> Result<Duration, DurationParseError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(DurationParseError::Empty);
        }
        let split = t
            .find(|c: char| {
                !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')
            })
            .ok_or_else(|| DurationParseError::MissingUnit(t.to_string()))?;
        // 'e' can start no unit we accept, so a split inside an exponent cannot mislead the parse.
        let (num, unit) = t.split_at(split);
        let value: f64 = num
            .trim()
            .parse()
            .map_err(|_| DurationParseError::NotANumber(t.to_string()))?;
        if !value.is_finite() {
            return Err(DurationParseError::NotANumber(t.to_string()));
        }
        if value < 0.0 {
            return Err(DurationParseError::Negative(t.to_string()));
        }
        let scale = match unit.trim() {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" | "sec" | "secs" => 1.0,
            "min" | "m" => 60.0,
            "h" => 3600.0,
            other => return Err(DurationParseError::UnknownUnit(other.to_string())),
        };
        let secs = value * scale;
        if secs * 1e9 >= u64::MAX as f64 {
            return Err(DurationParseError::TooLarge(t.to_string()));
        }
        Ok(Duration::from_secs_f64(secs))
    }
}

/// Why a duration string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationParseError {
    /// Nothing was given.
    #[error("empty duration")]
    Empty,
    /// A number without a unit, such as `30`.
    #[error("duration '{0}' has no unit (write e.g. 30ms, 1.5s, 2min)")]
    MissingUnit(String),
    /// The numeric part is not a number.
    #[error("'{0}' is not a duration (write e.g. 30ms, 1.5s, 2min)")]
    NotANumber(String),
    /// A negative duration.
    #[error("duration '{0}' is negative")]
    Negative(String),
    /// The unit is not one of ns, us, ms, s, min, h.
    #[error("unknown duration unit '{0}' (use ns, us, ms, s, min or h)")]
    UnknownUnit(String),
    /// More than about 584 years.
    #[error("duration '{0}' is too large")]
    TooLarge(String),
}

impl FromStr for Duration {
    type Err = DurationParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Duration::parse(s)
    }
}

impl From<core::time::Duration> for Duration {
    fn from(d: core::time::Duration) -> Self {
        Duration(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl From<Duration> for core::time::Duration {
    fn from(d: Duration) -> Self {
        core::time::Duration::from_nanos(d.0)
    }
}

impl Add<Duration> for Time {
    type Output = Time;
    fn add(self, rhs: Duration) -> Time {
        self.saturating_add(rhs)
    }
}
impl AddAssign<Duration> for Time {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}
impl Sub<Duration> for Time {
    type Output = Time;
    fn sub(self, rhs: Duration) -> Time {
        Time(self.0.saturating_sub(rhs.0))
    }
}
/// `later - earlier`, saturating at zero.
impl Sub<Time> for Time {
    type Output = Duration;
    fn sub(self, rhs: Time) -> Duration {
        self.saturating_since(rhs)
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, rhs: Duration) -> Duration {
        Duration(self.0.saturating_add(rhs.0))
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, rhs: Duration) -> Duration {
        self.saturating_sub(rhs)
    }
}
impl SubAssign for Duration {
    fn sub_assign(&mut self, rhs: Duration) {
        *self = *self - rhs;
    }
}
impl Mul<u64> for Duration {
    type Output = Duration;
    fn mul(self, rhs: u64) -> Duration {
        self.saturating_mul(rhs)
    }
}
impl Div<u64> for Duration {
    type Output = Duration;
    fn div(self, rhs: u64) -> Duration {
        Duration(self.0 / rhs.max(1))
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={:.6}s", self.as_secs_f64())
    }
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}
impl fmt::Debug for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns == 0 {
            write!(f, "0s")
        } else if ns % 1_000_000_000 == 0 {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns >= 1_000_000_000 {
            write!(f, "{}s", ns as f64 / 1e9)
        } else if ns % 1_000_000 == 0 {
            write!(f, "{}ms", ns / 1_000_000)
        } else if ns >= 1_000_000 {
            write!(f, "{}ms", ns as f64 / 1e6)
        } else if ns % 1_000 == 0 {
            write!(f, "{}us", ns / 1_000)
        } else {
            write!(f, "{}ns", ns)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(Duration::parse("30ms").unwrap(), Duration::from_millis(30));
        assert_eq!(Duration::parse("180s").unwrap(), Duration::from_secs(180));
        assert_eq!(
            Duration::parse("1.5s").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(Duration::parse("2min").unwrap(), Duration::from_secs(120));
        assert_eq!(
            Duration::parse(" 250us ").unwrap(),
            Duration::from_micros(250)
        );
    }

    #[test]
    fn refuses_bad_durations() {
        assert_eq!(
            Duration::parse("30"),
            Err(DurationParseError::MissingUnit("30".into()))
        );
        assert!(matches!(
            Duration::parse("-1s"),
            Err(DurationParseError::Negative(_))
        ));
        assert!(matches!(
            Duration::parse("3 parsecs"),
            Err(DurationParseError::UnknownUnit(_))
        ));
        assert!(matches!(
            Duration::parse("fast"),
            Err(DurationParseError::NotANumber(_))
        ));
        assert_eq!(Duration::parse(""), Err(DurationParseError::Empty));
    }

    #[test]
    fn display_round_trips() {
        for d in ["30ms", "180s", "1.5s", "250us", "7ns"] {
            let parsed = Duration::parse(d).unwrap();
            assert_eq!(Duration::parse(&parsed.to_string()).unwrap(), parsed, "{d}");
        }
    }

    #[test]
    fn time_arithmetic_saturates() {
        let t = Time::from_nanos(10);
        assert_eq!(t - Time::from_nanos(20), Duration::ZERO);
        assert_eq!(Time::MAX + Duration::from_secs(1), Time::MAX);
        assert_eq!((t + Duration::from_nanos(5)).as_nanos(), 15);
    }
}
