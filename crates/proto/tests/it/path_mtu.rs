//! Stories of path MTU discovery (RFC 8899): a connection starts at 1200 bytes, finds what the
//! path carries without the lost probes counting as congestion, and a size the local network
//! refuses either fails a probe or, pinned, ends the connection with a reason that says so.

use crate::support::{pattern, Pair, PathModel};
use qstp_proto::{CloseReason, Config, Duration, Rate, ReadError, Time, WriteError};

/// A path whose links carry datagrams of at most 1452 bytes (UDP payload; an IPv4 MTU of 1480).
fn narrow(_: Time, datagram: &[u8]) -> bool {
    datagram.len() > 1452
}

/// Send `data` client to server over `path` with `config`; returns the bytes received.
fn transfer(pair: &mut Pair, config: Config, data: &[u8]) -> Vec<u8> {
    pair.connect_and_establish(config);
    let mut written = 0;
    let mut received = Vec::new();
    let mut buf = vec![0u8; 65_536];
    let mut server_finished = false;
    let done = pair.drive_until(Duration::from_secs(60), |p| {
        let conn = p.client.conn_mut();
        while written < data.len() {
            match conn.write(&data[written..]) {
                Ok(n) => written += n,
                Err(WriteError::Blocked) => break,
                Err(e) => panic!("write failed: {e}"),
            }
        }
        if written == data.len() {
            let _ = conn.finish();
        }
        loop {
            match p.server.conn_mut().read(&mut buf) {
                Ok(0) => {
                    if !server_finished {
                        p.server.conn_mut().finish().unwrap();
                        server_finished = true;
                    }
                    break;
                }
                Ok(n) => received.extend_from_slice(&buf[..n]),
                Err(ReadError::Blocked) => break,
                Err(e) => panic!("read failed: {e:?}"),
            }
        }
        p.client.conn().is_closed() && p.server.conn().is_closed()
    });
    assert!(done, "transfer stalled at {} bytes", received.len());
    received
}

fn discovering() -> Config {
    Config {
        pmtu_discovery: true,
        max_datagram: 8952,
        ..Config::qstp(Rate::from_mbps(5))
    }
}

#[test]
fn probes_find_the_path_mtu_and_lost_probes_are_no_congestion() {
    let path = PathModel {
        drop_if: Some(narrow),
        ..PathModel::with_delay(Duration::from_millis(10))
    };
    let mut pair = Pair::new(discovering(), path, 7);
    let data = pattern(20_000_000, 1);
    let received = transfer(&mut pair, discovering(), &data);
    assert!(received == data, "the stream arrived intact");
    let stats = pair.client.conn().stats();
    println!("{:?} after {:?}", stats.pmtu, pair.time);
    assert!(
        (1452 - 16..=1452).contains(&stats.datagram_size),
        "found {} bytes: {:?} at {:?}",
        stats.datagram_size,
        stats.pmtu,
        pair.time
    );
    // Every size above 1452 needed MAX_PROBES = 3 losses to be given up.
    assert!(stats.pmtu.probes_lost >= 3, "{:?}", stats.pmtu);
    assert!(stats.pmtu.probes_acked >= 1, "{:?}", stats.pmtu);
    // The only losses on this path were probes: TFRC saw none, SACK repaired none.
    assert_eq!(stats.loss_event_rate, 0.0);
    assert_eq!(stats.loss_event_rate_increases, 0);
    assert_eq!(stats.packets_retransmitted, 0);
    assert_eq!(stats.packets_lost, 0);
}

#[test]
fn without_discovery_every_packet_has_the_configured_size() {
    let config = Config {
        max_datagram: 1400,
        ..Config::default()
    };
    let mut pair = Pair::new(config.clone(), PathModel::default(), 3);
    let data = pattern(500_000, 2);
    assert!(transfer(&mut pair, config, &data) == data);
    let stats = pair.client.conn().stats();
    assert_eq!(stats.datagram_size, 1400);
    assert_eq!(stats.pmtu.probes_sent, 0);
}

#[test]
fn a_refused_probe_fails_and_a_refused_pinned_size_ends_the_connection() {
    // Discovery on: the local network refusing a probe's size is a probe that failed.
    let mut pair = Pair::new(discovering(), PathModel::default(), 5);
    pair.connect_and_establish(discovering());
    let handle = pair.client.handle.unwrap();
    let now = pair.time;
    pair.client
        .endpoint
        .handle_datagram_too_big(now, handle, 8952);
    assert!(!pair.client.conn().is_closed());
    assert_eq!(pair.client.conn().stats().datagram_size, 1200);
    // A size no larger than the base cannot shrink further.
    pair.client
        .endpoint
        .handle_datagram_too_big(now, handle, 1200);
    assert_eq!(
        pair.client.conn().close_reason(),
        Some(&CloseReason::DatagramTooLarge { size: 1200 })
    );

    // Pinned: the first refusal ends the connection, saying why.
    let pinned = Config {
        max_datagram: 1500,
        ..Config::default()
    };
    let mut pair = Pair::new(pinned.clone(), PathModel::default(), 6);
    pair.connect_and_establish(pinned);
    let handle = pair.client.handle.unwrap();
    let now = pair.time;
    pair.client
        .endpoint
        .handle_datagram_too_big(now, handle, 1500);
    assert_eq!(
        pair.client.conn().close_reason(),
        Some(&CloseReason::DatagramTooLarge { size: 1500 })
    );
}

#[test]
fn a_packet_too_big_is_believed_only_when_it_quotes_a_probe() {
    let path = PathModel {
        drop_if: Some(narrow),
        ..PathModel::with_delay(Duration::from_millis(10))
    };
    let mut pair = Pair::new(discovering(), path, 9);
    pair.capture = Some(Vec::new());
    pair.connect_and_establish(discovering());
    let data = pattern(4_000_000, 6);
    let mut written = 0;
    // Until the first probe (larger than any data packet) leaves.
    let sent_probe = pair.drive_until(Duration::from_secs(10), |p| {
        let conn = p.client.conn_mut();
        while written < data.len() {
            match conn.write(&data[written..]) {
                Ok(n) => written += n,
                Err(_) => break,
            }
        }
        p.capture
            .as_ref()
            .unwrap()
            .iter()
            .any(|(_, _, d)| d.len() > 1452)
    });
    assert!(sent_probe);
    let probe = pair
        .capture
        .as_ref()
        .unwrap()
        .iter()
        .find(|(_, _, d)| d.len() > 1452)
        .map(|(_, _, d)| d[..64].to_vec())
        .unwrap();
    let server = pair.server.addr;
    // A forged quote (another protection sequence number) is ignored.
    let mut forged = probe.clone();
    forged[12] ^= 1;
    pair.client
        .endpoint
        .handle_packet_too_big(server, 1400, &forged);
    assert_eq!(pair.client.conn().stats().pmtu.ptb_ignored, 1);
    assert_eq!(pair.client.conn().stats().pmtu.probes_lost, 0);
    // The genuine quote fails the probe at once.
    pair.client
        .endpoint
        .handle_packet_too_big(server, 1400, &probe);
    let stats = pair.client.conn().stats();
    assert_eq!(stats.pmtu.ptb_accepted, 1);
    assert_eq!(stats.pmtu.probes_lost, 1);
    // Data packets never shrink on an ICMP message alone.
    assert_eq!(stats.datagram_size, 1200);
}
