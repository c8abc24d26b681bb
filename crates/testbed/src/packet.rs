//! The little of an IPv4 packet the router reads (addresses, protocol, ports, DSCP, ECN) and the
//! one byte it writes (the TOS byte: the DSCP of a packet its edge marker coloured, the ECN field
//! of a packet its queue marked CE). Decoding never panics: a packet too short or not IPv4 is an
//! error the router counts and drops.

use qstp_dataplane::classify::{FiveTuple, PacketMeta};
use qstp_dataplane::ecn::Ecn;
use qstp_dataplane::headers::{fold, ones_sum, set_ipv4_checksum};
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
    /// The ECN field (RFC 3168 §5: the two low bits of the TOS byte).
    pub ecn: Ecn,
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
        ecn: Ecn::from_bits(p[1]),
        protocol,
        ports,
    })
}

/// Write `tos` into the TOS byte of the IPv4 packet `p` and update its header checksum
/// incrementally for the one changed 16-bit word (bytes 0-1). The caller has checked that `p`
/// holds at least a minimal header.
fn rewrite_tos(p: &mut [u8], tos: u8) {
    let old = u16::from_be_bytes([p[0], p[1]]);
    p[1] = tos;
    let new = u16::from_be_bytes([p[0], p[1]]);
    // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m').
    let hc = u16::from_be_bytes([p[10], p[11]]);
    let sum = u64::from(!hc) + u64::from(!old) + u64::from(new);
    let hc = !fold(sum);
    p[10..12].copy_from_slice(&hc.to_be_bytes());
}

/// Set the DSCP of the IPv4 packet `p` (keeping the two ECN bits, RFC 3168 §5) and its header
/// checksum (RFC 1624 incremental update of the one changed 16-bit word).
pub fn set_dscp(p: &mut [u8], dscp: u8) -> Result<(), DecodeError> {
    if p.len() < 20 {
        return Err(DecodeError::Truncated);
    }
    rewrite_tos(p, (dscp << 2) | (p[1] & 0x03));
    Ok(())
}

/// Mark the IPv4 packet `p` Congestion Experienced: its ECN field becomes CE (11), its DSCP is
/// kept (RFC 3168 §5), its header checksum updated (RFC 1624 eqn. 3). Only an ECN-capable packet
/// (ECT(0), ECT(1)) is changed; one already CE stays as it is, and a Not-ECT packet is never
/// marked (RFC 3168 §5: a router drops it instead; the queue does not ask to mark one). Returns
/// whether the field was changed.
pub fn set_ce(p: &mut [u8]) -> Result<bool, DecodeError> {
    if p.len() < 20 {
        return Err(DecodeError::Truncated);
    }
    if p[0] >> 4 != 4 {
        return Err(DecodeError::NotIpv4(p[0] >> 4));
    }
    match Ecn::from_bits(p[1]) {
        Ecn::Ect0 | Ecn::Ect1 => {
            rewrite_tos(p, p[1] | Ecn::Ce.bits());
            Ok(true)
        }
        Ecn::Ce | Ecn::NotEct => Ok(false),
    }
}

/// Length of the `struct virtio_net_hdr` before every packet on a TUN device opened with
/// `IFF_VNET_HDR` (linux/virtio_net.h).
pub const VNET_HDR_LEN: usize = 10;
/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum from `csum_start` on is left to the kernel (the
/// field at `csum_start + csum_offset` holds the pseudo-header's sum).
pub const VNET_F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_NONE`: one packet.
pub const VNET_GSO_NONE: u8 = 0;
/// `VIRTIO_NET_HDR_GSO_TCPV4`: a TCP/IPv4 super-packet of `gso_size`-byte segments.
pub const VNET_GSO_TCPV4: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_ECN`: the ECN bit of `gso_type`.
const VNET_GSO_ECN: u8 = 0x80;
/// Most segments in one super-packet, either way: the router sets the TUN devices' `gso_max_segs`
/// to this, refuses to split more, and coalesces no more.
pub const MAX_SEGMENTS: usize = 64;
/// The largest IPv4 packet (its total length is 16 bits).
const MAX_IPV4: usize = 65_535;

/// TCP flags (RFC 9293 §3.1; RFC 3168 §6.1 for ECE and CWR).
const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const URG: u8 = 0x20;
const ECE: u8 = 0x40;
const CWR: u8 = 0x80;

/// The `struct virtio_net_hdr` before each packet (its 16-bit fields little-endian, as the
/// kernel reads them on little-endian hosts without `TUNSETVNETBE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VnetHdr {
    /// `VNET_F_NEEDS_CSUM` or 0.
    pub flags: u8,
    /// `VNET_GSO_NONE` or `VNET_GSO_TCPV4` (others are refused when split).
    pub gso_type: u8,
    /// Length of the headers (IP and TCP) of a super-packet.
    pub hdr_len: u16,
    /// Payload bytes per segment of a super-packet.
    pub gso_size: u16,
    /// Where the checksummed span starts.
    pub csum_start: u16,
    /// Where the checksum field lies, from `csum_start`.
    pub csum_offset: u16,
}

impl VnetHdr {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0u8; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
        b
    }

    /// Read a header from its bytes.
    pub fn decode(b: &[u8; VNET_HDR_LEN]) -> VnetHdr {
        let le = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: le(2),
            gso_size: le(4),
            csum_start: le(6),
            csum_offset: le(8),
        }
    }
}

/// Why a packet read with a virtio-net header could not be made into plain packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GsoError {
    /// Not a TCP/IPv4 packet whose headers fit its length.
    #[error("not a whole TCP/IPv4 packet")]
    NotTcp4,
    /// A GSO type other than TCPv4 (with or without ECN).
    #[error("unsupported GSO type {0}")]
    Unsupported(u8),
    /// A segment size of zero, or more than [`MAX_SEGMENTS`] segments.
    #[error("bad segment size {0}")]
    SegmentSize(u16),
    /// The checksum's place lies outside the packet.
    #[error("checksum offset outside the packet")]
    Checksum,
    /// The output buffer is too small for a segment.
    #[error("segment larger than the buffer")]
    Buffer,
}

/// The IPv4 pseudo-header's sum (RFC 9293 §3.1) for a TCP segment of `tcp_len` bytes.
fn pseudo(ip: &[u8], tcp_len: usize) -> u64 {
    ones_sum(&ip[12..20], 0) + u64::from(ip[9]) + tcp_len as u64
}

/// A TCP/IPv4 packet as the write coalescing and the splitting see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// IPv4 header length.
    pub ihl: usize,
    /// TCP header length.
    pub thl: usize,
    /// IP identification.
    pub id: u16,
    /// TCP sequence number.
    pub seq: u32,
    /// TCP flags.
    pub flags: u8,
    /// Payload bytes.
    pub payload: usize,
    /// Its flow: source and destination address, source and destination port.
    pub flow: [u8; 12],
}

impl Segment {
    /// `p` as a TCP/IPv4 packet: a whole, unfragmented one whose lengths agree; `None` else.
    pub fn parse(p: &[u8]) -> Option<Segment> {
        let first = *p.first()?;
        let ihl = usize::from(first & 0x0f) * 4;
        if first >> 4 != 4 || ihl < 20 || p.len() < ihl + 20 || p[9] != 6 {
            return None;
        }
        // More fragments, or a fragment offset: not a whole segment.
        if u16::from_be_bytes([p[6], p[7]]) & 0x3fff != 0 {
            return None;
        }
        let thl = usize::from(p[ihl + 12] >> 4) * 4;
        let total = usize::from(u16::from_be_bytes([p[2], p[3]]));
        if thl < 20 || total != p.len() || ihl + thl > total {
            return None;
        }
        let mut flow = [0u8; 12];
        flow[..8].copy_from_slice(&p[12..20]);
        flow[8..].copy_from_slice(&p[ihl..ihl + 4]);
        Some(Segment {
            flow,
            ihl,
            thl,
            id: u16::from_be_bytes([p[4], p[5]]),
            seq: u32::from_be_bytes([p[ihl + 4], p[ihl + 5], p[ihl + 6], p[ihl + 7]]),
            flags: p[ihl + 13],
            payload: total - ihl - thl,
        })
    }

    /// Whether it may be part of a super-packet: data with ACK and at most PSH besides (no SYN,
    /// FIN, RST, URG, ECE or CWR), and a 20-byte IP header.
    pub fn coalescable(&self) -> bool {
        self.ihl == 20
            && self.payload > 0
            && self.flags & ACK != 0
            && self.flags & (FIN | SYN | RST | URG | ECE | CWR) == 0
    }
}

/// A run of segments of one TCP flow being coalesced into one super-packet: what the next one
/// must match. Start it with [`Run::start`] on a [`Segment::coalescable`] segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The first segment.
    pub head: Segment,
    /// Segments so far.
    pub count: usize,
    /// Payload bytes so far.
    pub payload: usize,
    /// Whether no segment may follow (the last one was short, or had PSH, or the run is full).
    pub closed: bool,
}

impl Run {
    /// A run of the one segment `head`.
    pub fn start(head: Segment) -> Run {
        Run {
            head,
            count: 1,
            payload: head.payload,
            closed: head.flags & PSH != 0,
        }
    }

    /// Whether segment `s` (bytes `p`) continues the run whose first segment's bytes are `h`:
    /// the same addresses, ports, TOS, DF, TTL, acknowledgement, window, flags (PSH aside),
    /// urgent pointer and options; the next sequence number and IP identification; a payload
    /// no larger than the first's; and room left under 65 535 bytes and [`MAX_SEGMENTS`].
    pub fn continues(&self, h: &[u8], p: &[u8], s: &Segment) -> bool {
        let (hd, ihl, thl) = (&self.head, self.head.ihl, self.head.thl);
        !self.closed
            && s.coalescable()
            && s.ihl == ihl
            && s.thl == thl
            && s.payload <= hd.payload
            && self.count < MAX_SEGMENTS
            && ihl + thl + self.payload + s.payload <= MAX_IPV4
            && s.seq == hd.seq.wrapping_add(self.payload as u32)
            && s.id == hd.id.wrapping_add(self.count as u16)
            && h[0..2] == p[0..2]
            && h[6..10] == p[6..10]
            && h[12..20] == p[12..20]
            && h[ihl..ihl + 4] == p[ihl..ihl + 4]
            && h[ihl + 8..ihl + 13] == p[ihl + 8..ihl + 13]
            && (h[ihl + 13] ^ p[ihl + 13]) & !PSH == 0
            && h[ihl + 14..ihl + 16] == p[ihl + 14..ihl + 16]
            && h[ihl + 18..ihl + thl] == p[ihl + 18..ihl + thl]
    }

    /// Add `s`, which [`Run::continues`] the run.
    pub fn push(&mut self, s: &Segment) {
        self.count += 1;
        self.payload += s.payload;
        self.closed = s.payload < self.head.payload
            || s.flags & PSH != 0
            || self.count == MAX_SEGMENTS
            || self.head.ihl + self.head.thl + self.payload + self.head.payload > MAX_IPV4;
    }

    /// Make the first segment's bytes `h` the headers of the whole run (total length, IP
    /// checksum, PSH if the last segment had it, the TCP checksum field holding the
    /// pseudo-header's sum) and return the virtio-net header that has the kernel cut it into
    /// the run's segments again. A run of one segment is left as it is, with an empty header.
    /// Written as the header, `h` and then the payloads of the other segments in order.
    pub fn finish(&self, h: &mut [u8], last_flags: u8) -> VnetHdr {
        if self.count < 2 {
            return VnetHdr::default();
        }
        let (ihl, thl) = (self.head.ihl, self.head.thl);
        let total = ihl + thl + self.payload;
        h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        set_ipv4_checksum(&mut h[..ihl]);
        h[ihl + 13] |= last_flags & PSH;
        let partial = fold(pseudo(h, thl + self.payload));
        h[ihl + 16..ihl + 18].copy_from_slice(&partial.to_be_bytes());
        VnetHdr {
            flags: VNET_F_NEEDS_CSUM,
            gso_type: VNET_GSO_TCPV4,
            hdr_len: (ihl + thl) as u16,
            gso_size: self.head.payload as u16,
            csum_start: ihl as u16,
            csum_offset: 16,
        }
    }
}

/// Complete the checksum a packet read with `VNET_F_NEEDS_CSUM` left to its reader: the sum from
/// `csum_start` to the end, added to what the field holds (the pseudo-header's sum).
pub fn complete_checksum(hdr: &VnetHdr, p: &mut [u8]) -> Result<(), GsoError> {
    if hdr.flags & VNET_F_NEEDS_CSUM == 0 {
        return Ok(());
    }
    let start = usize::from(hdr.csum_start);
    let at = start + usize::from(hdr.csum_offset);
    if at + 2 > p.len() {
        return Err(GsoError::Checksum);
    }
    // A sum of zero is sent as 0xffff, as the kernel does (for UDP, RFC 768, zero would mean
    // "no checksum"; for TCP both verify).
    let c = match !fold(ones_sum(&p[start..], 0)) {
        0 => 0xffff,
        c => c,
    };
    p[at..at + 2].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// How many segments the super-packet `p` (read with `hdr`) holds: 1 for a plain packet.
pub fn segments(hdr: &VnetHdr, p: &[u8]) -> Result<usize, GsoError> {
    if hdr.gso_type == VNET_GSO_NONE {
        return Ok(1);
    }
    if hdr.gso_type & !VNET_GSO_ECN != VNET_GSO_TCPV4 {
        return Err(GsoError::Unsupported(hdr.gso_type));
    }
    let s = Segment::parse(p).ok_or(GsoError::NotTcp4)?;
    let size = usize::from(hdr.gso_size);
    if size == 0 {
        return Err(GsoError::SegmentSize(hdr.gso_size));
    }
    let n = s.payload.div_ceil(size).max(1);
    if n > MAX_SEGMENTS {
        return Err(GsoError::SegmentSize(hdr.gso_size));
    }
    Ok(n)
}

/// Segment `i` (from 0, of [`segments`]) of the TCP/IPv4 super-packet `p` read with `hdr`,
/// written into `out` as a plain packet, as the kernel's own segmentation makes it: its IP total
/// length, identification (the first's plus `i`) and header checksum; its sequence number; CWR on
/// the first segment only, FIN and PSH on the last only; its TCP checksum in full. Its length.
pub fn segment(hdr: &VnetHdr, p: &[u8], i: usize, out: &mut [u8]) -> Result<usize, GsoError> {
    let n = segments(hdr, p)?;
    let s = Segment::parse(p).ok_or(GsoError::NotTcp4)?;
    if i >= n {
        return Err(GsoError::SegmentSize(hdr.gso_size));
    }
    let size = usize::from(hdr.gso_size).max(1);
    let (ihl, thl) = (s.ihl, s.thl);
    let head = ihl + thl;
    let from = (i * size).min(s.payload);
    let len = size.min(s.payload - from);
    let total = head + len;
    let o = out.get_mut(..total).ok_or(GsoError::Buffer)?;
    o[..head].copy_from_slice(&p[..head]);
    o[head..].copy_from_slice(&p[head + from..head + from + len]);
    o[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    o[4..6].copy_from_slice(&s.id.wrapping_add(i as u16).to_be_bytes());
    set_ipv4_checksum(&mut o[..ihl]);
    o[ihl + 4..ihl + 8].copy_from_slice(&s.seq.wrapping_add(from as u32).to_be_bytes());
    if i > 0 {
        o[ihl + 13] &= !CWR;
    }
    if i + 1 < n {
        o[ihl + 13] &= !(FIN | PSH);
    }
    o[ihl + 16] = 0;
    o[ihl + 17] = 0;
    let c = !fold(ones_sum(&o[ihl..], pseudo(o, thl + len)));
    o[ihl + 16..ihl + 18].copy_from_slice(&c.to_be_bytes());
    Ok(total)
}

#[cfg(test)]
pub(crate) mod tests {
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

    #[test]
    fn the_ecn_field_maps_to_its_four_code_points() {
        // RFC 3168 §5: 00 Not-ECT, 01 ECT(1), 10 ECT(0), 11 CE, whatever the DSCP above.
        let mut p = packet();
        for (bits, ecn) in [
            (0b00, Ecn::NotEct),
            (0b01, Ecn::Ect1),
            (0b10, Ecn::Ect0),
            (0b11, Ecn::Ce),
        ] {
            for dscp in [0u8, 10, 46, 63] {
                p[1] = (dscp << 2) | bits;
                let h = decode(&p).unwrap();
                assert_eq!((h.ecn, h.dscp), (ecn, dscp), "TOS {:#04x}", p[1]);
            }
        }
    }

    /// `packet()` with TOS `tos` (and a header checksum computed in full).
    fn with_tos(tos: u8) -> Vec<u8> {
        let mut p = packet();
        p[1] = tos;
        set_ipv4_checksum(&mut p[..20]);
        p
    }

    #[test]
    fn marking_ce_keeps_the_dscp_and_a_valid_checksum() {
        for dscp in [0u8, 10, 12, 14, 26, 46, 63] {
            for ect in [Ecn::Ect0, Ecn::Ect1] {
                let mut p = with_tos((dscp << 2) | ect.bits());
                assert_eq!(set_ce(&mut p), Ok(true));
                let h = decode(&p).unwrap();
                assert_eq!((h.ecn, h.dscp), (Ecn::Ce, dscp));
                assert_eq!(checksum(&p[..20]), 0, "a valid header sums to zero");
                // The incremental update gives the checksum a full computation gives.
                assert_eq!(p, with_tos((dscp << 2) | 0b11));
            }
        }
        // Not-ECT is never marked, CE stays CE: the bytes are left alone.
        for tos in [0x28, 0x2b, 0x00, 0x03] {
            let mut p = with_tos(tos);
            assert_eq!(set_ce(&mut p), Ok(false));
            assert_eq!(p, with_tos(tos));
        }
        assert_eq!(set_ce(&mut [0x45; 19]), Err(DecodeError::Truncated));
        assert_eq!(set_ce(&mut [0x60; 40]), Err(DecodeError::NotIpv4(6)));
    }

    proptest::proptest! {
        /// Any IPv4 header with a valid checksum stays valid when marked, whatever its other
        /// fields (RFC 1624 eqn. 3 against a full RFC 1071 sum); only the ECN bits change.
        #[test]
        fn marking_any_valid_header_keeps_its_checksum(
            head in proptest::array::uniform20(proptest::num::u8::ANY),
        ) {
            let mut p = head.to_vec();
            p[0] = 0x45;
            set_ipv4_checksum(&mut p[..20]);
            let before = p.clone();
            let changed = set_ce(&mut p).unwrap();
            proptest::prop_assert_eq!(changed, matches!(before[1] & 3, 1 | 2));
            proptest::prop_assert_eq!(checksum(&p[..20]), 0);
            let mut full = p.clone();
            set_ipv4_checksum(&mut full[..20]);
            proptest::prop_assert_eq!(&full, &p, "the same checksum as a full sum");
            proptest::prop_assert_eq!(p[1] >> 2, before[1] >> 2);
            let expect = if changed { 3 } else { before[1] & 3 };
            proptest::prop_assert_eq!(p[1] & 3, expect);
            proptest::prop_assert_eq!(&p[2..10], &before[2..10]);
            proptest::prop_assert_eq!(&p[12..], &before[12..]);
        }
    }

    /// A TCP/IPv4 segment with valid checksums, 10.1.0.3:40000 to 10.2.0.3:5001.
    fn tcp(seq: u32, id: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
        tcp_port(40000, seq, id, flags, payload)
    }

    /// A TCP/IPv4 segment with valid checksums, from port `sport`, of `n` payload bytes.
    pub(crate) fn tcp_from(sport: u16, seq: u32, id: u16, flags: u8, n: usize) -> Vec<u8> {
        tcp_port(sport, seq, id, flags, &bytes(seq as usize, n))
    }

    /// A TCP/IPv4 segment with valid checksums, 10.1.0.3:`sport` to 10.2.0.3:5001.
    fn tcp_port(sport: u16, seq: u32, id: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
        let total = 40 + payload.len();
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[4..6].copy_from_slice(&id.to_be_bytes());
        p[6] = 0x40; // DF
        p[8] = 64;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 1, 0, 3]);
        p[16..20].copy_from_slice(&[10, 2, 0, 3]);
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&5001u16.to_be_bytes());
        p[24..28].copy_from_slice(&seq.to_be_bytes());
        p[28..32].copy_from_slice(&77_777u32.to_be_bytes());
        p[32] = 5 << 4;
        p[33] = flags;
        p[34..36].copy_from_slice(&502u16.to_be_bytes());
        p[40..].copy_from_slice(payload);
        set_ipv4_checksum(&mut p[..20]);
        let c = !fold(ones_sum(&p[20..], pseudo(&p, total - 20)));
        p[36..38].copy_from_slice(&c.to_be_bytes());
        p
    }

    /// Whether the IP and TCP checksums of `p` verify.
    fn checksums_verify(p: &[u8]) -> bool {
        fold(ones_sum(&p[..20], 0)) == 0xffff
            && fold(ones_sum(&p[20..], pseudo(p, p.len() - 20))) == 0xffff
    }

    /// Payload bytes that differ from segment to segment.
    fn bytes(from: usize, n: usize) -> Vec<u8> {
        (from..from + n).map(|i| (i * 7 + 3) as u8).collect()
    }

    /// `n` segments of `size` bytes (the last `last` bytes, with `last_flags`), from sequence
    /// number `seq` and IP id `id`.
    fn flow(seq: u32, id: u16, n: usize, size: usize, last: usize, last_flags: u8) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                let (len, flags) = if i + 1 == n {
                    (last, last_flags)
                } else {
                    (size, ACK)
                };
                let from = i * size;
                tcp(
                    seq.wrapping_add(from as u32),
                    id.wrapping_add(i as u16),
                    flags,
                    &bytes(from, len),
                )
            })
            .collect()
    }

    /// Coalesce `segs` as the router's writer does: `None` if they do not all form one run.
    fn coalesce(segs: &[Vec<u8>]) -> Option<(VnetHdr, Vec<u8>)> {
        let s0 = Segment::parse(&segs[0]).filter(Segment::coalescable)?;
        let mut run = Run::start(s0);
        let mut last_flags = s0.flags;
        for p in &segs[1..] {
            let s = Segment::parse(p)?;
            if !run.continues(&segs[0], p, &s) {
                return None;
            }
            run.push(&s);
            last_flags = s.flags;
        }
        let mut h = segs[0].clone();
        let hdr = run.finish(&mut h, last_flags);
        for p in &segs[1..] {
            h.extend_from_slice(&p[40..]);
        }
        Some((hdr, h))
    }

    /// Split `p` read with `hdr` into its segments.
    fn split(hdr: &VnetHdr, p: &[u8]) -> Result<Vec<Vec<u8>>, GsoError> {
        let mut out = vec![0u8; 65_535];
        (0..segments(hdr, p)?)
            .map(|i| segment(hdr, p, i, &mut out).map(|n| out[..n].to_vec()))
            .collect()
    }

    #[test]
    fn coalesced_segments_split_back_into_the_same_bytes() {
        for (n, last, flags) in [
            (4, 1448, ACK),
            (3, 500, ACK | PSH),
            (45, 1448, ACK),
            (2, 1, ACK),
        ] {
            let segs = flow(4_294_960_000, 65_530, n, 1448, last, flags);
            assert!(segs.iter().all(|p| checksums_verify(p)));
            let (hdr, big) = coalesce(&segs).expect("one run");
            assert_eq!(hdr.gso_type, VNET_GSO_TCPV4);
            assert_eq!(
                (hdr.gso_size, hdr.hdr_len, hdr.csum_start, hdr.csum_offset),
                (1448, 40, 20, 16)
            );
            assert_eq!(big.len(), 40 + 1448 * (n - 1) + last);
            assert_eq!(usize::from(u16::from_be_bytes([big[2], big[3]])), big.len());
            assert_eq!(
                fold(ones_sum(&big[..20], 0)),
                0xffff,
                "the IP header checksum verifies"
            );
            assert_eq!(big[33] & PSH, flags & PSH, "PSH of the last segment");
            assert_eq!(split(&hdr, &big).unwrap(), segs, "{n} segments");
        }
    }

    /// The virtio-net header of a TCP super-packet of 1448-byte segments whose checksum the
    /// receiver of the header completes (a sender's TSO).
    fn tso_1448() -> VnetHdr {
        VnetHdr {
            flags: VNET_F_NEEDS_CSUM,
            gso_type: VNET_GSO_TCPV4,
            hdr_len: 40,
            gso_size: 1448,
            csum_start: 20,
            csum_offset: 16,
        }
    }

    #[test]
    fn a_split_super_packet_coalesces_into_the_same_bytes() {
        // A super-packet as a sender's TSO hands it over: CWR on it, PSH, the pseudo-header's
        // sum in the checksum field.
        let payload = bytes(0, 3 * 1448 + 100);
        let mut big = tcp(1000, 7, ACK | PSH, &payload);
        let partial = fold(pseudo(&big, big.len() - 20));
        big[36..38].copy_from_slice(&partial.to_be_bytes());
        let hdr = tso_1448();
        let segs = split(&hdr, &big).unwrap();
        assert_eq!(segs.len(), 4);
        for (i, p) in segs.iter().enumerate() {
            assert!(checksums_verify(p), "segment {i}");
            let s = Segment::parse(p).unwrap();
            assert_eq!(s.seq, 1000 + 1448 * i as u32);
            assert_eq!(s.id, 7 + i as u16);
            assert_eq!(s.flags & PSH != 0, i == 3, "PSH on the last only");
        }
        assert_eq!(coalesce(&segs), Some((hdr, big.clone())));
        // CWR and FIN: CWR stays on the first segment only, FIN on the last only.
        let mut cwr = big.clone();
        cwr[33] = ACK | CWR | FIN;
        let segs = split(&hdr, &cwr).unwrap();
        let flags: Vec<u8> = segs.iter().map(|p| p[33]).collect();
        assert_eq!(flags, [ACK | CWR, ACK, ACK, ACK | FIN]);
        assert!(segs.iter().all(|p| checksums_verify(p)));
        // A plain packet is one segment.
        assert_eq!(segments(&VnetHdr::default(), &big), Ok(1));
    }

    #[test]
    fn each_segment_of_a_super_packet_carries_its_ecn_field_and_is_marked_alone() {
        // An ECT(0) super-packet (RFC 3168 §6.1.1: the sender sets ECT on data) of 3 segments.
        let mut big = tcp(1000, 7, ACK, &bytes(0, 3 * 1448));
        big[1] = 0x28 | Ecn::Ect0.bits();
        set_ipv4_checksum(&mut big[..20]);
        let partial = fold(pseudo(&big, big.len() - 20));
        big[36..38].copy_from_slice(&partial.to_be_bytes());
        let hdr = tso_1448();
        let mut segs = split(&hdr, &big).unwrap();
        for p in &segs {
            assert_eq!(decode(p).unwrap().ecn, Ecn::Ect0);
            assert_eq!(decode(p).unwrap().dscp, 10);
        }
        // The queue marks the middle one: its header alone changes, every checksum verifies.
        assert_eq!(set_ce(&mut segs[1]), Ok(true));
        let ecn: Vec<Ecn> = segs.iter().map(|p| decode(p).unwrap().ecn).collect();
        assert_eq!(ecn, [Ecn::Ect0, Ecn::Ce, Ecn::Ect0]);
        assert!(segs.iter().all(|p| checksums_verify(p)));
        // Written back, a CE segment never shares a super-packet with ECT(0) ones (whose one
        // header the kernel would copy to all), but CE segments coalesce among themselves.
        assert!(coalesce(&segs).is_none());
        assert_eq!(set_ce(&mut segs[0]), Ok(true));
        assert_eq!(set_ce(&mut segs[2]), Ok(true));
        let (_, marked) = coalesce(&segs).expect("all CE: one run");
        assert_eq!(decode(&marked).unwrap().ecn, Ecn::Ce);
        assert!(split(&hdr, &marked)
            .unwrap()
            .iter()
            .all(|p| decode(p).unwrap().ecn == Ecn::Ce && checksums_verify(p)));
    }

    #[test]
    fn only_segments_of_one_flow_in_order_coalesce() {
        let segs = flow(1, 1, 3, 1000, 1000, ACK);
        let alter = |i: usize, f: &dyn Fn(&mut Vec<u8>)| {
            let mut s = segs.clone();
            f(&mut s[i]);
            s
        };
        assert!(coalesce(&segs).is_some());
        // Another port, acknowledgement, window, TTL, a gap, another IP id, a larger payload,
        // and PSH or FIN before the end: each stops the run.
        assert!(coalesce(&alter(1, &|p| p[22] ^= 1)).is_none());
        assert!(coalesce(&alter(1, &|p| p[31] ^= 1)).is_none());
        assert!(coalesce(&alter(2, &|p| p[35] ^= 1)).is_none());
        assert!(coalesce(&alter(2, &|p| p[8] = 63)).is_none());
        assert!(coalesce(&alter(1, &|p| p[27] ^= 4)).is_none());
        assert!(coalesce(&alter(2, &|p| p[5] ^= 1)).is_none());
        assert!(coalesce(&flow(1, 1, 3, 1000, 1001, ACK)).is_none());
        assert!(coalesce(&alter(1, &|p| p[33] |= PSH)).is_none());
        assert!(coalesce(&alter(2, &|p| p[33] |= FIN)).is_none());
        assert!(coalesce(&alter(0, &|p| p[33] |= SYN)).is_none());
        // A shorter segment ends the run: none may follow it.
        let mut short = flow(1, 1, 2, 1000, 500, ACK);
        short.extend(flow(1501, 3, 1, 1000, 1000, ACK));
        assert!(coalesce(&short).is_none());
        // Pure acknowledgements and non-TCP packets are never coalesced.
        assert!(Segment::parse(&tcp(1, 1, ACK, &[])).is_some_and(|s| !s.coalescable()));
        assert!(
            Segment::parse(&packet()).is_none(),
            "the 24-byte header-only packet"
        );
        // No more than MAX_SEGMENTS, nor more than 65 535 bytes.
        assert!(coalesce(&flow(1, 1, MAX_SEGMENTS + 1, 100, 100, ACK)).is_none());
        assert!(coalesce(&flow(1, 1, MAX_SEGMENTS, 100, 100, ACK)).is_some());
        assert!(coalesce(&flow(1, 1, 46, 1448, 1448, ACK)).is_none());
    }

    #[test]
    fn a_checksum_left_to_the_reader_is_completed() {
        let mut p = tcp(5, 5, ACK, &bytes(0, 333));
        let partial = fold(pseudo(&p, p.len() - 20));
        p[36..38].copy_from_slice(&partial.to_be_bytes());
        assert!(!checksums_verify(&p));
        let hdr = VnetHdr {
            flags: VNET_F_NEEDS_CSUM,
            csum_start: 20,
            csum_offset: 16,
            ..VnetHdr::default()
        };
        complete_checksum(&hdr, &mut p).unwrap();
        assert!(checksums_verify(&p));
        // A span summing to zero: the field gets 0xffff, never 0 (UDP's "no checksum").
        let mut zero = [0, 0, 0xff, 0xff, 0, 0];
        let at_start = VnetHdr {
            csum_start: 0,
            csum_offset: 0,
            ..hdr
        };
        complete_checksum(&at_start, &mut zero).unwrap();
        assert_eq!(zero[..2], [0xff, 0xff]);
        let far = VnetHdr {
            csum_offset: 400,
            ..hdr
        };
        assert_eq!(complete_checksum(&far, &mut p), Err(GsoError::Checksum));
    }

    #[test]
    fn malformed_super_packets_are_errors() {
        let big = tcp(1, 1, ACK, &bytes(0, 3000));
        let gso = |gso_type, gso_size| VnetHdr {
            gso_type,
            gso_size,
            ..VnetHdr::default()
        };
        assert_eq!(segments(&gso(3, 1000), &big), Err(GsoError::Unsupported(3)));
        assert_eq!(
            segments(&gso(VNET_GSO_TCPV4, 0), &big),
            Err(GsoError::SegmentSize(0))
        );
        assert_eq!(
            segments(&gso(VNET_GSO_TCPV4, 10), &big),
            Err(GsoError::SegmentSize(10))
        );
        assert_eq!(
            segments(&gso(VNET_GSO_TCPV4, 1000), &big[..100]),
            Err(GsoError::NotTcp4)
        );
        assert_eq!(
            segments(&gso(VNET_GSO_TCPV4 | VNET_GSO_ECN, 1000), &big),
            Ok(3)
        );
        let mut small = [0u8; 100];
        assert_eq!(
            segment(&gso(VNET_GSO_TCPV4, 1000), &big, 0, &mut small),
            Err(GsoError::Buffer)
        );
        assert!(segment(&gso(VNET_GSO_TCPV4, 1000), &big, 3, &mut [0u8; 2000]).is_err());
        let hdr = VnetHdr::decode(&gso(VNET_GSO_TCPV4, 1000).encode());
        assert_eq!(hdr, gso(VNET_GSO_TCPV4, 1000));
    }

    proptest::proptest! {
        /// Any bytes with any virtio-net header: split segments or an error, never a panic.
        #[test]
        fn splitting_any_bytes_never_panics(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
            head in proptest::array::uniform10(proptest::num::u8::ANY),
            tcp_head in proptest::bool::ANY,
        ) {
            let mut p = bytes;
            if tcp_head && p.len() >= 40 {
                p[0] = 0x45;
                p[9] = 6;
                let len = p.len() as u16;
                p[2..4].copy_from_slice(&len.to_be_bytes());
                p[6] = 0;
                p[32] = 0x50;
            }
            let mut hdr = VnetHdr::decode(&head);
            hdr.gso_type &= 0x81;
            let _ = complete_checksum(&hdr, &mut p.clone());
            let mut out = [0u8; 256];
            if let Ok(n) = segments(&hdr, &p) {
                for i in 0..n {
                    let _ = segment(&hdr, &p, i, &mut out);
                }
            }
            if let Some(s) = Segment::parse(&p) {
                let run = Run::start(s);
                let _ = run.continues(&p, &p, &s);
            }
        }
    }
}
