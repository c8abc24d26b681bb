//! A slow reader slows the sender down (flow control) instead of growing memory.

mod support;

use qstp_net::Config;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_holds_the_sender_back() {
    bounded(async {
        const BUFFER: usize = 256 * 1024;
        let limits = Config {
            send_buffer: BUFFER,
            recv_buffer: BUFFER,
            ..server_limits(Duration::from_secs(10))
        };
        let server = qstp_net::Endpoint::server("127.0.0.1:0".parse().unwrap(), limits).unwrap();
        let addr = server.local_addr();
        let client = client();
        let config = Config {
            send_buffer: BUFFER,
            recv_buffer: BUFFER,
            ..Config::default()
        };
        let mut conn = client.connect(addr, config).await.unwrap();
        let mut reader = server.accept().await.expect("a connection");
        let total = 4usize << 20;
        let data = pattern(total);
        let accepted = Arc::new(AtomicU64::new(0));
        let counter = accepted.clone();
        let writer = tokio::spawn(async move {
            for chunk in data.chunks(16 * 1024) {
                conn.write_all(chunk).await.unwrap();
                counter.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            }
            conn.finish().unwrap();
            conn.acknowledged().await.unwrap();
        });
        // Nothing is read for a while: the sender may fill its send buffer and the receiver's
        // window, and no more, however long it waits.
        let bound = (2 * BUFFER + 64 * 1024) as u64;
        for _ in 0..5 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let so_far = accepted.load(Ordering::Relaxed);
            assert!(
                so_far <= bound,
                "sender got {so_far} bytes in with nobody reading (bound {bound})"
            );
        }
        // Then the reader trickles: what the sender gets in tracks what was read.
        let mut received = Vec::new();
        let mut buf = vec![0u8; 32 * 1024];
        while received.len() < total / 2 {
            let n = reader.read(&mut buf).await.unwrap();
            received.extend_from_slice(&buf[..n]);
            tokio::time::sleep(Duration::from_millis(2)).await;
            let so_far = accepted.load(Ordering::Relaxed);
            assert!(
                so_far <= received.len() as u64 + bound,
                "sender ran {so_far} ahead of a reader at {}",
                received.len()
            );
        }
        reader.read_to_end(&mut received).await.unwrap();
        assert!(received == pattern(total));
        reader.finish().unwrap();
        writer.await.unwrap();
    })
    .await;
}
