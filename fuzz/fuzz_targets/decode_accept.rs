//! The accept view and parser alone: once `check_len` passed, no accessor panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qstp_proto::wire::{Accept, AcceptPacket};

fuzz_target!(|datagram: &[u8]| {
    let Ok(packet) = AcceptPacket::new_checked(datagram) else {
        return;
    };
    let _ = (
        packet.destination(),
        packet.source(),
        packet.max_datagram(),
        packet.recv_window(),
    );
    let _ = (packet.timestamp_echo(), packet.keys());
    let _ = Accept::parse(&packet);
});
