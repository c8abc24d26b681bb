//! The feedback view and parser alone: once `check_len` passed, no accessor panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qstp_proto::wire::{Feedback, FeedbackPacket};

fuzz_target!(|datagram: &[u8]| {
    let Ok(packet) = FeedbackPacket::new_checked(datagram) else {
        return;
    };
    let _ = (
        packet.destination(),
        packet.sequence(),
        packet.timestamp_echo(),
        packet.t_delay(),
    );
    let _ = (
        packet.x_recv(),
        packet.loss_event_rate_ppb(),
        packet.max_data(),
        packet.range_count(),
        packet.ranges(),
    );
    let _ = Feedback::parse(&packet);
});
