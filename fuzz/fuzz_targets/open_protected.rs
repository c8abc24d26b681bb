//! Packet protection past authentication. The keys of both sides are derived once; each input
//! either goes to the opener as it is (the rejection path: it never authenticates), or is taken
//! as a plaintext packet, sealed with one side's keys and opened with the other's, so the
//! decoding after authentication runs on every input. Checked: what opens is what was sealed, a
//! second copy is refused as a replay, a flipped byte is refused, and nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use qstp_proto::protection::{
    KeyShare, PacketKeys, ProtectionError, Side, Transcript, CLEAR_HEADER_LEN,
};
use qstp_proto::wire::Packet;
use std::sync::OnceLock;

/// The client's and the server's keys of one handshake.
fn keys() -> &'static (PacketKeys, PacketKeys) {
    static KEYS: OnceLock<(PacketKeys, PacketKeys)> = OnceLock::new();
    KEYS.get_or_init(|| {
        let client = KeyShare::from_secret([1; 32]);
        let server = KeyShare::from_secret([2; 32]);
        let transcript = Transcript {
            hello: b"fuzz",
            client_share: client.public(),
            server_share: server.public(),
        };
        let derive = |side, own: &KeyShare, peer| {
            PacketKeys::derive(side, own, peer, None, &transcript).expect("keys")
        };
        (
            derive(Side::Client, &client, server.public()),
            derive(Side::Server, &server, client.public()),
        )
    })
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let (client, server) = keys();
    let (mut client, mut server) = (client.clone(), server.clone());
    let mut out = Vec::new();
    if mode & 1 == 0 {
        // Arbitrary bytes: nobody without the keys makes a datagram that opens.
        assert!(server.open(rest, &mut out).is_err(), "a forgery opened");
        return;
    }
    if rest.len() < CLEAR_HEADER_LEN {
        return;
    }
    // Some packets go before, so the sequence number and the replay window move.
    let mut sealed = Vec::new();
    for _ in 0..(mode >> 1) % 4 {
        sealed.clear();
        sealed.extend_from_slice(&rest[..CLEAR_HEADER_LEN]);
        client.seal(&mut sealed);
        server
            .open(&sealed, &mut out)
            .expect("an earlier packet opens");
    }
    sealed.clear();
    sealed.extend_from_slice(rest);
    client.seal(&mut sealed);
    let mut flipped = sealed.clone();
    server
        .open(&sealed, &mut out)
        .expect("a packet sealed under the same keys opens");
    assert_eq!(out, rest, "opened is not what was sealed");
    let _ = Packet::decode(&out);
    assert_eq!(
        server.open(&sealed, &mut out),
        Err(ProtectionError::Replayed),
        "a replay opened"
    );
    let at = usize::from(mode >> 3) % flipped.len();
    flipped[at] ^= 0x20;
    assert!(
        server.open(&flipped, &mut out).is_err(),
        "a flipped byte opened"
    );
});
