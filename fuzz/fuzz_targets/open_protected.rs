//! Packet protection past authentication. The keys of both sides are derived once; each input
//! either goes to the opener as it is (the rejection path: it never authenticates), or is taken
//! as a plaintext packet, sealed with one side's keys and opened with the other's, so the
//! decoding after authentication runs on every input. Checked: a flipped byte is refused and
//! leaves the replay window as it was, what opens is what was sealed (by `open` and by
//! `open_in_place` alike), a second copy is refused as a replay, and nothing panics.
//!
//! The first byte chooses: bit 0 seals (else the rejection path), bit 1 has the server seal and
//! the client open, bits 2-3 how many packets go before (so the sequence number and the replay
//! window move), bit 4 opens in place, bits 5-7 which byte is flipped.
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

/// Open `datagram` with `keys` by `open` or by `open_in_place`; the packet or the error.
fn open(
    keys: &mut PacketKeys,
    datagram: &[u8],
    in_place: bool,
) -> Result<Vec<u8>, ProtectionError> {
    if in_place {
        let mut buf = datagram.to_vec();
        let range = keys.open_in_place(&mut buf)?;
        Ok(buf[range].to_vec())
    } else {
        let mut out = Vec::new();
        keys.open(datagram, &mut out).map(|()| out)
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let in_place = mode & 0x10 != 0;
    let (client, server) = keys();
    let (mut sealer, mut opener) = if mode & 2 == 0 {
        (client.clone(), server.clone())
    } else {
        (server.clone(), client.clone())
    };
    if mode & 1 == 0 {
        // Arbitrary bytes: nobody without the keys makes a datagram that opens, by either call.
        assert!(open(&mut opener, rest, false).is_err(), "a forgery opened");
        assert!(
            open(&mut opener, rest, true).is_err(),
            "a forgery opened in place"
        );
        return;
    }
    if rest.len() < CLEAR_HEADER_LEN {
        return;
    }
    let mut sealed = Vec::new();
    for _ in 0..(mode >> 2) % 4 {
        sealed.clear();
        sealed.extend_from_slice(&rest[..CLEAR_HEADER_LEN]);
        sealer.seal(&mut sealed);
        open(&mut opener, &sealed, in_place).expect("an earlier packet opens");
    }
    sealed.clear();
    sealed.extend_from_slice(rest);
    sealer.seal(&mut sealed);
    // A flipped byte anywhere (header, sequence number, ciphertext, tag) fails, and failing
    // leaves the replay window as it was: the genuine datagram still opens after it.
    let mut flipped = sealed.clone();
    let at = usize::from(mode >> 5) * flipped.len() / 8;
    flipped[at] ^= 0x20;
    assert!(
        open(&mut opener, &flipped, in_place).is_err(),
        "a flipped byte opened"
    );
    let opened = open(&mut opener, &sealed, in_place).expect("a sealed packet opens");
    assert_eq!(opened, rest, "opened is not what was sealed");
    // What opens is decoded as any packet.
    let _ = Packet::decode(&opened);
    assert_eq!(
        open(&mut opener, &sealed, !in_place),
        Err(ProtectionError::Replayed),
        "a replay opened"
    );
});
