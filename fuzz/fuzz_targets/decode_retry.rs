//! The retry view and parser alone: once `check_len` passed, no accessor panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qstp_proto::wire::{Retry, RetryPacket};

fuzz_target!(|datagram: &[u8]| {
    let Ok(packet) = RetryPacket::new_checked(datagram) else {
        return;
    };
    let _ = (
        packet.destination(),
        packet.cookie(),
        packet.timestamp_echo(),
    );
    let _ = Retry::parse(&packet);
});
