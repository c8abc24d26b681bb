//! `qstp recv`: receive files sent with `qstp send`, one after another and side by side.
//!
//! Each file is written under a temporary name in the target directory and renamed to its final
//! name only after the BLAKE3 hash matched; a failed or interrupted transfer leaves nothing under
//! the final name.

use anyhow::{bail, Context};
use qstp_net::transfer::{self, Header, Verdict};
use qstp_net::{Config, Connection, Endpoint, Rate};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Arguments of `qstp recv`.
#[derive(clap::Args)]
pub struct RecvArgs {
    /// The address to listen on, `HOST:PORT`.
    #[arg(long)]
    pub listen: String,
    /// Where to store files: a directory (files keep the sender's name) or a file path
    /// (default: the current directory).
    #[arg(long, value_name = "FILE|DIR")]
    pub out: Option<PathBuf>,
    /// Exit after the first transfer (status 0 only if it was verified).
    #[arg(long)]
    pub once: bool,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Where received files go.
#[derive(Debug, Clone)]
enum Destination {
    /// Into this directory, under the sender's (sanitised) name.
    Directory(PathBuf),
    /// Exactly this file.
    File(PathBuf),
}

impl Destination {
    fn from_args(out: Option<&Path>) -> anyhow::Result<Destination> {
        let path = out.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
        if path.is_dir() {
            return Ok(Destination::Directory(path));
        }
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !parent.is_dir() {
            bail!("cannot write to '{}': directory '{}' does not exist", path.display(), parent.display());
        }
        Ok(Destination::File(path))
    }

    fn final_path(&self, sender_name: &str) -> PathBuf {
        match self {
            Destination::Directory(dir) => dir.join(transfer::safe_file_name(sender_name)),
            Destination::File(path) => path.clone(),
        }
    }
}

/// A temporary file that is deleted unless it was renamed into place.
struct PartFile {
    path: PathBuf,
    kept: bool,
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Run `qstp recv`.
pub fn main(args: RecvArgs) -> anyhow::Result<()> {
    let destination = Destination::from_args(args.out.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(run(args, destination))
}

async fn run(args: RecvArgs, destination: Destination) -> anyhow::Result<()> {
    let listen = crate::send::resolve(&args.listen).await?;
    let endpoint = Endpoint::server(listen, Config::default()).with_context(|| format!("cannot listen on {listen}"))?;
    if !args.quiet {
        eprintln!("listening on {}", endpoint.local_addr());
    }
    let mut interrupted = std::pin::pin!(tokio::signal::ctrl_c());
    if args.once {
        // On Ctrl-C the transfer is dropped, and with it its temporary file.
        return tokio::select! {
            result = async {
                let conn = endpoint.accept().await.context("the endpoint stopped before a transfer arrived")?;
                serve(conn, &destination, args.quiet).await
            } => result,
            _ = &mut interrupted => bail!("interrupted"),
        };
    }
    loop {
        tokio::select! {
            conn = endpoint.accept() => {
                let Some(conn) = conn else { bail!("the endpoint stopped") };
                let destination = destination.clone();
                let quiet = args.quiet;
                tokio::spawn(async move {
                    let remote = conn.remote().map(|a| a.to_string()).unwrap_or_default();
                    if let Err(e) = serve(conn, &destination, quiet).await {
                        eprintln!("qstp: transfer from {remote} failed: {e:#}");
                    }
                });
            }
            _ = &mut interrupted => return Ok(()),
        }
    }
}

/// Receive one transfer on `conn`, store it if verified, and answer with the verdict.
async fn serve(mut conn: Connection, destination: &Destination, quiet: bool) -> anyhow::Result<()> {
    let remote = conn.remote()?;
    let started = Instant::now();
    let header = match Header::read_from(&mut conn).await {
        Ok(header) => header,
        Err(e) => {
            let _ = answer(&mut conn, &Verdict::for_error(&e)).await;
            return Err(e).context("bad transfer header");
        }
    };
    let final_path = destination.final_path(&header.name);
    let (outcome, part) = receive_into(&mut conn, &header, &final_path).await;
    let verdict = match (&outcome, part) {
        (Ok(_), Some(mut part)) => match std::fs::rename(&part.path, &final_path) {
            Ok(()) => {
                part.kept = true;
                Verdict::Verified
            }
            Err(e) => Verdict::StorageFailed(format!("cannot rename into '{}': {e}", final_path.display())),
        },
        (Err(e), _) => e.verdict(),
        (Ok(_), None) => Verdict::StorageFailed("no file".into()),
    };
    answer(&mut conn, &verdict).await.context("cannot send the verdict")?;
    match outcome {
        Ok(bytes) if verdict == Verdict::Verified => {
            if !quiet {
                let secs = started.elapsed().as_secs_f64().max(1e-9);
                eprintln!(
                    "received {} ({bytes} bytes) from {remote} in {secs:.2} s ({}), verified",
                    final_path.display(),
                    Rate::from_bps((bytes as f64 * 8.0 / secs) as u64)
                );
            }
            Ok(())
        }
        Ok(_) => bail!("{verdict}"),
        Err(e) => Err(e.into_error()),
    }
}

/// Why receiving failed: the transfer itself, or storing it.
enum ReceiveFailure {
    Transfer(transfer::TransferError),
    Storage(anyhow::Error),
}

impl ReceiveFailure {
    fn verdict(&self) -> Verdict {
        match self {
            ReceiveFailure::Transfer(e) => Verdict::for_error(e),
            ReceiveFailure::Storage(e) => Verdict::StorageFailed(format!("{e:#}")),
        }
    }

    fn into_error(self) -> anyhow::Error {
        match self {
            ReceiveFailure::Transfer(e) => anyhow::Error::new(e).context("transfer failed"),
            ReceiveFailure::Storage(e) => e,
        }
    }
}

/// Receive the bytes into a temporary file next to `final_path`.
async fn receive_into(
    conn: &mut Connection,
    header: &Header,
    final_path: &Path,
) -> (Result<u64, ReceiveFailure>, Option<PartFile>) {
    let dir = match final_path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let base = final_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let part_path = dir.join(format!(".{base}.qstp-part-{:016x}", rand::random::<u64>()));
    let file = match tokio::fs::OpenOptions::new().write(true).create_new(true).open(&part_path).await {
        Ok(file) => file,
        Err(e) => {
            let e = anyhow::Error::new(e).context(format!("cannot create '{}'", part_path.display()));
            return (Err(ReceiveFailure::Storage(e)), None);
        }
    };
    let part = PartFile { path: part_path, kept: false };
    let mut sink = tokio::io::BufWriter::with_capacity(1 << 20, file);
    let result = transfer::receive(conn, header, &mut sink, |_| {}).await;
    let result = match result {
        Ok(moved) => match sink.shutdown().await {
            Ok(()) => Ok(moved.bytes),
            Err(e) => Err(ReceiveFailure::Storage(anyhow::Error::new(e).context("cannot write the file"))),
        },
        Err(transfer::TransferError::Io(e)) if qstp_net::Error::from_io(&e).is_none() && is_disk_error(&e) => {
            Err(ReceiveFailure::Storage(anyhow::Error::new(e).context("cannot write the file")))
        }
        Err(e) => Err(ReceiveFailure::Transfer(e)),
    };
    (result, Some(part))
}

/// Errors that come from the file system rather than the connection.
fn is_disk_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
    )
}

/// Send the verdict, end our stream and give the connection a moment to close gracefully.
async fn answer(conn: &mut Connection, verdict: &Verdict) -> anyhow::Result<()> {
    conn.write_all(&verdict.encode()).await?;
    conn.finish()?;
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        let mut rest = Vec::new();
        let _ = (&mut *conn).take(1 << 16).read_to_end(&mut rest).await;
        let _ = conn.acknowledged().await;
    })
    .await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_follow_the_out_flag() {
        let dir = std::env::temp_dir();
        match Destination::from_args(Some(&dir)).unwrap() {
            Destination::Directory(d) => assert_eq!(d.join("a.txt"), Destination::Directory(d.clone()).final_path("../a.txt")),
            other => panic!("{other:?}"),
        }
        let file = dir.join("qstp-recv-destination-test.bin");
        assert!(matches!(Destination::from_args(Some(&file)).unwrap(), Destination::File(_)));
        assert!(Destination::from_args(Some(Path::new("/nonexistent-dir-qstp/x.bin"))).is_err());
    }

    #[test]
    fn an_unkept_part_file_is_deleted() {
        let path = std::env::temp_dir().join(format!("qstp-part-test-{}", std::process::id()));
        std::fs::write(&path, b"partial").unwrap();
        drop(PartFile { path: path.clone(), kept: false });
        assert!(!path.exists());
    }
}
