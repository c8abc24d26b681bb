//! The async API on loopback: streams, many connections, messages, target rate, DSCP, errors.

mod support;

use qstp_net::proto::{Duration as ProtoDuration, ErrorControl, Order};
use qstp_net::{Config, Dscp, Endpoint, EndpointOptions, Error, Preset, Rate};
use std::collections::BTreeSet;
use std::time::Duration;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_arrives_intact_and_stats_are_readable_meanwhile() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let addr = server.local_addr();
        let receiver = tokio::spawn(accept_and_drain(server));
        let client = client();
        let data = pattern(2 << 20);
        let mut conn = client.connect(addr, Config::default()).await.unwrap();
        let watcher = conn.clone();
        let sampler = tokio::spawn(async move {
            let mut samples = Vec::new();
            for _ in 0..20 {
                match watcher.stats() {
                    Ok(stats) => samples.push(stats.bytes_sent),
                    Err(_) => break,
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            samples
        });
        let hash = write_and_confirm(&mut conn, &data).await.unwrap();
        assert_eq!(hash, *blake3::hash(&data).as_bytes());
        assert!(receiver.await.unwrap().unwrap() == data);
        let samples = sampler.await.unwrap();
        assert!(!samples.is_empty());
        assert!(
            samples.windows(2).all(|w| w[0] <= w[1]),
            "counters never go back: {samples:?}"
        );
        conn.acknowledged().await.unwrap();
        let stats = conn.stats().unwrap();
        // The peer's graceful close also confirms every byte, even if its last ack was lost.
        let closed_gracefully = conn.close_reason() == Some(qstp_net::CloseReason::Graceful);
        assert!(
            stats.bytes_acked >= data.len() as u64 || closed_gracefully,
            "{stats:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_endpoint_carries_several_connections_at_once() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let addr = server.local_addr();
        let acceptor = tokio::spawn(async move {
            let mut tasks = Vec::new();
            for _ in 0..3 {
                let mut conn = server.accept().await.unwrap();
                tasks.push(tokio::spawn(async move {
                    let mut received = Vec::new();
                    conn.read_to_end(&mut received).await.unwrap();
                    conn.write_all(blake3::hash(&received).as_bytes())
                        .await
                        .unwrap();
                    conn.finish().unwrap();
                    let _ = conn.acknowledged().await;
                }));
            }
            for task in tasks {
                task.await.unwrap();
            }
            server.stats()
        });
        let client = client();
        let mut senders = Vec::new();
        for i in 0..3 {
            let client = client.clone();
            senders.push(tokio::spawn(async move {
                let data = pattern(200_000 + i * 1000);
                let mut conn = client.connect(addr, Config::default()).await.unwrap();
                let hash = write_and_confirm(&mut conn, &data).await.unwrap();
                assert_eq!(hash, *blake3::hash(&data).as_bytes(), "connection {i}");
            }));
        }
        for sender in senders {
            sender.await.unwrap();
        }
        let stats = acceptor.await.unwrap();
        assert_eq!(stats.protocol.accepted, 3);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_flow_over_the_unordered_and_partially_reliable_compositions() {
    bounded(async {
        let partial = Config {
            error: ErrorControl::SackPartial {
                deadline: Some(ProtoDuration::from_secs(5)),
                max_retransmissions: None,
            },
            order: Order::Ordered,
            ..Config::preset(Preset::TfrcSack, Rate::ZERO)
        };
        for config in [Config::preset(Preset::Tfrc, Rate::ZERO), partial] {
            let server = server(Duration::from_secs(10));
            let addr = server.local_addr();
            let receiver = tokio::spawn(async move {
                let conn = server.accept().await.unwrap();
                let mut got = Vec::new();
                while got.len() < 40 {
                    match conn.recv_message().await.unwrap() {
                        Some(m) => got.push(m),
                        None => break,
                    }
                }
                got
            });
            let client = client();
            let mut conn = client.connect(addr, config.clone()).await.unwrap();
            for i in 0..40u32 {
                let mut message = i.to_be_bytes().to_vec();
                message.extend(pattern(800));
                conn.send_message(&message).await.unwrap();
            }
            // There is no byte stream in a message composition.
            let err = conn.write_all(b"bytes").await.unwrap_err();
            assert!(
                matches!(Error::from_io(&err), Some(Error::Unsupported(_))),
                "{err}"
            );
            let got = receiver.await.unwrap();
            let ids: BTreeSet<u32> = got
                .iter()
                .map(|m| u32::from_be_bytes(m[..4].try_into().unwrap()))
                .collect();
            assert_eq!(ids, (0..40).collect(), "{:?}", config.error);
            if config.order == Order::Ordered {
                let in_order: Vec<u32> = got
                    .iter()
                    .map(|m| u32::from_be_bytes(m[..4].try_into().unwrap()))
                    .collect();
                assert_eq!(in_order, (0..40).collect::<Vec<_>>());
            }
            assert!(got.iter().all(|m| m[4..] == pattern(800)[..]));
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_target_rate_is_set_at_connect_and_changed_at_run_time() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let addr = server.local_addr();
        let _acceptor = tokio::spawn(async move {
            let conn = server.accept().await.unwrap();
            let target = conn.stats().unwrap().target;
            let _ = conn.closed().await;
            target
        });
        let client = client();
        let conn = client
            .connect(addr, Config::qstp(Rate::from_mbps(1)))
            .await
            .unwrap();
        assert_eq!(conn.stats().unwrap().target, Rate::from_mbps(1));
        conn.set_target_rate(Rate::from_mbps(5)).unwrap();
        assert_eq!(conn.stats().unwrap().target, Rate::from_mbps(5));
        assert_eq!(
            conn.dscp(),
            Dscp::AF11,
            "traffic with a target is marked AF11 by default"
        );
        let plain = client.connect(addr, Config::default()).await.unwrap();
        assert_eq!(plain.dscp(), Dscp::CS0);
        plain.set_dscp(Dscp::EF);
        assert_eq!(plain.dscp(), Dscp::EF);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_wide_dscp_applies_to_every_connection() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let addr = server.local_addr();
        let _acceptor = tokio::spawn(async move {
            let conn = server.accept().await.unwrap();
            let _ = conn.closed().await;
        });
        let options = EndpointOptions {
            dscp: Some("AF41".parse().unwrap()),
            ..EndpointOptions::default()
        };
        let client = Endpoint::bind_with("127.0.0.1:0".parse().unwrap(), options).unwrap();
        let conn = client
            .connect(addr, Config::qstp(Rate::from_mbps(1)))
            .await
            .unwrap();
        assert_eq!(conn.dscp().to_string(), "AF41");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connecting_to_a_silent_address_times_out() {
    bounded(async {
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let client = client();
        let config = Config {
            handshake_timeout: ProtoDuration::from_millis(500),
            ..Config::default()
        };
        let err = client
            .connect(silent.local_addr().unwrap(), config)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::ConnectTimeout), "{err}");
        assert_eq!(err.io_kind(), std::io::ErrorKind::TimedOut);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_in_use_is_an_io_error() {
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let err = Endpoint::bind(taken.local_addr().unwrap()).unwrap_err();
    assert!(
        matches!(&err, Error::Io(e) if e.kind() == std::io::ErrorKind::AddrInUse),
        "{err}"
    );
}

/// A DiffServ edge sees AF11 on a connection with a target rate, CS0 without, EF when asked.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_code_point_is_on_the_wire() {
    bounded(async {
        let edge = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        edge.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let sock = socket2::SockRef::from(&edge);
        sock.set_recv_tos(true).unwrap();
        let to = edge.local_addr().unwrap();
        let quick = |config: Config| Config {
            handshake_timeout: ProtoDuration::from_millis(300),
            ..config
        };
        let cases = [
            (None, Config::qstp(Rate::from_mbps(1)), Dscp::AF11),
            (None, Config::default(), Dscp::CS0),
            (Some(Dscp::EF), Config::qstp(Rate::from_mbps(1)), Dscp::EF),
        ];
        for (dscp, config, expected) in cases {
            let options = EndpointOptions {
                dscp,
                ..EndpointOptions::default()
            };
            let client = Endpoint::bind_with("127.0.0.1:0".parse().unwrap(), options).unwrap();
            let attempt =
                tokio::spawn(async move { client.connect(to, quick(config)).await.map(|_| ()) });
            let reader = edge.try_clone().unwrap();
            let tos = tokio::task::spawn_blocking(move || qstp_net::received_tos(&reader).unwrap())
                .await
                .unwrap();
            assert_eq!(
                tos >> 2,
                expected.value(),
                "hello marked {tos:#x}, expected {expected}"
            );
            // Nobody answers: the attempt times out.
            assert!(matches!(attempt.await.unwrap(), Err(Error::ConnectTimeout)));
            // Retries of this hello must not be read as the next case's.
            edge.set_nonblocking(true).unwrap();
            while edge.recv_from(&mut [0u8; 2048]).is_ok() {}
            edge.set_nonblocking(false).unwrap();
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_reaches_the_peer_with_its_code_and_reason() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let addr = server.local_addr();
        let receiver = tokio::spawn(async move {
            let mut conn = server.accept().await.unwrap();
            let mut sink = Vec::new();
            let err = conn.read_to_end(&mut sink).await.unwrap_err();
            to_net_error(&err)
        });
        let client = client();
        let mut conn = client.connect(addr, Config::default()).await.unwrap();
        conn.write_all(b"some bytes").await.unwrap();
        conn.close(7, b"changed my mind");
        let err = receiver.await.unwrap();
        assert!(
            matches!(&err, Error::PeerClosed { code: 7, reason } if reason == "changed my mind"),
            "{err}"
        );
        let local = conn.write_all(b"more").await.unwrap_err();
        assert!(
            matches!(Error::from_io(&local), Some(Error::LocallyClosed)),
            "{local}"
        );
    })
    .await;
}

/// Linux reports ICMP "port unreachable" for unconnected sockets with IP_RECVERR, which the
/// endpoint sets: a handshake towards a closed port fails at once, and only that one.
#[cfg(target_os = "linux")]
#[allow(clippy::disallowed_types)] // wall-clock time is what the test bounds
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_to_a_closed_port_fails_at_once_and_only_that_one() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let addr = server.local_addr();
        let receiver = tokio::spawn(accept_and_drain(server));
        let client = client();
        let mut conn = client.connect(addr, Config::default()).await.unwrap();
        let closed = {
            let probe = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap()
        };
        // The handshake timeout is 10 s by default: `bounded` and this margin catch a wait for it.
        let started = std::time::Instant::now();
        let err = client
            .connect(closed, Config::default())
            .await
            .expect_err("nothing listens there");
        assert!(
            matches!(err, Error::NothingListens(a) if a == closed),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(
            err.to_string(),
            format!("connection refused: nothing listens on {closed}")
        );
        // The other connection of the same endpoint carries on.
        let data = pattern(300_000);
        write_and_confirm(&mut conn, &data).await.unwrap();
        assert!(receiver.await.unwrap().unwrap() == data);
        assert!(client.stats().socket.unreachable >= 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tap_sees_every_datagram_both_ways_as_the_socket_counts_them() {
    use qstp_net::{Direction, Tap};
    use std::sync::{Arc, Mutex};
    bounded(async {
        let server = server(Duration::from_secs(10));
        let addr = server.local_addr();
        let receiver = tokio::spawn(accept_and_drain(server));
        let seen: Arc<Mutex<Vec<(Direction, std::net::SocketAddr, usize)>>> = Arc::default();
        let log = seen.clone();
        let client = Endpoint::bind_with(
            "127.0.0.1:0".parse().unwrap(),
            EndpointOptions {
                tap: Some(Tap::new(move |t| {
                    log.lock()
                        .unwrap()
                        .push((t.direction, t.remote, t.datagram.len()))
                })),
                ..EndpointOptions::default()
            },
        )
        .unwrap();
        let mut conn = client.connect(addr, Config::default()).await.unwrap();
        let data = pattern(200_000);
        write_and_confirm(&mut conn, &data).await.unwrap();
        assert!(receiver.await.unwrap().unwrap() == data);
        let socket = client.stats().socket;
        let seen = seen.lock().unwrap().clone();
        let sent = seen.iter().filter(|s| s.0 == Direction::Sent).count() as u64;
        let received = seen.len() as u64 - sent;
        // The tap runs before the socket's counters are published: it has seen at least as many.
        assert!(sent >= socket.datagrams_sent, "{sent} {socket:?}");
        assert!(
            received >= socket.datagrams_received,
            "{received} {socket:?}"
        );
        assert!(sent > 0 && received > 0);
        assert!(seen.iter().all(|s| s.1 == addr && s.2 > 0));
        let bytes: usize = seen
            .iter()
            .filter(|s| s.0 == Direction::Sent)
            .map(|s| s.2)
            .sum();
        assert!(bytes > data.len(), "{bytes} bytes sent");
    })
    .await;
}

/// A connection's end is announced only once its close packet is with the kernel: a program
/// that exits as soon as `closed()` returns still tells its peer (which would otherwise hold the
/// connection, and a server's slot, until it gave up on the silent peer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_returns_once_the_close_packet_left() {
    bounded(async {
        let server = server(Duration::from_secs(10));
        let addr = server.local_addr();
        tokio::spawn(async move {
            while let Some(mut conn) = server.accept().await {
                tokio::spawn(async move {
                    let mut sink = Vec::new();
                    conn.read_to_end(&mut sink).await.unwrap();
                    conn.write_all(b"verified").await.unwrap();
                    conn.finish().unwrap();
                    let _ = conn.closed().await;
                });
            }
        });
        // The race the order closes is short: repeat it.
        for round in 0..20 {
            let client = client();
            let mut conn = client.connect(addr, Config::default()).await.unwrap();
            conn.write_all(&pattern(10_000)).await.unwrap();
            conn.finish().unwrap();
            let mut answer = Vec::new();
            conn.read_to_end(&mut answer).await.unwrap();
            conn.closed().await.unwrap();
            let handed = client.stats().socket.datagrams_sent;
            let made = conn.stats().unwrap().packets_sent;
            assert_eq!(handed, made, "round {round}: a datagram was still to send");
        }
    })
    .await;
}
