//! Rates in bits per second, and the one parser for human-written rates.

use crate::time::Duration;
use core::fmt;
use core::str::FromStr;

/// A data rate in bits per second.
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(transparent)
)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rate(u64);

impl Rate {
    /// Nothing at all (for a target: no guarantee, plain TFRC).
    pub const ZERO: Rate = Rate(0);
    /// The largest representable rate.
    pub const MAX: Rate = Rate(u64::MAX);

    /// A rate of `bps` bits per second.
    pub const fn from_bps(bps: u64) -> Self {
        Rate(bps)
    }
    /// A rate of `kbps` kilobits (10^3) per second.
    pub const fn from_kbps(kbps: u64) -> Self {
        Rate(kbps.saturating_mul(1_000))
    }
    /// A rate of `mbps` megabits (10^6) per second.
    pub const fn from_mbps(mbps: u64) -> Self {
        Rate(mbps.saturating_mul(1_000_000))
    }
    /// A rate of `bytes_per_sec` bytes per second; negative and NaN become zero.
    pub fn from_bytes_per_sec(bytes_per_sec: f64) -> Self {
        let bps = bytes_per_sec * 8.0;
        if bps.is_nan() || bps <= 0.0 {
            Rate(0)
        } else if bps >= u64::MAX as f64 {
            Rate::MAX
        } else {
            Rate(bps.round() as u64)
        }
    }
    /// The rate that moves `bytes` in `span` (zero span gives [`Rate::MAX`] unless `bytes` is 0).
    pub fn from_bytes_over(bytes: u64, span: Duration) -> Self {
        if span.is_zero() {
            return if bytes == 0 { Rate::ZERO } else { Rate::MAX };
        }
        Rate::from_bytes_per_sec(bytes as f64 / span.as_secs_f64())
    }

    /// Bits per second.
    pub const fn bps(self) -> u64 {
        self.0
    }
    /// Bytes per second, as a float (the unit of RFC 5348's equations).
    pub fn bytes_per_sec(self) -> f64 {
        self.0 as f64 / 8.0
    }
    /// Whether the rate is zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    /// How long `bytes` take to serialise at this rate ([`Duration::MAX`] at rate zero).
    pub fn transmit_time(self, bytes: usize) -> Duration {
        if self.0 == 0 {
            return Duration::MAX;
        }
        let ns = (bytes as u128 * 8 * 1_000_000_000) / self.0 as u128;
        Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
    /// How many bytes this rate moves in `span`.
    pub fn bytes_in(self, span: Duration) -> u64 {
        let bytes = (self.0 as u128 * span.as_nanos() as u128) / 8 / 1_000_000_000;
        u64::try_from(bytes).unwrap_or(u64::MAX)
    }
    /// `self * f` for a non-negative factor, saturating.
    pub fn mul_f64(self, f: f64) -> Rate {
        Rate::from_bytes_per_sec(self.bytes_per_sec() * f)
    }

    /// Parse a human rate.
    ///
    /// A number, an optional SI prefix (`k`, `M`, `G`; powers of ten) and an optional unit: none,
    /// `bit/s`, `bps` or `b/s` for bits, `B/s` or `Bps` for bytes. So `500k`, `1.5M`, `2Mbit/s`,
    /// `64kB/s` (512 kbit/s) and `1000` (bits per second) are all rates.
    pub fn parse(text: &str) -> Result<Rate, RateParseError> {
        let t = text.trim();
        if t.is_empty() {
            return Err(RateParseError::Empty);
        }
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
            .unwrap_or(t.len());
        let (num, rest) = t.split_at(split);
        let value: f64 = num
            .parse()
            .map_err(|_| RateParseError::NotANumber(t.to_string()))?;
        if !value.is_finite() {
            return Err(RateParseError::NotANumber(t.to_string()));
        }
        if value < 0.0 {
            return Err(RateParseError::Negative(t.to_string()));
        }
        let rest = rest.trim();
        let (prefix, unit) = match rest.chars().next() {
            Some('k') | Some('K') => (1e3, &rest[1..]),
            Some('M') => (1e6, &rest[1..]),
            Some('G') => (1e9, &rest[1..]),
            _ => (1.0, rest),
        };
        let per_unit = match unit {
            "" | "bit/s" | "bps" | "b/s" | "bit" | "bits/s" => 1.0,
            "B/s" | "Bps" | "byte/s" | "bytes/s" => 8.0,
            _ => return Err(RateParseError::UnknownUnit(t.to_string())),
        };
        let bps = value * prefix * per_unit;
        if bps >= u64::MAX as f64 {
            return Err(RateParseError::TooLarge(t.to_string()));
        }
        Ok(Rate(bps.round() as u64))
    }
}

/// Why a rate string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateParseError {
    /// Nothing was given.
    #[error("empty rate")]
    Empty,
    /// The text does not start with a number, like `fast`.
    #[error("'{0}' is not a rate (write e.g. 500k, 1.5M, 2Mbit/s, 64kB/s)")]
    NotANumber(String),
    /// A negative rate.
    #[error("rate '{0}' is negative")]
    Negative(String),
    /// The unit is not one of the accepted spellings.
    #[error(
        "'{0}' has an unknown unit (use k/M/G with bit/s, bps or B/s, e.g. 500k, 2Mbit/s, 64kB/s)"
    )]
    UnknownUnit(String),
    /// More than 2^64 bit/s.
    #[error("rate '{0}' is too large")]
    TooLarge(String),
}

impl FromStr for Rate {
    type Err = RateParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Rate::parse(s)
    }
}

impl fmt::Debug for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Shown with the largest SI prefix that keeps the number at or above 1, e.g. `1.5Mbit/s`.
impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bps = self.0 as f64;
        let (value, prefix) = if bps >= 1e9 {
            (bps / 1e9, "G")
        } else if bps >= 1e6 {
            (bps / 1e6, "M")
        } else if bps >= 1e3 {
            (bps / 1e3, "k")
        } else {
            (bps, "")
        };
        // Up to three decimals, trailing zeros trimmed.
        let mut s = format!("{value:.3}");
        while s.contains('.') && (s.ends_with('0') || s.ends_with('.')) {
            s.pop();
        }
        write!(f, "{s}{prefix}bit/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_issue_examples() {
        assert_eq!(Rate::parse("500k").unwrap().bps(), 500_000);
        assert_eq!(Rate::parse("1.5M").unwrap().bps(), 1_500_000);
        assert_eq!(Rate::parse("2Mbit/s").unwrap().bps(), 2_000_000);
        assert_eq!(Rate::parse("64kB/s").unwrap().bps(), 512_000);
        assert_eq!(Rate::parse("1000").unwrap().bps(), 1_000);
        assert_eq!(Rate::parse("20Mbps").unwrap().bps(), 20_000_000);
        assert_eq!(Rate::parse("1G").unwrap().bps(), 1_000_000_000);
    }

    #[test]
    fn refuses_bad_rates() {
        assert!(matches!(
            Rate::parse("fast"),
            Err(RateParseError::NotANumber(_))
        ));
        assert!(matches!(
            Rate::parse("-5k"),
            Err(RateParseError::Negative(_))
        ));
        assert!(matches!(
            Rate::parse("5 furlongs"),
            Err(RateParseError::UnknownUnit(_))
        ));
        assert!(matches!(
            Rate::parse("5kk"),
            Err(RateParseError::UnknownUnit(_))
        ));
        assert_eq!(Rate::parse("  "), Err(RateParseError::Empty));
        assert!(Rate::parse("1e30G").is_err());
    }

    #[test]
    fn display_round_trips() {
        for bps in [0u64, 999, 1_000, 300_000, 1_500_000, 2_200_000_000] {
            let r = Rate::from_bps(bps);
            assert_eq!(Rate::parse(&r.to_string()).unwrap(), r, "{r}");
        }
    }

    #[test]
    fn transmit_time_and_bytes_agree() {
        let r = Rate::from_kbps(1000);
        assert_eq!(r.transmit_time(1500), Duration::from_millis(12));
        assert_eq!(r.bytes_in(Duration::from_secs(1)), 125_000);
        assert_eq!(Rate::ZERO.transmit_time(1), Duration::MAX);
    }
}
