//! The little of an IPv4 packet the router reads (addresses, protocol, ports, DSCP) and the one
//! field it writes (the DSCP of a marked packet). Decoding never panics: a packet too short or
//! not IPv4 is an error the router counts and drops.

use qstp_sim::classify::{FiveTuple, PacketMeta};
use std::net::{IpAddr, Ipv4Addr};

/// Why a packet could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Fewer bytes than the header says (or than a minimal header).
    #[error("truncated IPv4 packet")]
    Truncated,
    /// Not IP version 4.
    #[error("not an IPv4 packet (version {0})")]
    NotIpv4(u8),
}

/// The fields of an IPv4 packet the router looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// The DS field's codepoint (RFC 2474 §3: the upper six bits of the TOS byte).
    pub dscp: u8,
    /// IP protocol number.
    pub protocol: u8,
    /// Source and destination ports for TCP and UDP of a first fragment, else zeros.
    pub ports: (u16, u16),
}

impl Header {
    /// What the simulator's classifiers look at.
    pub fn meta(&self) -> PacketMeta {
        PacketMeta {
            dscp: self.dscp,
            tuple: Some(FiveTuple {
                src: IpAddr::V4(self.src),
                dst: IpAddr::V4(self.dst),
                protocol: self.protocol,
                src_port: self.ports.0,
                dst_port: self.ports.1,
            }),
            group: None,
            flow: None,
        }
    }
}

/// Read the header of the IPv4 packet `p` (RFC 791 §3.1).
pub fn decode(p: &[u8]) -> Result<Header, DecodeError> {
    let first = *p.first().ok_or(DecodeError::Truncated)?;
    if first >> 4 != 4 {
        return Err(DecodeError::NotIpv4(first >> 4));
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < 20 || p.len() < ihl {
        return Err(DecodeError::Truncated);
    }
    let protocol = p[9];
    let src = Ipv4Addr::new(p[12], p[13], p[14], p[15]);
    let dst = Ipv4Addr::new(p[16], p[17], p[18], p[19]);
    // RFC 791: the fragment offset is the low 13 bits of bytes 6-7; only offset 0 has ports.
    let first_fragment = u16::from_be_bytes([p[6], p[7]]) & 0x1fff == 0;
    let ports = match (protocol, first_fragment, p.get(ihl..ihl + 4)) {
        (6 | 17, true, Some(b)) => (
            u16::from_be_bytes([b[0], b[1]]),
            u16::from_be_bytes([b[2], b[3]]),
        ),
        _ => (0, 0),
    };
    Ok(Header {
        src,
        dst,
        dscp: p[1] >> 2,
        protocol,
        ports,
    })
}

/// Set the DSCP of the IPv4 packet `p` (keeping the two ECN bits, RFC 3168 §5) and its header
/// checksum (RFC 1624 incremental update of the one changed 16-bit word).
pub fn set_dscp(p: &mut [u8], dscp: u8) -> Result<(), DecodeError> {
    if p.len() < 20 {
        return Err(DecodeError::Truncated);
    }
    let old = u16::from_be_bytes([p[0], p[1]]);
    p[1] = (dscp << 2) | (p[1] & 0x03);
    let new = u16::from_be_bytes([p[0], p[1]]);
    // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m').
    let hc = u16::from_be_bytes([p[10], p[11]]);
    let mut sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let hc = !(sum as u16);
    p[10..12].copy_from_slice(&hc.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 20-byte IPv4 header plus 4 bytes of TCP ports, with a valid checksum.
    fn packet() -> Vec<u8> {
        let mut p = vec![
            0x45, 0x00, 0x00, 0x18, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 1, 0, 3, 10, 2, 0, 3, 0x9c,
            0x40, 0x13, 0x89,
        ];
        let c = checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p
    }

    /// RFC 1071 checksum over `h`.
    fn checksum(h: &[u8]) -> u16 {
        let mut sum: u32 = h
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    proptest::proptest! {
        /// Any bytes at all: an error or a header, never a panic; and setting a DSCP on what
        /// decodes keeps it decodable.
        #[test]
        fn decoding_any_bytes_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..80), dscp in 0u8..64) {
            let mut p = bytes;
            if decode(&p).is_ok() {
                set_dscp(&mut p, dscp).unwrap();
                proptest::prop_assert_eq!(decode(&p).unwrap().dscp, dscp);
            }
        }
    }

    #[test]
    fn decodes_addresses_ports_and_dscp() {
        let h = decode(&packet()).unwrap();
        assert_eq!(h.src, Ipv4Addr::new(10, 1, 0, 3));
        assert_eq!(h.dst, Ipv4Addr::new(10, 2, 0, 3));
        assert_eq!((h.protocol, h.ports, h.dscp), (6, (40000, 5001), 0));
    }

    #[test]
    fn refuses_what_is_not_a_whole_ipv4_header() {
        assert_eq!(decode(&[]), Err(DecodeError::Truncated));
        assert_eq!(decode(&[0x60; 40]), Err(DecodeError::NotIpv4(6)));
        assert_eq!(decode(&packet()[..19]), Err(DecodeError::Truncated));
        // An IHL of 15 words on a 24-byte packet.
        let mut p = packet();
        p[0] = 0x4f;
        assert_eq!(decode(&p), Err(DecodeError::Truncated));
        assert_eq!(set_dscp(&mut [0u8; 3], 10), Err(DecodeError::Truncated));
    }

    #[test]
    fn setting_the_dscp_keeps_ecn_and_a_valid_checksum() {
        let mut p = packet();
        p[1] = 0x02; // ECT(0)
        p[10] = 0;
        p[11] = 0;
        let c = checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        for dscp in [10, 12, 14, 0, 46] {
            set_dscp(&mut p, dscp).unwrap();
            assert_eq!(decode(&p).unwrap().dscp, dscp);
            assert_eq!(p[1] & 3, 2, "ECN bits kept");
            assert_eq!(checksum(&p[..20]), 0, "a valid header sums to zero");
        }
    }
}
