//! Property tests over every packet kind: round trips, encoded lengths, and decoding arbitrary or
//! damaged bytes without panicking.

use super::*;
use crate::rate::Rate;
use crate::time::Duration;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

fn connection_id() -> impl Strategy<Value = ConnectionId> {
    any::<u64>().prop_map(ConnectionId)
}

fn cookie() -> impl Strategy<Value = Cookie> {
    any::<[u8; COOKIE_LEN]>().prop_map(Cookie)
}

fn max_datagram() -> impl Strategy<Value = u16> {
    (MIN_DATAGRAM as u16)..=(MAX_DATAGRAM as u16)
}

fn composition() -> impl Strategy<Value = Composition> {
    let congestion = prop_oneof![
        (1..=u64::MAX).prop_map(|bps| RateControl::Fixed {
            rate: Rate::from_bps(bps)
        }),
        Just(RateControl::Tfrc),
        any::<u64>().prop_map(|bps| RateControl::Gtfrc {
            target: Rate::from_bps(bps)
        }),
        Just(RateControl::Aimd),
    ];
    // Deadlines travel in whole microseconds.
    let deadline = option::of((1..=u64::MAX / 1_000).prop_map(Duration::from_micros));
    let partial = (deadline, option::of(any::<u32>()))
        .prop_filter("a partial service needs a limit", |(d, m)| {
            d.is_some() || m.is_some()
        })
        .prop_map(
            |(deadline, max_retransmissions)| ErrorControl::SackPartial {
                deadline,
                max_retransmissions,
            },
        );
    let error = prop_oneof![
        Just(ErrorControl::None),
        Just(ErrorControl::SackFull),
        partial
    ];
    let order = prop_oneof![Just(Order::Ordered), Just(Order::Unordered)];
    (congestion, error, order).prop_map(|(congestion, error, order)| Composition {
        congestion,
        error,
        order,
    })
}

fn hello() -> impl Strategy<Value = Hello> {
    (
        connection_id(),
        composition(),
        max_datagram(),
        any::<u64>(),
        any::<u32>(),
        option::of(cookie()),
        option::of(any::<[u8; 32]>()),
        option::of(any::<[u8; 32]>()),
    )
        .prop_map(
            |(
                source,
                composition,
                max_datagram,
                recv_window,
                timestamp,
                cookie,
                key_share,
                binder,
            )| {
                Hello {
                    source,
                    composition,
                    max_datagram,
                    recv_window,
                    timestamp,
                    cookie,
                    key_share,
                    binder,
                }
            },
        )
}

fn retry() -> impl Strategy<Value = Retry> {
    (connection_id(), cookie(), any::<u32>()).prop_map(|(destination, cookie, timestamp_echo)| {
        Retry {
            destination,
            cookie,
            timestamp_echo,
        }
    })
}

fn accept() -> impl Strategy<Value = Accept> {
    (
        connection_id(),
        connection_id(),
        max_datagram(),
        any::<u64>(),
        any::<u32>(),
        option::of((any::<[u8; 32]>(), any::<[u8; 16]>())),
    )
        .prop_map(
            |(destination, source, max_datagram, recv_window, timestamp_echo, keys)| Accept {
                destination,
                source,
                max_datagram,
                recv_window,
                timestamp_echo,
                keys: keys.map(|(share, confirmation)| crate::wire::AcceptKeys {
                    share,
                    confirmation,
                }),
            },
        )
}

/// A chunk and a payload that fits it.
fn chunk_and_payload() -> impl Strategy<Value = (Chunk, Vec<u8>)> {
    let stream = (any::<u64>(), any::<bool>(), vec(any::<u8>(), 0..64)).prop_map(
        |(offset, fin, payload)| {
            let offset = offset.min(u64::MAX - payload.len() as u64);
            (Chunk::Stream { offset, fin }, payload)
        },
    );
    let message = (
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        vec(any::<u8>(), 0..64),
    )
        .prop_map(|(id, total_len, offset, payload)| {
            let total_len = total_len.max(payload.len() as u32);
            let offset = offset % (total_len - payload.len() as u32 + 1);
            (
                Chunk::Message {
                    id,
                    offset,
                    total_len,
                },
                payload,
            )
        });
    let padding = proptest::collection::vec(Just(0u8), 0..1400).prop_map(|p| (Chunk::Padding, p));
    prop_oneof![Just((Chunk::Empty, Vec::new())), stream, message, padding]
}

/// A data packet with an owned payload (the packet borrows it).
fn data_parts() -> impl Strategy<Value = (ConnectionId, u64, u32, u32, Option<u64>, Chunk, Vec<u8>)>
{
    (
        connection_id(),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        option::of(any::<u64>()),
        chunk_and_payload(),
    )
        .prop_map(|(d, n, t, r, s, (c, p))| (d, n, t, r, s, c, p))
}

/// Ranges that are highest first and disjoint, built from arbitrary gaps and lengths.
fn ack_ranges() -> impl Strategy<Value = Vec<(u64, u64)>> {
    (
        any::<u64>(),
        vec((0..1u64 << 20, 0..1u64 << 20), 0..=MAX_ACK_RANGES),
    )
        .prop_map(|(top, steps)| {
            let mut ranges = Vec::new();
            let mut next_last = Some(top);
            for (gap, len) in steps {
                let Some(last) = next_last else { break };
                let first = last.saturating_sub(len);
                ranges.push((first, last));
                next_last = first.checked_sub(gap + 1);
            }
            ranges
        })
}

fn feedback() -> impl Strategy<Value = Feedback> {
    (
        (connection_id(), any::<u64>(), any::<u32>(), any::<u32>()),
        (any::<u64>(), 0..=PPB_ONE, any::<u64>(), ack_ranges()),
    )
        .prop_map(
            |(
                (destination, sequence, timestamp_echo, t_delay),
                (x_recv, p, max_data, ack_ranges),
            )| Feedback {
                destination,
                sequence,
                timestamp_echo,
                t_delay,
                x_recv,
                loss_event_rate_ppb: p,
                max_data,
                ack_ranges,
            },
        )
}

fn close_parts() -> impl Strategy<Value = (ConnectionId, bool, u32, Vec<u8>)> {
    (
        connection_id(),
        any::<bool>(),
        any::<u32>(),
        vec(any::<u8>(), 0..=MAX_REASON_LEN),
    )
        .prop_map(|(d, graceful, code, reason)| {
            (d, graceful, if graceful { 0 } else { code }, reason)
        })
}

/// Encode, check the length, decode and compare.
fn assert_round_trip(packet: &Packet<'_>) -> Result<Vec<u8>, TestCaseError> {
    let mut buf = vec![0xee; 3];
    packet.encode(&mut buf);
    prop_assert_eq!(&buf[..3], &[0xee; 3], "encode appends");
    let bytes = buf.split_off(3);
    prop_assert_eq!(bytes.len(), packet.encoded_len());
    prop_assert_eq!(peek_type(&bytes), Ok(packet.packet_type()));
    let decoded = Packet::decode(&bytes);
    prop_assert_eq!(decoded.as_ref(), Ok(packet));
    prop_assert_eq!(decoded.map(|p| p.destination()), Ok(packet.destination()));
    Ok(bytes)
}

/// One valid packet of any kind, encoded.
fn any_valid_encoding() -> impl Strategy<Value = Vec<u8>> {
    fn enc(packet: Packet<'_>) -> Vec<u8> {
        let mut buf = Vec::new();
        packet.encode(&mut buf);
        buf
    }
    prop_oneof![
        hello().prop_map(|h| enc(Packet::Hello(h))),
        retry().prop_map(|r| enc(Packet::Retry(r))),
        accept().prop_map(|a| enc(Packet::Accept(a))),
        data_parts().prop_map(
            |(destination, packet_number, timestamp, rtt, skip_to, chunk, payload)| {
                enc(Packet::Data(Data {
                    destination,
                    packet_number,
                    timestamp,
                    rtt,
                    chunk,
                    skip_to,
                    previous_skipped: packet_number % 3 == 0,
                    payload: &payload,
                }))
            }
        ),
        feedback().prop_map(|f| enc(Packet::Feedback(f))),
        close_parts().prop_map(|(destination, graceful, code, reason)| {
            enc(Packet::Close(Close {
                destination,
                graceful,
                code,
                reason: &reason,
            }))
        }),
    ]
}

proptest! {
    #[test]
    fn hello_round_trips(hello in hello()) {
        let bytes = assert_round_trip(&Packet::Hello(hello))?;
        prop_assert_eq!(bytes.len(), MIN_HELLO_SIZE);
    }

    #[test]
    fn retry_round_trips(retry in retry()) {
        assert_round_trip(&Packet::Retry(retry))?;
    }

    #[test]
    fn accept_round_trips(accept in accept()) {
        assert_round_trip(&Packet::Accept(accept))?;
    }

    #[test]
    fn data_round_trips((destination, packet_number, timestamp, rtt, skip_to, chunk, payload) in data_parts()) {
        let previous_skipped = packet_number % 3 == 0;
        let data = Data { destination, packet_number, timestamp, rtt, chunk, skip_to, previous_skipped, payload: &payload };
        let bytes = assert_round_trip(&Packet::Data(data))?;
        prop_assert!(bytes.len() - payload.len() <= MAX_DATA_HEADER);
        prop_assert_eq!(bytes.len() - payload.len(), Data::header_len(&chunk, skip_to.is_some()));
    }

    #[test]
    fn feedback_round_trips(feedback in feedback()) {
        prop_assert_eq!(check_ack_ranges(&feedback.ack_ranges), Ok(()));
        assert_round_trip(&Packet::Feedback(feedback))?;
    }

    #[test]
    fn close_round_trips((destination, graceful, code, reason) in close_parts()) {
        assert_round_trip(&Packet::Close(Close { destination, graceful, code, reason: &reason }))?;
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..256), kind in 0u8..8) {
        let _ = peek_type(&bytes);
        let _ = Packet::decode(&bytes);
        // The same bytes behind a valid version and type byte reach every decoder.
        let mut typed = vec![VERSION, kind];
        typed.extend_from_slice(&bytes);
        let _ = Packet::decode(&typed);
    }

    #[test]
    fn truncations_and_bit_flips_never_panic(bytes in any_valid_encoding(), cut in any::<prop::sample::Index>(),
                                             flips in vec((any::<prop::sample::Index>(), 0u8..8), 1..4)) {
        prop_assert!(Packet::decode(&bytes).is_ok());
        let cut = cut.index(bytes.len() + 1);
        let _ = Packet::decode(&bytes[..cut]);
        let mut damaged = bytes.clone();
        for (at, bit) in flips {
            let at = at.index(damaged.len());
            damaged[at] ^= 1 << bit;
        }
        // Whatever decodes from damaged bytes encodes back to a packet that decodes the same.
        if let Ok(packet) = Packet::decode(&damaged) {
            let mut again = Vec::new();
            packet.encode(&mut again);
            prop_assert_eq!(Packet::decode(&again), Ok(packet));
        }
    }
}

#[test]
fn rejects_bad_version_and_unknown_type_for_every_kind() {
    let mut buf = Vec::new();
    Packet::Retry(Retry {
        destination: ConnectionId(1),
        cookie: Cookie([0; COOKIE_LEN]),
        timestamp_echo: 0,
    })
    .encode(&mut buf);
    let mut bad_version = buf.clone();
    bad_version[0] = VERSION + 1;
    assert_eq!(
        Packet::decode(&bad_version),
        Err(WireError::UnknownVersion(VERSION + 1))
    );
    let mut bad_type = buf.clone();
    bad_type[1] = 0;
    assert_eq!(Packet::decode(&bad_type), Err(WireError::UnknownType(0)));
    bad_type[1] = 200;
    assert_eq!(Packet::decode(&bad_type), Err(WireError::UnknownType(200)));
    assert_eq!(Packet::decode(&[]), Err(WireError::Truncated));
    assert_eq!(Packet::decode(&[VERSION]), Err(WireError::Truncated));
}

#[test]
fn every_kind_refuses_its_header_alone() {
    for t in PacketType::ALL {
        let header = [VERSION, t.code()];
        let expected = if t == PacketType::Hello {
            WireError::ShortHello(2)
        } else {
            WireError::Truncated
        };
        assert_eq!(Packet::decode(&header), Err(expected), "{t:?}");
    }
}
