//! Replays the committed fuzz corpus through every decoder in a plain `cargo test`, and checks the
//! corpus still holds the current encoding of every seed packet.
//!
//! After a deliberate layout change, rewrite the seeds with
//! `QSTP_WRITE_CORPUS=1 cargo test -p qstp-proto --test fuzz_corpus`.

use qstp_proto::wire::*;
use qstp_proto::{Duration, Rate};
use std::fs;
use std::path::{Path, PathBuf};

/// Targets that take every kind of packet.
const ALL_KIND_TARGETS: [&str; 3] = ["decode_packet", "round_trip", "peek_type"];

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

fn encode(packet: Packet<'_>) -> Vec<u8> {
    let mut buf = Vec::new();
    packet.encode(&mut buf);
    buf
}

/// Named valid encodings, at least one of every kind; the name starts with the kind.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let qstp = Composition {
        congestion: RateControl::Gtfrc {
            target: Rate::from_kbps(500),
        },
        error: ErrorControl::SackFull,
        order: Order::Ordered,
    };
    let partial = Composition {
        congestion: RateControl::Fixed {
            rate: Rate::from_mbps(2),
        },
        error: ErrorControl::SackPartial {
            deadline: Some(Duration::from_millis(200)),
            max_retransmissions: Some(3),
        },
        order: Order::Unordered,
    };
    let dccp_like = Composition {
        congestion: RateControl::Aimd,
        error: ErrorControl::None,
        order: Order::Unordered,
    };
    let hello = |composition, cookie| Hello {
        source: ConnectionId(0x1111_2222_3333_4444),
        composition,
        max_datagram: 1500,
        recv_window: 1 << 22,
        timestamp: 123_456,
        cookie,
        key_share: None,
        binder: None,
    };
    let data = |chunk, skip_to, payload| Data {
        destination: ConnectionId(7),
        packet_number: 42,
        timestamp: 99_000,
        rtt: 30_000,
        chunk,
        skip_to,
        previous_skipped: false,
        payload,
    };
    let feedback = |ack_ranges| Feedback {
        destination: ConnectionId(8),
        sequence: 5,
        timestamp_echo: 98_000,
        t_delay: 1_000,
        x_recv: 480_000,
        loss_event_rate_ppb: 2_500_000,
        max_data: 1 << 20,
        ack_ranges,
    };
    vec![
        ("hello_qstp", encode(Packet::Hello(hello(qstp, None)))),
        (
            "hello_partial_cookie",
            encode(Packet::Hello(hello(
                partial,
                Some(Cookie([0x5a; COOKIE_LEN])),
            ))),
        ),
        ("hello_aimd", encode(Packet::Hello(hello(dccp_like, None)))),
        (
            "retry",
            encode(Packet::Retry(Retry {
                destination: ConnectionId(1),
                cookie: Cookie([0xa5; COOKIE_LEN]),
                timestamp_echo: 7,
            })),
        ),
        (
            "accept",
            encode(Packet::Accept(Accept {
                destination: ConnectionId(1),
                source: ConnectionId(2),
                max_datagram: 1400,
                recv_window: 65_536,
                timestamp_echo: 7,
                keys: None,
            })),
        ),
        (
            "accept_protected",
            encode(Packet::Accept(Accept {
                destination: ConnectionId(1),
                source: ConnectionId(2),
                max_datagram: 1400,
                recv_window: 65_536,
                timestamp_echo: 7,
                keys: Some(AcceptKeys {
                    share: [0x42; 32],
                    confirmation: [0x17; 16],
                }),
            })),
        ),
        (
            "hello_key_share",
            encode(Packet::Hello(Hello {
                key_share: Some([0x33; 32]),
                ..hello(qstp, None)
            })),
        ),
        (
            "hello_binder",
            encode(Packet::Hello(Hello {
                key_share: Some([0x33; 32]),
                binder: Some([0x44; 32]),
                ..hello(qstp, None)
            })),
        ),
        (
            "data_stream_fin",
            encode(Packet::Data(data(
                Chunk::Stream {
                    offset: 1000,
                    fin: true,
                },
                None,
                b"stream bytes",
            ))),
        ),
        (
            "data_message_skip",
            encode(Packet::Data(data(
                Chunk::Message {
                    id: 9,
                    offset: 4,
                    total_len: 10,
                },
                Some(8),
                b"frag",
            ))),
        ),
        (
            "data_empty",
            encode(Packet::Data(data(Chunk::Empty, None, b""))),
        ),
        (
            "feedback_ranges",
            encode(Packet::Feedback(feedback(vec![
                (90, 100),
                (50, 80),
                (0, 10),
            ]))),
        ),
        (
            "feedback_no_ranges",
            encode(Packet::Feedback(feedback(Vec::new()))),
        ),
        (
            "close_graceful",
            encode(Packet::Close(Close {
                destination: ConnectionId(3),
                graceful: true,
                code: 0,
                reason: b"",
            })),
        ),
        (
            "close_abort",
            encode(Packet::Close(Close {
                destination: ConnectionId(3),
                graceful: false,
                code: 17,
                reason: b"gone",
            })),
        ),
    ]
}

/// The per-kind target a seed also belongs to.
fn kind_target(seed: &str) -> String {
    format!("decode_{}", seed.split('_').next().unwrap_or(seed))
}

/// Every corpus directory a seed belongs in.
fn targets_of(seed: &str) -> Vec<String> {
    let mut targets: Vec<String> = ALL_KIND_TARGETS.iter().map(|t| t.to_string()).collect();
    targets.push(kind_target(seed));
    targets
}

/// Run one input through every decoder entry point, as the fuzz targets do.
fn replay(bytes: &[u8]) -> Result<Packet<'_>, WireError> {
    let _ = peek_type(bytes);
    if let Ok(p) = HelloPacket::new_checked(bytes) {
        let _ = Hello::parse(&p);
    }
    if let Ok(p) = RetryPacket::new_checked(bytes) {
        let _ = Retry::parse(&p);
    }
    if let Ok(p) = AcceptPacket::new_checked(bytes) {
        let _ = Accept::parse(&p);
    }
    if let Ok(p) = DataPacket::new_checked(bytes) {
        let _ = (p.chunk(), p.skip_to(), p.payload());
        let _ = Data::parse(&p);
    }
    if let Ok(p) = FeedbackPacket::new_checked(bytes) {
        let _ = Feedback::parse(&p);
    }
    if let Ok(p) = ClosePacket::new_checked(bytes) {
        let _ = Close::parse(&p);
    }
    Packet::decode(bytes)
}

/// With `QSTP_WRITE_CORPUS` set, write every seed into its corpus directories (each file replaced
/// atomically, so a concurrent reader sees the old or the new file, never half of one).
fn write_corpus_if_asked() {
    if std::env::var_os("QSTP_WRITE_CORPUS").is_none() {
        return;
    }
    for (name, bytes) in seeds() {
        for target in targets_of(name) {
            let dir = corpus_dir().join(&target);
            fs::create_dir_all(&dir).unwrap();
            let temporary = dir.join(format!(".{name}.{}", std::process::id()));
            fs::write(&temporary, &bytes).unwrap();
            fs::rename(&temporary, dir.join(name)).unwrap();
        }
    }
}

#[test]
fn committed_corpus_holds_every_seed() {
    write_corpus_if_asked();
    let seeds = seeds();
    for kind in PacketType::ALL {
        assert!(
            seeds.iter().any(|(_, bytes)| peek_type(bytes) == Ok(kind)),
            "no seed of kind {kind:?}"
        );
    }
    for (name, bytes) in &seeds {
        assert!(Packet::decode(bytes).is_ok(), "seed {name} does not decode");
        for target in targets_of(name) {
            let path = corpus_dir().join(&target).join(name);
            let committed = fs::read(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (regenerate the corpus)", path.display()));
            assert_eq!(
                &committed,
                bytes,
                "{} is stale: the layout changed; regenerate the corpus",
                path.display()
            );
        }
    }
}

#[test]
fn every_corpus_file_replays_and_seeds_decode() {
    write_corpus_if_asked();
    let seed_names: Vec<&str> = seeds().iter().map(|(name, _)| *name).collect();
    let mut replayed = 0;
    for target in fs::read_dir(corpus_dir()).expect("fuzz/corpus exists") {
        let target = target.unwrap().path();
        for file in fs::read_dir(&target).unwrap() {
            let file = file.unwrap().path();
            let bytes = fs::read(&file).unwrap();
            let decoded = replay(&bytes);
            let name = file.file_name().unwrap().to_string_lossy();
            if seed_names.contains(&name.as_ref()) {
                assert!(
                    decoded.is_ok(),
                    "seed {} fails: {:?}",
                    file.display(),
                    decoded
                );
            }
            replayed += 1;
        }
    }
    assert!(
        replayed >= seed_names.len() * ALL_KIND_TARGETS.len(),
        "only {replayed} corpus files"
    );
}
