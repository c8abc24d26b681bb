//! Packet protection's opener on arbitrary datagrams: it never panics, and whatever it opens
//! (only a datagram sealed with the same keys could be) decodes or is refused like any packet.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qstp_proto::protection::{KeyShare, PacketKeys, Side, Transcript};
use qstp_proto::wire::Packet;

fuzz_target!(|datagram: &[u8]| {
    let own = KeyShare::from_secret([1; 32]);
    let peer = KeyShare::from_secret([2; 32]);
    let transcript = Transcript {
        hello: b"fuzz",
        client_share: peer.public(),
        server_share: own.public(),
    };
    let Ok(mut keys) = PacketKeys::derive(Side::Server, &own, peer.public(), None, &transcript)
    else {
        return;
    };
    let mut out = Vec::new();
    if keys.open(datagram, &mut out).is_ok() {
        let _ = Packet::decode(&out);
    }
});
