//! Two-colour token bucket marker: in profile while tokens last.

use super::bucket::{Bucket, Refill};
use super::{Marker, MarkerKind, MarkerSpecError, Verdict};
use crate::color::Color;
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;
use qstp_proto::{Rate, Time};
use rand::RngCore;

/// `kind = "token-bucket"`: two colours, in profile while tokens last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TokenBucketSpec {
    /// Token rate.
    pub rate: Rate,
    /// Bucket depth, bytes.
    pub bucket: u64,
}

impl Kind for TokenBucketSpec {
    const DOC: &'static str = "two-colour token bucket: rate, bucket (bytes)";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        Ok(TokenBucketSpec {
            rate: t.rate("rate")?,
            bucket: t.bytes("bucket")?,
        })
    }
}

impl MarkerKind for TokenBucketSpec {
    fn validate(&self) -> Result<(), MarkerSpecError> {
        if self.rate.is_zero() {
            return Err(MarkerSpecError::ZeroRate("rate"));
        }
        if self.bucket == 0 {
            return Err(MarkerSpecError::ZeroBurst("bucket"));
        }
        Ok(())
    }
    fn build(&self) -> Box<dyn Marker> {
        Box::new(TokenBucketMarker::new(self.rate, self.bucket))
    }
}

/// Green while the bucket holds a packet's worth of tokens, red otherwise; the bucket starts full.
#[derive(Debug, Clone)]
pub struct TokenBucketMarker {
    refill: Refill,
    bucket: Bucket,
}

impl TokenBucketMarker {
    /// A marker with token rate `rate` and a bucket of `bucket` bytes.
    pub fn new(rate: Rate, bucket: u64) -> Self {
        TokenBucketMarker {
            refill: Refill::new(rate),
            bucket: Bucket::full(bucket),
        }
    }

    /// Tokens held, whole bytes.
    pub fn tokens(&self) -> u64 {
        self.bucket.bytes()
    }
}

impl Marker for TokenBucketMarker {
    /// Colour-blind: the incoming colour is ignored; every packet passes.
    fn condition(
        &mut self,
        now: Time,
        size: usize,
        _incoming: Color,
        _rng: &mut dyn RngCore,
    ) -> Verdict {
        Verdict::Pass(self.mark(now, size))
    }
}

impl TokenBucketMarker {
    /// Meter a packet of `size` bytes arriving at `now` and colour it.
    pub fn mark(&mut self, now: Time, size: usize) -> Color {
        self.bucket.fill(self.refill.since_last(now));
        if self.bucket.has(size) {
            self.bucket.take(size);
            Color::Green
        } else {
            Color::Red
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qstp_proto::Duration;

    #[test]
    fn twice_the_rate_is_half_green() {
        // 1000 kbit/s of 1000-byte packets (one every 8 ms) into a 500 kbit/s bucket.
        let mut m = TokenBucketMarker::new(Rate::from_kbps(500), 10_000);
        let n = 100_000u64;
        let green = (0..n)
            .filter(|i| {
                let now = Time::ZERO + Duration::from_millis(8) * *i;
                m.mark(now, 1000) == Color::Green
            })
            .count() as u64;
        // Each packet drains 1000 B and brings back 500 B: the full 10 kB bucket gives 19 greens in
        // a row (the 19th sees 1000 B left), then one packet in two is green.
        let expected = 19 + (n - 19) / 2;
        assert!(
            green.abs_diff(expected) <= 1,
            "green {green}, expected {expected}"
        );
    }

    #[test]
    fn burst_is_bounded_by_the_bucket() {
        let mut m = TokenBucketMarker::new(Rate::from_kbps(100), 4_500);
        let colours: Vec<Color> = (0..5).map(|_| m.mark(Time::ZERO, 1500)).collect();
        assert_eq!(
            colours,
            [
                Color::Green,
                Color::Green,
                Color::Green,
                Color::Red,
                Color::Red
            ]
        );
        // 1500 bytes at 100 kbit/s take 120 ms to come back.
        let t = Time::ZERO + Duration::from_millis(119);
        assert_eq!(m.mark(t, 1500), Color::Red);
        let t = Time::ZERO + Duration::from_millis(120);
        assert_eq!(m.mark(t, 1500), Color::Green);
    }
}
