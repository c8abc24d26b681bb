//! RED (Floyd & Jacobson 1993): the average queue estimate, the drop curve, and the RED queue.
//!
//! [`AverageQueue`], [`IdlePeriod`] and [`RedCurve`] are the parts RIO reuses.

use super::{read_limit, validate_limit, QueueKind, QueueSpecError};
use super::{CodePointCounters, ColorCounters, Dequeue, DropKind, QueueDiscipline, Queued};
use crate::color::Color;
use crate::loss::uniform;
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;
use qstp_proto::{Duration, Rate, Time};
use rand::RngCore;
use std::collections::VecDeque;

/// A RED curve: below `min_th` no early drop, between the thresholds a drop probability rising
/// linearly to `max_p`, above `max_th` every packet dropped (Floyd & Jacobson; RIO per RFC 2597's
/// usual realisation). Thresholds are in packets of average queue.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RedParams {
    /// Lower threshold, packets.
    pub min_th: f64,
    /// Upper threshold, packets.
    pub max_th: f64,
    /// Drop probability at `max_th`.
    pub max_p: f64,
}

/// Weight of the average-queue EWMA of RED and RIO unless a scenario says otherwise (Floyd &
/// Jacobson 1993 recommend w_q = 0.002).
pub const DEFAULT_QUEUE_WEIGHT: f64 = 0.002;

/// `kind = "red"`: RED on one FIFO.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RedSpec {
    /// Capacity, packets.
    pub limit: usize,
    /// The drop curve (written `curve = [min_th, max_th, max_p]`).
    pub params: RedParams,
    /// Weight of the average queue EWMA ([`DEFAULT_QUEUE_WEIGHT`] by default).
    pub weight: f64,
    /// ns-2's `wait_` (its default): drops spaced between 1/p_b and 2/p_b packets apart rather
    /// than Floyd & Jacobson's 1 to 1/p_b (see [`RedCurve::with_wait`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub wait: bool,
    /// Mark ECN-capable packets CE instead of dropping them early (RFC 3168 §7).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
}

impl Kind for RedSpec {
    const DOC: &'static str =
        "RED (Floyd & Jacobson 1993): limit (packets), curve = [min_th, max_th, max_p], weight (0.002), wait (false; true: ns-2's wait_), ecn (false; true: mark CE on ECT packets instead of an early drop)";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        Ok(RedSpec {
            limit: read_limit(t)?,
            params: required_curve(t, "curve")?,
            weight: read_weight(t)?,
            wait: t.opt_bool("wait")?.unwrap_or(false),
            ecn: super::read_ecn(t)?,
        })
    }
}

impl QueueKind for RedSpec {
    fn validate(&self) -> Result<(), QueueSpecError> {
        validate_limit(self.limit, None)?;
        validate_curve("curve", &self.params, self.limit)?;
        validate_weight(self.weight)
    }
    fn build<P: Queued + 'static>(&self, _group_names: &[String]) -> Box<dyn QueueDiscipline<P>> {
        let mut red = Red::new(self.limit, self.params, self.weight);
        red.curve = red.curve.with_wait(self.wait);
        red.ecn = self.ecn;
        Box::new(red)
    }
}

/// A RED curve written `[min_th, max_th, max_p]`, if `key` is there.
pub(crate) fn read_curve(t: &mut dyn ParamTable, key: &str) -> ParamResult<Option<RedParams>> {
    let Some(v) = t.opt_numbers(key)? else {
        return Ok(None);
    };
    let [min_th, max_th, max_p] = v[..] else {
        let found = v.len();
        return Err(t.error(
            key,
            &format!("expected [min_th, max_th, max_p], found {found} values"),
        ));
    };
    Ok(Some(RedParams {
        min_th,
        max_th,
        max_p,
    }))
}

/// A RED curve that must be there.
pub(crate) fn required_curve(t: &mut dyn ParamTable, key: &str) -> ParamResult<RedParams> {
    read_curve(t, key)?.ok_or_else(|| t.error(key, "missing ([min_th, max_th, max_p])"))
}

/// `weight`, or the default.
pub(crate) fn read_weight(t: &mut dyn ParamTable) -> ParamResult<f64> {
    t.f64_or("weight", Some(DEFAULT_QUEUE_WEIGHT))
}

/// Check one RED curve of a queue of `limit` packets; `curve` is the key it is written under.
pub(crate) fn validate_curve(
    curve: &'static str,
    p: &RedParams,
    limit: usize,
) -> Result<(), QueueSpecError> {
    // Floyd & Jacobson 1993 §4: p_b rises from 0 at min_th to max_p at max_th; min_th = max_th
    // leaves no ramp (a step at max_th), which is still a well-defined curve.
    if !(p.min_th.is_finite() && p.max_th.is_finite() && 0.0 <= p.min_th && p.min_th <= p.max_th) {
        return Err(QueueSpecError::BadThresholds {
            curve,
            min_th: p.min_th,
            max_th: p.max_th,
        });
    }
    if p.max_th > limit as f64 {
        return Err(QueueSpecError::ThresholdAboveLimit {
            curve,
            max_th: p.max_th,
            limit,
        });
    }
    // max_p is a probability; 0 is allowed (no early drop below max_th, a step curve).
    if !(0.0..=1.0).contains(&p.max_p) {
        return Err(QueueSpecError::BadMaxP {
            curve,
            max_p: p.max_p,
        });
    }
    Ok(())
}

/// Check an EWMA weight: it must lie in (0, 1].
pub(crate) fn validate_weight(weight: f64) -> Result<(), QueueSpecError> {
    if weight > 0.0 && weight <= 1.0 {
        Ok(())
    } else {
        Err(QueueSpecError::BadWeight(weight))
    }
}

/// The exponentially weighted moving average of a queue's length, in packets.
#[derive(Debug, Clone, Copy)]
pub struct AverageQueue {
    avg: f64,
    weight: f64,
}

impl AverageQueue {
    /// An average of weight `weight` (w_q), starting at zero.
    pub fn new(weight: f64) -> Self {
        AverageQueue { avg: 0.0, weight }
    }

    /// Fold in the instantaneous length `queue_len` (Floyd & Jacobson §4: avg <- (1 - w_q) avg + w_q q).
    pub fn update(&mut self, queue_len: usize) {
        self.avg = (1.0 - self.weight) * self.avg + self.weight * queue_len as f64;
    }

    /// Age the average by `m` idle packet times (Floyd & Jacobson §4: avg <- (1 - w_q)^m avg).
    pub fn decay(&mut self, m: f64) {
        if m > 0.0 {
            // libm, not the platform's pow: the same bits on every host.
            self.avg *= libm::pow(1.0 - self.weight, m);
        }
    }

    /// The average, packets.
    pub fn value(&self) -> f64 {
        self.avg
    }
}

/// When a queue went idle and how long a typical packet takes on the link, to age the average.
#[derive(Debug, Clone, Copy, Default)]
pub struct IdlePeriod {
    idle_since: Option<Time>,
    typical_transmission: Duration,
}

impl IdlePeriod {
    /// Note that a packet taking `transmission` on the link left the queue at `now`, leaving
    /// `remaining` packets; an empty queue is idle once that packet is on the wire.
    pub fn departed(&mut self, now: Time, transmission: Duration, remaining: usize) {
        self.typical_transmission = transmission;
        if remaining == 0 {
            self.idle_since = Some(now + transmission);
        }
    }

    /// At an arrival to an empty queue: the idle time in typical packet times (Floyd & Jacobson
    /// §4: m = f(time - q_time)), consuming the idle period.
    pub fn idle_packets(&mut self, now: Time) -> f64 {
        let Some(since) = self.idle_since.take() else {
            return 0.0;
        };
        let idle = now.saturating_since(since);
        if idle.is_zero() {
            0.0
        } else if self.typical_transmission.is_zero() {
            f64::INFINITY
        } else {
            idle.as_nanos() as f64 / self.typical_transmission.as_nanos() as f64
        }
    }

    /// Take the head of `fifo` onto a link of `link_rate` at `now`, noting its departure.
    pub fn dequeue<P: Queued>(
        &mut self,
        fifo: &mut VecDeque<P>,
        now: Time,
        link_rate: Rate,
    ) -> Option<P> {
        let packet = fifo.pop_front()?;
        self.departed(now, link_rate.transmit_time(packet.size()), fifo.len());
        Some(packet)
    }
}

/// Whether an early drop still stands for `packet`: with `ecn`, an ECN-capable packet is marked
/// CE instead (counted in `counters`), unless the queue of `queued` packets is full (RFC 3168 §7:
/// mark where RED would drop early; a full queue still drops).
pub(super) fn early_after_marking<P: Queued>(
    early: bool,
    ecn: bool,
    packet: &mut P,
    queued: usize,
    limit: usize,
    counters: &mut ColorCounters,
) -> bool {
    if early && ecn && packet.ecn_capable() {
        if queued < limit {
            packet.set_ce();
            counters.marked(packet.color());
        }
        // Marked; or, the queue being full, refused as an overflow (see `refusal`).
        return false;
    }
    early
}

/// Why an arriving packet is refused: an early drop first, else a full queue of `limit` packets.
pub(super) fn refusal(early_drop: bool, queued: usize, limit: usize) -> Option<DropKind> {
    if early_drop {
        Some(DropKind::Early)
    } else if queued >= limit {
        Some(DropKind::Overflow)
    } else {
        None
    }
}

/// A RED drop curve with its count of packets since the last drop.
#[derive(Debug, Clone, Copy)]
pub struct RedCurve {
    params: RedParams,
    /// Packets since the last early drop, -1 when below `min_th` (Floyd & Jacobson §4).
    count: i64,
    /// ns-2's `wait_` rule for the drop probability.
    wait: bool,
}

impl RedCurve {
    /// A curve with these thresholds and `max_p`.
    pub fn new(params: RedParams) -> Self {
        RedCurve {
            params,
            count: -1,
            wait: false,
        }
    }

    /// The same curve with ns-2's `wait_` rule (ns-2.35 queue/red.cc `modify_p`, on by default
    /// in ns-default.tcl): no early drop while count p_b < 1, then p_a = p_b / (2 - count p_b),
    /// and 1 from count p_b = 2, so that drops come between 1/p_b and 2/p_b packets apart; without
    /// it, Floyd & Jacobson's p_a = p_b / (1 - count p_b), between 1 and 1/p_b apart.
    pub fn with_wait(self, wait: bool) -> Self {
        RedCurve { wait, ..self }
    }

    /// The curve's parameters.
    pub fn params(&self) -> RedParams {
        self.params
    }

    /// Decide whether an arriving packet is dropped early given the average queue `avg`.
    pub fn early_drop(&mut self, avg: f64, rng: &mut dyn RngCore) -> bool {
        let RedParams {
            min_th,
            max_th,
            max_p,
        } = self.params;
        if avg < min_th {
            // Floyd & Jacobson §4: below min_th, count <- -1.
            self.count = -1;
            false
        } else if avg >= max_th {
            // Floyd & Jacobson §4: above max_th every packet is dropped, count <- 0.
            self.count = 0;
            true
        } else {
            self.count += 1;
            // Floyd & Jacobson §4: p_b = max_p (avg - min_th) / (max_th - min_th);
            // p_a = p_b / (1 - count p_b), spreading drops evenly.
            let pb = max_p * (avg - min_th) / (max_th - min_th);
            let spread = self.count as f64 * pb;
            let pa = if self.wait {
                // ns-2.35 queue/red.cc modify_p with wait_.
                if spread < 1.0 {
                    0.0
                } else if spread < 2.0 {
                    pb / (2.0 - spread)
                } else {
                    1.0
                }
            } else if spread >= 1.0 {
                1.0
            } else {
                pb / (1.0 - spread)
            };
            if uniform(rng) < pa {
                self.count = 0;
                true
            } else {
                false
            }
        }
    }
}

/// RED on one FIFO: early drops from one curve against the average of all packets.
#[derive(Debug, Clone)]
pub struct Red<P> {
    limit: usize,
    fifo: VecDeque<P>,
    average: AverageQueue,
    idle: IdlePeriod,
    curve: RedCurve,
    /// Mark instead of an early drop (RFC 3168 §7).
    ecn: bool,
    counters: ColorCounters,
}

impl<P> Red<P> {
    /// A RED queue of `limit` packets with drop curve `params` and EWMA weight `weight`.
    pub fn new(limit: usize, params: RedParams, weight: f64) -> Self {
        Red {
            limit,
            fifo: VecDeque::new(),
            average: AverageQueue::new(weight),
            idle: IdlePeriod::default(),
            curve: RedCurve::new(params),
            ecn: false,
            counters: ColorCounters::default(),
        }
    }

    /// The same queue marking ECN-capable packets CE instead of dropping them early.
    pub fn with_ecn(mut self, ecn: bool) -> Self {
        self.ecn = ecn;
        self
    }

    /// The average queue, packets.
    pub fn average(&self) -> f64 {
        self.average.value()
    }
}

impl<P: Queued> QueueDiscipline<P> for Red<P> {
    fn enqueue(
        &mut self,
        now: Time,
        mut packet: P,
        rng: &mut dyn RngCore,
    ) -> Result<(), (P, DropKind)> {
        let color = packet.color();
        self.counters.arrived(color);
        if self.fifo.is_empty() {
            self.average.decay(self.idle.idle_packets(now));
        }
        self.average.update(self.fifo.len());
        let early = self.curve.early_drop(self.average.value(), rng);
        let early = early_after_marking(
            early,
            self.ecn,
            &mut packet,
            self.fifo.len(),
            self.limit,
            &mut self.counters,
        );
        let refused = refusal(early, self.fifo.len(), self.limit);
        if let Some(kind) = refused {
            self.counters.dropped(color, kind);
            return Err((packet, kind));
        }
        self.fifo.push_back(packet);
        Ok(())
    }

    fn dequeue(&mut self, now: Time, link_rate: Rate) -> Dequeue<P> {
        match self.idle.dequeue(&mut self.fifo, now, link_rate) {
            Some(p) => Dequeue::Packet(p),
            None => Dequeue::Empty,
        }
    }

    fn len(&self) -> usize {
        self.fifo.len()
    }

    fn bytes(&self) -> u64 {
        super::fifo_bytes(&self.fifo)
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

    const CURVE: RedParams = RedParams {
        min_th: 5.0,
        max_th: 15.0,
        max_p: 0.1,
    };

    #[test]
    fn average_follows_the_ewma() {
        let mut a = AverageQueue::new(0.5);
        a.update(10);
        a.update(10);
        assert_eq!(a.value(), 7.5);
        a.decay(2.0);
        assert_eq!(a.value(), 7.5 * 0.25);
    }

    #[test]
    fn idle_time_counts_in_typical_packets_after_the_last_departure() {
        let mut idle = IdlePeriod::default();
        assert_eq!(idle.idle_packets(Time::from_nanos(5)), 0.0);
        // The last packet leaves at 0 and takes 8 ms: the queue idles from 8 ms.
        idle.departed(Time::ZERO, Duration::from_millis(8), 0);
        assert_eq!(
            idle.idle_packets(Time::ZERO + Duration::from_millis(88)),
            10.0
        );
        // Consumed: a second arrival in the same busy period sees no idle time.
        assert_eq!(
            idle.idle_packets(Time::ZERO + Duration::from_millis(100)),
            0.0
        );
    }

    #[test]
    fn curve_never_drops_below_min_and_always_above_max() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut c = RedCurve::new(CURVE);
        assert!((0..1000).all(|_| !c.early_drop(4.99, &mut rng)));
        assert!((0..1000).all(|_| c.early_drop(15.0, &mut rng)));
    }

    #[test]
    fn count_spreads_drops_uniformly() {
        // With p_b fixed, p_a = p_b / (1 - count p_b) (count incremented before use, reset to 0
        // on a drop) makes the gap between drops uniform on 1..1/p_b - 1 (Floyd & Jacobson §7):
        // with p_b = 0.05 the mean gap is (1 + 19) / 2 = 10 and never above 19.
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut c = RedCurve::new(CURVE);
        let avg = 10.0; // p_b = 0.1 * 5 / 10 = 0.05
        let (mut gaps, mut since, mut longest) = (Vec::new(), 0u32, 0u32);
        for _ in 0..200_000 {
            since += 1;
            if c.early_drop(avg, &mut rng) {
                gaps.push(since);
                longest = longest.max(since);
                since = 0;
            }
        }
        let mean = gaps.iter().sum::<u32>() as f64 / gaps.len() as f64;
        assert!((mean - 10.0).abs() < 0.2, "mean gap {mean}");
        assert!(longest <= 19, "longest gap {longest}");
    }

    /// Arrivals at `gap` intervals to a 1 Mbit/s link served at each arrival instant.
    fn run(
        q: &mut Red<Pkt>,
        arrivals: u32,
        per_arrival_served: bool,
        rng: &mut ChaCha8Rng,
    ) -> (u32, u32) {
        let (mut early, mut overflow) = (0, 0);
        for i in 0..arrivals {
            let now = Time::ZERO + Duration::from_millis(4) * i as u64;
            match q.enqueue(now, pkt(i, Color::Red), rng) {
                Err((_, DropKind::Early)) => early += 1,
                Err((_, DropKind::Overflow)) => overflow += 1,
                Ok(()) => {}
            }
            if per_arrival_served && i % 2 == 0 {
                q.dequeue(now, Rate::from_mbps(1));
            }
        }
        (early, overflow)
    }

    #[test]
    fn persistent_overload_is_met_with_early_drops_before_overflow() {
        // Twice the link rate arrives: the average climbs past min_th and RED drops early; the
        // physical queue of 100 never fills because the average crosses max_th first.
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut q = Red::new(100, CURVE, 0.002);
        let (early, overflow) = run(&mut q, 20_000, true, &mut rng);
        assert!(early > 5_000, "early {early}");
        assert_eq!(overflow, 0);
        assert!(
            q.average() > CURVE.min_th && q.average() < CURVE.max_th + 1.0,
            "{}",
            q.average()
        );
        let c = q.counters(Color::Red);
        assert_eq!((c.packets, c.edrops, c.ldrops), (20_000, early as u64, 0));
    }

    #[test]
    fn a_small_burst_passes_untouched_and_fills_the_queue() {
        // The average moves slowly (w = 0.002): a burst of 30 sees avg < 1 and no early drop, so
        // only the limit of 20 refuses packets.
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut q = Red::new(20, CURVE, 0.002);
        let (early, overflow) = run(&mut q, 0, false, &mut rng);
        assert_eq!((early, overflow), (0, 0));
        let results: Vec<_> = (0..30)
            .map(|i| q.enqueue(Time::ZERO, pkt(i, Color::Green), &mut rng))
            .collect();
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 20);
        assert!(results[20..]
            .iter()
            .all(|r| matches!(r, Err((_, DropKind::Overflow)))));
        assert!(q.average() < 1.0);
    }

    #[test]
    fn the_average_decays_while_the_queue_idles() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut q = Red::new(1000, CURVE, 0.002);
        for i in 0..2000 {
            let _ = q.enqueue(Time::ZERO, pkt(i, Color::Green), &mut rng);
        }
        let before = q.average();
        assert!(before > 5.0);
        // Drain at 8 ms per 1000-byte packet on 1 Mbit/s.
        let mut now = Time::ZERO;
        while let Dequeue::Packet(_) = q.dequeue(now, Rate::from_mbps(1)) {
            now += Duration::from_millis(8);
        }
        // Idle for 1000 packet times: avg is multiplied by 0.998^1000 (about 0.135) before the
        // arrival is folded in.
        let last_departure_end = now; // the last dequeue happened at now - 8 ms, ending at now
        let arrival = last_departure_end + Duration::from_millis(8) * 1000;
        let _ = q.enqueue(arrival, pkt(9999, Color::Green), &mut rng);
        let expected = before * 0.998f64.powi(1000) * 0.998;
        assert!(
            (q.average() - expected).abs() < 1e-9,
            "{} vs {expected}",
            q.average()
        );
    }

    #[test]
    fn with_wait_drops_come_between_one_and_two_over_p_b_packets_apart() {
        // ns-2.35 queue/red.cc modify_p: with wait_, no drop while count p_b < 1, then
        // p_b / (2 - count p_b); without, Floyd & Jacobson's p_b / (1 - count p_b). At an average
        // half way up a curve to max_p = 0.2, p_b = 0.1: gaps in [10, 20] and [1, 10] packets.
        let params = RedParams {
            min_th: 5.0,
            max_th: 15.0,
            max_p: 0.2,
        };
        for (wait, range) in [(false, 1..=10), (true, 10..=20)] {
            let mut curve = RedCurve::new(params).with_wait(wait);
            let mut rng = ChaCha8Rng::seed_from_u64(6);
            let mut gaps = Vec::new();
            let mut since = 0;
            for _ in 0..20_000 {
                since += 1;
                if curve.early_drop(10.0, &mut rng) {
                    gaps.push(since);
                    since = 0;
                }
            }
            // The first gap starts at count -1 (the curve's first packet above min_th).
            assert!(
                gaps[1..].iter().all(|g| range.contains(g)),
                "wait {wait}: {:?}",
                &gaps[..20]
            );
            let mean = gaps[1..].iter().sum::<i32>() as f64 / (gaps.len() - 1) as f64;
            let expected = if wait { 15.0 } else { 5.5 };
            assert!(
                (mean - expected).abs() < 1.0,
                "wait {wait}: mean gap {mean}"
            );
        }
    }

    #[test]
    fn with_ecn_red_marks_ect_packets_instead_of_dropping_them_early() {
        // RFC 3168 §7: where RED would drop early it marks an ECN-capable packet CE; a full
        // queue still drops, and a Not-ECT packet is still dropped early.
        for ect in [true, false] {
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let mut q = Red::new(100, CURVE, 0.002).with_ecn(true);
            let (mut early, mut marked) = (0, 0);
            for i in 0..20_000u32 {
                let now = Time::ZERO + Duration::from_millis(4) * u64::from(i);
                if let Err((_, DropKind::Early)) = q.enqueue(now, flow_pkt(i, 0, ect), &mut rng) {
                    early += 1;
                }
                if i % 2 == 0 {
                    if let Dequeue::Packet(p) = q.dequeue(now, Rate::from_mbps(1)) {
                        marked += u64::from(p.ce);
                    }
                }
            }
            let c = q.counters(Color::Green);
            if ect {
                assert_eq!(early, 0);
                assert!(c.marks > 1000 && c.marks >= marked, "{c:?}");
                // Marking does not relieve the queue: it fills and overflows.
                assert!(c.ldrops > 0, "{c:?}");
            } else {
                assert!(early > 1000);
                assert_eq!(c.marks, 0);
            }
        }
    }
}
