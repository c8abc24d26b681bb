//! A peer that vanishes mid-transfer: both sides end with a clear timeout error.

mod support;

use qstp_net::proto::Duration as ProtoDuration;
use qstp_net::{Config, Error};
use std::sync::atomic::Ordering;
use std::time::Duration;
use support::relay::{Impairment, Relay};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_peer_ends_the_transfer_with_a_timeout_on_both_sides() {
    bounded(async {
        let server = server(Duration::from_secs(1));
        let relay = Relay::start(server.local_addr(), Impairment::default()).await;
        let receiver = tokio::spawn(async move {
            let mut conn = server.accept().await.unwrap();
            let mut sink = Vec::new();
            let err = conn.read_to_end(&mut sink).await.unwrap_err();
            (sink.len(), to_net_error(&err))
        });
        let client = client();
        let config = Config {
            idle_timeout: ProtoDuration::from_secs(1),
            send_buffer: 1 << 20,
            ..Config::default()
        };
        let mut conn = client.connect(relay.addr, config).await.unwrap();
        // Some data flows, then the path dies while the sender still has plenty to write.
        conn.write_all(&pattern(256 * 1024)).await.unwrap();
        relay.blackhole.store(true, Ordering::Relaxed);
        let data = pattern(64 << 20);
        let sent = conn.write_all(&data).await;
        let err = match sent {
            Err(e) => to_net_error(&e),
            Ok(()) => conn.acknowledged().await.unwrap_err(),
        };
        assert!(matches!(err, Error::IdleTimeout), "sender: {err}");
        let (received, err) = receiver.await.unwrap();
        assert!(matches!(err, Error::IdleTimeout), "receiver: {err}");
        assert!(received < data.len());
    })
    .await;
}
