//! The hello view and parser alone: once `check_len` passed, no accessor panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qstp_proto::wire::{Hello, HelloPacket};

fuzz_target!(|datagram: &[u8]| {
    let Ok(packet) = HelloPacket::new_checked(datagram) else {
        return;
    };
    let _ = (
        packet.flags(),
        packet.source(),
        packet.max_datagram(),
        packet.recv_window(),
        packet.timestamp(),
    );
    let _ = (packet.composition(), packet.cookie(), packet.padding());
    let _ = (packet.key_share(), packet.binder(), packet.binder_covered());
    let _ = Hello::parse(&packet);
});
