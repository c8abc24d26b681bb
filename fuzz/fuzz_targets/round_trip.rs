//! Decode, re-encode and compare: every valid datagram has exactly one encoding, except that a
//! hello may carry more zero padding than the encoder writes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qstp_proto::wire::{Packet, MIN_HELLO_SIZE};

fuzz_target!(|datagram: &[u8]| {
    let Ok(packet) = Packet::decode(datagram) else {
        return;
    };
    let mut encoded = Vec::new();
    packet.encode(&mut encoded);
    if let Packet::Hello(_) = packet {
        assert_eq!(encoded.len(), MIN_HELLO_SIZE);
        assert_eq!(&encoded[..], &datagram[..MIN_HELLO_SIZE]);
        assert!(datagram[MIN_HELLO_SIZE..].iter().all(|&b| b == 0));
    } else {
        assert_eq!(&encoded[..], datagram);
    }
    assert_eq!(Packet::decode(&encoded), Ok(packet));
});
