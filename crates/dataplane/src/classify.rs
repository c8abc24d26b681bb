//! Packet classification: which class (a CBQ class, an edge conditioner) a packet belongs to.
//!
//! The simulator knows each packet's flow group; a real forwarder does not, it sees the DSCP and
//! the 5-tuple. A [`Classifier`] maps a [`PacketMeta`] (what both can fill in) to a [`ClassId`],
//! so the queues and conditioners that classify work the same behind either. The simulator builds
//! by-group classifiers; a forwarder builds by-DSCP or by-5-tuple ones. Every table is fixed when
//! the classifier is built (bounded by its configuration), and classifying never fails: a packet
//! no rule matches goes to the classifier's default class.

use std::net::IpAddr;

/// A class, as the classifier's user numbers them (a CBQ class index, a conditioner's group).
pub type ClassId = u32;

/// A transport 5-tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FiveTuple {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IP protocol number (6 TCP, 17 UDP).
    pub protocol: u8,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

/// What a classifier may look at of a packet: what a real forwarder reads from the headers, and
/// what only the simulator knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PacketMeta {
    /// The DS field's codepoint (the upper six bits of the IPv4 TOS / IPv6 traffic class byte;
    /// RFC 2474 §3). The simulator's packets carry none: 0, the default PHB.
    pub dscp: u8,
    /// The 5-tuple, when the packet has one.
    pub tuple: Option<FiveTuple>,
    /// The simulator's flow group index.
    pub group: Option<u32>,
    /// The simulator's flow index.
    pub flow: Option<u32>,
}

impl PacketMeta {
    /// A simulated packet of group `group`.
    pub fn of_group(group: u32) -> Self {
        PacketMeta {
            group: Some(group),
            ..PacketMeta::default()
        }
    }
}

/// One 5-tuple rule: every field given must match (`None` is a wildcard).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TupleRule {
    /// Source address.
    pub src: Option<IpAddr>,
    /// Destination address.
    pub dst: Option<IpAddr>,
    /// IP protocol number.
    pub protocol: Option<u8>,
    /// Source port.
    pub src_port: Option<u16>,
    /// Destination port.
    pub dst_port: Option<u16>,
    /// The class of a matching packet.
    pub class: ClassId,
}

impl TupleRule {
    /// Whether `tuple` matches this rule.
    pub fn matches(&self, tuple: &FiveTuple) -> bool {
        fn field<T: PartialEq>(rule: Option<T>, value: T) -> bool {
            rule.map_or(true, |r| r == value)
        }
        field(self.src, tuple.src)
            && field(self.dst, tuple.dst)
            && field(self.protocol, tuple.protocol)
            && field(self.src_port, tuple.src_port)
            && field(self.dst_port, tuple.dst_port)
    }
}

/// Number of DSCP values: the codepoint is six bits (RFC 2474 §3).
pub const DSCP_VALUES: usize = 64;

/// Maps a packet to a class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Classifier {
    /// The simulator's group index is the class (what edge conditioners use).
    GroupIndex,
    /// A class per group index; groups beyond the table, or packets without a group, go to
    /// `default`.
    ByGroup {
        /// Class of each group index.
        classes: Vec<ClassId>,
        /// Class of the rest.
        default: ClassId,
    },
    /// A class per simulator flow index; flows beyond the table, or packets without a flow, go to
    /// `default`.
    ByFlow {
        /// Class of each flow index.
        classes: Vec<ClassId>,
        /// Class of the rest.
        default: ClassId,
    },
    /// A class per DSCP (RFC 2475 §2.3.1: a behaviour-aggregate classifier).
    ByDscp {
        /// Class of each codepoint.
        classes: Box<[ClassId; DSCP_VALUES]>,
    },
    /// The first matching 5-tuple rule (RFC 2475 §2.3.1: a multi-field classifier); packets no
    /// rule matches, or without a 5-tuple, go to `default`.
    ByTuple {
        /// Rules, tried in order.
        rules: Vec<TupleRule>,
        /// Class of the rest.
        default: ClassId,
    },
}

/// Why groups cannot be told apart by their code points (see [`check_group_dscps`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DscpConflict {
    /// Group `0` has no code point.
    Missing(usize),
    /// Group `0`'s code point is above 63.
    OutOfRange(usize, u8),
    /// Groups `0` and `1` (the earlier first) share code point `2`.
    Shared(usize, usize, u8),
}

/// The rule of a behaviour-aggregate classification by group (RFC 2474 §3: a codepoint is six
/// bits and selects one PHB): every group has a code point of its own, in 0..63. The first
/// conflict, groups in order.
pub fn check_group_dscps(dscp: &[Option<u8>]) -> Result<(), DscpConflict> {
    for (g, d) in dscp.iter().enumerate() {
        let Some(d) = *d else {
            return Err(DscpConflict::Missing(g));
        };
        if usize::from(d) >= DSCP_VALUES {
            return Err(DscpConflict::OutOfRange(g, d));
        }
        if let Some(h) = dscp[..g].iter().position(|e| *e == Some(d)) {
            return Err(DscpConflict::Shared(h, g, d));
        }
    }
    Ok(())
}

impl Classifier {
    /// A behaviour-aggregate classifier: `(dscp, class)` pairs (a later pair for the same
    /// codepoint wins), every other codepoint to `default`. Codepoints are taken modulo 64.
    pub fn by_dscp(pairs: &[(u8, ClassId)], default: ClassId) -> Self {
        let mut classes = Box::new([default; DSCP_VALUES]);
        for &(dscp, class) in pairs {
            classes[usize::from(dscp) % DSCP_VALUES] = class;
        }
        Classifier::ByDscp { classes }
    }

    /// The class of `packet`.
    #[inline]
    pub fn classify(&self, packet: &PacketMeta) -> ClassId {
        fn lookup(classes: &[ClassId], index: Option<u32>, default: ClassId) -> ClassId {
            index
                .and_then(|i| classes.get(i as usize))
                .copied()
                .unwrap_or(default)
        }
        match self {
            Classifier::GroupIndex => packet.group.unwrap_or(0),
            Classifier::ByGroup { classes, default } => lookup(classes, packet.group, *default),
            Classifier::ByFlow { classes, default } => lookup(classes, packet.flow, *default),
            // RFC 2474 §3: the codepoint is six bits; the top two of a byte are not part of it.
            Classifier::ByDscp { classes } => classes[usize::from(packet.dscp) % DSCP_VALUES],
            Classifier::ByTuple { rules, default } => packet
                .tuple
                .and_then(|t| rules.iter().find(|r| r.matches(&t)))
                .map_or(*default, |r| r.class),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_group_needs_a_code_point_of_its_own() {
        assert_eq!(check_group_dscps(&[Some(10), Some(46)]), Ok(()));
        assert_eq!(
            check_group_dscps(&[Some(10), None]),
            Err(DscpConflict::Missing(1))
        );
        assert_eq!(
            check_group_dscps(&[Some(64)]),
            Err(DscpConflict::OutOfRange(0, 64))
        );
        assert_eq!(
            check_group_dscps(&[Some(8), Some(10), Some(8)]),
            Err(DscpConflict::Shared(0, 2, 8))
        );
    }
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// RFC 2597 §6: AF11, AF12, AF13 and RFC 3246: EF.
    const AF11: u8 = 10;
    const AF12: u8 = 12;
    const AF13: u8 = 14;
    const EF: u8 = 46;

    fn dscp(d: u8) -> PacketMeta {
        PacketMeta {
            dscp: d,
            ..PacketMeta::default()
        }
    }

    #[test]
    fn dscp_classes_by_codepoint_and_defaults_the_rest() {
        let c = Classifier::by_dscp(&[(EF, 0), (AF11, 1), (AF12, 1), (AF13, 1)], 2);
        assert_eq!(c.classify(&dscp(EF)), 0);
        assert_eq!(c.classify(&dscp(AF11)), 1);
        assert_eq!(c.classify(&dscp(AF13)), 1);
        assert_eq!(c.classify(&dscp(0)), 2, "best effort");
        assert_eq!(c.classify(&dscp(63)), 2);
        // Only six bits are the codepoint: 64 + EF is EF.
        assert_eq!(c.classify(&dscp(64 + EF)), 0);
        assert_eq!(c.classify(&dscp(255)), 2);
        // The group a simulated packet carries does not matter to a DSCP classifier.
        let meta = PacketMeta {
            dscp: AF12,
            group: Some(7),
            ..PacketMeta::default()
        };
        assert_eq!(c.classify(&meta), 1);
        // A later pair for the same codepoint wins; codepoints wrap at 64.
        let c = Classifier::by_dscp(&[(EF, 0), (EF + 64, 3)], 9);
        assert_eq!(c.classify(&dscp(EF)), 3);
    }

    #[test]
    fn five_tuple_rules_match_in_order_with_wildcards() {
        let a = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        let b = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
        let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
        let c = Classifier::ByTuple {
            rules: vec![
                // Voice to b's port 5004 over UDP.
                TupleRule {
                    dst: Some(b),
                    protocol: Some(17),
                    dst_port: Some(5004),
                    class: 0,
                    ..TupleRule::default()
                },
                // Anything else from a.
                TupleRule {
                    src: Some(a),
                    class: 1,
                    ..TupleRule::default()
                },
            ],
            default: 2,
        };
        let tuple = |src, dst, protocol, src_port, dst_port| PacketMeta {
            tuple: Some(FiveTuple {
                src,
                dst,
                protocol,
                src_port,
                dst_port,
            }),
            ..PacketMeta::default()
        };
        assert_eq!(c.classify(&tuple(a, b, 17, 40000, 5004)), 0, "first rule");
        assert_eq!(
            c.classify(&tuple(v6, b, 17, 1, 5004)),
            0,
            "src is a wildcard"
        );
        assert_eq!(
            c.classify(&tuple(a, b, 6, 40000, 5004)),
            1,
            "TCP: second rule"
        );
        assert_eq!(c.classify(&tuple(a, b, 17, 40000, 5005)), 1, "other port");
        assert_eq!(c.classify(&tuple(b, a, 17, 5004, 5004)), 2, "no rule");
        assert_eq!(
            c.classify(&PacketMeta::of_group(0)),
            2,
            "no 5-tuple: default"
        );
    }

    #[test]
    fn group_and_flow_tables_default_what_they_do_not_list() {
        let by_group = Classifier::ByGroup {
            classes: vec![1, 0],
            default: 5,
        };
        assert_eq!(by_group.classify(&PacketMeta::of_group(0)), 1);
        assert_eq!(by_group.classify(&PacketMeta::of_group(1)), 0);
        assert_eq!(by_group.classify(&PacketMeta::of_group(2)), 5);
        assert_eq!(by_group.classify(&PacketMeta::default()), 5);
        assert_eq!(Classifier::GroupIndex.classify(&PacketMeta::of_group(7)), 7);
        let by_flow = Classifier::ByFlow {
            classes: vec![3, 4],
            default: 0,
        };
        let flow = |f| PacketMeta {
            flow: Some(f),
            group: Some(1),
            ..PacketMeta::default()
        };
        assert_eq!(by_flow.classify(&flow(1)), 4);
        assert_eq!(by_flow.classify(&flow(u32::MAX)), 0);
    }
}
