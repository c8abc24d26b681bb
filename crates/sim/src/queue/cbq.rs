//! Class-based queueing: each class a FIFO and a guaranteed rate; a class over its rate may use
//! link capacity the others leave idle only if it may borrow (the QSTP paper §5.4 runs CBQ in this
//! "borrow mode": best effort borrows bandwidth of the reserved pipe while it is not congested).
//!
//! Each class meters its rate with a token balance: a class whose balance is not negative is
//! under its rate. Under-rate classes are served first, round robin (the balances make the shares
//! follow the rates); when none is, borrowing classes share the idle capacity round robin without
//! being charged; classes that may not borrow wait for their balance to recover.

use super::CodePointCounters;
use super::{ColorCounters, Dequeue, DropKind, QueueDiscipline, Queued, COLORS};
use crate::classify::{ClassId, Classifier, PacketMeta};
use crate::color::Color;
use crate::spec::CbqClass;
use qstp_proto::{Rate, Time};
use rand::RngCore;
use std::collections::VecDeque;

/// Units of balance per byte: bit-nanoseconds, so that `rate * elapsed` is exact.
const UNITS_PER_BYTE: i128 = 8 * 1_000_000_000;

/// Most a class's balance can grow while it is idle, bytes: two full-sized packets, so a class
/// returning from idle sends at most a short burst above its rate.
pub const CLASS_BURST_BYTES: i128 = 3_000;

/// One class: its FIFO, rate meter and counters.
#[derive(Debug, Clone)]
struct Class<P> {
    name: String,
    rate: Rate,
    borrow: bool,
    limit: usize,
    fifo: VecDeque<P>,
    /// Tokens held, bit-nanoseconds; negative once the class has sent above its rate.
    balance: i128,
    refilled_at: Option<Time>,
    counters: ColorCounters,
}

impl<P> Class<P> {
    fn refill(&mut self, now: Time) {
        let elapsed = self
            .refilled_at
            .map_or(0, |t| now.saturating_since(t).as_nanos());
        let later = match self.refilled_at {
            Some(t) => now > t,
            None => true,
        };
        if later {
            self.refilled_at = Some(now);
        }
        let earned = (self.rate.bps() as i128).saturating_mul(elapsed as i128);
        self.balance = self
            .balance
            .saturating_add(earned)
            .min(CLASS_BURST_BYTES * UNITS_PER_BYTE);
    }

    fn under_rate(&self) -> bool {
        self.balance >= 0
    }

    /// When the balance is back to zero, if it ever will be.
    fn eligible_at(&self, now: Time) -> Option<Time> {
        if self.balance >= 0 {
            return Some(now);
        }
        let bps = self.rate.bps() as i128;
        if bps == 0 {
            return None;
        }
        let ns = (-self.balance + bps - 1) / bps;
        Some(now + qstp_proto::Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX)))
    }
}

/// Class-based queueing with per-class guaranteed rates and optional borrowing.
#[derive(Debug, Clone)]
pub struct Cbq<P> {
    classes: Vec<Class<P>>,
    /// Which class each packet goes to (a class id beyond the classes means the last class).
    classifier: Classifier,
    /// Round-robin positions among under-rate and among borrowing classes.
    next_under: usize,
    next_borrow: usize,
    len: usize,
}

impl<P> Cbq<P> {
    /// A CBQ over `classes`; `group_names[i]` names group `i`, and a group no class lists goes
    /// to the last class. With no class at all, one borrowing catch-all class is made.
    pub fn new(classes: &[CbqClass], group_names: &[String]) -> Self {
        let last = classes.len().saturating_sub(1) as ClassId;
        let by_group = group_names
            .iter()
            .map(|g| {
                classes
                    .iter()
                    .position(|c| c.groups.contains(g))
                    .map_or(last, |i| i as ClassId)
            })
            .collect();
        Self::with_classifier(
            classes,
            Classifier::ByGroup {
                classes: by_group,
                default: last,
            },
        )
    }

    /// A CBQ over `classes` (their `groups` lists ignored) whose packets `classifier` sends to
    /// a class by index (by DSCP or 5-tuple in a real forwarder); an index beyond the classes
    /// means the last class. With no class at all, one borrowing catch-all class is made.
    pub fn with_classifier(classes: &[CbqClass], classifier: Classifier) -> Self {
        let mut built: Vec<Class<P>> = classes
            .iter()
            .map(|c| Class {
                name: c.name.clone(),
                rate: c.rate,
                borrow: c.borrow,
                limit: c.limit,
                fifo: VecDeque::new(),
                balance: CLASS_BURST_BYTES * UNITS_PER_BYTE,
                refilled_at: None,
                counters: ColorCounters::default(),
            })
            .collect();
        if built.is_empty() {
            built.push(Class {
                name: "default".into(),
                rate: Rate::ZERO,
                borrow: true,
                limit: 1,
                fifo: VecDeque::new(),
                balance: 0,
                refilled_at: None,
                counters: ColorCounters::default(),
            });
        }
        Cbq {
            classes: built,
            classifier,
            next_under: 0,
            next_borrow: 0,
            len: 0,
        }
    }

    /// The class index packets of group `group` go to.
    pub fn class_of(&self, group: usize) -> usize {
        let group = u32::try_from(group).unwrap_or(u32::MAX);
        self.class_index(&PacketMeta::of_group(group))
    }

    /// The class index a packet described by `meta` goes to.
    #[inline]
    pub fn class_index(&self, meta: &PacketMeta) -> usize {
        let last = self.classes.len() - 1;
        (self.classifier.classify(meta) as usize).min(last)
    }

    /// Pop the head of class `index`.
    fn serve(&mut self, index: usize, charge: bool) -> Option<P>
    where
        P: Queued,
    {
        let class = &mut self.classes[index];
        let packet = class.fifo.pop_front()?;
        if charge {
            class.balance -= packet.size() as i128 * UNITS_PER_BYTE;
        }
        self.len -= 1;
        Some(packet)
    }

    /// The first class, round robin from `start`, that is backlogged and satisfies `pick`.
    fn round_robin(&self, start: usize, pick: impl Fn(&Class<P>) -> bool) -> Option<usize> {
        let n = self.classes.len();
        (0..n)
            .map(|k| (start + k) % n)
            .find(|&i| !self.classes[i].fifo.is_empty() && pick(&self.classes[i]))
    }
}

impl<P: Queued> QueueDiscipline<P> for Cbq<P> {
    fn enqueue(
        &mut self,
        _now: Time,
        packet: P,
        _rng: &mut dyn RngCore,
    ) -> Result<(), (P, DropKind)> {
        let index = self.class_index(&packet.meta());
        let class = &mut self.classes[index];
        class.counters.arrived(packet.color());
        if class.fifo.len() >= class.limit {
            class.counters.dropped(packet.color(), DropKind::Overflow);
            return Err((packet, DropKind::Overflow));
        }
        class.fifo.push_back(packet);
        self.len += 1;
        Ok(())
    }

    fn dequeue(&mut self, now: Time, _link_rate: Rate) -> Dequeue<P> {
        if self.len == 0 {
            return Dequeue::Empty;
        }
        for class in &mut self.classes {
            class.refill(now);
        }
        let n = self.classes.len();
        // Classes within their guaranteed rate go first.
        if let Some(i) = self.round_robin(self.next_under, Class::under_rate) {
            self.next_under = (i + 1) % n;
            if let Some(p) = self.serve(i, true) {
                return Dequeue::Packet(p);
            }
        }
        // QSTP paper §5.4, borrow mode: capacity nobody is entitled to right now goes to the
        // classes allowed to borrow, free of charge.
        if let Some(i) = self.round_robin(self.next_borrow, |c| c.borrow) {
            self.next_borrow = (i + 1) % n;
            if let Some(p) = self.serve(i, false) {
                return Dequeue::Packet(p);
            }
        }
        // Only classes over their rate that may not borrow have packets: wait for the first.
        let wake = self
            .classes
            .iter()
            .filter(|c| !c.fifo.is_empty())
            .filter_map(|c| c.eligible_at(now))
            .min();
        Dequeue::Wait(wake.unwrap_or(Time::MAX))
    }

    fn len(&self) -> usize {
        self.len
    }

    fn bytes(&self) -> u64 {
        self.classes
            .iter()
            .map(|c| super::fifo_bytes(&c.fifo))
            .sum()
    }

    fn class_lengths(&self) -> Vec<(&str, usize, u64)> {
        self.classes
            .iter()
            .map(|c| (c.name.as_str(), c.fifo.len(), super::fifo_bytes(&c.fifo)))
            .collect()
    }

    fn counters(&self, color: Color) -> CodePointCounters {
        self.classes
            .iter()
            .fold(CodePointCounters::default(), |sum, class| {
                let c = class.counters.get(color);
                CodePointCounters {
                    packets: sum.packets + c.packets,
                    ldrops: sum.ldrops + c.ldrops,
                    edrops: sum.edrops + c.edrops,
                }
            })
    }

    fn class_counters(&self) -> Vec<(String, Color, CodePointCounters)> {
        self.classes
            .iter()
            .flat_map(|class| {
                COLORS
                    .iter()
                    .map(move |&color| (class.name.clone(), color, class.counters.get(color)))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_packet::*;
    use super::*;
    use qstp_proto::Duration;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    const LINK: Rate = Rate::from_mbps(1);

    fn class(name: &str, kbps: u64, borrow: bool, groups: &[&str]) -> CbqClass {
        CbqClass {
            name: name.into(),
            rate: Rate::from_kbps(kbps),
            borrow,
            groups: groups.iter().map(|g| g.to_string()).collect(),
            limit: 50,
        }
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    /// Run a 1 Mbit/s link for `secs` seconds with the groups in `backlogged` kept saturated;
    /// returns the bytes each group sent.
    fn run(q: &mut Cbq<Pkt>, backlogged: &[usize], groups: usize, secs: u64) -> Vec<u64> {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut sent = vec![0u64; groups];
        let mut now = Time::ZERO;
        let end = Time::ZERO + Duration::from_secs(secs);
        let mut id = 0;
        while now < end {
            for &g in backlogged {
                while q
                    .enqueue(
                        now,
                        Pkt {
                            id,
                            size: 1000,
                            color: Color::Green,
                            group: g,
                        },
                        &mut rng,
                    )
                    .is_ok()
                {
                    id += 1;
                }
            }
            match q.dequeue(now, LINK) {
                Dequeue::Packet(p) => {
                    sent[p.group] += p.size as u64;
                    now += LINK.transmit_time(p.size);
                }
                Dequeue::Wait(t) => {
                    assert!(t > now, "wait must move time forward");
                    now = t;
                }
                Dequeue::Empty => now += Duration::from_millis(1),
            }
        }
        sent
    }

    fn kbps(bytes: u64, secs: u64) -> f64 {
        bytes as f64 * 8.0 / secs as f64 / 1000.0
    }

    #[test]
    fn saturated_classes_get_their_guaranteed_rates() {
        let mut q = Cbq::new(
            &[
                class("qstp", 300, false, &["a"]),
                class("be", 700, true, &["b"]),
            ],
            &names(&["a", "b"]),
        );
        let sent = run(&mut q, &[0, 1], 2, 60);
        assert!(
            (kbps(sent[0], 60) - 300.0).abs() < 5.0,
            "{}",
            kbps(sent[0], 60)
        );
        assert!(
            (kbps(sent[1], 60) - 700.0).abs() < 5.0,
            "{}",
            kbps(sent[1], 60)
        );
    }

    #[test]
    fn a_borrowing_class_takes_the_idle_capacity() {
        let mut q = Cbq::new(
            &[
                class("qstp", 300, false, &["a"]),
                class("be", 700, true, &["b"]),
            ],
            &names(&["a", "b"]),
        );
        let sent = run(&mut q, &[1], 2, 30);
        assert_eq!(sent[0], 0);
        assert!(kbps(sent[1], 30) > 995.0, "{}", kbps(sent[1], 30));
    }

    #[test]
    fn a_class_that_may_not_borrow_waits_at_its_rate() {
        let mut q = Cbq::new(
            &[
                class("qstp", 300, false, &["a"]),
                class("be", 700, true, &["b"]),
            ],
            &names(&["a", "b"]),
        );
        let sent = run(&mut q, &[0], 2, 30);
        // The initial burst allowance adds at most 3000 bytes.
        let rate = kbps(sent[0], 30);
        assert!((rate - 300.0).abs() < 2.0, "{rate}");
        // And the wait it announces is exactly when its balance recovers.
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut q = Cbq::new(&[class("only", 8, false, &["a"])], &names(&["a"]));
        for id in 0..5 {
            q.enqueue(
                Time::ZERO,
                Pkt {
                    id,
                    size: 1000,
                    color: Color::Red,
                    group: 0,
                },
                &mut rng,
            )
            .unwrap();
        }
        // Balance 3000 B: packets at 3000 -> 2000 -> 1000 -> 0 -> -1000 go, then a 1000 B debt at
        // 1000 B/s takes exactly 1 s.
        for _ in 0..4 {
            assert!(matches!(q.dequeue(Time::ZERO, LINK), Dequeue::Packet(_)));
        }
        assert_eq!(
            q.dequeue(Time::ZERO, LINK),
            Dequeue::Wait(Time::ZERO + Duration::from_secs(1))
        );
        assert!(matches!(
            q.dequeue(Time::ZERO + Duration::from_secs(1), LINK),
            Dequeue::Packet(_)
        ));
    }

    #[test]
    fn two_borrowing_classes_share_the_spare_capacity() {
        let mut q = Cbq::new(
            &[class("a", 200, true, &["a"]), class("b", 200, true, &["b"])],
            &names(&["a", "b"]),
        );
        let sent = run(&mut q, &[0, 1], 2, 30);
        assert!((kbps(sent[0], 30) - 500.0).abs() < 10.0, "{sent:?}");
        assert!((kbps(sent[1], 30) - 500.0).abs() < 10.0, "{sent:?}");
    }

    #[test]
    fn unlisted_groups_go_to_the_last_class_and_counters_are_per_class() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut q = Cbq::new(
            &[
                class("gold", 300, false, &["a"]),
                class("be", 700, true, &[]),
            ],
            &names(&["a", "b", "c"]),
        );
        assert_eq!(
            (q.class_of(0), q.class_of(1), q.class_of(2), q.class_of(99)),
            (0, 1, 1, 1)
        );
        for (id, (group, color)) in [(0, Color::Green), (1, Color::Red), (2, Color::Red)]
            .into_iter()
            .enumerate()
        {
            q.enqueue(
                Time::ZERO,
                Pkt {
                    id: id as u32,
                    size: 1000,
                    color,
                    group,
                },
                &mut rng,
            )
            .unwrap();
        }
        let counters = q.class_counters();
        assert_eq!(counters.len(), 6);
        let find = |name: &str, color| {
            counters
                .iter()
                .find(|(n, c, _)| n == name && *c == color)
                .unwrap()
                .2
                .packets
        };
        assert_eq!(find("gold", Color::Green), 1);
        assert_eq!(find("be", Color::Red), 2);
        assert_eq!(find("gold", Color::Red), 0);
        assert_eq!(q.counters(Color::Red).packets, 2);
        assert_eq!(q.len(), 3);
    }

    #[test]
    fn extreme_rates_and_times_do_not_overflow() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut fast = class("fast", 0, false, &["a"]);
        fast.rate = Rate::MAX;
        let mut q = Cbq::new(&[fast], &names(&["a"]));
        q.enqueue(
            Time::ZERO,
            Pkt {
                id: 0,
                size: 1000,
                color: Color::Green,
                group: 0,
            },
            &mut rng,
        )
        .unwrap();
        assert!(matches!(q.dequeue(Time::ZERO, LINK), Dequeue::Packet(_)));
        q.enqueue(
            Time::MAX,
            Pkt {
                id: 1,
                size: 1000,
                color: Color::Green,
                group: 0,
            },
            &mut rng,
        )
        .unwrap();
        assert!(matches!(q.dequeue(Time::MAX, LINK), Dequeue::Packet(_)));
    }

    #[test]
    fn each_class_overflows_on_its_own_limit() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let mut small = class("small", 300, true, &["a"]);
        small.limit = 2;
        let mut q = Cbq::new(&[small, class("be", 700, true, &[])], &names(&["a", "b"]));
        for id in 0..4 {
            let _ = q.enqueue(
                Time::ZERO,
                Pkt {
                    id,
                    size: 1000,
                    color: Color::Green,
                    group: 0,
                },
                &mut rng,
            );
        }
        assert!(q
            .enqueue(
                Time::ZERO,
                Pkt {
                    id: 9,
                    size: 1000,
                    color: Color::Green,
                    group: 1
                },
                &mut rng
            )
            .is_ok());
        let small = q.class_counters()[0].2;
        assert_eq!((small.packets, small.ldrops), (4, 2));
    }

    /// A packet a real forwarder would see: a DSCP, no group.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Marked {
        dscp: u8,
    }

    impl Queued for Marked {
        fn size(&self) -> usize {
            1000
        }
        fn color(&self) -> Color {
            Color::Green
        }
        fn group(&self) -> usize {
            0
        }
        fn meta(&self) -> PacketMeta {
            PacketMeta {
                dscp: self.dscp,
                ..PacketMeta::default()
            }
        }
    }

    #[test]
    fn a_dscp_classifier_sorts_packets_that_carry_no_group() {
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        // EF (46) to class 0, AF11 (10) to class 1, the rest to class 7: beyond the classes, so
        // the last one.
        let classifier = Classifier::by_dscp(&[(46, 0), (10, 1)], 7);
        let mut q = Cbq::with_classifier(
            &[
                class("ef", 300, false, &[]),
                class("af", 300, true, &[]),
                class("be", 400, true, &[]),
            ],
            classifier,
        );
        for dscp in [46, 10, 10, 0, 63] {
            q.enqueue(Time::ZERO, Marked { dscp }, &mut rng).unwrap();
        }
        let lengths: Vec<usize> = q.class_lengths().iter().map(|c| c.1).collect();
        assert_eq!(lengths, vec![1, 2, 2]);
        assert_eq!(q.class_index(&Marked { dscp: 46 }.meta()), 0);
        // The group does not matter: every Marked packet says group 0.
        assert_eq!(q.class_of(0), 2, "no DSCP: best effort");
    }
}
