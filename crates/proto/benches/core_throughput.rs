//! Bytes per CPU second through two connections in memory: a client endpoint streams to a server
//! endpoint, datagrams handed straight from one to the other with no delay and no loss, and the
//! clock jumping to the next wakeup whenever nothing is in flight (so pacing costs no real time).
//!
//! Run: `cargo bench -p qstp-proto --bench core_throughput`

#[path = "../tests/it/support/direct.rs"]
mod direct;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use direct::hand_over;
use qstp_proto::{
    Config, Endpoint, EndpointConfig, Event, Rate, RateControl, ReadError, ServerPolicy, Time,
};
use std::hint::black_box;
use std::net::SocketAddr;

/// Bytes moved per benchmark iteration.
const TRANSFER: usize = 8 << 20;

/// A fresh pair of endpoints; the server also holds `idle` established connections from
/// another client that sends nothing (cleartext, so setting them up is cheap).
fn endpoints(idle: usize) -> (Endpoint, Endpoint) {
    let client = Endpoint::new(EndpointConfig::client([1; 32]), 1);
    let server_config = EndpointConfig {
        policy: ServerPolicy::permissive(),
        max_connections: idle + 16,
        max_per_address: idle + 16,
        ..EndpointConfig::server([2; 32], Config::default())
    };
    let mut server = Endpoint::new(server_config, 2);
    // Loopback addresses: the per-network bound on stateless replies does not apply.
    let (idle_addr, server_addr): (SocketAddr, SocketAddr) = (
        "127.0.0.3:6000".parse().unwrap(),
        "127.0.0.2:4433".parse().unwrap(),
    );
    let mut idler = Endpoint::new(EndpointConfig::client([3; 32]), 3);
    let cleartext = Config {
        protection: qstp_proto::Protection::Null,
        ..Config::default()
    };
    let now = Time::from_nanos(1);
    let mut buf = Vec::new();
    let mut opened = 0;
    while opened < idle {
        // In batches, so the server's queue of stateless replies never overflows.
        for _ in 0..(idle - opened).min(50) {
            idler
                .connect(now, server_addr, cleartext.clone())
                .expect("connect");
            opened += 1;
        }
        while hand_over(
            &mut idler,
            &mut server,
            now,
            idle_addr,
            server_addr,
            &mut buf,
        ) {}
    }
    while server.poll_event().is_some() {}
    assert_eq!(server.connection_count(), idle);
    (client, server)
}

/// Stream `bytes` client to server over a fresh pair of endpoints; returns the bytes read.
fn transfer(config: Config, bytes: usize) -> usize {
    let (client, server) = endpoints(0);
    transfer_over(client, server, config, bytes)
}

/// [`transfer`] over the given endpoints.
fn transfer_over(
    mut client: Endpoint,
    mut server: Endpoint,
    config: Config,
    bytes: usize,
) -> usize {
    let client_addr: SocketAddr = "127.0.0.1:5000".parse().unwrap();
    let server_addr: SocketAddr = "127.0.0.2:4433".parse().unwrap();
    let mut now = Time::from_nanos(1);
    let handle = client.connect(now, server_addr, config).expect("connect");
    let chunk = vec![0x42u8; 64 * 1024];
    let mut sink = vec![0u8; 64 * 1024];
    let mut buf = Vec::with_capacity(65_536);
    let (mut written, mut received) = (0usize, 0usize);
    let mut accepted = None;
    loop {
        let conn = client.connection_mut(handle).expect("client connection");
        if conn.is_established() {
            while written < bytes {
                match conn.write(&chunk[..chunk.len().min(bytes - written)]) {
                    Ok(n) => written += n,
                    Err(_) => break,
                }
            }
        }
        let moved = hand_over(
            &mut client,
            &mut server,
            now,
            client_addr,
            server_addr,
            &mut buf,
        );
        while let Some((h, event)) = server.poll_event() {
            if event == Event::Connected {
                accepted = Some(h);
            }
        }
        while client.poll_event().is_some() {}
        if let Some(conn) = accepted.and_then(|h| server.connection_mut(h)) {
            loop {
                match conn.read(&mut sink) {
                    Ok(n) if n > 0 => received += n,
                    Ok(_) | Err(ReadError::Blocked) => break,
                    Err(e) => panic!("read: {e}"),
                }
            }
        }
        if received >= bytes {
            return received;
        }
        if !moved {
            let next = [client.poll_timeout(), server.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            now = next.map_or(now, |t| t.max(now)) + qstp_proto::Duration::from_nanos(1);
            client.handle_timeout(now);
            server.handle_timeout(now);
        }
    }
}

fn core_throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("core_throughput");
    group.throughput(Throughput::Bytes(TRANSFER as u64));
    group.sample_size(10);
    let fixed = Config {
        congestion: RateControl::Fixed {
            rate: Rate::from_mbps(100_000),
        }
        .into(),
        ..Config::default()
    };
    group.bench_function("fixed_rate_stream_8MiB", |b| {
        b.iter(|| black_box(transfer(fixed.clone(), TRANSFER)))
    });
    let qstp = Config::qstp(Rate::from_mbps(100));
    group.bench_function("qstp_stream_8MiB", |b| {
        b.iter(|| black_box(transfer(qstp.clone(), TRANSFER)))
    });
    // The same beside 1000 idle connections of the server: the per-datagram cost stays.
    group.bench_function("qstp_stream_8MiB_beside_1000_idle", |b| {
        b.iter_batched(
            || endpoints(1000),
            |(client, server)| black_box(transfer_over(client, server, qstp.clone(), TRANSFER)),
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, core_throughput);
criterion_main!(benches);
