//! ATM arithmetic shared by the cell port (`atm`), the GCRA policer and the reports:
//! AAL5 framing of an IP packet into 53-byte cells, and the per-connection throughput estimate of
//! the AF-over-ATM paper (§4.1), computed from its assumptions rather than copied.

use qstp_proto::Rate;

/// Bytes of an ATM cell (ITU-T I.361: a 5-byte header and 48 bytes of payload).
pub const CELL: u64 = 53;
/// Payload bytes of a cell.
pub const CELL_PAYLOAD: u64 = 48;
/// LLC/SNAP encapsulation before the IP packet (RFC 2684 §5: routed PDUs carry an 8-byte
/// LLC/SNAP header).
pub const LLC_SNAP: u64 = 8;
/// The AAL5 CPCS-PDU trailer (ITU-T I.363.5: UU, CPI, length, CRC-32).
pub const AAL5_TRAILER: u64 = 8;

/// Cells that carry an IP packet of `ip_bytes` over AAL5 with LLC/SNAP: the packet, the 8-byte
/// LLC/SNAP header and the 8-byte trailer, padded to a whole number of 48-byte payloads.
pub fn aal5_cells(ip_bytes: u64) -> u64 {
    (ip_bytes + LLC_SNAP + AAL5_TRAILER).div_ceil(CELL_PAYLOAD)
}

/// Bytes on the ATM link for an IP packet of `ip_bytes`: its cells, headers included.
pub fn aal5_wire_bytes(ip_bytes: u64) -> u64 {
    aal5_cells(ip_bytes) * CELL
}

/// The paper's estimate of each PVP's bandwidth and each connection's TCP throughput
/// (AF-over-ATM paper §4.1, assumptions (a)-(d)).
#[derive(Debug, Clone, PartialEq)]
pub struct PvpEstimate {
    /// Per PVP: its bandwidth at the ATM level (its SCR0, zero for UBR, plus an equal share of
    /// the residual), bit/s.
    pub pvp_bps: Vec<f64>,
    /// Per PVP: the TCP throughput of each of its connections, bit/s.
    pub per_connection_bps: Vec<f64>,
}

/// The estimate for a trunk of `trunk` (cells, headers included) shared by PVPs of sustainable
/// rates `scr` (`None` for a UBR PVP), the PVP i carrying `connections[i]` TCP connections
/// sending full segments of `mss` bytes with `header` bytes of TCP/IP headers.
///
/// (a) the trunk's rate minus the AF PVPs' SCR0 is shared equally by all PVPs, AF and DF; (b)
/// every segment is full; (c) a segment travels in [`aal5_cells`] cells; (d) rates are at the
/// ATM level, cell headers included. A connection's throughput is its PVP's bandwidth, in cells,
/// times the segment's payload per cell train, divided among the PVP's connections.
pub fn estimate(
    trunk: Rate,
    scr: &[Option<Rate>],
    connections: &[u32],
    mss: u64,
    header: u64,
) -> PvpEstimate {
    let reserved: f64 = scr.iter().flatten().map(|r| r.bps() as f64).sum();
    let share = (trunk.bps() as f64 - reserved).max(0.0) / scr.len().max(1) as f64;
    let pvp_bps: Vec<f64> = scr
        .iter()
        .map(|r| share + r.map_or(0.0, |r| r.bps() as f64))
        .collect();
    let train = (aal5_cells(mss + header) * CELL) as f64;
    let per_connection_bps = pvp_bps
        .iter()
        .zip(connections)
        .map(|(bw, &n)| bw / train * mss as f64 / f64::from(n.max(1)))
        .collect();
    PvpEstimate {
        pvp_bps,
        per_connection_bps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_8192_byte_segment_takes_172_cells() {
        // 003 §4.1 (c): 8192 B of payload, 40 B of TCP/IP header.
        assert_eq!(aal5_cells(8192 + 40), 172);
        assert_eq!(aal5_wire_bytes(8232), 9116);
        // 32 + 16 = 48: exactly one cell; one byte more needs a second.
        assert_eq!(aal5_cells(32), 1);
        assert_eq!(aal5_cells(33), 2);
        // A 1500-byte packet: 1516 B -> 32 cells, 1696 B on the wire.
        assert_eq!(aal5_wire_bytes(1500), 1696);
    }

    #[test]
    fn the_papers_estimates_follow_from_its_assumptions() {
        let k = |kbps| Some(Rate::from_kbps(kbps));
        let mut scr = vec![k(18_720), k(18_720)];
        scr.extend([None; 6]);
        let e = estimate(Rate::from_kbps(149_760), &scr, &[6; 8], 8192, 40);
        // 003 §4.1: DF PVP 14.04 Mbit/s, 2.10 Mbit/s per connection; AF PVP 32.76, 4.91.
        assert!((e.pvp_bps[7] - 14.04e6).abs() < 1.0);
        assert!((e.pvp_bps[0] - 32.76e6).abs() < 1.0);
        assert_eq!((e.per_connection_bps[7] / 1e4).round() / 1e2, 2.10);
        assert_eq!((e.per_connection_bps[0] / 1e4).round() / 1e2, 4.91);
        // 003 §4.2.1: with AF #2 at SCR0 = 8.5 Mbit/s its PVP gets 23.82 Mbit/s at the ATM level
        // (the paper calls this the aggregate's TCP throughput; after the cell tax it is 21.40).
        scr[1] = k(8_500);
        let e = estimate(Rate::from_kbps(149_760), &scr, &[6; 8], 8192, 40);
        assert_eq!((e.pvp_bps[1] / 1e4).round() / 1e2, 23.82);
        assert_eq!((e.per_connection_bps[1] * 6.0 / 1e4).round() / 1e2, 21.40);
    }
}
