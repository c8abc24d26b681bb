//! The one pcap writer: raw IP packets (linktype RAW, 101) with nanosecond timestamps, in the
//! classic format Wireshark and `tcpdump -r` read. The simulator's link captures
//! (`qstp run --pcap`) and the endpoint's (`qstp send --pcap`) both write through it; where the
//! file comes from (and whether an existing one may be replaced) is the caller's choice.

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, TsResolution};
use std::fs::File;
use std::io::{self, BufWriter, Write as _};
use std::time::Duration;

/// A capture file being written.
pub struct RawIpPcap {
    writer: PcapWriter<BufWriter<File>>,
    frames: u64,
}

impl RawIpPcap {
    /// Write the file header to `file`.
    pub fn new(file: File) -> io::Result<RawIpPcap> {
        let header = PcapHeader {
            datalink: DataLink::RAW,
            ts_resolution: TsResolution::NanoSecond,
            snaplen: u32::from(u16::MAX),
            ..Default::default()
        };
        let writer =
            PcapWriter::with_header(BufWriter::new(file), header).map_err(io::Error::other)?;
        Ok(RawIpPcap { writer, frames: 0 })
    }

    /// Append the IP packet `frame`, stamped `time` after the epoch.
    pub fn write(&mut self, time: Duration, frame: &[u8]) -> io::Result<()> {
        let packet = PcapPacket::new(time, frame.len() as u32, frame);
        self.writer
            .write_packet(&packet)
            .map_err(io::Error::other)?;
        self.frames += 1;
        Ok(())
    }

    /// Flush the file; returns the number of packets written.
    pub fn finish(self) -> io::Result<u64> {
        self.writer.into_writer().flush()?;
        Ok(self.frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcap::PcapReader;

    #[test]
    fn packets_read_back_with_their_times_and_bytes() {
        let path = std::env::temp_dir().join(format!("qstp-pcap-{}.pcap", std::process::id()));
        let mut pcap = RawIpPcap::new(File::create(&path).unwrap()).unwrap();
        pcap.write(Duration::from_nanos(1_500), &[0x45, 1, 2])
            .unwrap();
        pcap.write(Duration::from_secs(2), &[0x60; 40]).unwrap();
        assert_eq!(pcap.finish().unwrap(), 2);
        let mut reader = PcapReader::new(File::open(&path).unwrap()).unwrap();
        assert_eq!(reader.header().datalink, DataLink::RAW);
        assert_eq!(reader.header().ts_resolution, TsResolution::NanoSecond);
        let first = reader.next_packet().unwrap().unwrap();
        assert_eq!(
            (first.timestamp, &*first.data),
            (Duration::from_nanos(1_500), &[0x45, 1, 2][..])
        );
        let second = reader.next_packet().unwrap().unwrap();
        assert_eq!(
            (second.timestamp, second.data.len()),
            (Duration::from_secs(2), 40)
        );
        assert!(reader.next_packet().is_none());
        std::fs::remove_file(&path).unwrap();
    }
}
