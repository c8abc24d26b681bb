//! Messages with deadlines: partial reliability for data that is worthless late (video frames,
//! telemetry). Each message is repaired by SACK until 200 ms after it was written, then given up;
//! the receiver gets every message that made it, each whole, in the order they complete.
//!
//! Run with `cargo run --release -p qstp-net --example messages_with_deadlines`.

use qstp_net::proto::{Duration, ErrorControl, Order};
use qstp_net::{Config, Endpoint, Rate};

const MESSAGES: u32 = 200;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // gTFRC at 2 Mbit/s, SACK repair with a 200 ms deadline per message, unordered delivery.
    let mut config = Config::qstp(Rate::from_mbps(2));
    config.error = ErrorControl::SackPartial {
        deadline: Some(Duration::from_millis(200)),
        max_retransmissions: None,
    };
    config.order = Order::Unordered;

    let server = Endpoint::server("127.0.0.1:0".parse()?, config.clone())?;
    let server_addr = server.local_addr();
    let receiver = tokio::spawn(async move {
        let conn = server.accept().await.ok_or("the server stopped")?;
        let mut got = Vec::new();
        while let Some(message) = conn.recv_message().await? {
            got.push(message);
        }
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(got)
    });

    let client = Endpoint::bind("127.0.0.1:0".parse()?)?;
    let conn = client.connect(server_addr, config).await?;
    for i in 0..MESSAGES {
        // A 1000-byte "frame" that says which one it is.
        let mut frame = vec![0u8; 1000];
        frame[..4].copy_from_slice(&i.to_be_bytes());
        conn.send_message(&frame).await?;
    }
    conn.finish()?;
    conn.acknowledged().await?;

    let got = receiver.await?.map_err(|e| e.to_string())?;
    assert!(got.iter().all(|m| m.len() == 1000), "messages arrive whole");
    println!(
        "{} of {MESSAGES} messages delivered (loopback loses none; on a lossy path the late ones are skipped)",
        got.len()
    );
    Ok(())
}
