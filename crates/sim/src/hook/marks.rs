//! Delegation by the network (Free & Stunts paper, footnote 2: "by marking the ECN bit in
//! appropriate packets, an ISP can delegate losses between the Free and the Stunts").
//!
//! The bottleneck's queue is wrapped: its own AQM marks as it always does (RFC 3168 §5), and as
//! each packet leaves, a mark the AQM put on one of the Free's packets is, for a fraction g of
//! them, taken off and put on the next ECN-capable packets of Stunts instead, as many as it takes
//! for their halvings (RFC 3168 §6.1.2) to give up at least half the Free's window, as Stunts do
//! for a loss the host hands them (§II-B). With reverse delegation on, while the Free runs above its target, a Stunt's mark goes
//! to the Free's next packet instead (§II-C). The fraction g is the host's controller's (eqs.
//! 3-4), which the host writes here every control period; the senders themselves react to every
//! mark they see, as plain TCP does.
//!
//! Moves happen at dequeue, where the link writes a mark into the packet itself, so a mark moved
//! off a packet never reaches it. A packet that came already marked from upstream cannot be told
//! from one marked here; the lab's scenarios have one marking queue per path.

use qstp_dataplane::color::Color;
use qstp_dataplane::ecn::Ecn;
use qstp_dataplane::link::QueuedPacket;
use qstp_dataplane::queue::{CodePointCounters, Dequeue, DropKind, QueueDiscipline};
use qstp_proto::{Rate, Time};
use rand::RngCore;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Marks owed at most to either side: a bound on the debt when the side that should take them
/// sends nothing ECN-capable for a while (a mark moved long after the congestion it signalled
/// would say nothing about the path).
const MAX_OWED: u64 = 64;

/// What the host and the bottleneck share: the controller's fraction, whether the Free runs
/// above its target, and the marks moved each way.
#[derive(Debug, Default)]
pub struct MarkShare {
    /// The fraction g of the Free's marks to move, as `f64` bits.
    fraction: AtomicU64,
    /// Whether Stunts' marks go to the Free (reverse delegation while it runs above target).
    reverse: AtomicBool,
    /// Stunts' marks per moved mark of the Free: the Free's window over the mean Stunt's,
    /// rounded up (at least one), so that the Stunts' halvings together give up at least half
    /// the Free's window (§II-B's total reduction).
    per_mark: AtomicU64,
    /// The Free's marks moved to Stunts.
    pub delegated: AtomicU64,
    /// The Free's marks left on it.
    pub kept: AtomicU64,
    /// Stunts' marks moved to the Free.
    pub taken_by_free: AtomicU64,
}

impl MarkShare {
    /// Set the controller's fraction g, whether reverse delegation is on now, and the windows
    /// of the Free and of the mean Stunt (any unit, the same for both).
    pub fn set(&self, fraction: f64, reverse: bool, free_window: u64, mean_stunt_window: u64) {
        self.fraction
            .store(fraction.clamp(0.0, 1.0).to_bits(), Ordering::Relaxed);
        self.reverse.store(reverse, Ordering::Relaxed);
        let per_mark = free_window
            .div_ceil(mean_stunt_window.max(1))
            .clamp(1, MAX_OWED);
        self.per_mark.store(per_mark, Ordering::Relaxed);
    }

    fn fraction(&self) -> f64 {
        f64::from_bits(self.fraction.load(Ordering::Relaxed))
    }

    fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// A queue whose marks on the Free's packets may move to the Stunts' (see the module).
pub struct MarkDelegation {
    inner: Box<dyn QueueDiscipline<QueuedPacket>>,
    /// Group index of the Free.
    free: u32,
    /// Group index of the Stunts.
    stunts: u32,
    share: Arc<MarkShare>,
    /// Error diffusion of g: exactly a fraction g of the Free's marks move, without a draw.
    carry: f64,
    /// Marks the Stunts owe the Free (to put on their next ECN-capable packets).
    owed_by_stunts: u64,
    /// Marks the Free owes the Stunts (reverse delegation).
    owed_by_free: u64,
    /// The Stunt flow marked last, so that successive moves go to different Stunts when the
    /// queue offers a choice (round robin, §II-B), not all to the busiest one.
    last_marked: Option<u32>,
}

impl MarkDelegation {
    /// Wrap `inner` for the Free of group `free` and the Stunts of group `stunts`.
    pub fn new(
        inner: Box<dyn QueueDiscipline<QueuedPacket>>,
        free: u32,
        stunts: u32,
        share: Arc<MarkShare>,
    ) -> Self {
        MarkDelegation {
            inner,
            free,
            stunts,
            share,
            carry: 0.0,
            owed_by_stunts: 0,
            owed_by_free: 0,
            last_marked: None,
        }
    }

    /// Move marks on the packet leaving now.
    fn leaving(&mut self, packet: &mut QueuedPacket) {
        if packet.group == self.free {
            if packet.ecn == Ecn::Ce {
                self.carry += self.share.fraction();
                if self.carry >= 1.0 {
                    self.carry -= 1.0;
                    // The AQM put this mark on an ECN-capable packet: it leaves as it came.
                    packet.ecn = Ecn::Ect0;
                    let per_mark = self.share.per_mark.load(Ordering::Relaxed).max(1);
                    self.owed_by_stunts = (self.owed_by_stunts + per_mark).min(MAX_OWED);
                    MarkShare::count(&self.share.delegated);
                } else {
                    MarkShare::count(&self.share.kept);
                }
            } else if packet.ecn.capable() && self.owed_by_free > 0 {
                self.owed_by_free -= 1;
                packet.ecn = Ecn::Ce;
                MarkShare::count(&self.share.taken_by_free);
            }
        } else if packet.group == self.stunts {
            if packet.ecn == Ecn::Ce {
                if self.share.reverse.load(Ordering::Relaxed) {
                    packet.ecn = Ecn::Ect0;
                    self.owed_by_free = (self.owed_by_free + 1).min(MAX_OWED);
                }
            } else if packet.ecn.capable()
                && self.owed_by_stunts > 0
                && self.last_marked != Some(packet.flow)
            {
                self.owed_by_stunts -= 1;
                packet.ecn = Ecn::Ce;
                self.last_marked = Some(packet.flow);
            } else if self.last_marked == Some(packet.flow) && self.owed_by_stunts > 0 {
                // The same Stunt again: the next one's packet takes the mark, unless this
                // Stunt is the only one sending (then it waits one packet, and takes it next).
                self.last_marked = None;
            }
        }
    }

    fn moved(&mut self, dequeued: Dequeue<QueuedPacket>) -> Dequeue<QueuedPacket> {
        match dequeued {
            Dequeue::Packet(mut p) => {
                self.leaving(&mut p);
                Dequeue::Packet(p)
            }
            other => other,
        }
    }
}

impl QueueDiscipline<QueuedPacket> for MarkDelegation {
    fn enqueue(
        &mut self,
        now: Time,
        packet: QueuedPacket,
        rng: &mut dyn RngCore,
    ) -> Result<(), (QueuedPacket, DropKind)> {
        self.inner.enqueue(now, packet, rng)
    }

    fn dequeue(&mut self, now: Time, link_rate: Rate) -> Dequeue<QueuedPacket> {
        let d = self.inner.dequeue(now, link_rate);
        self.moved(d)
    }

    fn take_dropped(&mut self) -> Option<(QueuedPacket, DropKind)> {
        self.inner.take_dropped()
    }

    fn enqueue_dequeue(
        &mut self,
        now: Time,
        packet: QueuedPacket,
        rng: &mut dyn RngCore,
        link_rate: Rate,
    ) -> Result<Dequeue<QueuedPacket>, (QueuedPacket, DropKind)> {
        let d = self.inner.enqueue_dequeue(now, packet, rng, link_rate)?;
        Ok(self.moved(d))
    }

    fn len(&self) -> usize {
        self.inner.len()
    }

    fn bytes(&self) -> u64 {
        self.inner.bytes()
    }

    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    fn counters(&self, color: Color) -> CodePointCounters {
        self.inner.counters(color)
    }

    fn class_counters(&self) -> Vec<(String, Color, CodePointCounters)> {
        self.inner.class_counters()
    }

    fn class_lengths(&self) -> Vec<(&str, usize, u64)> {
        self.inner.class_lengths()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qstp_dataplane::link::PacketId;
    use std::collections::VecDeque;

    /// A FIFO that marks every ECN-capable packet it is given (an AQM at full congestion).
    struct MarkAll(VecDeque<QueuedPacket>);

    impl QueueDiscipline<QueuedPacket> for MarkAll {
        fn enqueue(
            &mut self,
            _: Time,
            mut p: QueuedPacket,
            _: &mut dyn RngCore,
        ) -> Result<(), (QueuedPacket, DropKind)> {
            if p.ecn.capable() && p.group == 0 {
                p.ecn = Ecn::Ce;
            }
            self.0.push_back(p);
            Ok(())
        }
        fn dequeue(&mut self, _: Time, _: Rate) -> Dequeue<QueuedPacket> {
            self.0.pop_front().map_or(Dequeue::Empty, Dequeue::Packet)
        }
        fn len(&self) -> usize {
            self.0.len()
        }
        fn bytes(&self) -> u64 {
            0
        }
        fn counters(&self, _: Color) -> CodePointCounters {
            CodePointCounters::default()
        }
    }

    fn packet(id: u32, group: u32, flow: u32) -> QueuedPacket {
        QueuedPacket {
            id: PacketId(id),
            size: 1500,
            group,
            flow,
            color: Color::Red,
            ecn: Ecn::Ect0,
        }
    }

    /// Offer (group, flow) pairs in order, one packet out per packet in; the ECN field of each.
    fn run(q: &mut MarkDelegation, packets: &[(u32, u32)]) -> Vec<Ecn> {
        let mut rng = rand::rngs::mock::StepRng::new(0, 1);
        packets
            .iter()
            .enumerate()
            .map(|(i, &(g, f))| {
                match q.enqueue_dequeue(Time::ZERO, packet(i as u32, g, f), &mut rng, Rate::ZERO) {
                    Ok(Dequeue::Packet(p)) => p.ecn,
                    other => panic!("{other:?}"),
                }
            })
            .collect()
    }

    #[test]
    fn a_fraction_g_of_the_frees_marks_moves_to_different_stunts() {
        let share = Arc::new(MarkShare::default());
        share.set(0.5, false, 1, 1);
        let inner = Box::new(MarkAll(VecDeque::new()));
        let mut q = MarkDelegation::new(inner, 0, 1, share.clone());
        // Free (group 0, flow 0) then Stunts 1 and 2 (group 1) alternately.
        let order = [
            (0, 0),
            (1, 1),
            (1, 2),
            (0, 0),
            (1, 1),
            (1, 2),
            (0, 0),
            (1, 1),
            (1, 2),
        ];
        let got = run(&mut q, &order);
        use Ecn::{Ce, Ect0};
        // g = 0.5: the first mark stays (carry 0.5), the second moves (carry 1.0) to Stunt 1's
        // next packet, the third stays.
        assert_eq!(got, vec![Ce, Ect0, Ect0, Ect0, Ce, Ect0, Ce, Ect0, Ect0]);
        assert_eq!(share.delegated.load(Ordering::Relaxed), 1);
        assert_eq!(share.kept.load(Ordering::Relaxed), 2);
        // With g = 1 every mark moves, and successive ones go to different Stunts.
        share.set(1.0, false, 1, 1);
        // Stunt 1 was marked last, so its next packet passes and the one after takes the mark.
        let got = run(&mut q, &[(0, 0), (0, 0), (1, 1), (1, 1), (1, 2)]);
        assert_eq!(got, vec![Ect0, Ect0, Ect0, Ce, Ce]);
        assert_eq!(share.delegated.load(Ordering::Relaxed), 3);
        // A Free whose window is 2.5 times the mean Stunt's costs the Stunts three marks.
        share.set(1.0, false, 25, 10);
        let got = run(&mut q, &[(0, 0), (1, 1), (1, 2), (1, 1), (1, 2), (1, 1)]);
        assert_eq!(got, vec![Ect0, Ce, Ce, Ce, Ect0, Ect0]);
    }

    #[test]
    fn reverse_delegation_moves_a_stunts_mark_to_the_free_and_debts_are_bounded() {
        let share = Arc::new(MarkShare::default());
        share.set(1.0, true, 1, 1);
        // Marks only the Stunts' packets here: group 0 of MarkAll is the Stunts' group.
        let inner = Box::new(MarkAll(VecDeque::new()));
        let mut q = MarkDelegation::new(inner, 5, 0, share.clone());
        let got = run(&mut q, &[(0, 1), (5, 0), (5, 0)]);
        assert_eq!(got, vec![Ecn::Ect0, Ecn::Ce, Ecn::Ect0]);
        assert_eq!(share.taken_by_free.load(Ordering::Relaxed), 1);
        // A Free that sends nothing for a long while owes at most MAX_OWED marks.
        let stunts = vec![(0, 1); 1000];
        run(&mut q, &stunts);
        let frees = vec![(5, 0); 1000];
        let marked = run(&mut q, &frees)
            .iter()
            .filter(|&&e| e == Ecn::Ce)
            .count();
        assert_eq!(marked as u64, MAX_OWED);
    }
}
