//! `peek_type` agrees with `Packet::decode`: the same type when both succeed, the same error when
//! the version or type byte is bad.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qstp_proto::wire::{peek_type, Packet};

fuzz_target!(|datagram: &[u8]| {
    match (peek_type(datagram), Packet::decode(datagram)) {
        (Ok(peeked), Ok(packet)) => assert_eq!(peeked, packet.packet_type()),
        (Err(peeked), decoded) => assert_eq!(Err(peeked), decoded.map(|_| ())),
        (Ok(_), Err(_)) => {}
    }
});
