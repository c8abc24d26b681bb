//! `Packet::decode` on arbitrary bytes: never panics, and what decodes has a consistent length.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qstp_proto::wire::{peek_type, Packet};

fuzz_target!(|datagram: &[u8]| {
    if let Ok(packet) = Packet::decode(datagram) {
        assert_eq!(peek_type(datagram), Ok(packet.packet_type()));
        let mut buf = Vec::new();
        packet.encode(&mut buf);
        assert_eq!(buf.len(), packet.encoded_len());
    }
});
