//! An ordered byte stream at a negotiated target rate: a server and a client in one process over
//! loopback. The client asks for 4 Mbit/s (what its DiffServ profile guarantees) and sends 2 MB;
//! the server reads it to the end; both print what the connection saw.
//!
//! Run with `cargo run --release -p qstp-net --example stream_with_target`.

// A program in real time: it reads the clock (the determinism bans are for the core).
#![allow(clippy::disallowed_types)]

use qstp_net::{Config, Endpoint, Rate};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BYTES: usize = 2_000_000;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Endpoint::server("127.0.0.1:0".parse()?, Config::default())?;
    let server_addr = server.local_addr();
    let receiver = tokio::spawn(async move {
        let mut conn = server.accept().await.ok_or("the server stopped")?;
        let mut received = Vec::with_capacity(BYTES);
        conn.read_to_end(&mut received).await?;
        conn.finish()?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(received)
    });

    let client = Endpoint::bind("127.0.0.1:0".parse()?)?;
    // QSTP paper §4.3: the application gives the rate it negotiated; gTFRC never sends below it
    // (unless the receiver reports less arriving, QSTP paper eq. (2)).
    let target = Rate::from_mbps(4);
    let mut conn = client.connect(server_addr, Config::qstp(target)).await?;
    let data: Vec<u8> = (0..BYTES).map(|i| (i % 251) as u8).collect();
    let started = std::time::Instant::now();
    conn.write_all(&data).await?;
    conn.shutdown().await?;
    conn.acknowledged().await?;
    let elapsed = started.elapsed().as_secs_f64();

    let received = receiver.await?.map_err(|e| e.to_string())?;
    assert_eq!(received, data, "the stream arrives whole and in order");
    let stats = conn.stats()?;
    // The target is a floor, not a cap: on an idle loopback path TFRC's equation allows far more.
    println!(
        "sent {BYTES} bytes in {:.1} ms ({:.1} Mbit/s; the floor was {target:?})",
        elapsed * 1e3,
        BYTES as f64 * 8.0 / elapsed / 1e6
    );
    println!("{stats:#?}");
    Ok(())
}
