//! Drop-tail: a FIFO that refuses packets once full.

use super::CodePointCounters;
use super::{read_limit, validate_limit, QueueKind, QueueSpecError};
use super::{ColorCounters, Dequeue, DropKind, QueueDiscipline, Queued};
use crate::color::Color;
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;
use qstp_proto::{Rate, Time};
use rand::RngCore;
use std::collections::VecDeque;

/// `kind = "droptail"`: a FIFO of `limit` packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DropTailSpec {
    /// Capacity, packets.
    pub limit: usize,
}

impl Kind for DropTailSpec {
    const DOC: &'static str = "drop-tail FIFO: limit (packets)";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        Ok(DropTailSpec {
            limit: read_limit(t)?,
        })
    }
}

impl QueueKind for DropTailSpec {
    fn validate(&self) -> Result<(), QueueSpecError> {
        validate_limit(self.limit, None)
    }
    fn build<P: Queued + 'static>(&self, _group_names: &[String]) -> Box<dyn QueueDiscipline<P>> {
        Box::new(DropTail::new(self.limit))
    }
}

/// A FIFO holding at most `limit` packets; with a threshold below the limit, it also refuses
/// out-of-profile (yellow or red) packets once it holds `threshold` (ATM's selective cell
/// discard, [`super::ScdSpec`]).
#[derive(Debug, Clone)]
pub struct DropTail<P> {
    limit: usize,
    /// Packets held at or above which out-of-profile packets are refused (early).
    threshold: usize,
    fifo: VecDeque<P>,
    counters: ColorCounters,
}

impl<P> DropTail<P> {
    /// An empty FIFO of `limit` packets.
    pub fn new(limit: usize) -> Self {
        Self::with_threshold(limit, limit)
    }

    /// An empty FIFO of `limit` packets that takes out-of-profile packets only while it holds
    /// fewer than `threshold`.
    pub fn with_threshold(limit: usize, threshold: usize) -> Self {
        DropTail {
            limit,
            threshold,
            fifo: VecDeque::new(),
            counters: ColorCounters::default(),
        }
    }
}

impl<P: Queued> DropTail<P> {
    /// Count an arriving packet and decide whether the FIFO takes it (it is not stored here).
    fn admit(&mut self, packet: P) -> Result<P, (P, DropKind)> {
        let color = packet.color();
        self.counters.arrived(color);
        let refused = if self.fifo.len() >= self.limit {
            Some(DropKind::Overflow)
        } else if self.fifo.len() >= self.threshold && color != Color::Green {
            Some(DropKind::Early)
        } else {
            None
        };
        if let Some(kind) = refused {
            self.counters.dropped(color, kind);
            return Err((packet, kind));
        }
        Ok(packet)
    }
}

impl<P: Queued> QueueDiscipline<P> for DropTail<P> {
    fn enqueue(
        &mut self,
        _now: Time,
        packet: P,
        _rng: &mut dyn RngCore,
    ) -> Result<(), (P, DropKind)> {
        let packet = self.admit(packet)?;
        self.fifo.push_back(packet);
        Ok(())
    }

    fn enqueue_dequeue(
        &mut self,
        now: Time,
        packet: P,
        rng: &mut dyn RngCore,
        link_rate: Rate,
    ) -> Result<Dequeue<P>, (P, DropKind)> {
        if !self.fifo.is_empty() {
            return super::enqueue_then_dequeue(self, now, packet, rng, link_rate);
        }
        // Empty: the packet would be the FIFO's only one, and leave at once.
        self.admit(packet).map(Dequeue::Packet)
    }

    fn dequeue(&mut self, _now: Time, _link_rate: Rate) -> Dequeue<P> {
        match self.fifo.pop_front() {
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

    #[test]
    fn fifo_order_and_tail_drop() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut q = DropTail::new(3);
        for i in 0..5 {
            let color = if i % 2 == 0 { Color::Green } else { Color::Red };
            let r = q.enqueue(Time::ZERO, pkt(i, color), &mut rng);
            assert_eq!(r.is_ok(), i < 3, "packet {i}");
            if let Err((p, kind)) = r {
                assert_eq!((p.id, kind), (i, DropKind::Overflow));
            }
        }
        assert_eq!(
            q.counters(Color::Green),
            CodePointCounters {
                packets: 3,
                ldrops: 1,
                edrops: 0,
                marks: 0
            }
        );
        assert_eq!(
            q.counters(Color::Red),
            CodePointCounters {
                packets: 2,
                ldrops: 1,
                edrops: 0,
                marks: 0
            }
        );
        let ids: Vec<u32> =
            std::iter::from_fn(|| match q.dequeue(Time::ZERO, Rate::from_mbps(1)) {
                Dequeue::Packet(p) => Some(p.id),
                _ => None,
            })
            .collect();
        assert_eq!(ids, [0, 1, 2]);
        assert!(q.is_empty());
        assert_eq!(q.dequeue(Time::ZERO, Rate::from_mbps(1)), Dequeue::Empty);
    }

    /// One step of an idle link (`enqueue_dequeue`) gives what `enqueue` then `dequeue` give,
    /// and leaves the same FIFO and counters, whatever the queue holds and the colours.
    mod idle_link_step {
        use super::*;
        use proptest::prelude::*;

        fn colour(c: u8) -> Color {
            [Color::Green, Color::Yellow, Color::Red][usize::from(c % 3)]
        }

        fn snapshot(q: &DropTail<Pkt>) -> (Vec<u32>, [CodePointCounters; 3]) {
            (
                q.fifo.iter().map(|p| p.id).collect(),
                [Color::Green, Color::Yellow, Color::Red].map(|c| q.counters(c)),
            )
        }

        proptest! {
            #[test]
            fn matches_enqueue_then_dequeue(
                limit in 0usize..4,
                threshold in 0usize..4,
                held in proptest::collection::vec(0u8..3, 0..4),
                arriving in 0u8..3,
            ) {
                let mut rng = ChaCha8Rng::seed_from_u64(0);
                let mut one = DropTail::with_threshold(limit, threshold);
                for (i, &c) in held.iter().enumerate() {
                    let _ = one.enqueue(Time::ZERO, pkt(i as u32, colour(c)), &mut rng);
                }
                let mut two = one.clone();
                let packet = pkt(99, colour(arriving));
                let rate = Rate::from_mbps(1);
                let stepped = one.enqueue_dequeue(Time::ZERO, packet, &mut rng, rate);
                let called = two
                    .enqueue(Time::ZERO, packet, &mut rng)
                    .map(|()| two.dequeue(Time::ZERO, rate));
                prop_assert_eq!(stepped, called);
                prop_assert_eq!(snapshot(&one), snapshot(&two));
            }
        }
    }
}
