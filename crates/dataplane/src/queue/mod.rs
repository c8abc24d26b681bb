//! Queue disciplines: drop-tail, RED, RIO (RIO-C and RIO-D), CBQ with borrowing, CoDel, PIE and
//! FQ-CoDel.
//!
//! A queue holds any [`Queued`] item, so it can be tested without the rest of the simulator. Each
//! queue counts, per colour, the packets that arrived, those dropped on overflow (`ldrops`), those
//! dropped early (`edrops`) and, with `ecn = true`, those marked CE instead of an early drop
//! (`marks`, RFC 3168 §5).

use crate::classify::PacketMeta;
use crate::color::Color;
use crate::params::{ParamResult, ParamTable};
use qstp_proto::{Rate, Time};
use rand::RngCore;

mod cbq;
mod codel;
mod droptail;
mod fq_codel;
mod pie;
mod red;
mod rio;
mod scd;

pub use cbq::{Cbq, CbqClass, CbqSpec, CLASS_BURST_BYTES};
pub use codel::{CoDel, CoDelParams, CoDelSpec, CoDelState};
pub use droptail::{DropTail, DropTailSpec};
pub use fq_codel::{FqCoDel, FqCoDelSpec};
pub use pie::{Pie, PieSpec};
pub use red::{AverageQueue, IdlePeriod, Red, RedCurve, RedParams, RedSpec, DEFAULT_QUEUE_WEIGHT};
pub use rio::{Rio, RioMode, RioSpec};
pub use scd::{scd, threshold_cells, ScdSpec, DEFAULT_SCD_THRESHOLD};

crate::registry! {
    /// A queue discipline, as a scenario names it by `kind`: the registry of queues. A new queue
    /// is a file of this module (its spec implementing [`QueueKind`] and
    /// [`crate::registry::Kind`]) and one line here.
    #[derive(Debug, Clone, PartialEq)]
    pub enum QueueSpec: dyn QueueKind, "a queue" {
        "droptail" => DropTail(DropTailSpec),
        "red" => Red(RedSpec),
        "rio" => Rio(RioSpec),
        "cbq" => Cbq(CbqSpec),
        "scd" => Scd(ScdSpec),
        "codel" => CoDel(CoDelSpec),
        "pie" => Pie(PieSpec),
        "fq-codel" => FqCoDel(FqCoDelSpec),
    }
    visit QueueVisitor
}

/// What a queue kind's spec knows: its rules and how to build its discipline.
pub trait QueueKind: std::fmt::Debug {
    /// Check the description on its own (limits, curves, weights, classes): the single home of
    /// these rules.
    fn validate(&self) -> Result<(), QueueSpecError>;
    /// [`QueueKind::validate`], then the checks against the link it sits on (`link_rate`) and
    /// the run's groups.
    fn validate_on(&self, link_rate: Rate, group_names: &[&str]) -> Result<(), QueueSpecError> {
        let _ = (link_rate, group_names);
        self.validate()
    }
    /// The discipline; `group_names[i]` names the group of index `i` (what [`Queued::group`]
    /// returns), for classifying queues.
    fn build<P: Queued + 'static>(&self, group_names: &[String]) -> Box<dyn QueueDiscipline<P>>
    where
        Self: Sized;
}

/// An operation on a queue spec as its own type ([`QueueSpec::visit`]).
pub trait QueueVisitor {
    /// What the operation gives.
    type Output;
    /// Apply it to `spec`.
    fn visit<K: QueueKind>(self, spec: &K) -> Self::Output;
}

/// `limit`, the capacity in packets, which every queue and CBQ class has.
pub(crate) fn read_limit(t: &mut dyn ParamTable) -> ParamResult<usize> {
    let limit = t
        .opt_u64("limit")?
        .ok_or_else(|| t.error("limit", "missing (queue capacity in packets)"))?;
    usize::try_from(limit).map_err(|_| t.error("limit", &format!("{limit} is too large")))
}

/// `ecn`: mark CE on ECN-capable packets instead of dropping them early (RFC 3168 §5); off by
/// default.
pub(crate) fn read_ecn(t: &mut dyn ParamTable) -> ParamResult<bool> {
    Ok(t.opt_bool("ecn")?.unwrap_or(false))
}

/// What a queue needs to know of a packet.
pub trait Queued: Send {
    /// Size on the wire, bytes.
    fn size(&self) -> usize;
    /// Drop precedence set by the edge marker.
    fn color(&self) -> Color;
    /// Index of the flow group it belongs to.
    fn group(&self) -> usize;
    /// What a classifier may look at (CBQ classifies by it): by default, the group alone.
    fn meta(&self) -> PacketMeta {
        PacketMeta::of_group(u32::try_from(self.group()).unwrap_or(u32::MAX))
    }
    /// The flow it belongs to (FQ-CoDel hashes it, RFC 8290 §4.1.1): by default, its group.
    fn flow(&self) -> u32 {
        u32::try_from(self.group()).unwrap_or(u32::MAX)
    }
    /// Whether its ECN field is ECT(0), ECT(1) or CE, so a queue may mark it instead of
    /// dropping it (RFC 3168 §5); by default not.
    fn ecn_capable(&self) -> bool {
        false
    }
    /// Mark it Congestion Experienced (RFC 3168 §5); by default nothing.
    fn set_ce(&mut self) {}
}

/// What an AQM does to a packet it would drop early: with `ecn` on and an ECN-capable packet, it
/// marks CE and lets it pass (RFC 3168 §5, §7); else it drops it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// Marked CE: the packet goes on.
    Marked,
    /// Dropped.
    Dropped,
}

/// Signal congestion on `packet`: mark it if `ecn` and it is ECN-capable (RFC 3168 §5), else
/// say it must be dropped; counts the mark.
pub(crate) fn signal<P: Queued>(packet: &mut P, ecn: bool, counters: &mut ColorCounters) -> Signal {
    if ecn && packet.ecn_capable() {
        packet.set_ce();
        counters.marked(packet.color());
        Signal::Marked
    } else {
        Signal::Dropped
    }
}

/// Why a packet was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropKind {
    /// The queue (or class) was full.
    Overflow,
    /// An AQM (RED, RIO, CoDel, PIE, FQ-CoDel) dropped it early.
    Early,
}

/// What `dequeue` found.
#[derive(Debug, PartialEq, Eq)]
pub enum Dequeue<P> {
    /// Send this packet now.
    Packet(P),
    /// Packets are waiting but none may go before this time (a CBQ class over its rate that may
    /// not borrow).
    Wait(Time),
    /// Nothing queued.
    Empty,
}

/// A queue discipline at a link's input (`Send`, so that a real-time forwarder can run it on a
/// thread of its own).
pub trait QueueDiscipline<P: Queued>: Send {
    /// Offer a packet arriving at `now`; a refused packet is handed back with the reason. A
    /// full FQ-CoDel queue takes the offered packet and hands back instead the head of its
    /// longest flow queue (RFC 8290 §4.1.1), dropped in its place.
    /// `rng` is this queue's own random stream (RED's early-drop coin, PIE's).
    fn enqueue(&mut self, now: Time, packet: P, rng: &mut dyn RngCore)
        -> Result<(), (P, DropKind)>;
    /// Take the next packet for a link of rate `link_rate` that is idle at `now`.
    fn dequeue(&mut self, now: Time, link_rate: Rate) -> Dequeue<P>;
    /// A packet the queue dropped by itself (CoDel drops at dequeue), for the link to discard;
    /// the link collects them after every dequeue. None by default.
    fn take_dropped(&mut self) -> Option<(P, DropKind)> {
        None
    }
    /// [`QueueDiscipline::enqueue`] then, if the packet was taken, [`QueueDiscipline::dequeue`]:
    /// what an idle link does with a packet offered to it. A discipline may do both in one step
    /// (a drop-tail FIFO that is empty hands the packet straight back), provided the result and
    /// its state afterwards are those of the two calls.
    fn enqueue_dequeue(
        &mut self,
        now: Time,
        packet: P,
        rng: &mut dyn RngCore,
        link_rate: Rate,
    ) -> Result<Dequeue<P>, (P, DropKind)> {
        enqueue_then_dequeue(self, now, packet, rng, link_rate)
    }
    /// Packets queued.
    fn len(&self) -> usize;
    /// Bytes queued (sizes on the wire).
    fn bytes(&self) -> u64;
    /// Whether no packet is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Counters of the colour `color` (for CBQ: summed over classes).
    fn counters(&self, color: Color) -> CodePointCounters;
    /// Per-class counters as `(class name, colour, counters)`, empty for single-FIFO queues.
    fn class_counters(&self) -> Vec<(String, Color, CodePointCounters)> {
        Vec::new()
    }
    /// Per-class occupancy as `(class name, packets, bytes)`, in class order; empty for
    /// single-FIFO queues.
    fn class_lengths(&self) -> Vec<(&str, usize, u64)> {
        Vec::new()
    }
}

/// [`QueueDiscipline::enqueue_dequeue`] as two calls (its default, and a discipline's own when
/// its one step does not apply).
pub(crate) fn enqueue_then_dequeue<P: Queued, Q: QueueDiscipline<P> + ?Sized>(
    queue: &mut Q,
    now: Time,
    packet: P,
    rng: &mut dyn RngCore,
    link_rate: Rate,
) -> Result<Dequeue<P>, (P, DropKind)> {
    queue.enqueue(now, packet, rng)?;
    Ok(queue.dequeue(now, link_rate))
}

/// Bytes of the packets in `fifo`.
pub fn fifo_bytes<P: Queued>(fifo: &std::collections::VecDeque<P>) -> u64 {
    fifo.iter().map(|p| p.size() as u64).sum()
}

/// Per-colour packet counters of one queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CodePointCounters {
    /// Packets that arrived at the queue.
    pub packets: u64,
    /// Packets dropped because the queue was full.
    pub ldrops: u64,
    /// Packets dropped early by RED/RIO.
    pub edrops: u64,
    /// Packets marked CE instead of an early drop (`ecn = true`, RFC 3168 §5); absent from
    /// serialised counters while zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub marks: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CodePointCounters {
    /// What these counters gained since `earlier`.
    pub fn minus(self, earlier: CodePointCounters) -> CodePointCounters {
        CodePointCounters {
            packets: self.packets.saturating_sub(earlier.packets),
            ldrops: self.ldrops.saturating_sub(earlier.ldrops),
            edrops: self.edrops.saturating_sub(earlier.edrops),
            marks: self.marks.saturating_sub(earlier.marks),
        }
    }
}

/// The three colours, in counter order.
pub const COLORS: [Color; 3] = [Color::Green, Color::Yellow, Color::Red];

/// Per-colour counters of one FIFO.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ColorCounters([CodePointCounters; 3]);

impl ColorCounters {
    /// Count an arrival of colour `color`.
    pub(crate) fn arrived(&mut self, color: Color) {
        self.0[color as usize].packets += 1;
    }
    /// Count a drop of colour `color`.
    pub(crate) fn dropped(&mut self, color: Color, kind: DropKind) {
        let c = &mut self.0[color as usize];
        match kind {
            DropKind::Overflow => c.ldrops += 1,
            DropKind::Early => c.edrops += 1,
        }
    }
    /// Count a CE mark on a packet of colour `color`.
    pub(crate) fn marked(&mut self, color: Color) {
        self.0[color as usize].marks += 1;
    }
    /// The counters of `color`.
    pub(crate) fn get(&self, color: Color) -> CodePointCounters {
        self.0[color as usize]
    }
}

/// Most packets a queue (or a CBQ class) may hold: a bound on the simulator's buffers.
pub const MAX_QUEUE_LIMIT: usize = 100_000;

/// Why a queue description was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueueSpecError {
    /// A queue or class that can hold no packet, or more than [`MAX_QUEUE_LIMIT`].
    #[error("{limit} packets is outside 1..={MAX_QUEUE_LIMIT}")]
    BadLimit {
        /// The CBQ class, if the limit is a class's.
        class: Option<String>,
        /// The limit asked for.
        limit: usize,
    },
    /// RED thresholds must satisfy 0 <= min_th <= max_th (finite).
    #[error("{curve} curve needs 0 <= min_th ({min_th}) <= max_th ({max_th})")]
    BadThresholds {
        /// Which curve (`curve`, `in`, `out`, `middle`: the key it is written under).
        curve: &'static str,
        /// Its lower threshold.
        min_th: f64,
        /// Its upper threshold.
        max_th: f64,
    },
    /// A max_th the average queue can never reach.
    #[error("{curve} curve: max_th {max_th} is above the queue limit {limit}")]
    ThresholdAboveLimit {
        /// Which curve.
        curve: &'static str,
        /// Its upper threshold.
        max_th: f64,
        /// The queue's capacity, packets.
        limit: usize,
    },
    /// max_p must be a probability.
    #[error("{curve} curve has max_p {max_p} outside [0, 1]")]
    BadMaxP {
        /// Which curve.
        curve: &'static str,
        /// Its max_p.
        max_p: f64,
    },
    /// The EWMA weight must lie in (0, 1].
    #[error("weight {0} must lie in (0, 1]")]
    BadWeight(f64),
    /// CBQ needs at least one class.
    #[error("CBQ needs at least one class")]
    NoClasses,
    /// A CBQ class that may not borrow and has no rate would never send.
    #[error("CBQ class '{0}' has rate zero and may not borrow: it would never send")]
    StarvedClass(String),
    /// Two CBQ classes with one name.
    #[error("CBQ class name '{0}' is used twice")]
    DuplicateClass(String),
    /// A group listed by two CBQ classes.
    #[error("group '{group}' is listed by two CBQ classes ('{class}' is the second)")]
    DuplicateGroup {
        /// The class listing it the second time.
        class: String,
        /// The group.
        group: String,
    },
    /// A CBQ class lists a group the run does not have.
    #[error("CBQ class '{class}' lists '{group}', which is not a group of the run")]
    UnknownGroup {
        /// The class.
        class: String,
        /// The group name.
        group: String,
    },
    /// Any other refused parameter of a kind, at its key.
    #[error("{reason}")]
    Param {
        /// The key inside the queue's table.
        key: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// The CBQ classes guarantee more than the link carries.
    #[error("the CBQ classes guarantee {guaranteed}, more than the link's {link}")]
    Overbooked {
        /// The sum of the classes' rates.
        guaranteed: Rate,
        /// The link's rate.
        link: Rate,
    },
}

impl QueueSpecError {
    /// The key inside the queue's table the error is about, as a scenario writes it (`limit`,
    /// `in`, `classes.<name>.rate`, ...).
    pub fn field(&self) -> String {
        use QueueSpecError::*;
        match self {
            BadLimit { class: None, .. } => "limit".into(),
            BadLimit {
                class: Some(class), ..
            } => format!("classes.{class}.limit"),
            BadThresholds { curve, .. }
            | ThresholdAboveLimit { curve, .. }
            | BadMaxP { curve, .. } => curve.to_string(),
            BadWeight(_) => "weight".into(),
            Param { key, .. } => key.to_string(),
            NoClasses | Overbooked { .. } => "classes".into(),
            StarvedClass(class) => format!("classes.{class}.rate"),
            DuplicateClass(class) => format!("classes.{class}.name"),
            DuplicateGroup { class, .. } | UnknownGroup { class, .. } => {
                format!("classes.{class}.groups")
            }
        }
    }
}

pub(crate) fn validate_limit(limit: usize, class: Option<&str>) -> Result<(), QueueSpecError> {
    if (1..=MAX_QUEUE_LIMIT).contains(&limit) {
        Ok(())
    } else {
        Err(QueueSpecError::BadLimit {
            class: class.map(str::to_string),
            limit,
        })
    }
}

impl QueueSpec {
    /// A drop-tail FIFO of `limit` packets.
    pub fn drop_tail(limit: usize) -> Self {
        QueueSpec::DropTail(DropTailSpec { limit })
    }

    /// Check the description on its own: limits, curves, weights, CBQ classes. The single home
    /// of these rules (the lab and the simulator both call it).
    pub fn validate(&self) -> Result<(), QueueSpecError> {
        self.get().validate()
    }

    /// [`QueueSpec::validate`], then the checks against the link it sits on and the run's
    /// groups (for CBQ: every group a class lists exists, and the classes guarantee no more than
    /// `link_rate`).
    pub fn validate_on(&self, link_rate: Rate, group_names: &[&str]) -> Result<(), QueueSpecError> {
        self.get().validate_on(link_rate, group_names)
    }
}

/// Check a queue description before building it (as [`QueueSpec::validate`]).
pub fn validate(spec: &QueueSpec) -> Result<(), QueueSpecError> {
    spec.validate()
}

/// Build the queue `spec` describes; `group_names[i]` names the group of index `i` (what
/// [`Queued::group`] returns), for CBQ's classification. Call [`validate`] first: an invalid
/// spec still builds without panicking, but behaves arbitrarily.
pub fn build<P: Queued + 'static>(
    spec: &QueueSpec,
    group_names: &[String],
) -> Box<dyn QueueDiscipline<P>> {
    struct Build<'a, P>(&'a [String], std::marker::PhantomData<P>);
    impl<P: Queued + 'static> QueueVisitor for Build<'_, P> {
        type Output = Box<dyn QueueDiscipline<P>>;
        fn visit<K: QueueKind>(self, spec: &K) -> Self::Output {
            spec.build(self.0)
        }
    }
    spec.visit(Build(group_names, std::marker::PhantomData))
}

#[cfg(test)]
pub(crate) mod test_packet {
    use super::Queued;
    use crate::color::Color;

    /// A packet for queue tests.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Pkt {
        pub id: u32,
        pub size: usize,
        pub color: Color,
        pub group: usize,
    }

    impl Queued for Pkt {
        fn size(&self) -> usize {
            self.size
        }
        fn color(&self) -> Color {
            self.color
        }
        fn group(&self) -> usize {
            self.group
        }
    }

    /// A 1000-byte green packet of a flow, ECN-capable or not, for AQM tests.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct FlowPkt {
        pub id: u32,
        pub size: usize,
        pub flow: u32,
        pub ect: bool,
        pub ce: bool,
    }

    impl Queued for FlowPkt {
        fn size(&self) -> usize {
            self.size
        }
        fn color(&self) -> Color {
            Color::Green
        }
        fn group(&self) -> usize {
            0
        }
        fn flow(&self) -> u32 {
            self.flow
        }
        fn ecn_capable(&self) -> bool {
            self.ect
        }
        fn set_ce(&mut self) {
            self.ce = true;
        }
    }

    /// A 1000-byte packet of flow `flow`, ECT(0) if `ect`.
    pub fn flow_pkt(id: u32, flow: u32, ect: bool) -> FlowPkt {
        FlowPkt {
            id,
            size: 1000,
            flow,
            ect,
            ce: false,
        }
    }

    /// A 1000-byte packet of group 0.
    pub fn pkt(id: u32, color: Color) -> Pkt {
        Pkt {
            id,
            size: 1000,
            color,
            group: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_packet::*;
    use super::*;
    use crate::color::Color;
    use rand::SeedableRng;

    fn curve(min_th: f64, max_th: f64, max_p: f64) -> RedParams {
        RedParams {
            min_th,
            max_th,
            max_p,
        }
    }

    #[test]
    fn validate_explains_what_is_wrong() {
        assert_eq!(
            validate(&QueueSpec::drop_tail(0)),
            Err(QueueSpecError::BadLimit {
                class: None,
                limit: 0
            })
        );
        assert_eq!(
            QueueSpec::drop_tail(MAX_QUEUE_LIMIT + 1)
                .validate()
                .unwrap_err()
                .field(),
            "limit"
        );
        // Equal thresholds and max_p = 0 are well-defined step curves (one rule, here).
        assert_eq!(
            QueueSpec::Red(RedSpec {
                limit: 50,
                params: curve(20.0, 20.0, 0.0),
                weight: 0.002,
                wait: false,
                ecn: false,
            })
            .validate(),
            Ok(())
        );
        assert_eq!(
            QueueSpec::Red(RedSpec {
                limit: 50,
                params: curve(20.0, 60.0, 0.1),
                weight: 0.002,
                wait: false,
                ecn: false,
            })
            .validate(),
            Err(QueueSpecError::ThresholdAboveLimit {
                curve: "curve",
                max_th: 60.0,
                limit: 50
            })
        );
        assert_eq!(
            validate(&QueueSpec::Red(RedSpec {
                limit: 50,
                params: curve(20.0, 10.0, 0.1),
                weight: 0.002,
                wait: false,
                ecn: false,
            })),
            Err(QueueSpecError::BadThresholds {
                curve: "curve",
                min_th: 20.0,
                max_th: 10.0
            })
        );
        assert_eq!(
            validate(&QueueSpec::Red(RedSpec {
                limit: 50,
                params: curve(5.0, 15.0, 0.1),
                weight: 0.0,
                wait: false,
                ecn: false,
            })),
            Err(QueueSpecError::BadWeight(0.0))
        );
        let rio = QueueSpec::Rio(RioSpec {
            limit: 50,
            in_profile: curve(20.0, 40.0, 0.02),
            out_profile: curve(10.0, 20.0, 1.5),
            middle: None,
            weight: 0.002,
            mode: RioMode::Coupled,
            ecn: false,
        });
        assert_eq!(
            validate(&rio),
            Err(QueueSpecError::BadMaxP {
                curve: "out",
                max_p: 1.5
            })
        );
        let class = |name: &str, rate, borrow, groups: &[&str]| CbqClass {
            name: name.into(),
            rate: Rate::from_kbps(rate),
            borrow,
            groups: groups.iter().map(|g| g.to_string()).collect(),
            limit: 50,
        };
        assert_eq!(
            validate(&QueueSpec::Cbq(CbqSpec { classes: vec![] })),
            Err(QueueSpecError::NoClasses)
        );
        assert_eq!(
            validate(&QueueSpec::Cbq(CbqSpec {
                classes: vec![class("a", 0, false, &["x"])]
            })),
            Err(QueueSpecError::StarvedClass("a".into()))
        );
        assert_eq!(
            validate(&QueueSpec::Cbq(CbqSpec {
                classes: vec![class("a", 300, true, &["x"]), class("b", 700, true, &["x"])]
            })),
            Err(QueueSpecError::DuplicateGroup {
                class: "b".into(),
                group: "x".into()
            })
        );
        // A borrowing class of rate 0 is a best-effort class: allowed.
        let best_effort = QueueSpec::Cbq(CbqSpec {
            classes: vec![class("a", 300, false, &["x"]), class("be", 0, true, &[])],
        });
        assert_eq!(best_effort.validate(), Ok(()));
        assert_eq!(
            best_effort.validate_on(Rate::from_kbps(1000), &["x"]),
            Ok(())
        );
        let err = best_effort
            .validate_on(Rate::from_kbps(1000), &["y"])
            .unwrap_err();
        assert_eq!(err.field(), "classes.a.groups");
        assert!(matches!(
            best_effort.validate_on(Rate::from_kbps(200), &["x"]),
            Err(QueueSpecError::Overbooked { .. })
        ));
        assert!(validate(&QueueSpec::Cbq(CbqSpec {
            classes: vec![class("a", 300, true, &["x"]), class("b", 700, true, &[])]
        }))
        .is_ok());
    }

    #[test]
    fn build_gives_each_discipline() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let specs = [
            QueueSpec::drop_tail(2),
            QueueSpec::Red(RedSpec {
                limit: 2,
                params: curve(5.0, 15.0, 0.1),
                weight: 0.002,
                wait: false,
                ecn: false,
            }),
            QueueSpec::Rio(RioSpec {
                limit: 2,
                in_profile: curve(20.0, 40.0, 0.02),
                out_profile: curve(10.0, 20.0, 0.1),
                middle: None,
                weight: 0.002,
                mode: RioMode::Decoupled,
                ecn: false,
            }),
            QueueSpec::Cbq(CbqSpec {
                classes: vec![CbqClass {
                    name: "all".into(),
                    rate: Rate::from_mbps(1),
                    borrow: true,
                    groups: vec![],
                    limit: 2,
                }],
            }),
        ];
        for spec in &specs {
            let mut q = build::<Pkt>(spec, &["g".to_string()]);
            for i in 0..3 {
                let _ = q.enqueue(Time::ZERO, pkt(i, Color::Green), &mut rng);
            }
            assert_eq!(q.len(), 2, "{spec:?}");
            assert_eq!(q.counters(Color::Green).packets, 3);
            assert_eq!(q.counters(Color::Green).ldrops, 1);
            assert!(
                matches!(q.dequeue(Time::ZERO, Rate::from_mbps(1)), Dequeue::Packet(p) if p.id == 0)
            );
        }
    }

    #[test]
    fn invalid_specs_build_without_panicking() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let specs = [
            QueueSpec::drop_tail(0),
            QueueSpec::Red(RedSpec {
                limit: 0,
                params: curve(15.0, 5.0, 7.0),
                weight: f64::NAN,
                wait: false,
                ecn: false,
            }),
            QueueSpec::Cbq(CbqSpec { classes: vec![] }),
        ];
        for spec in &specs {
            let mut q = build::<Pkt>(spec, &[]);
            for i in 0..3 {
                let _ = q.enqueue(Time::ZERO, pkt(i, Color::Green), &mut rng);
                let _ = q.dequeue(Time::ZERO, Rate::ZERO);
            }
        }
    }
}
