use super::*;
use crate::scenario::{parse, Overrides};
use pcap_file::pcap::PcapReader;
use pcap_file::DataLink;

/// Two points of qstp, TCP and CBR flows over a 1 Mbit/s drop-tail bottleneck, 2 s each.
const TINY: &str = r#"
name = "pcap"
duration = "2s"
warmup = "0s"
runs = 2
seed = 3
bin = "500ms"
packet_size = 1000
[bottleneck]
rate = "1M"
delay = "5ms"
queue = { kind = "droptail", limit = 20 }
[[group]]
name = "Q"
protocol = "qstp"
rtt = "30ms"
target = "300k"
marker = { kind = "token-bucket", rate = "300k", bucket = 5000 }
[[group]]
name = "T"
protocol = "tcp"
rtt = "40ms"
[[group]]
name = "U"
protocol = "cbr"
rtt = "30ms"
rate = "300k"
[sweep]
"group.U.rate" = ["300k", "600k"]
"#;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("qstp-lab-pcap-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn plan() -> Plan {
    parse(TINY, "pcap.toml", &Overrides::default()).unwrap()
}

/// The one's-complement sum of an IPv4 header is zero when its checksum is right.
fn checksum_ok(header: &[u8]) -> bool {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

#[test]
fn the_bottleneck_capture_reads_back_as_ipv4_with_the_simulated_sizes() {
    let dir = temp_dir("read");
    let plan = plan();
    let results = execute_captured(&plan, 2, &dir, "bottleneck", DEFAULT_LIMIT, &|_| {}).unwrap();
    assert_eq!(results.len(), 2);
    let files: Vec<PathBuf> = (0..2)
        .map(|p| path(&plan, &dir.join(crate::output::PCAP_FOLDER), p))
        .collect();
    assert!(
        files[0].ends_with("pcap/p00-U.rate=300k.pcap"),
        "{:?}",
        files[0]
    );
    for file in &files {
        let mut reader = PcapReader::new(File::open(file).unwrap()).unwrap();
        assert_eq!(reader.header().datalink, DataLink::RAW);
        let mut last = std::time::Duration::ZERO;
        let (mut count, mut udp, mut tcp, mut qstp_bytes) = (0, 0, 0, false);
        let mut dscps = std::collections::BTreeSet::new();
        while let Some(packet) = reader.next_packet() {
            let packet = packet.unwrap();
            let data = &packet.data;
            count += 1;
            assert!(packet.timestamp >= last, "timestamps never go back");
            last = packet.timestamp;
            assert!(packet.timestamp <= std::time::Duration::from_secs(2));
            // An IPv4 header of 20 bytes whose total length is the frame's, with a good checksum.
            assert_eq!(data[0], 0x45);
            let total = u16::from_be_bytes([data[2], data[3]]) as usize;
            assert_eq!(total, data.len());
            assert_eq!(packet.orig_len as usize, data.len());
            assert!(checksum_ok(&data[..20]));
            // Data from senders (10.1.G.F) to receivers (10.2.G.F): the bottleneck's direction.
            assert_eq!(&data[12..14], &[10, 1]);
            assert_eq!(&data[16..18], &[10, 2]);
            dscps.insert(data[1] >> 2);
            match (data[9], data[14]) {
                (6, 1) => {
                    // TCP data segments: the scenario's packet size.
                    tcp += 1;
                    assert_eq!(data.len(), 1000);
                    assert_eq!(data[33] & 0x10, 0x10, "ACK flag");
                }
                (17, 0) => {
                    // qstp: UDP around the real datagram; data packets are at most the packet
                    // size (the handshake's are padded beyond it).
                    udp += usize::from(data.len() <= 1000);
                    let udp_len = u16::from_be_bytes([data[24], data[25]]) as usize;
                    assert_eq!(udp_len, data.len() - 20);
                    assert_eq!(u16::from_be_bytes([data[22], data[23]]), 4433);
                    qstp_bytes |= data[28..].iter().any(|&b| b != 0);
                }
                (17, 2) => {
                    udp += 1;
                    assert_eq!(data.len(), 1000, "CBR packets");
                    assert_eq!(u16::from_be_bytes([data[22], data[23]]), 9);
                }
                other => panic!("unexpected protocol and group {other:?}"),
            }
        }
        assert!(count > 100 && tcp > 10 && udp > 10, "{count} {tcp} {udp}");
        assert!(qstp_bytes, "qstp frames carry the protocol's own bytes");
        // The marked qstp group's packets carry AF11 or AF13, the others best effort.
        assert!(dscps.contains(&0) && dscps.iter().all(|d| [0, 10, 14].contains(d)));
        assert!(dscps.contains(&10), "{dscps:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_capture_is_bounded_and_access_links_can_be_captured() {
    let dir = temp_dir("limit");
    let plan = plan();
    execute_captured(&plan, 1, &dir, "access/T/0", 50, &|_| {}).unwrap();
    for p in 0..2 {
        let file = File::open(path(&plan, &dir.join(crate::output::PCAP_FOLDER), p)).unwrap();
        let mut reader = PcapReader::new(file).unwrap();
        let mut count = 0;
        while let Some(packet) = reader.next_packet() {
            let data = packet.unwrap().data;
            // Only flow T/0's data, before the edge: best effort.
            assert_eq!((data[9], data[14], data[15], data[1]), (6, 1, 0, 0));
            count += 1;
        }
        assert_eq!(count, 50);
    }
    // The folder keeps the captures through the results being written, and a later run without
    // --pcap removes them.
    assert!(dir.join(output::MARKER).is_file());
    let summary = crate::summary::build(
        &plan,
        &crate::runner::execute(&plan, 1, crate::simulate, &|_| {}).unwrap(),
        &Overrides::default(),
    );
    let results = crate::runner::execute(&plan, 1, crate::simulate, &|_| {}).unwrap();
    output::write_all_keeping_pcap(&dir, &plan, &results, &summary).unwrap();
    assert!(path(&plan, &dir.join(crate::output::PCAP_FOLDER), 1).is_file());
    output::write_all(&dir, &plan, &results, &summary).unwrap();
    assert!(!dir.join(crate::output::PCAP_FOLDER).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unknown_link_is_refused_before_running_with_the_known_names() {
    let dir = temp_dir("unknown");
    let err = execute_captured(&plan(), 1, &dir, "core", 10, &|_| {}).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("no link named 'core'")
            && text.contains("bottleneck, access/Q/0, sink/Q/0, access/T/0"),
        "{text}"
    );
    assert!(!dir.exists(), "nothing written");
}
