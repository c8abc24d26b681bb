//! One bulk transfer over QUIC with quinn, its defaults throughout (CUBIC, its windows, TLS 1.3
//! with a self-signed certificate), for `scripts/bench-net.sh` to set beside `qstp send`/`recv`.
//!
//! ```text
//! quinn-bulk recv --listen 127.0.0.1:4433 --cert CERT --out FILE   # one connection, one stream
//! quinn-bulk send --to 127.0.0.1:4433 --cert CERT < data           # prints a JSON line
//! ```
//!
//! The receiver writes its certificate to CERT before it listens; the sender trusts only that
//! certificate. The sender copies standard input into one unidirectional stream and finishes it;
//! the receiver writes the stream to FILE, closes the connection once the stream has ended, and
//! the sender reports when it saw that close: every byte was then received and stored.

use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use tokio::io::AsyncWriteExt;

const SERVER_NAME: &str = "localhost";

fn usage() -> ! {
    eprintln!(
        "usage: quinn-bulk recv --listen ADDR --cert CERT --out FILE\n       quinn-bulk send --to ADDR --cert CERT < data"
    );
    std::process::exit(2)
}

/// `--name value` pairs after the subcommand.
fn option(args: &[String], name: &str) -> Result<String> {
    args.windows(2)
        .find(|w| w[0] == name)
        .map(|w| w[1].clone())
        .with_context(|| format!("missing {name}"))
}

/// A UDP socket bound to `addr` with the kernel buffers qstp asks for (8 MiB each way; the
/// kernel grants up to net.core.rmem_max), so neither side of the comparison loses datagrams to
/// a smaller receive buffer.
fn socket(addr: SocketAddr) -> Result<std::net::UdpSocket> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::DGRAM,
        Some(socket2::Protocol::UDP),
    )?;
    let _ = socket.set_recv_buffer_size(8 << 20);
    let _ = socket.set_send_buffer_size(8 << 20);
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

fn endpoint(addr: SocketAddr, server: Option<quinn::ServerConfig>) -> Result<quinn::Endpoint> {
    Ok(quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        server,
        socket(addr)?,
        Arc::new(quinn::TokioRuntime),
    )?)
}

// One thread, as qstp's sender: on this machine quinn moved 2.7-3.1 Gbit/s with it, 2.4 on tokio's
// multi-thread runtime, at less CPU per GiB.
#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("recv") => recv(&args).await,
        Some("send") => send(&args).await,
        _ => usage(),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quinn-bulk: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn recv(args: &[String]) -> Result<()> {
    let listen: SocketAddr = option(args, "--listen")?.parse()?;
    let cert_path = PathBuf::from(option(args, "--cert")?);
    let out = PathBuf::from(option(args, "--out")?);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cert = rcgen::generate_simple_self_signed(vec![SERVER_NAME.into()])?;
    let cert_der = cert.cert.der().clone();
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der());
    let config = quinn::ServerConfig::with_single_cert(vec![cert_der.clone()], key.into())?;
    let endpoint = endpoint(listen, Some(config))?;
    // Written only once the endpoint listens, and whole (renamed into place), so a sender that
    // finds the file can read it and connect.
    let partial = cert_path.with_extension("partial");
    std::fs::write(&partial, &cert_der)
        .and_then(|()| std::fs::rename(&partial, &cert_path))
        .with_context(|| format!("writing {}", cert_path.display()))?;
    let accepted = tokio::time::timeout(std::time::Duration::from_secs(30), endpoint.accept());
    let Ok(Some(incoming)) = accepted.await else {
        bail!("no connection came within 30 s");
    };
    let connection = incoming.await?;
    let mut stream = connection.accept_uni().await?;
    let mut file = tokio::fs::File::create(&out)
        .await
        .with_context(|| format!("creating {}", out.display()))?;
    // quinn hands over a chunk per frame (about a packet's worth); they are gathered into 1 MiB
    // blocks so the file sees few large writes, as qstp's receiver does.
    let mut received = 0u64;
    let mut block = Vec::with_capacity(1 << 20);
    while let Some(chunk) = stream.read_chunk(1 << 20, true).await? {
        received += chunk.bytes.len() as u64;
        block.extend_from_slice(&chunk.bytes);
        if block.len() >= 1 << 20 {
            file.write_all(&block).await?;
            block.clear();
        }
    }
    file.write_all(&block).await?;
    file.flush().await?;
    connection.close(0u32.into(), b"stored");
    endpoint.wait_idle().await;
    eprintln!("quinn-bulk: received and stored {received} bytes");
    Ok(())
}

async fn send(args: &[String]) -> Result<()> {
    let to: SocketAddr = option(args, "--to")?.parse()?;
    let cert_path = PathBuf::from(option(args, "--cert")?);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cert =
        std::fs::read(&cert_path).with_context(|| format!("reading {}", cert_path.display()))?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from(cert))?;
    let config = quinn::ClientConfig::with_root_certificates(Arc::new(roots))?;
    let mut endpoint = endpoint("127.0.0.1:0".parse()?, None)?;
    endpoint.set_default_client_config(config);
    let started = Instant::now();
    let connection = endpoint.connect(to, SERVER_NAME)?.await?;
    let mut stream = connection.open_uni().await?;
    // Standard input in blocks of 1 MiB, read on a thread of its own, handed to quinn whole (no
    // copy into small writes); at most four blocks wait.
    let (blocks, mut next) = tokio::sync::mpsc::channel::<std::io::Result<Vec<u8>>>(4);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        loop {
            let mut block = vec![0u8; 1 << 20];
            let mut filled = 0;
            while filled < block.len() {
                match stdin.read(&mut block[filled..]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let _ = blocks.blocking_send(Err(e));
                        return;
                    }
                }
            }
            block.truncate(filled);
            if filled == 0 || blocks.blocking_send(Ok(block)).is_err() {
                return;
            }
        }
    });
    let mut sent = 0u64;
    while let Some(block) = next.recv().await {
        let block = block.context("reading standard input")?;
        sent += block.len() as u64;
        stream.write_chunk(bytes::Bytes::from(block)).await?;
    }
    stream.finish()?;
    // The receiver closes once it has stored the whole stream.
    let reason = connection.closed().await;
    let seconds = started.elapsed().as_secs_f64();
    match reason {
        quinn::ConnectionError::ApplicationClosed(close) if close.reason.as_ref() == b"stored" => {}
        other => bail!("the transfer did not complete: {other}"),
    }
    let stats = connection.stats();
    println!(
        "{{\"bytes\":{sent},\"duration_s\":{seconds:.6},\"goodput_bps\":{:.0},\"lost_packets\":{},\"congestion_events\":{}}}",
        sent as f64 * 8.0 / seconds,
        stats.path.lost_packets,
        stats.path.congestion_events
    );
    endpoint.wait_idle().await;
    Ok(())
}
