//! `qstp send` and `qstp recv` across a hostile path: a relay that flips a byte in 2% of the
//! datagrams and reads every one of them, and peers holding different pre-shared keys.

// Real transfers measure wall-clock time: the determinism bans of clippy.toml do not apply here.
#![allow(clippy::disallowed_types)]

mod common;

use common::{pattern, scratch, start_server, wait_bounded, QSTP};
use std::net::{SocketAddr, UdpSocket};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Written into the file every 64 kB: it must never be readable on the wire.
const MARKER: &[u8] = b"MARKER-qstp-cleartext-9c41e7";

/// What the relay saw.
#[derive(Default)]
struct Seen {
    datagrams: AtomicU64,
    flipped: AtomicU64,
    marker: AtomicBool,
    stop: AtomicBool,
}

/// A UDP relay on one socket: datagrams from the server go back to the last client, all others go
/// to the server. It flips one byte in `flip` of them (a fixed xorshift sequence: repeatable) and
/// looks for `MARKER` in every one.
fn relay(server: SocketAddr, flip: f64) -> (SocketAddr, Arc<Seen>) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    let addr = socket.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let shared = seen.clone();
    std::thread::spawn(move || {
        let mut client: Option<SocketAddr> = None;
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut buf = vec![0u8; 65_536];
        while !shared.stop.load(Ordering::Relaxed) {
            let Ok((n, from)) = socket.recv_from(&mut buf) else {
                continue;
            };
            let datagram = &mut buf[..n];
            shared.datagrams.fetch_add(1, Ordering::Relaxed);
            if datagram.windows(MARKER.len()).any(|w| w == MARKER) {
                shared.marker.store(true, Ordering::Relaxed);
            }
            if n > 0 && ((next() >> 11) as f64 / (1u64 << 53) as f64) < flip {
                let at = (next() % n as u64) as usize;
                datagram[at] ^= (next() % 255 + 1) as u8;
                shared.flipped.fetch_add(1, Ordering::Relaxed);
            }
            let to = if from == server {
                match client {
                    Some(c) => c,
                    None => continue,
                }
            } else {
                client = Some(from);
                server
            };
            let _ = socket.send_to(datagram, to);
        }
    });
    (addr, seen)
}

/// An 8 MB file with the marker every 64 kB.
fn marked_file(len: usize) -> Vec<u8> {
    let mut data = pattern(len);
    for at in (0..len - MARKER.len()).step_by(65_536) {
        data[at..at + MARKER.len()].copy_from_slice(MARKER);
    }
    data
}

#[test]
fn a_file_crosses_a_relay_flipping_two_percent_intact_and_unread() {
    let dir = scratch("hostile-flip");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let data = marked_file(8 << 20);
    let source = dir.join("marked.bin");
    std::fs::write(&source, &data).unwrap();
    let (mut receiver, addr, _lines) = start_server(&out, &["--once"]);
    let (relay_addr, seen) = relay(addr.parse().unwrap(), 0.02);
    let output = Command::new(QSTP)
        .arg("send")
        .arg(&source)
        // Ethernet-sized datagrams: many of them, so that thousands are flipped.
        .args(["--to", &relay_addr.to_string(), "--quiet", "--mtu", "1500"])
        .output()
        .unwrap();
    seen.stop.store(true, Ordering::Relaxed);
    assert!(
        output.status.success(),
        "send failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(wait_bounded(&mut receiver, Duration::from_secs(10)).success());
    assert_eq!(std::fs::read(out.join("marked.bin")).unwrap(), data);
    let (datagrams, flipped) = (
        seen.datagrams.load(Ordering::Relaxed),
        seen.flipped.load(Ordering::Relaxed),
    );
    assert!(datagrams > 5000, "{datagrams} datagrams");
    assert!(
        flipped > datagrams / 100,
        "{flipped} of {datagrams} flipped"
    );
    assert!(
        !seen.marker.load(Ordering::Relaxed),
        "the file's bytes were readable on the wire"
    );
}

#[test]
fn peers_with_different_pre_shared_keys_never_connect() {
    let dir = scratch("hostile-psk");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let (ours, theirs) = (dir.join("ours.key"), dir.join("theirs.key"));
    std::fs::write(&ours, "a shared secret of some length\n").unwrap();
    std::fs::write(&theirs, "another secret, also long enough").unwrap();
    let source = dir.join("small.bin");
    std::fs::write(&source, pattern(100_000)).unwrap();
    let ours_arg = ours.to_str().unwrap();
    // The server says nothing to the wrong key's hello (its binder does not verify) and keeps
    // nothing for it: the sender times out naming the key; the next sender is served.
    let (mut receiver, addr, _lines) = start_server(&out, &["--psk", ours_arg]);
    let send = |key: &std::path::Path| {
        Command::new(QSTP)
            .arg("send")
            .arg(&source)
            .args(["--to", &addr, "--quiet", "--psk", key.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let refused = send(&theirs);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("another pre-shared key") && stderr.contains("--psk"),
        "{stderr}"
    );
    assert!(
        std::fs::read_dir(&out).unwrap().next().is_none(),
        "nothing written"
    );
    // The same key file's content with another trailing newline is the same key.
    std::fs::write(&theirs, "a shared secret of some length").unwrap();
    let ok = send(&theirs);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert_eq!(
        std::fs::read(out.join("small.bin")).unwrap(),
        pattern(100_000)
    );
    let _ = receiver.kill();
    let _ = receiver.wait();
}

#[test]
fn a_short_or_missing_key_file_is_refused_before_anything_runs() {
    let dir = scratch("hostile-badkey");
    let short = dir.join("short.key");
    std::fs::write(&short, "tiny\n").unwrap();
    for (key, expect) in [
        (short.to_str().unwrap().to_string(), "at least 16"),
        (
            dir.join("absent.key").to_str().unwrap().to_string(),
            "cannot read --psk",
        ),
    ] {
        let output = Command::new(QSTP)
            .args(["send", "-", "--to", "127.0.0.1:9", "--psk", &key])
            .output()
            .unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expect), "{stderr}");
    }
}

/// Shake hands with `server` over a real socket as far as its accept and go no further: no
/// packet under the keys ever follows (the slot attack), from `127.0.0.<host>`. Returns the
/// socket, to keep the port.
fn shake_and_stop(server: SocketAddr, host: u8) -> UdpSocket {
    use qstp_proto::{Config, Endpoint, EndpointConfig, Time};
    let socket = UdpSocket::bind(("127.0.0.".to_string() + &host.to_string(), 0)).unwrap();
    let seed = u64::from(host);
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut client = Endpoint::new(EndpointConfig::client([host; 32]), seed);
    let start = std::time::Instant::now();
    let now = || Time::ZERO + qstp_proto::Duration::from_nanos(start.elapsed().as_nanos() as u64);
    let handle = client.connect(now(), server, Config::default()).unwrap();
    let (mut out, mut buf) = (Vec::new(), vec![0u8; 2048]);
    while !client.connection(handle).unwrap().is_established() {
        assert!(start.elapsed() < Duration::from_secs(5), "no accept");
        client.handle_timeout(now());
        while let Some(t) = client.poll_transmit(now(), &mut out) {
            socket.send_to(&out[..t.size], t.destination).unwrap();
        }
        if let Ok((n, from)) = socket.recv_from(&mut buf) {
            client.handle_datagram(now(), from, &buf[..n]);
        }
    }
    socket
}

#[test]
fn clients_that_stop_after_the_handshake_hold_no_transfer_slot() {
    let dir = scratch("hostile-slots");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let source = dir.join("small.bin");
    std::fs::write(&source, pattern(50_000)).unwrap();
    // One transfer at a time, and a sender has one second to announce its file.
    let (mut receiver, addr, lines) =
        start_server(&out, &["--max-transfers", "1", "--header-timeout", "1"]);
    let server: SocketAddr = addr.parse().unwrap();
    // Eight clients at eight addresses complete the cookie exchange and stop: none holds the
    // one slot.
    let attackers: Vec<UdpSocket> = (2..=9).map(|host| shake_and_stop(server, host)).collect();
    let send = Command::new(QSTP)
        .arg("send")
        .arg(&source)
        .args(["--to", &addr, "--quiet"])
        .output()
        .unwrap();
    assert!(
        send.status.success(),
        "{}",
        String::from_utf8_lossy(&send.stderr)
    );
    assert_eq!(
        std::fs::read(out.join("small.bin")).unwrap(),
        pattern(50_000)
    );
    drop(attackers);

    // A client that proves its keys but announces nothing is closed after --header-timeout,
    // with the reason, and the slot is free again.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let closed = runtime.block_on(async {
        let endpoint = qstp_net::Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        // The one slot frees once the receiver has closed the last transfer's connection.
        let tried = std::time::Instant::now();
        let conn = loop {
            match endpoint.connect(server, qstp_net::Config::default()).await {
                Ok(conn) => break conn,
                Err(qstp_net::Error::Refused) if tried.elapsed() < Duration::from_secs(5) => {
                    tokio::time::sleep(Duration::from_millis(100)).await
                }
                Err(e) => panic!("{e}"),
            }
        };
        let started = std::time::Instant::now();
        let _ = tokio::time::timeout(Duration::from_secs(10), conn.closed()).await;
        (started.elapsed(), conn.close_reason())
    });
    assert!(
        closed.0 < Duration::from_secs(5),
        "closed after {:?}",
        closed.0
    );
    match closed.1 {
        Some(qstp_proto::CloseReason::PeerClosed { code: 3, reason }) => {
            assert!(reason.contains("no transfer header within 1 s"), "{reason}")
        }
        other => panic!("not closed for its missing header: {other:?}"),
    }
    let again = Command::new(QSTP)
        .arg("send")
        .arg(&source)
        .args(["--to", &addr, "--quiet"])
        .output()
        .unwrap();
    assert!(again.status.success());
    let _ = receiver.kill();
    let _ = receiver.wait();
    let lines = lines.join().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("no transfer header within 1 s")),
        "{lines:?}"
    );
}
