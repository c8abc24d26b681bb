//! `--pcap FILE` of `send` and `recv`: every datagram the endpoint sends or receives, in a
//! classic pcap file Wireshark and tcpdump open with UDP dissection.
//!
//! The file has linktype RAW (101): each record is an IPv4 or IPv6 packet whose IP and UDP
//! headers are synthesized around the real UDP payload (encrypted QSTP packets), with the real
//! addresses and ports; a local address bound as unspecified (`0.0.0.0`) is written as the
//! address datagrams arrived on, or loopback towards a loopback peer. Timestamps are the wall
//! clock when the driver handed the datagram to the kernel or read it, in nanoseconds.
//!
//! The endpoint's tap copies each datagram into a bounded queue that a thread writes out, so the
//! driver never waits for the disk; if the queue is full the datagram is left out and counted.

use anyhow::Context as _;
use qstp_dataplane::headers::{
    checksum, ipv6_pseudo_sum, write_ipv6, write_udp, Ipv4, IPV4_HEADER, IPV6_HEADER, PROTO_UDP,
};
use qstp_dataplane::pcap::RawIpPcap;
use qstp_net::{Direction, Tap, Tapped};
use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Most packets written unless `--pcap-limit` says otherwise.
pub const DEFAULT_LIMIT: u64 = 100_000;

/// Datagrams waiting for the writer thread at most.
const QUEUE: usize = 8192;

/// One datagram on its way to the file.
struct Record {
    time: Duration,
    direction: Direction,
    local: SocketAddr,
    remote: SocketAddr,
    datagram: Vec<u8>,
}

/// What the tap and the writer share.
#[derive(Default)]
struct Counts {
    /// Datagrams the tap was shown.
    seen: u64,
    /// Left out because the queue was full.
    dropped: u64,
}

/// A capture being written.
pub struct Capture {
    path: PathBuf,
    limit: u64,
    queue: Arc<Mutex<Option<SyncSender<Record>>>>,
    counts: Arc<Mutex<Counts>>,
    writer: std::thread::JoinHandle<anyhow::Result<u64>>,
}

impl Capture {
    /// Create `path` (never replacing a file) and start its writer; at most `limit` packets.
    pub fn create(path: &Path, limit: u64) -> anyhow::Result<Capture> {
        let shown = path.display();
        let file = match File::options().write(true).create_new(true).open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => anyhow::bail!(
                "--pcap {shown}: the file exists; a capture never replaces a file, choose another name"
            ),
            Err(e) => return Err(e).with_context(|| format!("cannot create --pcap {shown}")),
        };
        let mut out =
            RawIpPcap::new(file).with_context(|| format!("cannot write --pcap {shown}"))?;
        let (tx, rx) = sync_channel::<Record>(QUEUE);
        let name = path.to_path_buf();
        let writer = std::thread::Builder::new()
            .name("qstp-pcap".into())
            .spawn(move || {
                let mut frame = Vec::with_capacity(1600);
                let mut seen_local: Option<IpAddr> = None;
                for record in rx {
                    if record.direction == Direction::Received
                        && !record.local.ip().is_unspecified()
                    {
                        seen_local = Some(record.local.ip());
                    }
                    ip_udp_frame(&record, seen_local, &mut frame);
                    out.write(record.time, &frame)
                        .with_context(|| format!("cannot write --pcap {}", name.display()))?;
                }
                out.finish()
                    .with_context(|| format!("cannot write --pcap {}", name.display()))
            })?;
        Ok(Capture {
            path: path.to_path_buf(),
            limit,
            queue: Arc::new(Mutex::new(Some(tx))),
            counts: Arc::default(),
            writer,
        })
    }

    /// The hook for [`qstp_net::EndpointOptions::tap`].
    pub fn tap(&self) -> Tap {
        let queue = self.queue.clone();
        let counts = self.counts.clone();
        let limit = self.limit;
        Tap::new(move |t: &Tapped<'_>| {
            let mut counts = counts.lock().unwrap_or_else(|p| p.into_inner());
            if counts.seen >= limit {
                return;
            }
            counts.seen += 1;
            let record = Record {
                time: SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap_or_default(),
                direction: t.direction,
                local: t.local,
                remote: t.remote,
                datagram: t.datagram.to_vec(),
            };
            let queue = queue.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(tx) = queue.as_ref() {
                if let Err(TrySendError::Full(_)) = tx.try_send(record) {
                    counts.dropped += 1;
                }
            }
        })
    }

    /// Stop capturing, write out what is queued and close the file; returns the packets written
    /// and a warning if some were left out.
    pub fn finish(self) -> anyhow::Result<(u64, Option<String>)> {
        drop(self.queue.lock().unwrap_or_else(|p| p.into_inner()).take());
        let written = self
            .writer
            .join()
            .map_err(|_| anyhow::anyhow!("the --pcap writer failed"))??;
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let shown = self.path.display();
        let warning = if counts.dropped > 0 {
            Some(format!(
                "warning: --pcap {shown}: {} packets left out (the disk did not keep up)",
                counts.dropped
            ))
        } else if counts.seen >= self.limit {
            Some(format!(
                "warning: --pcap {shown}: stopped at --pcap-limit {} packets",
                self.limit
            ))
        } else {
            None
        };
        Ok((written, warning))
    }
}

/// Close `capture` after a command ran, saying if packets were left out; the command's own error
/// comes first.
pub fn finish_after(capture: Option<Capture>, result: anyhow::Result<()>) -> anyhow::Result<()> {
    let Some(capture) = capture else {
        return result;
    };
    let finished = capture.finish();
    if let Ok((_, Some(warning))) = &finished {
        eprintln!("{warning}");
    }
    result.and(finished.map(|_| ()))
}

/// `record` as a raw IP packet (IPv4 or IPv6, as its addresses) with a UDP header, into `frame`.
/// An unspecified local address becomes `seen_local` (where datagrams arrived), or loopback
/// towards a loopback peer.
fn ip_udp_frame(record: &Record, seen_local: Option<IpAddr>, frame: &mut Vec<u8>) {
    let remote = canonical(record.remote.ip());
    let mut local = canonical(record.local.ip());
    if local.is_unspecified() {
        local = match (remote, seen_local.map(canonical)) {
            (r, _) if r.is_loopback() => r,
            (_, Some(seen)) => seen,
            (r, None) => r.into_unspecified(),
        };
    }
    let (src, dst, sport, dport) = match record.direction {
        Direction::Sent => (local, remote, record.local.port(), record.remote.port()),
        Direction::Received => (remote, local, record.remote.port(), record.local.port()),
    };
    let payload = &record.datagram;
    let udp_len = (8 + payload.len()) as u16;
    frame.clear();
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            Ipv4 {
                total_len: IPV4_HEADER as u16 + udp_len,
                tos: 0,
                id: 0,
                protocol: PROTO_UDP,
                src: s,
                dst: d,
            }
            .write(frame);
            write_udp(frame, sport, dport, udp_len, 0); // checksum 0: none, as IPv4 allows
            frame.extend_from_slice(payload);
        }
        (s, d) => {
            let (s, d) = (v6(s), v6(d));
            write_ipv6(frame, udp_len, PROTO_UDP, s, d);
            write_udp(frame, sport, dport, udp_len, 0);
            frame.extend_from_slice(payload);
            // IPv6 requires the UDP checksum (RFC 8200 §8.1), over the pseudo-header too.
            let pseudo = ipv6_pseudo_sum(s, d, u32::from(udp_len), PROTO_UDP);
            let checksum = match checksum(&frame[IPV6_HEADER..], pseudo) {
                0 => 0xffff,
                c => c,
            };
            frame[46..48].copy_from_slice(&checksum.to_be_bytes());
        }
    }
}

/// An IPv4-mapped IPv6 address as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

fn v6(ip: IpAddr) -> Ipv6Addr {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    }
}

trait Unspecified {
    fn into_unspecified(self) -> IpAddr;
}

impl Unspecified for IpAddr {
    /// The unspecified address of the same family.
    fn into_unspecified(self) -> IpAddr {
        match self {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(direction: Direction, local: &str, remote: &str) -> Record {
        Record {
            time: Duration::ZERO,
            direction,
            local: local.parse().unwrap(),
            remote: remote.parse().unwrap(),
            datagram: b"qstp".to_vec(),
        }
    }

    #[test]
    fn frames_carry_valid_ip_and_udp_headers_with_the_real_ports() {
        let mut frame = Vec::new();
        ip_udp_frame(
            &record(Direction::Sent, "0.0.0.0:5000", "127.0.0.1:4433"),
            None,
            &mut frame,
        );
        assert_eq!(frame.len(), 20 + 8 + 4);
        assert_eq!(checksum(&frame[..20], 0), 0, "IPv4 header checksum");
        assert_eq!(&frame[12..16], &[127, 0, 0, 1], "loopback source");
        assert_eq!(&frame[16..20], &[127, 0, 0, 1]);
        assert_eq!(
            &frame[20..24],
            &[0x13, 0x88, 0x11, 0x51],
            "ports 5000 -> 4433"
        );
        ip_udp_frame(
            &record(Direction::Received, "[::]:4433", "[2001:db8::1]:6000"),
            Some("2001:db8::2".parse().unwrap()),
            &mut frame,
        );
        assert_eq!(frame.len(), 40 + 8 + 4);
        assert_eq!(frame[0] >> 4, 6);
        assert_eq!(
            frame[8..24],
            "2001:db8::1".parse::<Ipv6Addr>().unwrap().octets()
        );
        assert_eq!(
            frame[24..40],
            "2001:db8::2".parse::<Ipv6Addr>().unwrap().octets()
        );
        // The UDP checksum verifies over the pseudo-header.
        // (Summed by hand here, not with the helper the frame was built with.)
        let mut pseudo = 0u64;
        for chunk in frame[8..40].chunks(2) {
            pseudo += u64::from(u16::from_be_bytes([chunk[0], chunk[1]]));
        }
        pseudo += 12 + 17;
        assert_eq!(checksum(&frame[40..], pseudo), 0);
    }
}
