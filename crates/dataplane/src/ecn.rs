//! Explicit Congestion Notification: the two ECN bits of the IP header (RFC 3168 §5).

/// A packet's ECN field (RFC 3168 §5: 00 Not-ECT, 01 ECT(1), 10 ECT(0), 11 CE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Ecn {
    /// Not ECN-capable: a queue drops it where it would mark.
    #[default]
    NotEct,
    /// ECN-capable transport, code point 1.
    Ect1,
    /// ECN-capable transport, code point 0 (what RFC 3168 senders set).
    Ect0,
    /// Congestion experienced: a router marked it.
    Ce,
}

impl Ecn {
    /// Whether a router may mark it instead of dropping it (RFC 3168 §5: ECT(0), ECT(1), or
    /// already CE, which stays CE).
    #[inline]
    pub fn capable(self) -> bool {
        self != Ecn::NotEct
    }

    /// The two bits as they sit in the IP header's TOS / traffic class byte (its low bits).
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }

    /// The field of a TOS / traffic class byte (its two low bits).
    pub fn from_bits(tos: u8) -> Self {
        match tos & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_points_round_trip_and_only_not_ect_is_incapable() {
        for e in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
            assert_eq!(Ecn::from_bits(e.bits() | 0xb8), e);
            assert_eq!(e.capable(), e != Ecn::NotEct);
        }
    }
}
