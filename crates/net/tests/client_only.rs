//! A client-only endpoint (`Endpoint::bind`) says so: `accept` returns `None` at once, and a peer
//! that tries to connect to it gets no answer, so its attempt times out.

mod support;

use qstp_net::{Config, Endpoint, Error, Rate};
use std::time::Duration;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_on_a_client_only_endpoint_returns_none_at_once() {
    bounded(async {
        let client = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        assert!(!client.accepts());
        let accepted = tokio::time::timeout(Duration::from_secs(2), client.accept()).await;
        assert!(
            matches!(accepted, Ok(None)),
            "accept did not return None at once"
        );
        let server = server(Duration::from_secs(10));
        assert!(server.accepts());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connecting_to_a_client_only_endpoint_fails() {
    bounded(async {
        let target = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let client = client();
        let config = Config {
            handshake_timeout: Duration::from_millis(500).into(),
            ..Config::qstp(Rate::from_mbps(1))
        };
        let attempt = tokio::time::timeout(
            Duration::from_secs(10),
            client.connect(target.local_addr(), config),
        )
        .await;
        match attempt {
            Ok(Err(Error::ConnectTimeout)) => {}
            Ok(Err(e)) => panic!("unexpected error {e}"),
            Ok(Ok(_)) => panic!("a client-only endpoint took a connection"),
            Err(_) => panic!("the connection attempt was left waiting past its handshake timeout"),
        }
    })
    .await;
}
