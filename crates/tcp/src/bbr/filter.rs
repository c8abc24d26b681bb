//! The windowed max filter of BBR's bandwidth estimate: Linux lib/win_minmax.c (Kathleen
//! Nichols' algorithm), which keeps the best, second best and third best samples of the window so
//! that the max is right to within a quarter of the window at O(1) per sample.

/// A sample: the time (here, the round count) and the value.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Sample {
    t: u64,
    v: f64,
}

/// The running max of the samples of the last `window` time units.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct MaxFilter {
    s: [Sample; 3],
}

impl MaxFilter {
    /// The max over the window.
    pub(super) fn get(&self) -> f64 {
        self.s[0].v
    }

    /// win_minmax.c minmax_reset: every estimate becomes this sample.
    pub(super) fn reset(&mut self, t: u64, v: f64) {
        self.s = [Sample { t, v }; 3];
    }

    /// win_minmax.c minmax_running_max: take sample `v` at time `t`, window `window`.
    pub(super) fn update(&mut self, window: u64, t: u64, v: f64) -> f64 {
        let val = Sample { t, v };
        if v >= self.s[0].v || t.saturating_sub(self.s[2].t) > window {
            // A new max, or nothing left in the window.
            self.reset(t, v);
            return v;
        }
        if v >= self.s[1].v {
            self.s[2] = val;
            self.s[1] = val;
        } else if v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(window, val)
    }

    /// win_minmax.c minmax_subwin_update: age the estimates as the window passes them.
    fn subwin_update(&mut self, window: u64, val: Sample) -> f64 {
        let dt = val.t.saturating_sub(self.s[0].t);
        if dt > window {
            // The best left the window: promote the others, and once more if the new best is
            // out of the window too.
            self.s = [self.s[1], self.s[2], val];
            if val.t.saturating_sub(self.s[0].t) > window {
                self.s = [self.s[1], self.s[2], val];
            }
        } else if self.s[1].t == self.s[0].t && dt > window / 4 {
            // A quarter of the window passed with no second best: take one.
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].t == self.s[1].t && dt > window / 2 {
            // Half the window passed with no third best: take one.
            self.s[2] = val;
        }
        self.s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_max_holds_for_the_window_then_ages_out() {
        let mut f = MaxFilter::default();
        f.reset(0, 0.0);
        assert_eq!(f.update(10, 1, 100.0), 100.0);
        for t in 2..=11 {
            assert_eq!(f.update(10, t, 50.0), 100.0, "round {t}");
        }
        // Round 12 is more than 10 rounds after the max: a lower sample takes over.
        assert_eq!(f.update(10, 12, 50.0), 50.0);
        assert_eq!(f.update(10, 13, 80.0), 80.0);
    }
}
