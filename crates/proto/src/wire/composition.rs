//! The composition a connection runs (congestion control, error control and order) and its block
//! in a hello, 24 bytes.
//!
//! Layout (offsets within the block, integers big-endian):
//! congestion code (1), rate in bit/s (8), error code (1), partial-reliability flags (1),
//! deadline in microseconds (8), retransmission limit (4), order code (1). A field the codes
//! leave unused must be zero, so every composition has exactly one encoding.

use super::header::{be_u32, be_u64, Field};
use super::{Composition, WireError};
use crate::rate::Rate;
use crate::time::Duration;

/// Which congestion control decides the allowed sending rate X.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateControl {
    /// Send at a fixed rate, whatever the network says (for tests and calibration only).
    Fixed {
        /// The constant sending rate.
        rate: Rate,
    },
    /// TFRC, RFC 5348.
    Tfrc,
    /// gTFRC: TFRC whose rate is lifted to `target` once out of slow start, as far as the receive
    /// rate allows under the default `GtfrcRule::Qstp` (QSTP paper eq. (2)).
    ///
    /// The floor is applied when feedback arrives: while no feedback comes back, the no-feedback
    /// timer (RFC 5348 §4.4) halves the rate as in TFRC, below `target` if need be.
    Gtfrc {
        /// The negotiated rate g; zero makes it plain TFRC.
        target: Rate,
    },
    /// A TCP-like additive-increase multiplicative-decrease rate controller, for comparison.
    Aimd,
}

impl RateControl {
    /// The target rate g this controller guarantees, zero if none.
    pub fn target(&self) -> Rate {
        match self {
            RateControl::Gtfrc { target } => *target,
            _ => Rate::ZERO,
        }
    }
}

/// Which error control repairs losses.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorControl {
    /// No repair: lost data stays lost (DCCP-like).
    None,
    /// Datagram SACK with full reliability (QSTP paper §4.2).
    SackFull,
    /// Datagram SACK with per-message partial reliability: data is abandoned once its deadline has
    /// passed or it was retransmitted `max_retransmissions` times, and the receiver told to skip it.
    SackPartial {
        /// Give up on a message this long after it was first written; `None` for no deadline.
        deadline: Option<Duration>,
        /// Give up on a message after this many retransmissions; `None` for no limit.
        max_retransmissions: Option<u32>,
    },
}

impl ErrorControl {
    /// Whether lost data is ever sent again.
    pub fn retransmits(&self) -> bool {
        !matches!(self, ErrorControl::None)
    }
}

/// In which order the receiver hands data to the application.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// In the order it was written: an ordered byte stream, or messages in order.
    Ordered,
    /// Messages as soon as each is complete.
    Unordered,
}

/// Field offsets within the block.
mod field {
    use super::Field;
    pub const CONGESTION: usize = 0;
    pub const RATE: Field = 1..9;
    pub const ERROR: usize = 9;
    pub const PARTIAL_FLAGS: usize = 10;
    pub const DEADLINE: Field = 11..19;
    pub const MAX_RETRANSMISSIONS: Field = 19..23;
    pub const ORDER: usize = 23;
}

/// Length of the block, bytes.
pub(crate) const LEN: usize = 24;

mod code {
    pub const FIXED: u8 = 0;
    pub const TFRC: u8 = 1;
    pub const GTFRC: u8 = 2;
    pub const AIMD: u8 = 3;

    pub const ERROR_NONE: u8 = 0;
    pub const SACK_FULL: u8 = 1;
    pub const SACK_PARTIAL: u8 = 2;

    pub const ORDERED: u8 = 0;
    pub const UNORDERED: u8 = 1;

    pub const HAS_DEADLINE: u8 = 0x01;
    pub const HAS_MAX_RETRANSMISSIONS: u8 = 0x02;
}

/// Largest deadline the wire carries, microseconds (the nanosecond `Duration` must not overflow).
const MAX_DEADLINE_MICROS: u64 = u64::MAX / 1_000;

/// Decode a block of exactly `LEN` bytes.
pub(crate) fn parse(block: &[u8]) -> Result<Composition, WireError> {
    if block.len() != LEN {
        return Err(WireError::Truncated);
    }
    let rate = be_u64(&block[field::RATE]);
    let congestion = match block[field::CONGESTION] {
        code::FIXED if rate == 0 => return Err(WireError::InvalidField("fixed rate of zero")),
        code::FIXED => RateControl::Fixed {
            rate: Rate::from_bps(rate),
        },
        code::GTFRC => RateControl::Gtfrc {
            target: Rate::from_bps(rate),
        },
        code::TFRC | code::AIMD if rate != 0 => {
            return Err(WireError::InvalidField(
                "rate given for a controller without one",
            ))
        }
        code::TFRC => RateControl::Tfrc,
        code::AIMD => RateControl::Aimd,
        _ => return Err(WireError::InvalidField("congestion control code")),
    };

    let flags = block[field::PARTIAL_FLAGS];
    let deadline = be_u64(&block[field::DEADLINE]);
    let max_retransmissions = be_u32(&block[field::MAX_RETRANSMISSIONS]);
    let error = match block[field::ERROR] {
        code::ERROR_NONE | code::SACK_FULL
            if flags != 0 || deadline != 0 || max_retransmissions != 0 =>
        {
            return Err(WireError::InvalidField(
                "partial-reliability limits without partial reliability",
            ))
        }
        code::ERROR_NONE => ErrorControl::None,
        code::SACK_FULL => ErrorControl::SackFull,
        code::SACK_PARTIAL => parse_partial(flags, deadline, max_retransmissions)?,
        _ => return Err(WireError::InvalidField("error control code")),
    };

    let order = match block[field::ORDER] {
        code::ORDERED => Order::Ordered,
        code::UNORDERED => Order::Unordered,
        _ => return Err(WireError::InvalidField("order code")),
    };
    Ok(Composition {
        congestion,
        error,
        order,
    })
}

/// The partial-reliability limits, each present only with its flag.
fn parse_partial(
    flags: u8,
    deadline: u64,
    max_retransmissions: u32,
) -> Result<ErrorControl, WireError> {
    if flags & !(code::HAS_DEADLINE | code::HAS_MAX_RETRANSMISSIONS) != 0 {
        return Err(WireError::InvalidField(
            "reserved partial-reliability flag bits",
        ));
    }
    let deadline = if flags & code::HAS_DEADLINE != 0 {
        if deadline == 0 {
            return Err(WireError::InvalidField("deadline of zero"));
        }
        if deadline > MAX_DEADLINE_MICROS {
            return Err(WireError::InvalidField("deadline overflows"));
        }
        Some(Duration::from_micros(deadline))
    } else if deadline != 0 {
        return Err(WireError::InvalidField("deadline without its flag"));
    } else {
        None
    };
    let max_retransmissions = if flags & code::HAS_MAX_RETRANSMISSIONS != 0 {
        Some(max_retransmissions)
    } else if max_retransmissions != 0 {
        return Err(WireError::InvalidField(
            "retransmission limit without its flag",
        ));
    } else {
        None
    };
    if deadline.is_none() && max_retransmissions.is_none() {
        return Err(WireError::InvalidField(
            "partial reliability without a deadline or a limit",
        ));
    }
    Ok(ErrorControl::SackPartial {
        deadline,
        max_retransmissions,
    })
}

/// Write `composition` into a block of exactly `LEN` zeroed bytes. A deadline is carried in whole
/// microseconds, at least one.
pub(crate) fn emit(composition: &Composition, block: &mut [u8]) {
    let (congestion, rate) = match composition.congestion {
        RateControl::Fixed { rate } => (code::FIXED, rate.bps()),
        RateControl::Tfrc => (code::TFRC, 0),
        RateControl::Gtfrc { target } => (code::GTFRC, target.bps()),
        RateControl::Aimd => (code::AIMD, 0),
    };
    block[field::CONGESTION] = congestion;
    block[field::RATE].copy_from_slice(&rate.to_be_bytes());

    let (error, flags, deadline, max_retransmissions) = match composition.error {
        ErrorControl::None => (code::ERROR_NONE, 0, 0, 0),
        ErrorControl::SackFull => (code::SACK_FULL, 0, 0, 0),
        ErrorControl::SackPartial {
            deadline,
            max_retransmissions,
        } => {
            let mut flags = 0;
            if deadline.is_some() {
                flags |= code::HAS_DEADLINE;
            }
            if max_retransmissions.is_some() {
                flags |= code::HAS_MAX_RETRANSMISSIONS;
            }
            let micros = deadline.map_or(0, |d| d.as_micros().clamp(1, MAX_DEADLINE_MICROS));
            (
                code::SACK_PARTIAL,
                flags,
                micros,
                max_retransmissions.unwrap_or(0),
            )
        }
    };
    block[field::ERROR] = error;
    block[field::PARTIAL_FLAGS] = flags;
    block[field::DEADLINE].copy_from_slice(&deadline.to_be_bytes());
    block[field::MAX_RETRANSMISSIONS].copy_from_slice(&max_retransmissions.to_be_bytes());

    block[field::ORDER] = match composition.order {
        Order::Ordered => code::ORDERED,
        Order::Unordered => code::UNORDERED,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(c: &Composition) -> [u8; LEN] {
        let mut block = [0; LEN];
        emit(c, &mut block);
        block
    }

    #[test]
    fn golden_qstp_block() {
        let qstp = Composition {
            congestion: RateControl::Gtfrc {
                target: Rate::from_kbps(500),
            },
            error: ErrorControl::SackFull,
            order: Order::Ordered,
        };
        let block = encode(&qstp);
        #[rustfmt::skip]
        let expected = [
            2, 0, 0, 0, 0, 0, 0x07, 0xa1, 0x20, // gtfrc, 500_000 bit/s
            1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // sack-full, no limits
            0, // ordered
        ];
        assert_eq!(block, expected);
        assert_eq!(parse(&block), Ok(qstp));
    }

    #[test]
    fn golden_partial_block() {
        let partial = Composition {
            congestion: RateControl::Tfrc,
            error: ErrorControl::SackPartial {
                deadline: Some(Duration::from_millis(150)),
                max_retransmissions: Some(2),
            },
            order: Order::Unordered,
        };
        let block = encode(&partial);
        #[rustfmt::skip]
        let expected = [
            1, 0, 0, 0, 0, 0, 0, 0, 0, // tfrc
            2, 3, 0, 0, 0, 0, 0, 0x02, 0x49, 0xf0, 0, 0, 0, 2, // partial: 150_000 us, 2 retransmissions
            1, // unordered
        ];
        assert_eq!(block, expected);
        assert_eq!(parse(&block), Ok(partial));
    }

    #[test]
    fn rejects_inconsistent_blocks() {
        let fixed = Composition {
            congestion: RateControl::Fixed {
                rate: Rate::from_mbps(1),
            },
            error: ErrorControl::None,
            order: Order::Unordered,
        };
        let good = encode(&fixed);
        assert_eq!(parse(&good), Ok(fixed));
        let mutate = |at: usize, value: u8| {
            let mut b = good;
            b[at] = value;
            parse(&b)
        };
        assert!(matches!(
            mutate(field::CONGESTION, 4),
            Err(WireError::InvalidField("congestion control code"))
        ));
        assert!(
            matches!(
                mutate(field::CONGESTION, 1),
                Err(WireError::InvalidField(_))
            ),
            "tfrc with a rate"
        );
        assert!(matches!(
            mutate(field::ERROR, 3),
            Err(WireError::InvalidField("error control code"))
        ));
        assert!(matches!(
            mutate(field::PARTIAL_FLAGS, 1),
            Err(WireError::InvalidField(_))
        ));
        assert!(matches!(
            mutate(field::ORDER, 2),
            Err(WireError::InvalidField("order code"))
        ));
        let mut zero_rate = good;
        zero_rate[field::RATE].fill(0);
        assert!(matches!(
            parse(&zero_rate),
            Err(WireError::InvalidField("fixed rate of zero"))
        ));
        let mut partial = good;
        partial[field::ERROR] = code::SACK_PARTIAL;
        assert!(
            matches!(parse(&partial), Err(WireError::InvalidField(_))),
            "neither limit"
        );
        partial[field::PARTIAL_FLAGS] = code::HAS_DEADLINE;
        assert!(matches!(
            parse(&partial),
            Err(WireError::InvalidField("deadline of zero"))
        ));
        partial[field::PARTIAL_FLAGS] = 0x04 | code::HAS_MAX_RETRANSMISSIONS;
        assert!(
            matches!(parse(&partial), Err(WireError::InvalidField(_))),
            "reserved flag bit"
        );
        partial[field::PARTIAL_FLAGS] = code::HAS_MAX_RETRANSMISSIONS;
        assert!(parse(&partial).is_ok());
        partial[field::DEADLINE.end - 1] = 1;
        assert!(matches!(
            parse(&partial),
            Err(WireError::InvalidField("deadline without its flag"))
        ));
        assert_eq!(parse(&good[..LEN - 1]), Err(WireError::Truncated));
    }
}
