//! The flags `send` and `recv` share about what goes on the wire: the pre-shared key and the
//! packet capture.

use crate::capture::Capture;
use qstp_proto::PreSharedKey;
use std::path::PathBuf;

/// `--psk FILE`, `--pcap FILE` and `--pcap-limit N`.
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
}

impl WireArgs {
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
