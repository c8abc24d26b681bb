//! The data view and parser alone: once `check_len` passed, no accessor panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qstp_proto::wire::{Data, DataPacket};

fuzz_target!(|datagram: &[u8]| {
    let Ok(packet) = DataPacket::new_checked(datagram) else {
        return;
    };
    let _ = (
        packet.destination(),
        packet.flags(),
        packet.packet_number(),
        packet.timestamp(),
        packet.rtt(),
    );
    let _ = (packet.chunk(), packet.skip_to(), packet.payload());
    let _ = Data::parse(&packet);
});
