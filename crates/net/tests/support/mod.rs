//! Shared helpers of the integration tests: the impairing relay and transfer drivers.

// Tests and benchmarks of real transfers measure wall-clock time: the determinism bans of
// clippy.toml do not apply here.
#![allow(clippy::disallowed_types)]
#![allow(dead_code)]

pub mod relay;

use qstp_net::{Config, Connection, Endpoint};
use std::future::Future;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Read `conn` to its end, counting bytes into `counter`; returns when the stream ends.
pub async fn count(mut conn: Connection, counter: std::sync::Arc<std::sync::atomic::AtomicU64>) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = conn.read(&mut buf).await {
        if n == 0 {
            break;
        }
        counter.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Every test gives up after this long rather than hang.
pub const TEST_DEADLINE: Duration = Duration::from_secs(40);

/// Run `f` or fail the test once `TEST_DEADLINE` passed.
pub async fn bounded<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(TEST_DEADLINE, f)
        .await
        .expect("test took longer than its deadline")
}

/// Reproducible test bytes that are not a short cycle.
pub fn pattern(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Limits for a server's accepted connections: small buffers, the given idle timeout.
pub fn server_limits(idle: Duration) -> Config {
    let idle = qstp_net::proto::Duration::from_millis(idle.as_millis() as u64);
    Config {
        idle_timeout: idle,
        send_buffer: 1 << 20,
        recv_buffer: 1 << 20,
        ..Config::default()
    }
}

/// A server on loopback.
pub fn server(idle: Duration) -> Endpoint {
    Endpoint::server("127.0.0.1:0".parse().unwrap(), server_limits(idle)).unwrap()
}

/// A client-only endpoint on loopback.
pub fn client() -> Endpoint {
    Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap()
}

/// Accept one connection and read its whole stream; answers with the BLAKE3 hash of what came.
pub async fn accept_and_drain(server: Endpoint) -> Result<Vec<u8>, qstp_net::Error> {
    let mut conn = server.accept().await.expect("a connection");
    let mut received = Vec::new();
    conn.read_to_end(&mut received)
        .await
        .map_err(|e| to_net_error(&e))?;
    conn.write_all(blake3::hash(&received).as_bytes())
        .await
        .map_err(|e| to_net_error(&e))?;
    conn.finish()?;
    let _ = conn.acknowledged().await;
    Ok(received)
}

/// Write `data` on `conn`, finish, and read back the receiver's hash.
pub async fn write_and_confirm(
    conn: &mut Connection,
    data: &[u8],
) -> Result<[u8; 32], qstp_net::Error> {
    conn.write_all(data).await.map_err(|e| to_net_error(&e))?;
    conn.finish()?;
    let mut hash = [0u8; 32];
    conn.read_exact(&mut hash)
        .await
        .map_err(|e| to_net_error(&e))?;
    Ok(hash)
}

/// The `qstp_net::Error` inside an I/O error from the stream API.
pub fn to_net_error(e: &std::io::Error) -> qstp_net::Error {
    match qstp_net::Error::from_io(e) {
        Some(inner) => clone_error(inner),
        None => qstp_net::Error::Io(std::io::Error::new(e.kind(), e.to_string())),
    }
}

fn clone_error(e: &qstp_net::Error) -> qstp_net::Error {
    use qstp_net::Error::*;
    match e {
        ConnectTimeout => ConnectTimeout,
        IdleTimeout => IdleTimeout,
        PeerUnresponsive(secs) => PeerUnresponsive(*secs),
        Refused => Refused,
        PeerClosed { code, reason } => PeerClosed {
            code: *code,
            reason: reason.clone(),
        },
        LocallyClosed => LocallyClosed,
        other => Io(std::io::Error::new(other.io_kind(), other.to_string())),
    }
}

/// The resident set size of this process in bytes (Linux), for memory bounds.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
