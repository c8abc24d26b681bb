//! Switching a flow's application on and off ([`crate::Switching`]).

use crate::spec::Switching;
use qstp_proto::{Duration, Time};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Where a flow is in its on/off cycle.
#[derive(Debug)]
pub struct Switch {
    spec: Switching,
    on: bool,
    /// The next change; `None` before the flow starts.
    next: Option<Time>,
    rng: ChaCha8Rng,
}

impl Switch {
    /// A switch drawing its random periods from `rng` (the flow's own stream).
    pub fn new(spec: Switching, rng: ChaCha8Rng) -> Self {
        Switch {
            spec,
            on: true,
            next: None,
            rng,
        }
    }

    /// Start on, at `now`.
    pub fn start(&mut self, now: Time) {
        self.on = true;
        self.next = Some(now + self.period(self.spec.on));
    }

    /// Whether the application has data now.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// When the state next changes.
    pub fn next_change(&self) -> Option<Time> {
        self.next
    }

    /// Change state if its time has come; returns whether it changed.
    pub fn poll(&mut self, now: Time) -> bool {
        let Some(at) = self.next.filter(|&t| t <= now) else {
            return false;
        };
        self.on = !self.on;
        let length = if self.on { self.spec.on } else { self.spec.off };
        // From the scheduled instant, not `now`: a late wake-up does not stretch the cycle.
        self.next = Some(at + self.period(length));
        true
    }

    /// One period of mean `length`: exact, or uniform in [0, 2 length] (Free & Stunts §IV,
    /// "randomized with a uniform distribution"). Never zero, so a flow cannot switch twice at
    /// one instant.
    fn period(&mut self, length: Duration) -> Duration {
        let nanos = if self.spec.random {
            self.rng.gen_range(0..=length.as_nanos().saturating_mul(2))
        } else {
            length.as_nanos()
        };
        Duration::from_nanos(nanos.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn fixed_periods_alternate_exactly() {
        let spec = Switching {
            on: secs(10),
            off: secs(5),
            random: false,
            flows: None,
        };
        let mut s = Switch::new(spec, ChaCha8Rng::seed_from_u64(1));
        assert_eq!(s.next_change(), None);
        s.start(Time::ZERO + secs(1));
        assert!(s.is_on());
        assert!(!s.poll(Time::ZERO + secs(10)));
        assert!(s.poll(Time::ZERO + secs(11)));
        assert!(!s.is_on());
        assert_eq!(s.next_change(), Some(Time::ZERO + secs(16)));
        assert!(s.poll(Time::ZERO + secs(16)));
        assert!(s.is_on());
        assert_eq!(s.next_change(), Some(Time::ZERO + secs(26)));
    }

    #[test]
    fn random_periods_are_uniform_around_the_mean() {
        let spec = Switching {
            on: secs(10),
            off: secs(10),
            random: true,
            flows: None,
        };
        let mut s = Switch::new(spec, ChaCha8Rng::seed_from_u64(7));
        s.start(Time::ZERO);
        let mut last = Time::ZERO;
        let (mut sum, mut max, mut min) = (0.0, 0.0f64, f64::MAX);
        let n = 2000;
        for _ in 0..n {
            let at = s.next_change().unwrap();
            let p = (at - last).as_secs_f64();
            sum += p;
            max = max.max(p);
            min = min.min(p);
            last = at;
            assert!(s.poll(at));
        }
        let mean = sum / n as f64;
        assert!((mean - 10.0).abs() < 0.5, "mean period {mean}");
        assert!(max <= 20.0 && max > 19.0, "max {max}");
        assert!(min < 1.0, "min {min}");
    }
}
