//! PIE, Proportional Integral controller Enhanced (RFC 8033): an arriving packet is dropped (or,
//! with ECN, marked) with a probability that a PI controller moves every `tupdate` from the
//! queueing delay's distance to `target` and its trend.
//!
//! The queueing delay is the sojourn time of the last packet to leave (RFC 8033 §4.3's
//! timestamp method; 0 once the queue is empty). A queue has no timer of its own, so the
//! periodic update (RFC 8033 §4.2, every T_UPDATE) runs lazily: at each enqueue and dequeue, one
//! update for every T_UPDATE boundary passed since the last, in order, from the state as it
//! stood; over a long idle period the state reaches its fixed point (no drop probability, full
//! burst allowance) and the remaining updates are skipped, as they would change nothing.

use super::codel::Timed;
use super::{read_ecn, read_limit, signal, validate_limit, QueueKind, QueueSpecError, Signal};
use super::{CodePointCounters, ColorCounters, Dequeue, DropKind, QueueDiscipline, Queued};
use crate::color::Color;
use crate::loss::uniform;
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;
use qstp_proto::{Duration, Rate, Time};
use rand::RngCore;

/// `kind = "pie"`: PIE on one FIFO.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PieSpec {
    /// Capacity, packets.
    pub limit: usize,
    /// QDELAY_REF, the delay aimed at (RFC 8033 §4.2: 15 ms).
    pub target: Duration,
    /// T_UPDATE, the period of the drop probability's update (RFC 8033 §4.2: 15 ms).
    pub tupdate: Duration,
    /// alpha, Hz: weight of the distance to the target (RFC 8033 §4.2: 0.125).
    pub alpha: f64,
    /// beta, Hz: weight of the delay's trend (RFC 8033 §4.2: 1.25).
    pub beta: f64,
    /// MAX_BURST, the burst let through untouched (RFC 8033 §4.4: 150 ms).
    pub max_burst: Duration,
    /// Mark ECN-capable packets CE instead of dropping them while the drop probability is at
    /// most 10% (RFC 8033 §5.1).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
}

/// RFC 8033 §5.1: above this drop probability ECN-capable packets are dropped, not marked.
pub const MARK_ECN_THRESHOLD: f64 = 0.1;

impl Kind for PieSpec {
    const DOC: &'static str = "PIE (RFC 8033): limit (packets), target (15ms), tupdate (15ms), \
         alpha (0.125), beta (1.25), max_burst (150ms), ecn (false; true: mark CE on ECT packets \
         while the drop probability is at most 10%)";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        let ms = Duration::from_millis;
        Ok(PieSpec {
            limit: read_limit(t)?,
            target: t.opt_duration("target")?.unwrap_or(ms(15)),
            tupdate: t.opt_duration("tupdate")?.unwrap_or(ms(15)),
            alpha: t.f64_or("alpha", Some(0.125))?,
            beta: t.f64_or("beta", Some(1.25))?,
            max_burst: t.opt_duration("max_burst")?.unwrap_or(ms(150)),
            ecn: read_ecn(t)?,
        })
    }
}

impl QueueKind for PieSpec {
    fn validate(&self) -> Result<(), QueueSpecError> {
        validate_limit(self.limit, None)?;
        let positive = |key: &'static str, d: Duration| {
            if d.is_zero() {
                Err(QueueSpecError::Param {
                    key,
                    reason: "must be above 0".into(),
                })
            } else {
                Ok(())
            }
        };
        positive("target", self.target)?;
        positive("tupdate", self.tupdate)?;
        for (key, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(QueueSpecError::Param {
                    key,
                    reason: format!("{v} must be a finite number >= 0 (Hz)"),
                });
            }
        }
        Ok(())
    }
    fn build<P: Queued + 'static>(&self, _group_names: &[String]) -> Box<dyn QueueDiscipline<P>> {
        Box::new(Pie::new(*self))
    }
}

/// PIE on one FIFO.
#[derive(Debug, Clone)]
pub struct Pie<P> {
    spec: PieSpec,
    queue: Timed<P>,
    /// drop_prob_ (RFC 8033 §4.2).
    drop_prob: f64,
    /// The current queueing delay: the last departure's sojourn time.
    qdelay: Duration,
    /// qdelay_old_: the delay at the previous update.
    qdelay_old: Duration,
    /// burst_allowance_ (RFC 8033 §4.4).
    burst_allowance: Duration,
    /// When the next periodic update is due.
    next_update: Time,
    counters: ColorCounters,
}

impl<P> Pie<P> {
    /// An empty PIE queue; its first update is due one `tupdate` after time 0.
    pub fn new(spec: PieSpec) -> Self {
        Pie {
            spec,
            queue: Timed::default(),
            drop_prob: 0.0,
            qdelay: Duration::ZERO,
            qdelay_old: Duration::ZERO,
            // RFC 8033 §4.4: burst_allowance starts at MAX_BURST.
            burst_allowance: spec.max_burst,
            next_update: Time::ZERO + spec.tupdate,
            counters: ColorCounters::default(),
        }
    }

    /// The drop probability.
    pub fn drop_prob(&self) -> f64 {
        self.drop_prob
    }

    /// The burst allowance left.
    pub fn burst_allowance(&self) -> Duration {
        self.burst_allowance
    }

    /// Run the periodic updates due by `now` (lazily: see the module documentation).
    fn catch_up(&mut self, now: Time) {
        while self.next_update <= now {
            let at_rest = self.drop_prob == 0.0
                && self.qdelay.is_zero()
                && self.qdelay_old.is_zero()
                && self.burst_allowance == self.spec.max_burst;
            if at_rest {
                // The fixed point: every later update would leave the state as it is.
                let behind = now.saturating_since(self.next_update).as_nanos();
                let periods = behind / self.spec.tupdate.as_nanos().max(1) + 1;
                self.next_update += self.spec.tupdate.saturating_mul(periods);
                return;
            }
            self.update();
            self.next_update += self.spec.tupdate;
        }
    }

    /// RFC 8033 §4.2 (and Appendix A): the drop probability's periodic update.
    fn update(&mut self) {
        let target = self.spec.target.as_secs_f64();
        let qdelay = self.qdelay.as_secs_f64();
        let qdelay_old = self.qdelay_old.as_secs_f64();
        // RFC 8033 §4.2: p = alpha (qdelay - QDELAY_REF) + beta (qdelay - qdelay_old).
        let mut p = self.spec.alpha * (qdelay - target) + self.spec.beta * (qdelay - qdelay_old);
        // RFC 8033 §4.2: scale p down while drop_prob is small (auto-tuning of alpha, beta).
        let scale = match self.drop_prob {
            d if d < 0.000_001 => 1.0 / 2048.0,
            d if d < 0.000_01 => 1.0 / 512.0,
            d if d < 0.000_1 => 1.0 / 128.0,
            d if d < 0.001 => 1.0 / 32.0,
            d if d < 0.01 => 1.0 / 8.0,
            d if d < 0.1 => 1.0 / 2.0,
            _ => 1.0,
        };
        p *= scale;
        // RFC 8033 §5.5: above 10%, the probability rises by at most 2% per update.
        if self.drop_prob >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        self.drop_prob += p;
        // RFC 8033 §4.2: decay it while the queue stays empty.
        if self.qdelay.is_zero() && self.qdelay_old.is_zero() {
            self.drop_prob *= 0.98;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        // RFC 8033 §4.4: the burst allowance runs down by T_UPDATE per update ...
        self.burst_allowance = self.burst_allowance.saturating_sub(self.spec.tupdate);
        // ... and is refilled once the queue is calm (no drops, both delays below half the target).
        let half = self.spec.target.as_nanos() / 2;
        if self.drop_prob == 0.0
            && self.qdelay.as_nanos() < half
            && self.qdelay_old.as_nanos() < half
        {
            self.burst_allowance = self.spec.max_burst;
        }
        self.qdelay_old = self.qdelay;
    }

    /// RFC 8033 §4.1 drop_early: whether the arriving packet of `size` bytes is refused early.
    fn drop_early(&self, size: usize, rng: &mut dyn RngCore) -> bool {
        // RFC 8033 §4.4: no early drop within the burst allowance.
        if !self.burst_allowance.is_zero() {
            return false;
        }
        // RFC 8033 §4.1: no drop while the delay was below half the target and drop_prob small.
        if self.qdelay_old.as_nanos() < self.spec.target.as_nanos() / 2 && self.drop_prob < 0.2 {
            return false;
        }
        // RFC 8033 §4.1: no drop with less than two packets queued (MEAN_PKTSIZE taken as the
        // arriving packet's size).
        if self.queue.bytes <= 2 * size as u64 {
            return false;
        }
        // RFC 8033 §4.1: drop with probability drop_prob, with the queue's own random stream.
        uniform(rng) < self.drop_prob
    }
}

impl<P: Queued> QueueDiscipline<P> for Pie<P> {
    fn enqueue(
        &mut self,
        now: Time,
        mut packet: P,
        rng: &mut dyn RngCore,
    ) -> Result<(), (P, DropKind)> {
        self.catch_up(now);
        let color = packet.color();
        self.counters.arrived(color);
        // RFC 8033 §4.1: a full queue drops the arrival.
        if self.queue.fifo.len() >= self.spec.limit {
            self.counters.dropped(color, DropKind::Overflow);
            return Err((packet, DropKind::Overflow));
        }
        if self.drop_early(packet.size(), rng) {
            // RFC 8033 §5.1: mark instead of dropping while drop_prob is at most 10%.
            let ecn = self.spec.ecn && self.drop_prob <= MARK_ECN_THRESHOLD;
            if signal(&mut packet, ecn, &mut self.counters) == Signal::Dropped {
                self.counters.dropped(color, DropKind::Early);
                return Err((packet, DropKind::Early));
            }
        }
        self.queue.push(now, packet);
        Ok(())
    }

    fn dequeue(&mut self, now: Time, _link_rate: Rate) -> Dequeue<P> {
        self.catch_up(now);
        let Some((arrived, packet)) = self.queue.fifo.pop_front() else {
            self.qdelay = Duration::ZERO;
            return Dequeue::Empty;
        };
        self.queue.bytes = self.queue.bytes.saturating_sub(packet.size() as u64);
        // RFC 8033 §4.3: the queueing delay from timestamps: this packet's sojourn time, and
        // none once the queue is empty.
        self.qdelay = if self.queue.fifo.is_empty() {
            Duration::ZERO
        } else {
            now.saturating_since(arrived)
        };
        Dequeue::Packet(packet)
    }

    fn len(&self) -> usize {
        self.queue.fifo.len()
    }

    fn bytes(&self) -> u64 {
        self.queue.bytes
    }

    fn counters(&self, color: Color) -> CodePointCounters {
        self.counters.get(color)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_packet::*;
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn spec(ecn: bool) -> PieSpec {
        let ms = Duration::from_millis;
        PieSpec {
            limit: 10_000,
            target: ms(15),
            tupdate: ms(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: ms(150),
            ecn,
        }
    }

    /// Two arrivals per departure on a link taking a packet every 1 ms, for `ms` ms; the drop
    /// probability every 100 ms and the early drops and marks.
    fn overload(q: &mut Pie<FlowPkt>, ms: u64, ect: bool) -> (Vec<f64>, u64, u64) {
        let (probs, drops, marks, _) = overload_from(q, ms, ect);
        (probs, drops, marks)
    }

    /// [`overload`], with the time of the first early drop or mark, ms.
    fn overload_from(
        q: &mut Pie<FlowPkt>,
        ms: u64,
        ect: bool,
    ) -> (Vec<f64>, u64, u64, Option<u64>) {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (mut probs, mut drops, mut marks, mut first) = (Vec::new(), 0, 0, None);
        for t in 0..ms {
            let now = Time::ZERO + Duration::from_millis(t);
            for k in 0..2 {
                if let Err((_, DropKind::Early)) = q.enqueue(now, flow_pkt(k, 0, ect), &mut rng) {
                    drops += 1;
                    first = first.or(Some(t));
                }
            }
            if let Dequeue::Packet(p) = q.dequeue(now, Rate::from_mbps(8)) {
                marks += u64::from(p.ce);
                if p.ce {
                    first = first.or(Some(t));
                }
            }
            if t % 100 == 99 {
                probs.push(q.drop_prob());
            }
        }
        (probs, drops, marks, first)
    }

    #[test]
    fn pie_probability_rises_while_the_delay_is_above_target() {
        let mut q = Pie::new(spec(false));
        let (probs, drops, _, first) = overload_from(&mut q, 2000, false);
        // The delay grows by 1 ms per ms: the probability climbs as it passes 15 ms and goes on
        // rising while it stays above (until drops bring the queue back), but the first 150 ms
        // pass untouched (the burst allowance, RFC 8033 §4.4).
        assert!(probs.windows(2).take(8).all(|w| w[1] > w[0]), "{probs:?}");
        assert!(first.is_some_and(|t| t >= 150), "{first:?}");
        assert!(drops > 100, "{drops}");
        assert_eq!(q.counters(Color::Green).edrops, drops);
    }

    #[test]
    fn pie_probability_decays_once_the_queue_drains() {
        let mut q = Pie::new(spec(false));
        overload(&mut q, 1000, false);
        let high = q.drop_prob();
        assert!(high > 0.01, "{high}");
        let mut now = Time::ZERO + Duration::from_millis(1000);
        while let Dequeue::Packet(_) = q.dequeue(now, Rate::from_mbps(8)) {
            now += Duration::from_millis(1);
        }
        // Idle for 10 s: lazily, updates run until the state rests (p -> 0, burst refilled).
        let later = now + Duration::from_secs(10);
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        q.enqueue(later, flow_pkt(0, 0, false), &mut rng).unwrap();
        assert!(q.drop_prob() < high / 10.0, "{} vs {high}", q.drop_prob());
        assert_eq!(q.burst_allowance(), Duration::from_millis(150));
    }

    #[test]
    fn pie_with_ecn_marks_while_the_probability_is_low() {
        // RFC 8033 §5.1: ECT packets are marked while drop_prob <= 10%, dropped above.
        let mut q = Pie::new(spec(true));
        let (_, drops, marks) = overload(&mut q, 600, true);
        assert!(marks > 0, "{marks}");
        let c = q.counters(Color::Green);
        assert_eq!(c.marks, marks);
        assert_eq!(c.edrops, drops);
        assert!(q.drop_prob() <= 0.1 || drops > 0);
    }

    #[test]
    fn pie_validation_names_the_key() {
        let mut s = spec(false);
        s.tupdate = Duration::ZERO;
        assert_eq!(s.validate().unwrap_err().field(), "tupdate");
        let mut s = spec(false);
        s.beta = f64::NAN;
        assert_eq!(s.validate().unwrap_err().field(), "beta");
        assert_eq!(spec(false).validate(), Ok(()));
    }
}
