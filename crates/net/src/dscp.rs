//! DiffServ code points: parsing by name or number, and the TOS byte they occupy.

use core::fmt;
use core::str::FromStr;

/// A DiffServ code point, the upper six bits of the IPv4 TOS / IPv6 traffic class byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dscp(u8);

impl Dscp {
    /// Default forwarding, best effort (RFC 2474 §4.1).
    pub const CS0: Dscp = Dscp(0);
    /// Assured forwarding class 1, low drop precedence (RFC 2597 §6): the default for traffic with
    /// a target rate, so a DiffServ edge can mark it in or out of profile.
    pub const AF11: Dscp = Dscp(10);
    /// Expedited forwarding (RFC 3246 §2.3).
    pub const EF: Dscp = Dscp(46);

    /// The code point with value `value`, if it fits in six bits.
    pub const fn new(value: u8) -> Option<Dscp> {
        if value < 64 {
            Some(Dscp(value))
        } else {
            None
        }
    }

    /// The six-bit value.
    pub const fn value(self) -> u8 {
        self.0
    }

    /// The TOS / traffic class byte carrying this code point and the given ECN bits (RFC 2474 §3,
    /// RFC 3168 §5).
    pub const fn tos(self, ecn: u8) -> u8 {
        (self.0 << 2) | (ecn & 0b11)
    }

    /// The code point for traffic with (`true`) or without a target rate when none was chosen.
    pub const fn default_for(has_target: bool) -> Dscp {
        if has_target {
            Dscp::AF11
        } else {
            Dscp::CS0
        }
    }

    /// The standard name of this value, if it has one.
    pub fn name(self) -> Option<String> {
        let v = self.0;
        if v == 46 {
            return Some("EF".into());
        }
        if v & 7 == 0 {
            return Some(format!("CS{}", v / 8));
        }
        // RFC 2597 §6: AFxy = 8x + 2y for class x in 1..=4 and drop precedence y in 1..=3.
        let (class, precedence) = (v / 8, (v % 8) / 2);
        if (1..=4).contains(&class) && (1..=3).contains(&precedence) && v & 1 == 0 {
            return Some(format!("AF{class}{precedence}"));
        }
        None
    }
}

/// Why a DSCP was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DscpError {
    /// Neither a known name nor a number.
    #[error("unknown DSCP '{0}' (use AF11..AF43, EF, CS0..CS7 or a number 0..63)")]
    Unknown(String),
    /// A number that does not fit in six bits.
    #[error("DSCP {0} is out of range (0..63)")]
    OutOfRange(u32),
}

impl FromStr for Dscp {
    type Err = DscpError;

    /// Parse `AF11`..`AF43`, `EF`, `CS0`..`CS7` (any case) or a decimal number 0..63.
    fn from_str(text: &str) -> Result<Dscp, DscpError> {
        let t = text.trim();
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            let value: u32 = t.parse().map_err(|_| DscpError::OutOfRange(u32::MAX))?;
            return u8::try_from(value)
                .ok()
                .and_then(Dscp::new)
                .ok_or(DscpError::OutOfRange(value));
        }
        let upper = t.to_ascii_uppercase();
        let unknown = || DscpError::Unknown(t.to_string());
        if upper == "EF" {
            return Ok(Dscp::EF);
        }
        if let Some(rest) = upper.strip_prefix("CS") {
            return match rest.as_bytes() {
                // RFC 2474 §4.2.2.1: class selector n is 8n.
                [d @ b'0'..=b'7'] => Ok(Dscp((d - b'0') * 8)),
                _ => Err(unknown()),
            };
        }
        if let Some(rest) = upper.strip_prefix("AF") {
            return match rest.as_bytes() {
                // RFC 2597 §6: AFxy = 8x + 2y.
                [c @ b'1'..=b'4', p @ b'1'..=b'3'] => Ok(Dscp((c - b'0') * 8 + (p - b'0') * 2)),
                _ => Err(unknown()),
            };
        }
        Err(unknown())
    }
}

impl fmt::Display for Dscp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(&name),
            None => write!(f, "{}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_the_rfc_values() {
        // RFC 2597 §6 table and RFC 3246 §2.3.
        let table = [
            ("AF11", 10),
            ("AF12", 12),
            ("AF13", 14),
            ("AF21", 18),
            ("AF22", 20),
            ("AF23", 22),
            ("AF31", 26),
            ("AF32", 28),
            ("AF33", 30),
            ("AF41", 34),
            ("AF42", 36),
            ("AF43", 38),
            ("EF", 46),
            ("CS0", 0),
            ("CS1", 8),
            ("CS5", 40),
            ("CS7", 56),
        ];
        for (name, value) in table {
            let d: Dscp = name.parse().unwrap();
            assert_eq!(d.value(), value, "{name}");
            assert_eq!(d.to_string(), name);
            assert_eq!(name.to_lowercase().parse::<Dscp>().unwrap(), d);
        }
    }

    #[test]
    fn numbers_and_tos_byte() {
        assert_eq!("46".parse::<Dscp>().unwrap(), Dscp::EF);
        assert_eq!("63".parse::<Dscp>().unwrap().value(), 63);
        assert_eq!(Dscp::AF11.tos(0), 0x28);
        assert_eq!(Dscp::EF.tos(0b10), 0xba);
        assert_eq!(Dscp::new(1).unwrap().to_string(), "1");
        assert_eq!(Dscp::default_for(true), Dscp::AF11);
        assert_eq!(Dscp::default_for(false), Dscp::CS0);
    }

    #[test]
    fn refuses_unknown_names_and_large_numbers() {
        for bad in [
            "AF44",
            "AF51",
            "AF1",
            "CS8",
            "EF1",
            "gold",
            "",
            "af",
            "99999999999999",
        ] {
            assert!(bad.parse::<Dscp>().is_err(), "{bad}");
        }
        assert_eq!("64".parse::<Dscp>(), Err(DscpError::OutOfRange(64)));
        assert!(matches!("AF44".parse::<Dscp>(), Err(DscpError::Unknown(_))));
    }
}
