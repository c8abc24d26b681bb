//! FQ-CoDel (RFC 8290): flows hashed into `flows` queues, each with CoDel's control law, served
//! by deficit round robin with a `quantum` of bytes, new flows before old ones.
//!
//! The flow of a packet is [`Queued::flow`] (the simulator's flow id, the testbed's 5-tuple
//! flow). The queues share one limit of `limit` packets; beyond it, the head of the queue with
//! the most bytes is dropped (RFC 8290 §4.1.1), which is how a thin flow keeps its packets while
//! a fat one fills the buffer.

use super::codel::{CoDelParams, CoDelState, Timed, TimedFifo};
use super::{read_limit, validate_limit, QueueKind, QueueSpecError};
use super::{CodePointCounters, ColorCounters, Dequeue, DropKind, QueueDiscipline, Queued};
use crate::color::Color;
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;
use qstp_proto::{Rate, Time};
use rand::RngCore;
use std::collections::VecDeque;

/// Most flow queues a scenario may ask for (a bound on the queue's state; Linux allows 65536).
pub const MAX_FLOWS: usize = 65_536;

/// `kind = "fq-codel"`: FQ-CoDel.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FqCoDelSpec {
    /// Capacity of all flow queues together, packets (RFC 8290 §5.1.3: 10240 in Linux).
    pub limit: usize,
    /// Flow queues flows are hashed into (RFC 8290 §5.1.2: 1024).
    pub flows: usize,
    /// Bytes a queue may send per round (RFC 8290 §5.1.1: 1514, an Ethernet frame).
    pub quantum: u32,
    /// CoDel's target, interval and ECN, per flow queue (RFC 8290 §5.2).
    #[serde(flatten)]
    pub codel: CoDelParams,
}

impl Kind for FqCoDelSpec {
    const DOC: &'static str = "FQ-CoDel (RFC 8290): limit (packets, all flows), flows (1024), \
         quantum (1514 bytes), target (5ms), interval (100ms), ecn (false; true: mark CE on ECT \
         packets instead of dropping)";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        let limit = read_limit(t)?;
        let flows = t.opt_u64("flows")?.unwrap_or(1024);
        let quantum = t.opt_u64("quantum")?.unwrap_or(1514);
        Ok(FqCoDelSpec {
            limit,
            flows: usize::try_from(flows).unwrap_or(usize::MAX),
            quantum: u32::try_from(quantum).unwrap_or(u32::MAX),
            codel: CoDelParams::read(t)?,
        })
    }
}

impl QueueKind for FqCoDelSpec {
    fn validate(&self) -> Result<(), QueueSpecError> {
        validate_limit(self.limit, None)?;
        if !(1..=MAX_FLOWS).contains(&self.flows) {
            return Err(QueueSpecError::Param {
                key: "flows",
                reason: format!("{} is outside 1..={MAX_FLOWS}", self.flows),
            });
        }
        if !(1..=1_000_000).contains(&self.quantum) {
            return Err(QueueSpecError::Param {
                key: "quantum",
                reason: format!("{} bytes is outside 1..=1000000", self.quantum),
            });
        }
        self.codel.validate()
    }
    fn build<P: Queued + 'static>(&self, _group_names: &[String]) -> Box<dyn QueueDiscipline<P>> {
        Box::new(FqCoDel::new(*self))
    }
}

/// Which list a flow queue is on (RFC 8290 §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    /// Not scheduled: empty and forgotten.
    None,
    /// new_flows.
    New,
    /// old_flows.
    Old,
}

/// One flow queue.
#[derive(Debug, Clone)]
struct FlowQueue<P> {
    queue: Timed<P>,
    codel: CoDelState,
    /// Bytes it may still send this round (RFC 8290 §4.2).
    deficit: i64,
    list: List,
}

/// The flow queue being served, as CoDel sees it: its own packets, and the backlog of all of
/// them (the "bytes() <= maxpacket" test on the whole queue, as Linux's fq_codel passes it).
struct Served<'a, P> {
    queue: &'a mut Timed<P>,
    total_bytes: &'a mut u64,
    total_len: &'a mut usize,
}

impl<P: Queued> TimedFifo<P> for Served<'_, P> {
    fn pop(&mut self) -> Option<(Time, P)> {
        let (at, p) = self.queue.pop()?;
        *self.total_bytes = self.total_bytes.saturating_sub(p.size() as u64);
        *self.total_len = self.total_len.saturating_sub(1);
        Some((at, p))
    }
    fn backlog(&self) -> u64 {
        *self.total_bytes
    }
}

/// FQ-CoDel's flow queues and their schedule.
#[derive(Debug, Clone)]
pub struct FqCoDel<P> {
    spec: FqCoDelSpec,
    queues: Vec<FlowQueue<P>>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    total_len: usize,
    total_bytes: u64,
    dropped: VecDeque<(P, DropKind)>,
    counters: ColorCounters,
}

impl<P> FqCoDel<P> {
    /// An empty FQ-CoDel queue.
    pub fn new(spec: FqCoDelSpec) -> Self {
        let flows = spec.flows.clamp(1, MAX_FLOWS);
        FqCoDel {
            spec,
            queues: (0..flows)
                .map(|_| FlowQueue {
                    queue: Timed::default(),
                    codel: CoDelState::default(),
                    deficit: 0,
                    list: List::None,
                })
                .collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            total_len: 0,
            total_bytes: 0,
            dropped: VecDeque::new(),
            counters: ColorCounters::default(),
        }
    }

    /// RFC 8290 §4.1.1: the flow queue of flow `flow`, by a hash of it (a fixed multiplicative
    /// hash, so runs are reproducible).
    fn bucket(&self, flow: u32) -> usize {
        let h = u64::from(flow).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        (h % self.queues.len() as u64) as usize
    }
}

impl<P: Queued> FqCoDel<P> {
    /// RFC 8290 §4.1.1: over the limit, drop the head of the queue with the most bytes.
    fn drop_from_fattest(&mut self) -> Option<P> {
        let fattest = (0..self.queues.len()).max_by_key(|&i| (self.queues[i].queue.bytes, i))?;
        let (_, packet) = self.queues[fattest].queue.pop()?;
        self.total_len -= 1;
        self.total_bytes = self.total_bytes.saturating_sub(packet.size() as u64);
        self.counters.dropped(packet.color(), DropKind::Overflow);
        Some(packet)
    }
}

/// Take the head of new_flows (`from_new`) or of old_flows.
fn pop_front(new_flows: &mut VecDeque<usize>, old_flows: &mut VecDeque<usize>, from_new: bool) {
    if from_new {
        new_flows.pop_front();
    } else {
        old_flows.pop_front();
    }
}

impl<P: Queued> QueueDiscipline<P> for FqCoDel<P> {
    fn enqueue(
        &mut self,
        now: Time,
        packet: P,
        _rng: &mut dyn RngCore,
    ) -> Result<(), (P, DropKind)> {
        let color = packet.color();
        self.counters.arrived(color);
        if self.spec.limit == 0 {
            self.counters.dropped(color, DropKind::Overflow);
            return Err((packet, DropKind::Overflow));
        }
        let i = self.bucket(packet.flow());
        let quantum = i64::from(self.spec.quantum);
        let q = &mut self.queues[i];
        q.codel.arrived(packet.size());
        self.total_len += 1;
        self.total_bytes += packet.size() as u64;
        q.queue.push(now, packet);
        if q.list == List::None {
            // RFC 8290 §4.1.1: a queue that was not active joins new_flows with a quantum.
            q.list = List::New;
            q.deficit = quantum;
            self.new_flows.push_back(i);
        }
        if self.total_len > self.spec.limit {
            if let Some(victim) = self.drop_from_fattest() {
                return Err((victim, DropKind::Overflow));
            }
        }
        Ok(())
    }

    fn dequeue(&mut self, now: Time, _link_rate: Rate) -> Dequeue<P> {
        let quantum = i64::from(self.spec.quantum);
        loop {
            // RFC 8290 §4.2: new flows first, then old flows.
            let (i, from_new) = match self.new_flows.front() {
                Some(&i) => (i, true),
                None => match self.old_flows.front() {
                    Some(&i) => (i, false),
                    None => return Dequeue::Empty,
                },
            };
            let q = &mut self.queues[i];
            if q.deficit <= 0 {
                // RFC 8290 §4.2: out of deficit: a new quantum, to the tail of old_flows.
                q.deficit += quantum;
                q.list = List::Old;
                pop_front(&mut self.new_flows, &mut self.old_flows, from_new);
                self.old_flows.push_back(i);
                continue;
            }
            let mut served = Served {
                queue: &mut q.queue,
                total_bytes: &mut self.total_bytes,
                total_len: &mut self.total_len,
            };
            let packet = q.codel.dequeue(
                now,
                &self.spec.codel,
                &mut served,
                &mut self.dropped,
                &mut self.counters,
            );
            match packet {
                Some(p) => {
                    q.deficit -= p.size() as i64;
                    return Dequeue::Packet(p);
                }
                None => {
                    // RFC 8290 §4.2: an empty new flow goes to old_flows if others wait there
                    // (so it cannot starve them by coming back as new), else it is removed.
                    pop_front(&mut self.new_flows, &mut self.old_flows, from_new);
                    if from_new && !self.old_flows.is_empty() {
                        q.list = List::Old;
                        self.old_flows.push_back(i);
                    } else {
                        q.list = List::None;
                    }
                }
            }
        }
    }

    fn take_dropped(&mut self) -> Option<(P, DropKind)> {
        self.dropped.pop_front()
    }

    fn len(&self) -> usize {
        self.total_len
    }

    fn bytes(&self) -> u64 {
        self.total_bytes
    }

    fn counters(&self, color: Color) -> CodePointCounters {
        self.counters.get(color)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_packet::*;
    use super::*;
    use qstp_proto::Duration;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn spec(limit: usize) -> FqCoDelSpec {
        FqCoDelSpec {
            limit,
            flows: 1024,
            quantum: 1514,
            codel: CoDelParams::default(),
        }
    }

    /// A fat flow (0) sending 3 packets per ms and a thin one (1) a packet every 10 ms, on a
    /// link taking one 1000-byte packet per ms, for `ms` ms: the thin flow's delays (ms) and the
    /// packets of each flow that left.
    fn fat_and_thin(q: &mut dyn QueueDiscipline<FlowPkt>, ms: u64) -> (Vec<u64>, [u64; 2]) {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut sent_at = std::collections::BTreeMap::new();
        let (mut delays, mut served, mut id) = (Vec::new(), [0u64; 2], 0);
        for t in 0..ms {
            let now = Time::ZERO + Duration::from_millis(t);
            for _ in 0..3 {
                let _ = q.enqueue(now, flow_pkt(id, 0, false), &mut rng);
                id += 1;
            }
            if t % 10 == 0 {
                sent_at.insert(id, t);
                let _ = q.enqueue(now, flow_pkt(id, 1, false), &mut rng);
                id += 1;
            }
            if let Dequeue::Packet(p) = q.dequeue(now, Rate::from_mbps(8)) {
                served[p.flow as usize] += 1;
                if p.flow == 1 {
                    delays.push(t - sent_at[&p.id]);
                }
            }
            while q.take_dropped().is_some() {}
        }
        (delays, served)
    }

    #[test]
    fn fq_codel_isolates_a_thin_flow_from_a_fat_one() {
        // The thin flow's packets find their queue empty, join new_flows and leave at the next
        // dequeue; behind a single FIFO of the same size they would wait for the fat backlog.
        let mut fq = FqCoDel::new(spec(1000));
        let (delays, served) = fat_and_thin(&mut fq, 3000);
        assert_eq!(served[1], 300, "every thin packet left");
        // (The first waits 2 ms: the fat flow, first in new_flows, spends its quantum first.)
        assert!(delays.iter().all(|&d| d <= 2), "{delays:?}");
        let mut fifo = super::super::CoDel::new(1000, CoDelParams::default());
        let (fifo_delays, _) = fat_and_thin(&mut fifo, 3000);
        let prompt = fifo_delays.iter().filter(|&&d| d <= 1).count();
        assert!(
            prompt < 10,
            "a shared FIFO delays the thin flow: {fifo_delays:?}"
        );
    }

    #[test]
    fn fq_codel_overflow_drops_from_the_fattest_queue() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut fq = FqCoDel::new(spec(10));
        for i in 0..9 {
            fq.enqueue(Time::ZERO, flow_pkt(i, 0, false), &mut rng)
                .unwrap();
        }
        fq.enqueue(Time::ZERO, flow_pkt(100, 1, false), &mut rng)
            .unwrap();
        // The 11th packet, of the thin flow, is taken; the fat flow's head goes.
        let Err((victim, DropKind::Overflow)) =
            fq.enqueue(Time::ZERO, flow_pkt(101, 1, false), &mut rng)
        else {
            panic!("expected a drop");
        };
        assert_eq!((victim.flow, victim.id), (0, 0));
        assert_eq!(fq.len(), 10);
        assert_eq!(fq.bytes(), 10_000);
    }

    #[test]
    fn fq_codel_serves_flows_a_quantum_each() {
        // Two backlogged flows with equal packets get equal service.
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut fq = FqCoDel::new(spec(1000));
        for i in 0..100 {
            fq.enqueue(Time::ZERO, flow_pkt(i, i % 2, false), &mut rng)
                .unwrap();
        }
        let mut counts = [0; 2];
        for _ in 0..50 {
            if let Dequeue::Packet(p) = fq.dequeue(Time::ZERO, Rate::from_mbps(8)) {
                counts[p.flow as usize] += 1;
            }
        }
        assert_eq!(counts, [25, 25]);
    }

    #[test]
    fn fq_codel_validation_bounds_flows_and_quantum() {
        let mut s = spec(100);
        s.flows = 0;
        assert_eq!(s.validate().unwrap_err().field(), "flows");
        s.flows = MAX_FLOWS + 1;
        assert_eq!(s.validate().unwrap_err().field(), "flows");
        let mut s = spec(100);
        s.quantum = 0;
        assert_eq!(s.validate().unwrap_err().field(), "quantum");
        assert_eq!(spec(100).validate(), Ok(()));
    }
}
