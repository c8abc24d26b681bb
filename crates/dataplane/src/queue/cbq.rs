//! Class-based queueing: each class a FIFO and a guaranteed rate; a class over its rate may use
//! link capacity the others leave idle only if it may borrow (the QSTP paper §5.4 runs CBQ in this
//! "borrow mode": best effort borrows bandwidth of the reserved pipe while it is not congested).
//!
//! Each class meters its rate with a token balance: a class whose balance is not negative is
//! under its rate. Under-rate classes are served first, round robin (the balances make the shares
//! follow the rates); when none is, borrowing classes share the idle capacity round robin without
//! being charged; classes that may not borrow wait for their balance to recover.

use super::{read_limit, validate_limit, CodePointCounters, QueueKind, QueueSpecError};
use super::{ColorCounters, Dequeue, DropKind, QueueDiscipline, Queued, COLORS};
use crate::classify::{ClassId, Classifier, PacketMeta};
use crate::color::Color;
use crate::params::{ParamResult, ParamTable};
use crate::registry::Kind;
use qstp_proto::{Rate, Time};
use rand::RngCore;
use std::collections::VecDeque;

/// `kind = "cbq"`: class-based queueing, each class a guaranteed rate, borrowing idle capacity
/// when allowed (QSTP paper §5.4).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CbqSpec {
    /// The classes; a group not named in any class goes to the last class.
    pub classes: Vec<CbqClass>,
}

/// One CBQ class.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CbqClass {
    /// Name, for statistics.
    pub name: String,
    /// Guaranteed rate.
    pub rate: Rate,
    /// Whether the class may use capacity other classes leave idle.
    pub borrow: bool,
    /// Names of the groups whose packets this class carries.
    pub groups: Vec<String>,
    /// Capacity of the class's own FIFO, packets.
    pub limit: usize,
}

impl Kind for CbqSpec {
    const DOC: &'static str = "class-based queueing (QSTP paper §5.4): classes = [{ name, rate, \
         borrow (false), groups = [GROUP, ..], limit }, ..]; unlisted groups go to the last class";
    fn read(t: &mut dyn ParamTable) -> ParamResult<Self> {
        let tables = t
            .opt_tables("classes", "name")?
            .ok_or_else(|| t.error("classes", "missing (a CBQ queue needs classes)"))?;
        let mut classes = Vec::with_capacity(tables.len());
        for mut c in tables {
            let class = CbqClass {
                name: c.str("name")?,
                rate: c.rate("rate")?,
                borrow: c.opt_bool("borrow")?.unwrap_or(false),
                groups: c.opt_strings("groups")?.unwrap_or_default(),
                limit: read_limit(c.as_mut())?,
            };
            c.finish()?;
            classes.push(class);
        }
        Ok(CbqSpec { classes })
    }
}

impl QueueKind for CbqSpec {
    fn validate(&self) -> Result<(), QueueSpecError> {
        if self.classes.is_empty() {
            return Err(QueueSpecError::NoClasses);
        }
        let mut names = std::collections::BTreeSet::new();
        let mut groups = std::collections::BTreeSet::new();
        for class in &self.classes {
            if !names.insert(&class.name) {
                return Err(QueueSpecError::DuplicateClass(class.name.clone()));
            }
            validate_limit(class.limit, Some(&class.name))?;
            // QSTP paper §5.4: a borrowing class of rate 0 lives on idle capacity alone (a
            // best-effort class); one that may not borrow would never send.
            if class.rate.is_zero() && !class.borrow {
                return Err(QueueSpecError::StarvedClass(class.name.clone()));
            }
            for g in &class.groups {
                if !groups.insert(g) {
                    return Err(QueueSpecError::DuplicateGroup {
                        class: class.name.clone(),
                        group: g.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Also: every group a class lists exists, and the classes guarantee no more than the link.
    fn validate_on(&self, link_rate: Rate, group_names: &[&str]) -> Result<(), QueueSpecError> {
        self.validate()?;
        let mut guaranteed = 0u64;
        for class in &self.classes {
            guaranteed = guaranteed.saturating_add(class.rate.bps());
            if let Some(g) = class
                .groups
                .iter()
                .find(|g| !group_names.contains(&g.as_str()))
            {
                return Err(QueueSpecError::UnknownGroup {
                    class: class.name.clone(),
                    group: g.clone(),
                });
            }
        }
        if guaranteed > link_rate.bps() {
            return Err(QueueSpecError::Overbooked {
                guaranteed: Rate::from_bps(guaranteed),
                link: link_rate,
            });
        }
        Ok(())
    }

    fn build<P: Queued + 'static>(&self, group_names: &[String]) -> Box<dyn QueueDiscipline<P>> {
        Box::new(Cbq::new(&self.classes, group_names))
    }
}

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
                    marks: sum.marks + c.marks,
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
#[path = "cbq_tests.rs"]
mod tests;
