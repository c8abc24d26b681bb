//! The past of one quantity of the fluid model, kept at every step so that the delayed terms of
//! eqs. (7) and (14) can be read back: a ring buffer of fixed length, linear interpolation
//! between steps.

/// Values at times `t_last - (capacity - 1) h, ..., t_last`.
#[derive(Debug, Clone)]
pub struct History {
    values: Vec<f64>,
    /// Index of the oldest value.
    head: usize,
    step: f64,
    /// Time of the newest value, seconds.
    t_last: f64,
}

impl History {
    /// A history of `capacity` (at least 2) values `step` seconds apart that held `initial` at
    /// every time up to `t0` (the model's constant initial history).
    pub fn new(capacity: usize, step: f64, t0: f64, initial: f64) -> Self {
        History {
            values: vec![initial; capacity.max(2)],
            head: 0,
            step,
            t_last: t0,
        }
    }

    /// Append the value at `t_last + step`, dropping the oldest.
    pub fn push(&mut self, value: f64) {
        self.values[self.head] = value;
        self.head = (self.head + 1) % self.values.len();
        self.t_last += self.step;
    }

    /// The newest value.
    pub fn last(&self) -> f64 {
        self.get(self.values.len() - 1)
    }

    fn get(&self, k: usize) -> f64 {
        self.values[(self.head + k) % self.values.len()]
    }

    /// The value at time `t`, seconds: linear between the two steps around it; the newest value
    /// for a time after it and the oldest kept for a time before it.
    pub fn at(&self, t: f64) -> f64 {
        let n = self.values.len();
        let t_first = self.t_last - (n - 1) as f64 * self.step;
        if t.is_nan() || t <= t_first {
            return self.get(0);
        }
        if t >= self.t_last {
            return self.last();
        }
        let pos = (t - t_first) / self.step;
        let k = (pos.floor() as usize).min(n - 2);
        let frac = pos - k as f64;
        let (a, b) = (self.get(k), self.get(k + 1));
        a + (b - a) * frac
    }
}

#[cfg(test)]
mod tests {
    use super::History;

    #[test]
    fn interpolates_between_steps_and_forgets_beyond_its_capacity() {
        let mut h = History::new(4, 0.5, 0.0, 1.0);
        assert_eq!(h.at(-10.0), 1.0);
        h.push(3.0); // t = 0.5
        h.push(5.0); // t = 1.0
        assert!((h.at(0.25) - 2.0).abs() < 1e-12);
        assert!((h.at(0.75) - 4.0).abs() < 1e-12);
        assert_eq!(h.at(7.0), 5.0);
        h.push(7.0); // t = 1.5
        h.push(9.0); // t = 2.0; the ring now holds t = 0.5 .. 2.0
        assert!((h.at(1.75) - 8.0).abs() < 1e-12);
        assert_eq!(h.at(0.0), 3.0, "older than the ring: its oldest value");
        assert_eq!(h.last(), 9.0);
    }
}
