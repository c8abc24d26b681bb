//! The close view and parser alone: once `check_len` passed, no accessor panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qstp_proto::wire::{Close, ClosePacket};

fuzz_target!(|datagram: &[u8]| {
    let Ok(packet) = ClosePacket::new_checked(datagram) else {
        return;
    };
    let _ = (
        packet.destination(),
        packet.flags(),
        packet.code(),
        packet.reason_len(),
        packet.reason(),
    );
    let _ = Close::parse(&packet);
});
