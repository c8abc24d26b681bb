//! CoDel, Controlled Delay (RFC 8289): drops (or, with ECN, marks) at dequeue once every packet
//! has waited longer than `target` for at least an `interval`, then ever more often,
//! `interval / sqrt(count)` apart, until the sojourn time falls below `target` again.
//!
//! [`CoDelState`] is the control law alone, over any FIFO of timestamped packets: FQ-CoDel runs
//! one per flow queue.

use super::{read_ecn, read_limit, signal, validate_limit, QueueKind, QueueSpecError, Signal};
use super::{CodePointCounters, ColorCounters, Dequeue, DropKind, QueueDiscipline, Queued};
use crate::color::Color;
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;
use qstp_proto::{Duration, Rate, Time};
use rand::RngCore;
use std::collections::VecDeque;

/// RFC 8289 §4.3: TARGET = 5 ms.
pub const DEFAULT_TARGET: Duration = Duration::from_millis(5);
/// RFC 8289 §4.2: INTERVAL = 100 ms.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(100);

/// CoDel's constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CoDelParams {
    /// Acceptable standing queue delay (RFC 8289 §4.3).
    pub target: Duration,
    /// The window the sojourn time must stay above `target` for before a drop (RFC 8289 §4.2).
    pub interval: Duration,
    /// Mark ECN-capable packets CE instead of dropping them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
}

impl CoDelParams {
    /// `target`, `interval` and `ecn` from a table, with RFC 8289's defaults.
    pub(crate) fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        Ok(CoDelParams {
            target: t.opt_duration("target")?.unwrap_or(DEFAULT_TARGET),
            interval: t.opt_duration("interval")?.unwrap_or(DEFAULT_INTERVAL),
            ecn: read_ecn(t)?,
        })
    }

    /// Both times positive, target below interval.
    pub(crate) fn validate(&self) -> Result<(), QueueSpecError> {
        if self.interval.is_zero() {
            return Err(QueueSpecError::Param {
                key: "interval",
                reason: "must be above 0".into(),
            });
        }
        // RFC 8289 §4.3: TARGET is a small fraction (5-10%) of INTERVAL.
        if self.target.is_zero() || self.target >= self.interval {
            return Err(QueueSpecError::Param {
                key: "target",
                reason: format!(
                    "{} must lie in (0, interval = {})",
                    self.target, self.interval
                ),
            });
        }
        Ok(())
    }
}

impl Default for CoDelParams {
    fn default() -> Self {
        CoDelParams {
            target: DEFAULT_TARGET,
            interval: DEFAULT_INTERVAL,
            ecn: false,
        }
    }
}

/// `kind = "codel"`: CoDel on one FIFO.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CoDelSpec {
    /// Capacity, packets (a tail drop beyond it, RFC 8289 §5.4).
    pub limit: usize,
    /// Target, interval and ECN.
    #[serde(flatten)]
    pub params: CoDelParams,
}

impl Kind for CoDelSpec {
    const DOC: &'static str = "CoDel (RFC 8289): limit (packets), target (5ms), interval (100ms), \
         ecn (false; true: mark CE on ECT packets instead of dropping)";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        Ok(CoDelSpec {
            limit: read_limit(t)?,
            params: CoDelParams::read(t)?,
        })
    }
}

impl QueueKind for CoDelSpec {
    fn validate(&self) -> Result<(), QueueSpecError> {
        validate_limit(self.limit, None)?;
        self.params.validate()
    }
    fn build<P: Queued + 'static>(&self, _group_names: &[String]) -> Box<dyn QueueDiscipline<P>> {
        Box::new(CoDel::new(self.limit, self.params))
    }
}

/// A FIFO of packets with their arrival times, as CoDel's dequeue sees it.
pub(crate) trait TimedFifo<P> {
    /// Take the head and its arrival time.
    fn pop(&mut self) -> Option<(Time, P)>;
    /// Bytes still queued (after the pop), for RFC 8289's "bytes() <= maxpacket" test.
    fn backlog(&self) -> u64;
}

/// One FIFO and its byte count.
#[derive(Debug, Clone)]
pub(crate) struct Timed<P> {
    pub(crate) fifo: VecDeque<(Time, P)>,
    pub(crate) bytes: u64,
}

impl<P> Default for Timed<P> {
    fn default() -> Self {
        Timed {
            fifo: VecDeque::new(),
            bytes: 0,
        }
    }
}

impl<P: Queued> Timed<P> {
    /// Append a packet that arrived at `now` (RFC 8289 §5.4: timestamp it).
    pub(crate) fn push(&mut self, now: Time, packet: P) {
        self.bytes += packet.size() as u64;
        self.fifo.push_back((now, packet));
    }
}

impl<P: Queued> TimedFifo<P> for Timed<P> {
    fn pop(&mut self) -> Option<(Time, P)> {
        let (at, p) = self.fifo.pop_front()?;
        self.bytes = self.bytes.saturating_sub(p.size() as u64);
        Some((at, p))
    }
    fn backlog(&self) -> u64 {
        self.bytes
    }
}

/// CoDel's per-queue state (RFC 8289 §5.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoDelState {
    /// When the sojourn time will have been above target for an interval; `None` while below.
    first_above_time: Option<Time>,
    /// When the next drop is due in the dropping state.
    drop_next: Time,
    /// Drops (or marks) since entering the dropping state.
    count: u32,
    /// `count` when the dropping state was last entered.
    lastcount: u32,
    /// Whether in the dropping state.
    dropping: bool,
    /// The largest packet seen, bytes (RFC 8289 §5.5's maxpacket: an MTU).
    max_packet: u64,
}

impl CoDelState {
    /// Whether in the dropping state.
    pub fn dropping(&self) -> bool {
        self.dropping
    }

    /// Drops (or marks) of the current (or last) dropping state.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// When the next drop is due (meaningful while dropping).
    pub fn drop_next(&self) -> Time {
        self.drop_next
    }

    /// Note a packet of `size` bytes arriving, for maxpacket.
    pub(crate) fn arrived(&mut self, size: usize) {
        self.max_packet = self.max_packet.max(size as u64);
    }

    /// RFC 8289 §5.6: control_law(t) = t + INTERVAL / sqrt(count).
    fn control_law(t: Time, interval: Duration, count: u32) -> Time {
        let spacing = interval.as_nanos() as f64 / libm::sqrt(f64::from(count.max(1)));
        t + Duration::from_nanos(spacing as u64)
    }

    /// RFC 8289 §5.5 dodequeue: the head, and whether its sojourn time has been above target
    /// for an interval (ok_to_drop).
    fn do_dequeue<P: Queued, F: TimedFifo<P>>(
        &mut self,
        now: Time,
        params: &CoDelParams,
        fifo: &mut F,
    ) -> (Option<P>, bool) {
        let Some((arrived, packet)) = fifo.pop() else {
            // RFC 8289 §5.5: an empty queue resets the above-target clock.
            self.first_above_time = None;
            return (None, false);
        };
        let sojourn = now.saturating_since(arrived);
        // RFC 8289 §5.5: below target, or less than a packet left queued: no drop.
        if sojourn < params.target || fifo.backlog() <= self.max_packet {
            self.first_above_time = None;
            return (Some(packet), false);
        }
        match self.first_above_time {
            None => {
                // RFC 8289 §5.5: the clock starts; a drop only after a whole interval above.
                self.first_above_time = Some(now + params.interval);
                (Some(packet), false)
            }
            Some(at) => (Some(packet), now >= at),
        }
    }

    /// RFC 8289 §5.5 dequeue: the packet to send from `fifo` at `now`, after the drops the
    /// control law calls for (handed to `dropped`, counted in `counters`); with `params.ecn`,
    /// an ECN-capable packet is marked CE instead of dropped (RFC 8289 §3.3 "dropped (or
    /// ECN-marked)"; RFC 3168 §5), as Linux's codel_dequeue does it.
    pub(crate) fn dequeue<P: Queued, F: TimedFifo<P>>(
        &mut self,
        now: Time,
        params: &CoDelParams,
        fifo: &mut F,
        dropped: &mut VecDeque<(P, DropKind)>,
        counters: &mut ColorCounters,
    ) -> Option<P> {
        let (mut packet, mut ok_to_drop) = self.do_dequeue(now, params, fifo);
        let Some(mut p) = packet.take() else {
            // RFC 8289 §5.5: an empty queue leaves the dropping state.
            self.dropping = false;
            return None;
        };
        if self.dropping {
            if !ok_to_drop {
                // RFC 8289 §5.5: sojourn time below target: leave the dropping state.
                self.dropping = false;
            }
            // RFC 8289 §5.5: drop while the next drop is due (a large backlog may need several).
            while self.dropping && now >= self.drop_next {
                self.count = self.count.saturating_add(1);
                if signal(&mut p, params.ecn, counters) == Signal::Marked {
                    // Linux codel_dequeue: a marked packet goes; the next signal is scheduled.
                    self.drop_next = Self::control_law(self.drop_next, params.interval, self.count);
                    return Some(p);
                }
                counters.dropped(p.color(), DropKind::Early);
                dropped.push_back((p, DropKind::Early));
                (packet, ok_to_drop) = self.do_dequeue(now, params, fifo);
                match packet.take() {
                    Some(next) => p = next,
                    None => {
                        self.dropping = false;
                        return None;
                    }
                }
                if ok_to_drop {
                    // RFC 8289 §5.5: schedule the next drop, interval / sqrt(count) later.
                    self.drop_next = Self::control_law(self.drop_next, params.interval, self.count);
                } else {
                    self.dropping = false;
                }
            }
        } else if ok_to_drop {
            // RFC 8289 §5.5: above target for an interval: drop (or mark) and enter the
            // dropping state.
            if signal(&mut p, params.ecn, counters) == Signal::Dropped {
                counters.dropped(p.color(), DropKind::Early);
                dropped.push_back((p, DropKind::Early));
                let (next, _) = self.do_dequeue(now, params, fifo);
                match next {
                    Some(next) => p = next,
                    None => {
                        self.enter_dropping(now, params);
                        return None;
                    }
                }
            }
            self.enter_dropping(now, params);
        }
        Some(p)
    }

    /// RFC 8289 §5.5: enter the dropping state, resuming the last drop rate if it ended
    /// recently (within 16 intervals; the Linux variant the RFC gives).
    fn enter_dropping(&mut self, now: Time, params: &CoDelParams) {
        self.dropping = true;
        let delta = self.count.saturating_sub(self.lastcount);
        let recent = now.saturating_since(self.drop_next) < params.interval.saturating_mul(16);
        self.count = if delta > 1 && recent { delta } else { 1 };
        self.drop_next = Self::control_law(now, params.interval, self.count);
        self.lastcount = self.count;
    }
}

/// CoDel on one FIFO of at most `limit` packets.
#[derive(Debug, Clone)]
pub struct CoDel<P> {
    limit: usize,
    params: CoDelParams,
    queue: Timed<P>,
    state: CoDelState,
    /// Packets dropped at the last dequeue, until the link collects them.
    dropped: VecDeque<(P, DropKind)>,
    counters: ColorCounters,
}

impl<P> CoDel<P> {
    /// An empty CoDel queue.
    pub fn new(limit: usize, params: CoDelParams) -> Self {
        CoDel {
            limit,
            params,
            queue: Timed {
                fifo: VecDeque::new(),
                bytes: 0,
            },
            state: CoDelState::default(),
            dropped: VecDeque::new(),
            counters: ColorCounters::default(),
        }
    }

    /// The control law's state.
    pub fn state(&self) -> &CoDelState {
        &self.state
    }
}

impl<P: Queued> QueueDiscipline<P> for CoDel<P> {
    fn enqueue(
        &mut self,
        now: Time,
        packet: P,
        _rng: &mut dyn RngCore,
    ) -> Result<(), (P, DropKind)> {
        let color = packet.color();
        self.counters.arrived(color);
        // RFC 8289 §5.4: a full queue drops the arrival.
        if self.queue.fifo.len() >= self.limit {
            self.counters.dropped(color, DropKind::Overflow);
            return Err((packet, DropKind::Overflow));
        }
        self.state.arrived(packet.size());
        self.queue.push(now, packet);
        Ok(())
    }

    fn dequeue(&mut self, now: Time, _link_rate: Rate) -> Dequeue<P> {
        let params = self.params;
        match self.state.dequeue(
            now,
            &params,
            &mut self.queue,
            &mut self.dropped,
            &mut self.counters,
        ) {
            Some(p) => Dequeue::Packet(p),
            None => Dequeue::Empty,
        }
    }

    fn take_dropped(&mut self) -> Option<(P, DropKind)> {
        self.dropped.pop_front()
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

    fn ms(m: u64) -> Time {
        Time::ZERO + Duration::from_millis(m)
    }

    /// A standing queue: 100 packets of 1000 bytes at 0, then one arrival per departure, the
    /// link taking one every 1 ms until `until_ms`; returns the queue, the drop times (ms) and
    /// the packets that left marked CE.
    fn standing_queue(ecn: bool, until_ms: u64) -> (CoDel<FlowPkt>, Vec<u64>, u64) {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let params = CoDelParams {
            ecn,
            ..CoDelParams::default()
        };
        let mut q = CoDel::new(10_000, params);
        let (mut drops, mut marks, mut id) = (Vec::new(), 0, 0);
        for _ in 0..100 {
            q.enqueue(Time::ZERO, flow_pkt(id, 0, ecn), &mut rng)
                .unwrap();
            id += 1;
        }
        for t in 0..until_ms {
            let now = ms(t);
            q.enqueue(now, flow_pkt(id, 0, ecn), &mut rng).unwrap();
            id += 1;
            if let Dequeue::Packet(p) = q.dequeue(now, Rate::from_mbps(8)) {
                marks += u64::from(p.ce);
            }
            while q.take_dropped().is_some() {
                drops.push(t);
            }
        }
        (q, drops, marks)
    }

    #[test]
    fn codel_drops_only_after_an_interval_above_target() {
        // The packet leaving at t ms waited t ms: above the 5 ms target from t = 5, so the
        // clock starts then and the first drop is a whole interval later, at 105 ms.
        let (q, drops, _) = standing_queue(false, 105);
        assert!(drops.is_empty(), "{drops:?}");
        assert!(!q.state().dropping());
        let (q, drops, _) = standing_queue(false, 106);
        assert_eq!(drops, [105]);
        assert!(q.state().dropping());
        assert_eq!(q.counters(Color::Green).edrops, 1);
    }

    #[test]
    fn codel_spaces_drops_by_interval_over_sqrt_count() {
        // RFC 8289 §5.6: after the first drop (count 1) the next is due an interval later, then
        // each interval / sqrt(count) after the previous due time (count including the drop
        // just made); each happens at the first dequeue (whole ms) at or after it: 105, 205,
        // 276, 334, 384, 429, 469 ...
        let (_, drops, _) = standing_queue(false, 600);
        let mut expected = vec![105];
        let mut due_ns: u64 = 205_000_000;
        for count in 2..=12u32 {
            expected.push(due_ns.div_ceil(1_000_000));
            due_ns += (100e6 / f64::from(count).sqrt()) as u64;
        }
        expected.retain(|&t| t < 600);
        assert_eq!(drops, expected);
    }

    #[test]
    fn codel_leaves_the_dropping_state_when_the_sojourn_falls_below_target() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut q = CoDel::new(1000, CoDelParams::default());
        for i in 0..200 {
            q.enqueue(Time::ZERO, flow_pkt(i, 0, false), &mut rng)
                .unwrap();
        }
        let mut t = 0;
        while !q.state().dropping() {
            let _ = q.dequeue(ms(t), Rate::from_mbps(8));
            t += 1;
        }
        // Empty it: the dropping state ends with the queue.
        while let Dequeue::Packet(_) = q.dequeue(ms(t), Rate::from_mbps(8)) {}
        assert!(!q.state().dropping());
        while q.take_dropped().is_some() {}
        // A fresh packet waits 1 ms only: no drop.
        q.enqueue(ms(t), flow_pkt(999, 0, false), &mut rng).unwrap();
        assert!(matches!(
            q.dequeue(ms(t + 1), Rate::from_mbps(8)),
            Dequeue::Packet(_)
        ));
        assert!(q.take_dropped().is_none());
    }

    #[test]
    fn codel_with_ecn_marks_instead_of_dropping() {
        // RFC 3168 §5: an ECT packet is marked CE where a Not-ECT one would be dropped.
        let (q, drops, marks) = standing_queue(true, 500);
        assert!(drops.is_empty(), "{drops:?}");
        assert!(marks >= 5, "{marks}");
        let c = q.counters(Color::Green);
        assert_eq!((c.edrops, c.marks), (0, marks));
        // Not-ECT packets are still dropped with ecn on.
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut q = CoDel::new(
            10_000,
            CoDelParams {
                ecn: true,
                ..CoDelParams::default()
            },
        );
        for i in 0..300 {
            q.enqueue(Time::ZERO, flow_pkt(i, 0, false), &mut rng)
                .unwrap();
        }
        for t in 0..300 {
            let _ = q.dequeue(ms(t), Rate::from_mbps(8));
        }
        assert!(q.counters(Color::Green).edrops > 0);
        assert_eq!(q.counters(Color::Green).marks, 0);
    }

    #[test]
    fn codel_tail_drops_beyond_its_limit() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut q = CoDel::new(2, CoDelParams::default());
        assert!(q
            .enqueue(Time::ZERO, flow_pkt(0, 0, false), &mut rng)
            .is_ok());
        assert!(q
            .enqueue(Time::ZERO, flow_pkt(1, 0, false), &mut rng)
            .is_ok());
        assert!(matches!(
            q.enqueue(Time::ZERO, flow_pkt(2, 0, false), &mut rng),
            Err((_, DropKind::Overflow))
        ));
        assert_eq!(q.bytes(), 2000);
    }

    #[test]
    fn codel_validation_names_the_key() {
        let bad = CoDelSpec {
            limit: 100,
            params: CoDelParams {
                target: Duration::from_millis(200),
                ..CoDelParams::default()
            },
        };
        assert_eq!(bad.validate().unwrap_err().field(), "target");
        let bad = CoDelSpec {
            limit: 100,
            params: CoDelParams {
                interval: Duration::ZERO,
                ..CoDelParams::default()
            },
        };
        assert_eq!(bad.validate().unwrap_err().field(), "interval");
        assert_eq!(
            CoDelSpec {
                limit: 0,
                params: CoDelParams::default()
            }
            .validate()
            .unwrap_err()
            .field(),
            "limit"
        );
    }
}
