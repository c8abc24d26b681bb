//! The flags `send` and `recv` share about what goes on the wire: the pre-shared key, the packet
//! capture, the datagram size and the idle timeout.

use crate::capture::Capture;
use anyhow::bail;
use qstp_proto::wire::{MAX_DATAGRAM, MIN_DATAGRAM};
use qstp_proto::{Config, PreSharedKey};
use std::path::PathBuf;
use std::time::Duration;

/// The largest datagram path MTU discovery looks for without `--mtu`: a 9000-byte jumbo frame
/// less the IPv6 and UDP headers.
pub(crate) const DISCOVERY_CEILING: usize = 8952;

/// IPv4 (20) and UDP (8) header bytes.
pub(crate) const IPV4_UDP_HEADERS: usize = 28;
/// IPv6 (40) and UDP (8) header bytes.
pub(crate) const IPV6_UDP_HEADERS: usize = 48;

/// `--psk FILE`, `--pcap FILE`, `--pcap-limit N`, `--mtu BYTES` and `--idle-timeout SECONDS`.
#[derive(clap::Args)]
pub struct WireArgs {
    /// A file holding a secret both ends share: only a peer with the same file completes the
    /// handshake, so no one in the middle can. Without it packets are still encrypted and
    /// authenticated, but the first peer to answer is trusted.
    #[arg(long, value_name = "FILE")]
    pub psk: Option<PathBuf>,
    /// Write every datagram this side sends and receives to FILE as a pcap capture (linktype
    /// RAW: IPv4/IPv6 packets with synthesized IP and UDP headers around the real, encrypted
    /// payloads, the real addresses and ports, wall-clock timestamps), which Wireshark and
    /// tcpdump open as UDP. An existing FILE is never replaced.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Most packets written to the --pcap file.
    #[arg(long, value_name = "N", default_value_t = crate::capture::DEFAULT_LIMIT,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub pcap_limit: u64,
    /// Pin the path MTU (the largest IP packet, e.g. 1500 on Ethernet): datagrams carry this
    /// less 28 bytes of IPv4 and UDP headers (48 over IPv6), and path MTU discovery is off.
    /// Without it, datagrams start at 1200 bytes of UDP payload (RFC 9000 §14) and grow as far as
    /// the path carries them (RFC 8899), up to a 9000-byte jumbo frame.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u16).range(576..))]
    pub mtu: Option<u16>,
    /// Give up on a peer heard from for this long (seconds). With data in flight, `send` notices
    /// a peer that stopped answering much sooner: after 8 probe timeouts of silence, at least 1 s.
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = parse_seconds)]
    pub idle_timeout: Duration,
}

/// A number of seconds (`10`, `2.5` or `10s`) in (0, 3600].
pub(crate) fn parse_seconds(text: &str) -> Result<Duration, String> {
    match text.trim_end_matches('s').parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= 3600.0 => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!(
            "'{text}' is not a number of seconds between 0 and 3600"
        )),
    }
}

impl WireArgs {
    /// Set the datagram size of `config` from `--mtu` (headers of IPv4 or, if not `ipv4`, IPv6
    /// taken off), or turn path MTU discovery on without it; and the idle timeout.
    pub fn apply(&self, config: &mut Config, ipv4: bool) -> anyhow::Result<()> {
        match self.mtu {
            None => {
                config.pmtu_discovery = true;
                config.max_datagram = DISCOVERY_CEILING;
            }
            Some(mtu) => {
                let headers = if ipv4 {
                    IPV4_UDP_HEADERS
                } else {
                    IPV6_UDP_HEADERS
                };
                let size = usize::from(mtu).saturating_sub(headers);
                if size < MIN_DATAGRAM {
                    bail!("--mtu {mtu} leaves {size} bytes for a datagram after the IP and UDP headers; qstp needs {MIN_DATAGRAM}");
                }
                config.pmtu_discovery = false;
                config.max_datagram = size.min(MAX_DATAGRAM);
            }
        }
        config.idle_timeout = self.idle_timeout.into();
        config.validate().map_err(anyhow::Error::msg)
    }

    /// The pre-shared key of `--psk`, read and checked.
    pub fn psk(&self) -> anyhow::Result<Option<PreSharedKey>> {
        self.psk.as_deref().map(crate::psk::load).transpose()
    }

    /// The capture of `--pcap`, its file created (never replacing one).
    pub fn capture(&self) -> anyhow::Result<Option<Capture>> {
        self.pcap
            .as_deref()
            .map(|path| Capture::create(path, self.pcap_limit))
            .transpose()
    }
}
