//! IPv4, IPv6, UDP and TCP headers as the captures and the testbed write them, and the internet
//! checksum: the one home of header sizes and of RFC 1071 arithmetic for the simulator's packet
//! captures, `qstp send --pcap` and the testbed's TCP segmentation.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Bytes of an IPv4 header without options (RFC 791 §3.1).
pub const IPV4_HEADER: usize = 20;
/// Bytes of an IPv6 header (RFC 8200 §3).
pub const IPV6_HEADER: usize = 40;
/// Bytes of a UDP header (RFC 768).
pub const UDP_HEADER: usize = 8;
/// Bytes of a TCP header without options (RFC 9293 §3.1).
pub const TCP_HEADER: usize = 20;
/// IPv4 and UDP headers: what a UDP payload costs on the wire beyond itself.
pub const UDP_IP_HEADER: u32 = (IPV4_HEADER + UDP_HEADER) as u32;
/// IPv4 and TCP headers, no options: a segment's size less its payload.
pub const TCP_IP_HEADER: u32 = (IPV4_HEADER + TCP_HEADER) as u32;

/// The TCP payload of a full segment in a packet of `packet_bytes` on the wire: the packet less
/// the TCP/IP headers, and at least one byte (so that rates counted in segments stay finite).
pub fn tcp_payload(packet_bytes: u64) -> u64 {
    packet_bytes.saturating_sub(u64::from(TCP_IP_HEADER)).max(1)
}

/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;

/// The ones'-complement sum (RFC 1071 §4.1) of `data` added to `acc`, not folded; an odd last
/// byte counts as the high byte of a word.
pub fn ones_sum(data: &[u8], mut acc: u64) -> u64 {
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

/// `acc` folded to 16 bits (RFC 1071 §4.1: add the carries back in).
pub fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The internet checksum (RFC 1071) of `data` after the partial sum `acc`.
pub fn checksum(data: &[u8], acc: u64) -> u16 {
    !fold(ones_sum(data, acc))
}

/// Set the header checksum of the IPv4 header `ip`, options included (RFC 791 §3.1).
pub fn set_ipv4_checksum(ip: &mut [u8]) {
    ip[10] = 0;
    ip[11] = 0;
    let c = checksum(ip, 0);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
}

/// The sum of the IPv4 pseudo-header (RFC 9293 §3.1, RFC 768) for an upper-layer packet of
/// `len` bytes of protocol `protocol`.
pub fn ipv4_pseudo_sum(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, len: u32) -> u64 {
    ones_sum(&dst.octets(), ones_sum(&src.octets(), 0)) + u64::from(protocol) + u64::from(len)
}

/// The fields of an IPv4 header this project writes: no options, don't-fragment, TTL 64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4 {
    /// The whole packet's length, header included.
    pub total_len: u16,
    /// DSCP in the high six bits, ECN in the low two.
    pub tos: u8,
    /// Identification.
    pub id: u16,
    /// [`PROTO_TCP`] or [`PROTO_UDP`].
    pub protocol: u8,
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
}

impl Ipv4 {
    /// Append the header, checksum set, to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0x45, self.tos]);
        out.extend_from_slice(&self.total_len.to_be_bytes());
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&[0x40, 0x00, 64, self.protocol, 0, 0]); // DF, TTL 64
        out.extend_from_slice(&self.src.octets());
        out.extend_from_slice(&self.dst.octets());
        set_ipv4_checksum(&mut out[start..start + IPV4_HEADER]);
    }
}

/// Append an IPv6 header (no extension headers, hop limit 64) for a payload of `payload_len`
/// bytes of protocol `next_header` to `out`.
pub fn write_ipv6(
    out: &mut Vec<u8>,
    payload_len: u16,
    next_header: u8,
    src: Ipv6Addr,
    dst: Ipv6Addr,
) {
    out.extend_from_slice(&[0x60, 0, 0, 0]);
    out.extend_from_slice(&payload_len.to_be_bytes());
    out.extend_from_slice(&[next_header, 64]);
    out.extend_from_slice(&src.octets());
    out.extend_from_slice(&dst.octets());
}

/// The sum of the IPv6 pseudo-header (RFC 8200 §8.1) for an upper-layer packet of `len` bytes.
pub fn ipv6_pseudo_sum(src: Ipv6Addr, dst: Ipv6Addr, len: u32, next_header: u8) -> u64 {
    ones_sum(&dst.octets(), ones_sum(&src.octets(), 0)) + u64::from(len) + u64::from(next_header)
}

/// Append a UDP header (RFC 768) to `out`.
pub fn write_udp(out: &mut Vec<u8>, sport: u16, dport: u16, len: u16, checksum: u16) {
    out.extend_from_slice(&sport.to_be_bytes());
    out.extend_from_slice(&dport.to_be_bytes());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&checksum.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071's worked example (§3): the words 0001 f203 f4f5 f6f7 sum to ddf2.
    #[test]
    fn the_rfc_1071_example_sums_and_checks() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(ones_sum(&data, 0)), 0xddf2);
        assert_eq!(checksum(&data, 0), !0xddf2);
        // An odd byte counts as a word's high byte.
        assert_eq!(ones_sum(&[0x12], 0), 0x1200);
    }

    /// A header whose checksum was set sums to 0xffff, as a receiver checks it.
    #[test]
    fn an_ipv4_header_written_verifies() {
        let mut out = vec![0xaa]; // something before it: the header starts mid-buffer
        Ipv4 {
            total_len: 1500,
            tos: 10 << 2,
            id: 7,
            protocol: PROTO_UDP,
            src: Ipv4Addr::new(10, 1, 0, 1),
            dst: Ipv4Addr::new(10, 2, 0, 1),
        }
        .write(&mut out);
        assert_eq!(out.len(), 1 + IPV4_HEADER);
        assert_eq!(fold(ones_sum(&out[1..], 0)), 0xffff);
        assert_eq!(out[1 + 1], 40);
    }

    /// The header of Wikipedia's IPv4 checksum example, whose checksum is b861.
    #[test]
    fn a_known_header_gets_its_known_checksum() {
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0, 0, 0xc0, 0xa8, 0x00,
            0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        set_ipv4_checksum(&mut h);
        assert_eq!(&h[10..12], &[0xb8, 0x61]);
    }
}
