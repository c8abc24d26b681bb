//! RIO: RED with In and Out on one FIFO (the usual realisation of RFC 2597's drop precedences),
//! coupled (RIO-C) or decoupled (RIO-D).
//!
//! Packets fall into precedence levels: green is in profile (level 0), red out of profile
//! (level 2), yellow has its own level 1 when a `middle` curve is given and is out of profile
//! otherwise. Each level has its own RED curve. RIO-C compares a level against the average of the
//! packets of that level and all better ones (so green against green, red against everything);
//! RIO-D compares each level against the average of its own packets. Every average samples its
//! queue at each arrival, whatever the arriving colour, so all of them move on one clock (and all
//! age together over idle periods, as in RED).

use super::red::{early_after_marking, refusal, AverageQueue, IdlePeriod, RedCurve};
use super::red::{read_curve, read_weight, required_curve, validate_curve, validate_weight};
use super::{read_limit, validate_limit, QueueKind, QueueSpecError};
use super::{CodePointCounters, RedParams};
use super::{ColorCounters, Dequeue, DropKind, QueueDiscipline, Queued};
use crate::color::Color;
use crate::params::{choose, ParamResult, ParamTable};
use crate::registry::Kind;
use qstp_proto::{Rate, Time};
use rand::RngCore;
use std::collections::VecDeque;

/// Which average a RIO queue compares each precedence against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RioMode {
    /// RIO-C: in-profile packets against the average of in-profile packets; out-profile against
    /// the average of all packets (the default).
    Coupled,
    /// RIO-D: each precedence against the average of its own packets.
    Decoupled,
}

/// `kind = "rio"`: RED with In and Out (RFC 2597 drop precedences on one FIFO).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RioSpec {
    /// Capacity, packets.
    pub limit: usize,
    /// Curve for in-profile (green) packets (written `in`).
    pub in_profile: RedParams,
    /// Curve for out-of-profile packets, yellow and red both unless `middle` is given (`out`).
    pub out_profile: RedParams,
    /// Optional curve for yellow packets of three-colour markers.
    pub middle: Option<RedParams>,
    /// Weight of the average queue EWMA (0.002 by default).
    pub weight: f64,
    /// RIO-C or RIO-D.
    pub mode: RioMode,
    /// Mark ECN-capable packets CE instead of dropping them early (RFC 3168 §7).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
}

impl Kind for RioSpec {
    const DOC: &'static str =
        "RIO, RED with In and Out (RFC 2597): limit, in = [min_th, max_th, max_p], \
         out = [..], middle = [..] (yellow), weight (0.002), mode = \"rio-c\" | \"rio-d\", ecn (false; true: mark CE on ECT packets \
         instead of an early drop)";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        Ok(RioSpec {
            limit: read_limit(t)?,
            in_profile: required_curve(t, "in")?,
            out_profile: required_curve(t, "out")?,
            middle: read_curve(t, "middle")?,
            weight: read_weight(t)?,
            mode: choose(
                t,
                "mode",
                "a RIO mode",
                &[("rio-c", RioMode::Coupled), ("rio-d", RioMode::Decoupled)],
            )?,
            ecn: super::read_ecn(t)?,
        })
    }
}

impl QueueKind for RioSpec {
    fn validate(&self) -> Result<(), QueueSpecError> {
        validate_limit(self.limit, None)?;
        validate_curve("in", &self.in_profile, self.limit)?;
        validate_curve("out", &self.out_profile, self.limit)?;
        if let Some(m) = &self.middle {
            validate_curve("middle", m, self.limit)?;
        }
        validate_weight(self.weight)
    }
    fn build<P: Queued + 'static>(&self, _group_names: &[String]) -> Box<dyn QueueDiscipline<P>> {
        Box::new(
            Rio::new(
                self.limit,
                self.in_profile,
                self.middle,
                self.out_profile,
                self.weight,
                self.mode,
            )
            .with_ecn(self.ecn),
        )
    }
}

/// Number of precedence levels.
const LEVELS: usize = 3;

/// RIO on one FIFO.
#[derive(Debug, Clone)]
pub struct Rio<P> {
    limit: usize,
    mode: RioMode,
    has_middle: bool,
    fifo: VecDeque<P>,
    /// Packets queued per level.
    queued: [usize; LEVELS],
    /// Per level: RIO-C, the average of that level and all better ones; RIO-D, of that level alone.
    averages: [AverageQueue; LEVELS],
    curves: [RedCurve; LEVELS],
    idle: IdlePeriod,
    /// Mark instead of an early drop (RFC 3168 §7).
    ecn: bool,
    counters: ColorCounters,
}

impl<P> Rio<P> {
    /// A RIO queue of `limit` packets with curves for green, yellow (`None`: the red one) and red
    /// packets.
    pub fn new(
        limit: usize,
        in_profile: RedParams,
        middle: Option<RedParams>,
        out_profile: RedParams,
        weight: f64,
        mode: RioMode,
    ) -> Self {
        Rio {
            limit,
            mode,
            has_middle: middle.is_some(),
            fifo: VecDeque::new(),
            queued: [0; LEVELS],
            averages: [AverageQueue::new(weight); LEVELS],
            curves: [
                RedCurve::new(in_profile),
                RedCurve::new(middle.unwrap_or(out_profile)),
                RedCurve::new(out_profile),
            ],
            idle: IdlePeriod::default(),
            ecn: false,
            counters: ColorCounters::default(),
        }
    }

    /// The same queue marking ECN-capable packets CE instead of dropping them early.
    pub fn with_ecn(mut self, ecn: bool) -> Self {
        self.ecn = ecn;
        self
    }

    /// The precedence level of `color`.
    fn level(&self, color: Color) -> usize {
        match color {
            Color::Green => 0,
            Color::Yellow if self.has_middle => 1,
            Color::Yellow | Color::Red => 2,
        }
    }

    /// The average the packets of `color` are compared against, packets.
    pub fn average(&self, color: Color) -> f64 {
        self.averages[self.level(color)].value()
    }

    /// Instantaneous length each level's average follows.
    fn tracked_len(&self, level: usize) -> usize {
        match self.mode {
            RioMode::Coupled => self.queued[..=level].iter().sum(),
            RioMode::Decoupled => self.queued[level],
        }
    }
}

impl<P: Queued> QueueDiscipline<P> for Rio<P> {
    fn enqueue(
        &mut self,
        now: Time,
        mut packet: P,
        rng: &mut dyn RngCore,
    ) -> Result<(), (P, DropKind)> {
        let color = packet.color();
        let level = self.level(color);
        self.counters.arrived(color);
        let idle = if self.fifo.is_empty() {
            self.idle.idle_packets(now)
        } else {
            0.0
        };
        for l in 0..LEVELS {
            let len = self.tracked_len(l);
            self.averages[l].decay(idle);
            self.averages[l].update(len);
        }
        let early = self.curves[level].early_drop(self.averages[level].value(), rng);
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
        self.queued[level] += 1;
        self.fifo.push_back(packet);
        Ok(())
    }

    fn dequeue(&mut self, now: Time, link_rate: Rate) -> Dequeue<P> {
        match self.idle.dequeue(&mut self.fifo, now, link_rate) {
            Some(p) => {
                let level = self.level(p.color());
                self.queued[level] = self.queued[level].saturating_sub(1);
                Dequeue::Packet(p)
            }
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

    /// The QSTP paper's RIO parameters: (min_out, max_out, p_out, min_in, max_in, p_in) =
    /// (10, 20, 0.1, 20, 40, 0.02), queue of 50 packets.
    const IN: RedParams = RedParams {
        min_th: 20.0,
        max_th: 40.0,
        max_p: 0.02,
    };
    const OUT: RedParams = RedParams {
        min_th: 10.0,
        max_th: 20.0,
        max_p: 0.1,
    };

    fn paper_rio(mode: RioMode) -> Rio<Pkt> {
        Rio::new(50, IN, None, OUT, 0.002, mode)
    }

    /// Offer `pattern` repeatedly at twice the service rate; returns (green, red) edrop ratios.
    fn overload(q: &mut Rio<Pkt>, pattern: &[Color], arrivals: u32) -> (f64, f64) {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for i in 0..arrivals {
            let now = Time::ZERO + qstp_proto::Duration::from_millis(4) * i as u64;
            let _ = q.enqueue(now, pkt(i, pattern[i as usize % pattern.len()]), &mut rng);
            if i % 2 == 0 {
                q.dequeue(now, Rate::from_mbps(1));
            }
        }
        let ratio = |c: CodePointCounters| (c.edrops + c.ldrops) as f64 / c.packets as f64;
        (
            ratio(q.counters(Color::Green)),
            ratio(q.counters(Color::Red)),
        )
    }

    #[test]
    fn out_packets_are_dropped_first() {
        // A quarter of the traffic in profile: the out curve (10..20 on the total average) keeps
        // the queue below where the in curve (20..40 on the in average) starts. Only the start-up
        // transient, while the slow average lags the queue, overflows the queue.
        let mut q = paper_rio(RioMode::Coupled);
        let (green, red) = overload(
            &mut q,
            &[Color::Green, Color::Red, Color::Red, Color::Red],
            40_000,
        );
        assert_eq!(q.counters(Color::Green).edrops, 0);
        assert!(green < 0.01, "green loss {green}");
        assert!(red > 0.5, "red loss {red}");
        assert!(q.average(Color::Green) < IN.min_th);
        assert!(q.average(Color::Red) > OUT.min_th);
        assert_eq!(q.counters(Color::Green).packets, 10_000);
    }

    #[test]
    fn coupled_compares_red_against_all_and_green_against_green() {
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let mut q = Rio::new(1000, IN, None, OUT, 0.5, RioMode::Coupled);
        // With w = 0.5 the averages follow the queue closely. 30 green then 1 red.
        for i in 0..30 {
            q.enqueue(Time::ZERO, pkt(i, Color::Green), &mut rng)
                .unwrap();
        }
        // The red packet sees an average near 30 > max_out = 20: forced early drop.
        assert!(q.average(Color::Red) > 20.0);
        assert!(matches!(
            q.enqueue(Time::ZERO, pkt(99, Color::Red), &mut rng),
            Err((_, DropKind::Early))
        ));
        // Green is below its own max_in = 40 and is accepted (probability small at ~29).
        assert!(q.average(Color::Green) < 40.0);
    }

    #[test]
    fn decoupled_compares_each_colour_against_its_own_packets() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut q = Rio::new(1000, IN, None, OUT, 0.5, RioMode::Decoupled);
        for i in 0..30 {
            q.enqueue(Time::ZERO, pkt(i, Color::Green), &mut rng)
                .unwrap();
        }
        // No red packet queued: the red average is zero and a red packet passes.
        assert_eq!(q.average(Color::Red), 0.0);
        assert!(q.enqueue(Time::ZERO, pkt(99, Color::Red), &mut rng).is_ok());
        // Yellow without a middle curve is out of profile: same average and curve as red.
        assert_eq!(q.average(Color::Yellow), q.average(Color::Red));
    }

    #[test]
    fn middle_curve_gives_yellow_its_own_precedence() {
        let middle = RedParams {
            min_th: 15.0,
            max_th: 30.0,
            max_p: 0.05,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(10);
        let mut q = Rio::new(1000, IN, Some(middle), OUT, 0.5, RioMode::Coupled);
        for i in 0..10 {
            q.enqueue(Time::ZERO, pkt(i, Color::Green), &mut rng)
                .unwrap();
        }
        for i in 10..24 {
            q.enqueue(Time::ZERO, pkt(i, Color::Red), &mut rng).ok();
        }
        // Yellow's average counts green and yellow only (about 10), under its min_th of 15.
        assert!(q.average(Color::Yellow) < 15.0 && q.average(Color::Yellow) > 9.0);
        assert!(q.average(Color::Red) > q.average(Color::Yellow));
        assert!(q
            .enqueue(Time::ZERO, pkt(50, Color::Yellow), &mut rng)
            .is_ok());
        assert_eq!(q.counters(Color::Yellow).packets, 1);
    }

    #[test]
    fn overflow_is_counted_apart_from_early_drops() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let mut q = paper_rio(RioMode::Coupled);
        // A burst of 60 green at one instant: the slow average stays low, the limit of 50 bites.
        for i in 0..60 {
            let _ = q.enqueue(Time::ZERO, pkt(i, Color::Green), &mut rng);
        }
        assert_eq!(
            q.counters(Color::Green),
            CodePointCounters {
                packets: 60,
                ldrops: 10,
                edrops: 0,
                marks: 0
            }
        );
        assert_eq!(q.len(), 50);
    }
}
