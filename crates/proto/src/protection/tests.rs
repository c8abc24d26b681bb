use super::*;

fn pair(
    psk_client: Option<&PreSharedKey>,
    psk_server: Option<&PreSharedKey>,
) -> (PacketKeys, PacketKeys) {
    let client = KeyShare::from_secret([1; 32]);
    let server = KeyShare::from_secret([2; 32]);
    let transcript = Transcript {
        hello: b"hello fields",
        client_share: client.public(),
        server_share: server.public(),
    };
    (
        PacketKeys::derive(
            Side::Client,
            &client,
            server.public(),
            psk_client,
            &transcript,
        )
        .unwrap(),
        PacketKeys::derive(
            Side::Server,
            &server,
            client.public(),
            psk_server,
            &transcript,
        )
        .unwrap(),
    )
}

fn packet(body: &[u8]) -> Vec<u8> {
    let mut p = vec![1, 4, 0, 0, 0, 0, 0, 0, 0, 9];
    p.extend_from_slice(body);
    p
}

#[test]
fn sealed_packets_open_on_the_other_side_only() {
    let (mut client, mut server) = pair(None, None);
    let plain = packet(b"the secret marker 0123456789");
    let mut wire = plain.clone();
    client.seal(&mut wire);
    assert_eq!(wire.len(), plain.len() + OVERHEAD);
    assert_eq!(wire[..CLEAR_HEADER_LEN], plain[..CLEAR_HEADER_LEN]);
    assert!(
        !wire.windows(6).any(|w| w == b"secret"),
        "the body is encrypted"
    );
    let mut out = Vec::new();
    server.open(&wire, &mut out).unwrap();
    assert_eq!(out, plain);
    // A side cannot open what it sealed itself: each direction has its own key.
    let mut again = plain.clone();
    server.seal(&mut again);
    server.seal(&mut again.clone()); // sequence 1: not yet seen by the server's opener
    let mut own = plain.clone();
    server.seal(&mut own);
    assert_eq!(server.open(&own, &mut out), Err(ProtectionError::Forged));
    assert!(out.is_empty());
    client.open(&again, &mut out).unwrap();
    assert_eq!(out, plain);
}

#[test]
fn opening_in_place_leaves_the_packet_in_the_datagram() {
    let (mut client, mut server) = pair(None, None);
    let plain = packet(b"opened where it lies");
    let mut wire = plain.clone();
    client.seal(&mut wire);
    let mut forged = wire.clone();
    forged[CLEAR_HEADER_LEN + SEQUENCE_LEN] ^= 1;
    assert_eq!(
        server.open_in_place(&mut forged),
        Err(ProtectionError::Forged)
    );
    let range = server.open_in_place(&mut wire).unwrap();
    assert_eq!(&wire[range], &plain[..]);
    // The forgery did not mark its sequence number, the genuine packet did.
    let mut again = plain.clone();
    client.seal(&mut again);
    let mut replay = again.clone();
    assert!(server.open_in_place(&mut again).is_ok());
    assert_eq!(
        server.open_in_place(&mut replay),
        Err(ProtectionError::Replayed)
    );
    assert_eq!(
        server.open_in_place(&mut [0; CLEAR_HEADER_LEN + OVERHEAD - 1]),
        Err(ProtectionError::Short)
    );
}

#[test]
fn every_flipped_bit_is_caught() {
    let (mut client, mut server) = pair(None, None);
    let mut wire = packet(b"payload");
    client.seal(&mut wire);
    let mut out = Vec::new();
    for byte in 0..wire.len() {
        for bit in 0..8 {
            let mut bad = wire.clone();
            bad[byte] ^= 1 << bit;
            assert!(
                server.open(&bad, &mut out).is_err(),
                "byte {byte} bit {bit}"
            );
        }
    }
    assert_eq!(
        server.open(&wire[..wire.len() - 1], &mut out),
        Err(ProtectionError::Forged)
    );
    assert_eq!(
        server.open(&wire[..20], &mut out),
        Err(ProtectionError::Short)
    );
    server.open(&wire, &mut out).unwrap();
}

#[test]
fn replays_are_refused_and_reordering_is_not() {
    let (mut client, mut server) = pair(None, None);
    let sealed: Vec<Vec<u8>> = (0..3000u32)
        .map(|i| {
            let mut p = packet(&i.to_be_bytes());
            client.seal(&mut p);
            p
        })
        .collect();
    let mut out = Vec::new();
    // Out of order within the window: every packet once.
    for i in [5usize, 3, 4, 0, 1, 2, 1000, 10, 1001] {
        server.open(&sealed[i], &mut out).unwrap();
    }
    for i in [5usize, 0, 1000, 10] {
        assert_eq!(
            server.open(&sealed[i], &mut out),
            Err(ProtectionError::Replayed)
        );
    }
    // Far ahead: the window slides; what fell out of it is refused, what is in it is fine.
    server.open(&sealed[2500], &mut out).unwrap();
    assert_eq!(
        server.open(&sealed[11], &mut out),
        Err(ProtectionError::Replayed)
    );
    server.open(&sealed[2000], &mut out).unwrap();
    assert_eq!(
        server.open(&sealed[2000], &mut out),
        Err(ProtectionError::Replayed)
    );
    // The window's edge: 1024 behind the largest is out, 1023 behind is in.
    assert_eq!(
        server.open(&sealed[2500 - 1024], &mut out),
        Err(ProtectionError::Replayed)
    );
    server.open(&sealed[2500 - 1023], &mut out).unwrap();
    // Number 5's bit (opened before the slide) does not shadow 5 + 2048, at the same position.
    server.open(&sealed[5 + 2048], &mut out).unwrap();
}

#[test]
fn a_forged_sequence_number_does_not_move_the_window() {
    let (mut client, mut server) = pair(None, None);
    let mut first = packet(b"a");
    client.seal(&mut first);
    let mut forged = first.clone();
    forged[CLEAR_HEADER_LEN..CLEAR_HEADER_LEN + SEQUENCE_LEN]
        .copy_from_slice(&u64::MAX.to_be_bytes());
    let mut out = Vec::new();
    assert_eq!(server.open(&forged, &mut out), Err(ProtectionError::Forged));
    server.open(&first, &mut out).unwrap();
}

#[test]
fn keys_differ_without_the_same_psk_or_transcript() {
    let a = PreSharedKey::from_secret(b"one secret");
    let b = PreSharedKey::from_secret(b"another secret");
    let (mut client, mut server) = pair(Some(&a), Some(&b));
    let mut wire = packet(b"x");
    client.seal(&mut wire);
    assert_eq!(
        server.open(&wire, &mut Vec::new()),
        Err(ProtectionError::Forged)
    );
    let (client, server) = pair(Some(&a), None);
    let tag = server.confirmation(b"accept");
    assert!(!client.check_confirmation(b"accept", &tag));
    let (client, server) = pair(Some(&a), Some(&a));
    let tag = server.confirmation(b"accept");
    assert!(client.check_confirmation(b"accept", &tag));
    assert!(!client.check_confirmation(b"accepT", &tag));
    // A different transcript (a changed hello) gives other keys.
    let c = KeyShare::from_secret([1; 32]);
    let s = KeyShare::from_secret([2; 32]);
    let t = |hello: &'static [u8]| Transcript {
        hello,
        client_share: c.public(),
        server_share: s.public(),
    };
    let client = PacketKeys::derive(Side::Client, &c, s.public(), None, &t(b"rate 1M")).unwrap();
    let server = PacketKeys::derive(Side::Server, &s, c.public(), None, &t(b"rate 9M")).unwrap();
    assert!(!client.check_confirmation(b"accept", &server.confirmation(b"accept")));
}

#[test]
fn a_low_order_key_share_is_refused() {
    let own = KeyShare::from_secret([7; 32]);
    let transcript = Transcript {
        hello: b"",
        client_share: own.public(),
        server_share: [0; 32],
    };
    assert_eq!(
        PacketKeys::derive(Side::Client, &own, [0; 32], None, &transcript).unwrap_err(),
        ProtectionError::WeakKeyShare
    );
}

#[test]
fn psk_debug_hides_the_key() {
    let k = PreSharedKey::from_secret(b"s");
    assert_eq!(format!("{k:?}"), "PreSharedKey(..)");
}

#[test]
fn keys_change_with_the_epoch_and_both_sides_follow() {
    let (mut client, mut server) = pair(None, None);
    let boundary = 1u64 << EPOCH_BITS;
    let plain = packet(b"across the epochs");
    let mut out = Vec::new();
    let mut sealed = Vec::new();
    for sequence in [
        boundary - 2,
        boundary - 1,
        boundary,
        boundary + 1,
        2 * boundary,
    ] {
        client.skip_to(sequence);
        let mut wire = plain.clone();
        client.seal(&mut wire);
        sealed.push(wire);
    }
    // In order, except the last packet of epoch 0 arriving after the first of epoch 1.
    for i in [0, 2, 1, 3, 4] {
        server.open(&sealed[i], &mut out).unwrap();
        assert_eq!(out, plain, "packet {i}");
    }
    // The same nonce under two epochs' keys gives two ciphertexts: the key did change.
    let mut a = *b"same bytes";
    let mut b = a;
    let nonce = client.seal.nonce(5);
    let tag_a = seal_with(client.seal.key(0), nonce, b"", &mut a);
    let nonce = client.seal.nonce(5);
    let tag_b = seal_with(client.seal.key(1), nonce, b"", &mut b);
    assert_ne!(a, b);
    assert_ne!(tag_a, tag_b);
}

#[test]
fn a_sequence_number_epochs_ahead_is_refused_before_any_key_is_made() {
    let (mut client, mut server) = pair(None, None);
    let plain = packet(b"far ahead");
    let mut first = plain.clone();
    client.seal(&mut first);
    let mut out = Vec::new();
    server.open(&first, &mut out).unwrap();
    // Genuinely sealed, but two epochs beyond anything opened: refused, nothing derived.
    client.skip_to(2 << EPOCH_BITS);
    let mut ahead = plain.clone();
    client.seal(&mut ahead);
    assert_eq!(server.open(&ahead, &mut out), Err(ProtectionError::Forged));
    assert!(server.open.later.iter().all(Option::is_none));
    // The window did not move: packets of the current epoch still open.
    client.skip_to(1);
    let mut next = plain.clone();
    client.seal(&mut next);
    server.open(&next, &mut out).unwrap();
    assert_eq!(out, plain);
}
