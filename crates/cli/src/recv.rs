//! `qstp recv`: receive files sent with `qstp send`, one after another and side by side.
//!
//! Each file is written under a temporary name in the target directory and given its final name
//! only after the BLAKE3 hash matched; a failed or interrupted transfer leaves nothing under the
//! final name. What an interrupted transfer of a file had durably stored stays hidden beside it
//! for `--keep-partial` (see [`crate::partial`]): the next `send` of that file resumes there.
//! Into a directory, a sender's name is refused if it is hidden or a path (see
//! [`transfer::check_file_name`]), and an existing file is never replaced: the new one takes the
//! first free name of `name.1`, `name.2`, ... `name.1000`.

use crate::partial::{self, PartFile};
use anyhow::{bail, Context};
use qstp_net::transfer::{self, Header, Moved, Opening, Verdict};
use qstp_net::{Config, Connection, Endpoint, EndpointOptions, Rate, ServerPolicy};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Arguments of `qstp recv`.
#[derive(clap::Args)]
pub struct RecvArgs {
    /// The address to listen on: `HOST:PORT`, `:PORT` (every local address), or `HOST` (port
    /// 4433).
    #[arg(long, default_value = ":4433")]
    pub listen: String,
    /// Where to store files (default: the current directory). A directory, existing or given
    /// with a trailing '/' (then created): files keep the sender's name, hidden names and paths
    /// are refused, and an existing file is never replaced (the new one becomes NAME.1, NAME.2,
    /// ...). Or, with --once, a file path: an existing file there is replaced only with
    /// --overwrite. Every check is made before any byte moves.
    #[arg(long, value_name = "FILE|DIR/")]
    pub out: Option<PathBuf>,
    /// With --once and --out FILE: replace FILE if it exists.
    #[arg(long)]
    pub overwrite: bool,
    /// Most transfers at once (1 to 1024); further senders are refused ("connection refused by the
    /// peer") until one ends. Each transfer holds at most about 6 MiB (a 4 MiB receive window and
    /// 2 MiB of file buffers), so memory stays below about 6 MiB × N (48 MiB by default).
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub max_transfers: u16,
    /// The largest target rate a sender may ask for, e.g. `100M` (any by default); a sender asking
    /// more is refused. Senders can never ask for a fixed rate that ignores congestion.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    pub max_target: Option<Rate>,
    /// How long the bytes of an interrupted transfer are kept for a resume: the next `send` of
    /// the same file (same name and size, same first bytes) continues where it stopped. A hidden
    /// `.NAME.qstp-part-*` file (and its `.meta`) last written longer ago than this is removed
    /// (checked at start and every half of it, at most every 10 minutes). Units s, m, h, d; `0`
    /// keeps nothing.
    #[arg(long, value_name = "DURATION", default_value = partial::DEFAULT_KEEP, value_parser = partial::parse_keep)]
    pub keep_partial: Duration,
    /// How long an accepted sender has to announce its transfer (the header: name and size)
    /// before the connection is closed, so a client that only shakes hands holds no transfer
    /// slot.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = crate::send::parse_interval)]
    pub header_timeout: f64,
    /// Exit after the first file transfer (status 0 only if it was verified, also when Ctrl-C
    /// comes after its file was stored); filler streams of a `send --soft-target` beside it are
    /// drained, and heard out for up to 5 s after it; a second file transfer meanwhile is
    /// refused, with the reason.
    #[arg(long)]
    pub once: bool,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print each verified transfer's statistics on stdout, one JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// Also report every SECONDS seconds, one line per transfer on stderr (even with --quiet):
    /// the bytes received in the interval and their rate, the file's name and the sender.
    #[arg(long, value_name = "SECONDS", value_parser = crate::send::parse_interval)]
    pub interval: Option<f64>,
    /// --psk, --pcap and --pcap-limit, shared with the other side's command.
    #[command(flatten)]
    pub wire: crate::wire_args::WireArgs,
}

/// How a finished transfer is reported.
#[derive(Debug, Clone, Copy)]
struct Report {
    quiet: bool,
    json: bool,
    /// Print a line per transfer this often.
    interval: Option<Duration>,
    /// How long a sender has to announce its transfer (`--header-timeout`).
    header_timeout: Duration,
    /// Whether cut transfers keep their prefix (`--keep-partial` above 0).
    keep: bool,
}

/// What `--json` prints for a verified transfer.
#[derive(serde::Serialize)]
struct TransferStats<'a> {
    file: &'a str,
    bytes: u64,
    resumed_from_bytes: u64,
    duration_s: f64,
    goodput_bps: f64,
    remote: String,
    verified: bool,
}

/// A rate such as `500k` or `20M`.
fn parse_rate(text: &str) -> Result<Rate, String> {
    Rate::parse(text).map_err(|e| e.to_string())
}

/// Where received files go.
#[derive(Debug, Clone)]
enum Destination {
    /// Into this directory, under the sender's name (checked), never replacing a file.
    Directory(PathBuf),
    /// Exactly this file, replacing it if it exists (the user named it).
    File(PathBuf),
}

impl Destination {
    /// The destination `--out` names, checked and (for a new directory) created before any
    /// transfer starts.
    fn from_args(out: Option<&Path>, once: bool, overwrite: bool) -> anyhow::Result<Destination> {
        let path = out
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        if path.is_dir() {
            return Ok(Destination::Directory(path));
        }
        let says_directory = path
            .as_os_str()
            .to_string_lossy()
            .ends_with(std::path::MAIN_SEPARATOR);
        if says_directory {
            std::fs::create_dir_all(&path)
                .with_context(|| format!("cannot create directory '{}'", path.display()))?;
            return Ok(Destination::Directory(path));
        }
        if !once {
            bail!(
                "'{}' is not a directory: to receive into a new directory end it with '/' ('{}/'); \
                 to receive one transfer into this file add --once",
                path.display(),
                path.display()
            );
        }
        if path.exists() && !overwrite {
            bail!(
                "'{}' exists: add --overwrite to replace it, or choose another name",
                path.display()
            );
        }
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !parent.is_dir() {
            bail!(
                "cannot write to '{}': directory '{}' does not exist",
                path.display(),
                parent.display()
            );
        }
        Ok(Destination::File(path))
    }

    /// Where the temporary file goes and what it is named after; refuses an unsafe sender name.
    fn staging(&self, sender_name: &str) -> Result<(PathBuf, String), transfer::TransferError> {
        match self {
            Destination::Directory(dir) => {
                Ok((dir.clone(), transfer::check_file_name(sender_name)?))
            }
            Destination::File(path) => {
                let dir = match path.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let base = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                Ok((dir, base))
            }
        }
    }

    /// Give the verified `part` its final name; returns that name.
    fn place(&self, part: &Path, name: &str) -> anyhow::Result<PathBuf> {
        match self {
            Destination::Directory(dir) => place_new(part, dir, name),
            Destination::File(path) => {
                std::fs::rename(part, path)
                    .with_context(|| format!("cannot rename into '{}'", path.display()))?;
                Ok(path.clone())
            }
        }
    }

    /// The directory the part files go to.
    fn directory(&self) -> PathBuf {
        match self {
            Destination::Directory(dir) => dir.clone(),
            Destination::File(path) => match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            },
        }
    }
}

/// Most numbered alternatives tried when the sender's name is taken.
const MAX_ALTERNATIVES: u32 = 1000;

/// Link `part` into `dir` as `name`, or else the first free of `name.1` ... `name.1000`, never
/// replacing an existing file; returns the path taken.
fn place_new(part: &Path, dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    for n in 0..=MAX_ALTERNATIVES {
        let candidate = if n == 0 {
            dir.join(name)
        } else {
            dir.join(format!("{name}.{n}"))
        };
        match claim(part, &candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| format!("cannot create '{}'", candidate.display()))
            }
        }
    }
    bail!("'{name}' and its {MAX_ALTERNATIVES} numbered alternatives all exist")
}

/// Give `part` the name `target` only if no file has it, atomically: a hard link fails if the
/// name exists; where the file system has no hard links, an exclusively created placeholder
/// reserves the name and the rename replaces only that. `part` itself is left to its owner.
fn claim(part: &Path, target: &Path) -> io::Result<()> {
    match std::fs::hard_link(part, target) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        Err(_) => {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(target)?;
            std::fs::rename(part, target)
        }
    }
}

/// Receive window of each transfer, in bytes (the protocol's reassembly bound).
const RECV_WINDOW: usize = 4 << 20;
/// What each transfer may queue towards its sender (only the verdict).
const SEND_WINDOW: usize = 64 << 10;

/// The limits of every accepted transfer: the windows, and the datagram size and idle timeout of
/// `wire` (`--mtu`, `--idle-timeout`) for a socket bound to an IPv4 address if `ipv4`. A sender's
/// datagrams are capped by the receiver's limit, so without `--mtu` the limit is the discovery
/// ceiling and the sender's discovery decides.
fn accept_config(wire: &crate::wire_args::WireArgs, ipv4: bool) -> anyhow::Result<Config> {
    let mut config = Config {
        recv_buffer: RECV_WINDOW,
        send_buffer: SEND_WINDOW,
        ..Config::default()
    };
    wire.apply(&mut config, ipv4)?;
    Ok(config)
}

/// Run `qstp recv`.
pub fn main(args: RecvArgs) -> anyhow::Result<()> {
    let destination = Destination::from_args(args.out.as_deref(), args.once, args.overwrite)?;
    let psk = args.wire.psk()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let capture = args.wire.capture()?;
    let tap = capture.as_ref().map(crate::capture::Capture::tap);
    let result = runtime.block_on(run(args, destination, psk, tap));
    crate::capture::finish_after(capture, result)
}

async fn run(
    args: RecvArgs,
    destination: Destination,
    psk: Option<qstp_proto::PreSharedKey>,
    tap: Option<qstp_net::Tap>,
) -> anyhow::Result<()> {
    let listen = crate::send::resolve(&crate::send::with_default_port(&args.listen, true)?).await?;
    // The bound on transfers is the bound on memory: each holds its window and file buffers.
    let options = EndpointOptions {
        accept: Some(accept_config(&args.wire, listen.is_ipv4())?),
        max_connections: usize::from(args.max_transfers),
        policy: ServerPolicy {
            max_target: args.max_target,
            ..ServerPolicy::default()
        },
        psk,
        tap,
        ..EndpointOptions::default()
    };
    // What a receiver killed mid-transfer left and no resume could use goes before any transfer
    // starts.
    let dir = destination.directory();
    let _ = tokio::task::spawn_blocking(move || partial::sweep_orphans(&dir)).await;
    let endpoint = Endpoint::bind_with(listen, options).map_err(|e| match e {
        qstp_net::Error::Io(e) if e.kind() == io::ErrorKind::AddrInUse => {
            anyhow::anyhow!("cannot listen on {listen}: address already in use")
        }
        e => anyhow::Error::new(e).context(format!("cannot listen on {listen}")),
    })?;
    if !args.quiet {
        eprintln!("listening on {}", endpoint.local_addr());
    }
    let report = Report {
        quiet: args.quiet,
        json: args.json,
        interval: args.interval.map(Duration::from_secs_f64),
        keep: !args.keep_partial.is_zero(),
        header_timeout: Duration::from_secs_f64(args.header_timeout),
    };
    let _sweeper = AbortOnDrop(tokio::spawn(sweep_partials(
        destination.directory(),
        args.keep_partial,
    )));
    let running = Running::default();
    let mut interrupted = std::pin::pin!(tokio::signal::ctrl_c());
    if args.once {
        // Every connection is served beside the others (a `send --soft-target` opens its file
        // transfer with filler streams), until the first file transfer ends; a second file
        // transfer is refused, with the reason, rather than cut when the first one ends.
        let once = Arc::new(Once::default());
        let mut tasks = tokio::task::JoinSet::new();
        let result = tokio::select! {
            result = async {
                loop {
                    tokio::select! {
                        conn = endpoint.accept() => {
                            let conn = conn.context("the endpoint stopped before a transfer arrived")?;
                            let destination = destination.clone();
                            let running = running.clone();
                            let once = once.clone();
                            tasks.spawn(async move { serve(conn, &destination, report, &running, Some(&once)).await });
                        }
                        Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                            match done {
                                Ok(Served::File(result)) => {
                                    // The sender's filler streams end with its file: hear them
                                    // out (bounded), so that it learns what they carried.
                                    let _ = tokio::time::timeout(FILLER_GRACE, async {
                                        while let Some(done) = tasks.join_next().await {
                                            if let Ok(Served::Filler(Err(e))) = done {
                                                eprintln!("qstp: {e:#}");
                                            }
                                        }
                                    })
                                    .await;
                                    return result;
                                }
                                Ok(Served::Filler(Err(e))) => eprintln!("qstp: {e:#}"),
                                Ok(Served::Filler(Ok(_))) => {}
                                Ok(Served::Refused(remote)) => eprintln!(
                                    "qstp: refused a second transfer from {remote}: {ONE_AT_A_TIME}"
                                ),
                                Err(e) => bail!("a transfer's task failed: {e}"),
                            }
                        }
                    }
                }
            } => Some(result),
            _ = &mut interrupted => None,
        };
        // On Ctrl-C the transfer was dropped, and with it its temporary file.
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        return match result {
            Some(result) => result,
            // The file is stored and the sender told: what the interruption cut was the
            // connection's graceful end (or the filler's), not the transfer.
            None if once.stored.load(Ordering::SeqCst) => Ok(()),
            None => match running.cut() {
                Some(cut) => bail!("{cut}"),
                None => bail!("interrupted before a transfer was received"),
            },
        };
    }
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            conn = endpoint.accept() => {
                let Some(conn) = conn else { bail!("the endpoint stopped") };
                let destination = destination.clone();
                let running = running.clone();
                tasks.spawn(async move {
                    match serve(conn, &destination, report, &running, None).await {
                        Served::File(Err(e)) | Served::Filler(Err(e)) => eprintln!("qstp: {e:#}"),
                        Served::File(Ok(())) | Served::Filler(Ok(_)) | Served::Refused(_) => {}
                    }
                });
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            _ = &mut interrupted => break,
        }
    }
    // Drop the transfers under way, and with them their temporary files, before saying so.
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    match running.cut() {
        Some(cut) => bail!("{cut}"),
        None => Ok(()),
    }
}

/// The transfers receiving bytes now: each leaves the list when its bytes stop coming, so those
/// left once the tasks are dropped are the transfers Ctrl-C cut.
#[derive(Debug, Clone, Default)]
struct Running(Arc<std::sync::Mutex<Vec<RunningTransfer>>>);

#[derive(Debug)]
struct RunningTransfer {
    id: u64,
    name: String,
    remote: std::net::SocketAddr,
    received: Arc<AtomicU64>,
    /// Bytes durably stored for a resume (0: the partial file goes when cut).
    durable: Arc<AtomicU64>,
}

impl Running {
    fn add(&self, entry: RunningTransfer) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(entry);
    }

    fn remove(&self, id: u64) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|t| t.id != id);
    }

    /// One line on the transfers still listed (cut), or `None` if there are none.
    fn cut(&self) -> Option<String> {
        let list = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let each = |t: &RunningTransfer| {
            let fate = match t.durable.load(Ordering::Relaxed) {
                0 => "partial file removed".to_string(),
                kept => format!("{kept} bytes kept to resume"),
            };
            (
                format!("{} from {}", t.name, t.remote),
                format!("after {} bytes", t.received.load(Ordering::Relaxed)),
                fate,
            )
        };
        match list.as_slice() {
            [] => None,
            [one] => {
                let (what, when, fate) = each(one);
                Some(format!(
                    "interrupted: transfer of {what} cut {when}, {fate}"
                ))
            }
            many => {
                let all: Vec<String> = many
                    .iter()
                    .map(|t| {
                        let (what, when, fate) = each(t);
                        format!("{what} {when}, {fate}")
                    })
                    .collect();
                Some(format!(
                    "interrupted: {} transfers cut ({})",
                    many.len(),
                    all.join("; ")
                ))
            }
        }
    }
}

/// A task aborted when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Longest `--once` waits, after its file, for the filler streams beside it to end.
const FILLER_GRACE: Duration = Duration::from_secs(5);

/// What one accepted connection was.
enum Served {
    /// A file transfer (or a stream that opened with no valid header), and how it ended.
    File(anyhow::Result<()>),
    /// A filler stream, drained: the bytes it carried.
    Filler(anyhow::Result<u64>),
    /// A second file transfer under --once, refused (the sender's address).
    Refused(String),
}

/// The state `--once` shares between its connections' tasks.
#[derive(Default)]
struct Once {
    /// A file transfer took the receiver: any later one is refused.
    taken: AtomicBool,
    /// Its file is stored, verified, and the verdict sent: a Ctrl-C after that (while the
    /// connection ends gracefully, or the filler streams do) cuts nothing.
    stored: AtomicBool,
}

/// Why --once refuses a second file transfer while its first is under way.
const ONE_AT_A_TIME: &str = "this receiver takes one transfer (--once) and is receiving another";

/// [`serve_one`] for a file transfer, and with `--json` a JSON line for a transfer that failed
/// too; [`serve_filler`] for a filler stream.
///
/// With `once` (--once), the first file transfer takes it and any later one is refused.
async fn serve(
    mut conn: Connection,
    destination: &Destination,
    report: Report,
    running: &Running,
    once: Option<&Once>,
) -> Served {
    let remote = conn.remote().map(|r| r.to_string()).unwrap_or_default();
    // A transfer's time counts from its acceptance, the header's wait included.
    let started = Instant::now();
    let opening = tokio::time::timeout(report.header_timeout, Opening::read_from(&mut conn)).await;
    let opened = match opening {
        Ok(Ok(Opening::Filler)) => return Served::Filler(serve_filler(conn, report).await),
        Ok(Ok(Opening::File(_))) if once.is_some_and(|o| o.taken.swap(true, Ordering::SeqCst)) => {
            let _ = answer(&mut conn, &Verdict::Rejected(ONE_AT_A_TIME.into())).await;
            return Served::Refused(remote);
        }
        Ok(Ok(Opening::File(header))) => Ok(Ok(header)),
        Ok(Err(e)) => Ok(Err(e)),
        Err(elapsed) => Err(elapsed),
    };
    let stored = once.map(|o| &o.stored);
    let result = serve_one(
        conn,
        (started, opened),
        destination,
        report,
        running,
        stored,
    )
    .await;
    if let (true, Err(e)) = (report.json, &result) {
        let failure = crate::send::FailureStats {
            error: format!("{e:#}"),
            file: None,
            remote: &remote,
            verified: false,
        };
        match serde_json::to_string(&failure) {
            Ok(line) => println!("{line}"),
            Err(e) => return Served::File(Err(e.into())),
        }
    }
    Served::File(result)
}

/// Drain a filler stream (a `send --soft-target` sender's Stunt): count its bytes, discard them,
/// answer with the count.
async fn serve_filler(mut conn: Connection, report: Report) -> anyhow::Result<u64> {
    let remote = conn.remote()?;
    let started = Instant::now();
    let counted = AtomicU64::new(0);
    let bytes =
        match transfer::drain_filler(&mut conn, |n| counted.store(n, Ordering::Relaxed)).await {
            Ok(bytes) => {
                let _ = conn.finish();
                let _ = tokio::time::timeout(Duration::from_secs(2), conn.acknowledged()).await;
                bytes
            }
            // The sender closes its filler with code 0 once its file is through.
            Err(transfer::TransferError::Io(e))
                if matches!(
                    qstp_net::Error::from_io(&e),
                    Some(qstp_net::Error::PeerClosed { code: 0, .. })
                ) =>
            {
                counted.load(Ordering::Relaxed)
            }
            Err(e) => return Err(e).with_context(|| format!("filler stream from {remote} broke")),
        };
    if !report.quiet {
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        eprintln!(
            "discarded {bytes} filler bytes from {remote} in {secs:.2} s ({})",
            Rate::from_bps((bytes as f64 * 8.0 / secs) as u64)
        );
    }
    Ok(bytes)
}

/// Receive one transfer on `conn`, store it if verified, and answer with the verdict; an error
/// names the sender and says first what went wrong with the transfer. A stored file is reported
/// (and `stored` set) as soon as its verdict is sent, before the connection's graceful end.
async fn serve_one(
    mut conn: Connection,
    (started, opened): (
        Instant,
        Result<Result<Header, transfer::TransferError>, tokio::time::error::Elapsed>,
    ),
    destination: &Destination,
    report: Report,
    running: &Running,
    stored: Option<&AtomicBool>,
) -> anyhow::Result<()> {
    let remote = conn.remote()?;
    let header = match opened {
        Ok(Ok(header)) => header,
        Ok(Err(e)) => {
            let _ = answer(&mut conn, &Verdict::for_error(&e)).await;
            return Err(e).context(format!("bad transfer header from {remote}"));
        }
        Err(_) => {
            let reason = format!(
                "no transfer header within {} s",
                report.header_timeout.as_secs_f64()
            );
            close_and_flush(&conn, CLOSE_NO_HEADER, &reason).await;
            bail!("{reason} from {remote}: connection closed");
        }
    };
    let (dir, name) = match destination.staging(&header.name) {
        Ok(staging) => staging,
        Err(e) => {
            let _ = answer(&mut conn, &Verdict::for_error(&e)).await;
            return Err(e).context(format!("transfer from {remote} refused"));
        }
    };
    let received = Arc::new(AtomicU64::new(0));
    let durable = Arc::new(AtomicU64::new(0));
    let id = rand::random::<u64>();
    running.add(RunningTransfer {
        id,
        name: header.name.clone(),
        remote,
        received: received.clone(),
        durable: durable.clone(),
    });
    let ticker = report.interval.map(|every| {
        let what = format!("{} from {remote}", header.name);
        AbortOnDrop(tokio::spawn(show_intervals(received.clone(), every, what)))
    });
    let counter = received.clone();
    let storage = Storage {
        dir: &dir,
        base: &name,
        keep: report.keep,
        durable,
    };
    let (outcome, part) = receive_into(&mut conn, &header, storage, move |n| {
        counter.store(n, Ordering::Relaxed)
    })
    .await;
    drop(ticker);
    running.remove(id);
    let mut final_path = dir.join(&name);
    let verdict = match (&outcome, part.as_ref()) {
        (Ok(_), Some(part)) => match destination.place(&part.path, &name) {
            Ok(path) => {
                final_path = path;
                Verdict::Verified
            }
            Err(e) => Verdict::StorageFailed(format!("{e:#}")),
        },
        (Err(e), _) => e.verdict(),
        (Ok(_), None) => Verdict::StorageFailed("no file".into()),
    };
    let kept = match part {
        Some(mut part) => {
            if verdict == Verdict::Verified {
                part.placed(matches!(destination, Destination::File(_)));
            } else if outcome.is_ok() {
                // Complete but not stored: nothing to resume.
                part.resumable = false;
            }
            part.keeps()
        }
        None => 0,
    };
    // A refusal before any byte moved answers the header; the sender waits for it there.
    // A sender that vanished cannot hear the verdict: what happened to the transfer comes first.
    let answered = send_verdict(&mut conn, &verdict).await;
    if verdict != Verdict::Verified {
        linger(&mut conn).await;
        // The sender may be blocked writing into a window no one reads any more: the close
        // ends its transfer at once, with the reason it prints.
        let reason = match &outcome {
            Err(ReceiveFailure::Storage(e)) => storage_reason(e),
            _ => verdict.to_string(),
        };
        close_and_flush(&conn, CLOSE_NOT_STORED, &reason).await;
    }
    match outcome {
        Ok(moved) if verdict == Verdict::Verified => {
            answered.with_context(|| {
                format!(
                    "stored {} from {remote}, but cannot send the verdict",
                    final_path.display()
                )
            })?;
            if let Some(stored) = stored {
                stored.store(true, Ordering::SeqCst);
            }
            let secs = started.elapsed().as_secs_f64().max(1e-9);
            let bytes = moved.carried();
            if report.json {
                let stats = TransferStats {
                    file: &final_path.to_string_lossy(),
                    bytes,
                    resumed_from_bytes: moved.resumed_from,
                    duration_s: secs,
                    goodput_bps: bytes as f64 * 8.0 / secs,
                    remote: remote.to_string(),
                    verified: true,
                };
                println!("{}", serde_json::to_string(&stats)?);
            }
            if !report.quiet {
                let resumed = match moved.resumed_from {
                    0 => String::new(),
                    from => format!(", resumed from byte {from} of {}", moved.bytes),
                };
                eprintln!(
                    "received {} ({bytes} bytes{resumed}) from {remote} in {secs:.2} s ({}), verified",
                    final_path.display(),
                    Rate::from_bps((bytes as f64 * 8.0 / secs) as u64)
                );
            }
            linger(&mut conn).await;
            Ok(())
        }
        Ok(_) => bail!("transfer from {remote} failed: {verdict}"),
        Err(e) => Err(e.into_error(&format!("'{}' from {remote}", header.name), kept)),
    }
}

/// Every `keep / 2` (between 0.5 s and 10 minutes), remove the partial files in `dir` older than
/// `keep`; with `keep` 0, once at the start (a transfer's part file is never older than 0 s for
/// long enough to race with it otherwise).
async fn sweep_partials(dir: PathBuf, keep: Duration) {
    let every = (keep / 2).clamp(Duration::from_millis(500), Duration::from_secs(600));
    loop {
        let (d, k) = (dir.clone(), keep);
        let _ = tokio::task::spawn_blocking(move || partial::sweep(&d, k)).await;
        if keep.is_zero() {
            return;
        }
        tokio::time::sleep(every).await;
    }
}

/// Print one line every `every` while a transfer runs: the bytes `received` counted in that
/// interval, their rate, and `what` (the file's name and its sender).
async fn show_intervals(received: Arc<AtomicU64>, every: Duration, what: String) {
    let started = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval_at(started + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut t0, mut bytes0) = (0.0, 0u64);
    loop {
        ticks.tick().await;
        let t1 = started.elapsed().as_secs_f64();
        let bytes = received.load(Ordering::Relaxed);
        eprintln!(
            "{}: {what}",
            crate::send::interval_bytes(t0, t1, bytes - bytes0, "received")
        );
        (t0, bytes0) = (t1, bytes);
    }
}

/// The application close code of a transfer the receiver did not store (the reason says why).
const CLOSE_NOT_STORED: u32 = 2;

/// The close code of a connection that announced no transfer in time (`--header-timeout`).
const CLOSE_NO_HEADER: u32 = 3;

/// Close `conn` with `reason` and wait (at most 500 ms) until the close has left, so that the
/// sender hears it even when this task (with --once, the process) ends at once.
async fn close_and_flush(conn: &Connection, code: u32, reason: &str) {
    conn.close(code, reason.as_bytes());
    let _ = tokio::time::timeout(Duration::from_millis(500), conn.closed()).await;
}

/// What a sender is told when its file cannot be stored: the cause in a few words where the
/// system says it (a full disk, a quota, a read-only or vanished folder), else the whole error.
fn storage_reason(e: &anyhow::Error) -> String {
    let kind = e
        .chain()
        .find_map(|c| c.downcast_ref::<io::Error>())
        .map(io::Error::kind);
    match kind {
        Some(io::ErrorKind::StorageFull) => "disk full on the receiver".into(),
        Some(io::ErrorKind::QuotaExceeded) => "disk quota exceeded on the receiver".into(),
        Some(io::ErrorKind::ReadOnlyFilesystem) => "the receiver's folder is read-only".into(),
        Some(io::ErrorKind::PermissionDenied) => "the receiver may not write to its folder".into(),
        Some(io::ErrorKind::NotFound) => "the receiver's folder is gone".into(),
        _ => format!("the receiver cannot store the file: {e:#}"),
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

    /// The error naming the transfer (`what`: the file and the sender's address); `kept` bytes
    /// stay for a resume.
    fn into_error(self, what: &str, kept: u64) -> anyhow::Error {
        let fate = match kept {
            0 => String::new(),
            kept => format!("; {kept} bytes kept to resume"),
        };
        match self {
            // The stream broke off: the sender vanished, timed out or aborted.
            ReceiveFailure::Transfer(
                e @ (transfer::TransferError::Io(_) | transfer::TransferError::Truncated),
            ) => anyhow::Error::new(e).context(format!(
                "transfer of {what} interrupted (the sender vanished or aborted{fate})"
            )),
            ReceiveFailure::Transfer(e) => {
                anyhow::Error::new(e).context(format!("transfer of {what} failed"))
            }
            ReceiveFailure::Storage(e) => e.context(format!("transfer of {what} not stored")),
        }
    }
}

/// Where a transfer is stored: the part file in `dir` named after `base`, kept for a resume if
/// `keep`; `durable` hears the bytes a cut would keep.
struct Storage<'a> {
    dir: &'a Path,
    base: &'a str,
    keep: bool,
    durable: Arc<AtomicU64>,
}

/// Offer the prefix the part file holds, then receive the rest into it.
async fn receive_into(
    conn: &mut Connection,
    header: &Header,
    storage: Storage<'_>,
    progress: impl FnMut(u64),
) -> (Result<Moved, ReceiveFailure>, Option<PartFile>) {
    let opened = match partial::open(
        storage.dir.to_path_buf(),
        storage.base.to_string(),
        header.clone(),
        storage.keep,
        storage.durable,
    )
    .await
    {
        Ok(opened) => opened,
        Err(e) => {
            let e = anyhow::Error::new(e).context(format!(
                "cannot create a temporary file in '{}'",
                storage.dir.display()
            ));
            return (Err(ReceiveFailure::Storage(e)), None);
        }
    };
    let offer = opened.offer;
    let start = match transfer::offer(conn, &offer).await {
        Ok(start) => start,
        Err(e) => return (Err(ReceiveFailure::Transfer(e)), Some(opened.part)),
    };
    let (mut part, prefix, mut sink) = match opened.start(start).await {
        Ok(started) => started,
        Err(e) => {
            let e = anyhow::Error::new(e).context("cannot write the file");
            return (Err(ReceiveFailure::Storage(e)), None);
        }
    };
    let result = transfer::receive(conn, header, prefix, &mut sink, progress).await;
    let result = match result {
        Ok(moved) => match sink.shutdown().await {
            Ok(()) => Ok(moved),
            Err(e) => Err(ReceiveFailure::Storage(
                anyhow::Error::new(e).context("cannot write the file"),
            )),
        },
        Err(transfer::TransferError::Io(e))
            if qstp_net::Error::from_io(&e).is_none() && is_disk_error(&e) =>
        {
            Err(ReceiveFailure::Storage(
                anyhow::Error::new(e).context("cannot write the file"),
            ))
        }
        Err(e) => Err(ReceiveFailure::Transfer(e)),
    };
    match &result {
        // The stream broke: what arrived is the sender's, in order; store it for a resume.
        Err(ReceiveFailure::Transfer(
            transfer::TransferError::Io(_) | transfer::TransferError::Truncated,
        )) => {
            if sink.checkpoint().await.is_err() {
                part.resumable = false;
            }
        }
        Ok(_) => {}
        // Bytes that do not add up, or a disk that fails: nothing here is worth resuming.
        Err(_) => part.resumable = false,
    }
    drop(sink);
    (result, Some(part))
}

/// Errors that come from the file system rather than the connection.
fn is_disk_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::StorageFull
            | std::io::ErrorKind::PermissionDenied
            | std::io::ErrorKind::ReadOnlyFilesystem
    )
}

/// Send the verdict, end our stream and give the connection a moment to close gracefully.
async fn answer(conn: &mut Connection, verdict: &Verdict) -> anyhow::Result<()> {
    let sent = send_verdict(conn, verdict).await;
    linger(conn).await;
    sent
}

/// Send the verdict and end our stream.
async fn send_verdict(conn: &mut Connection, verdict: &Verdict) -> anyhow::Result<()> {
    conn.write_all(&verdict.encode()).await?;
    conn.finish()?;
    Ok(())
}

/// Give the connection a moment (at most 5 s) to close gracefully: the sender's end of its
/// stream, and its acknowledgement of ours.
async fn linger(conn: &mut Connection) {
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        let mut rest = Vec::new();
        let _ = (&mut *conn).take(1 << 16).read_to_end(&mut rest).await;
        let _ = conn.acknowledged().await;
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_follow_the_out_flag() {
        let dir = std::env::temp_dir();
        match Destination::from_args(Some(&dir), false, false).unwrap() {
            Destination::Directory(d) => {
                let destination = Destination::Directory(d.clone());
                assert_eq!(
                    destination.staging("a.txt").unwrap(),
                    (d.clone(), "a.txt".to_string())
                );
                assert!(destination.staging("../a.txt").is_err());
                assert!(destination.staging(".profile").is_err());
            }
            other => panic!("{other:?}"),
        }
        let file = dir.join(format!("qstp-recv-destination-{}.bin", std::process::id()));
        assert!(matches!(
            Destination::from_args(Some(&file), true, false).unwrap(),
            Destination::File(_)
        ));
        // A file takes one transfer: without --once it is refused.
        assert!(Destination::from_args(Some(&file), false, false).is_err());
        // An existing file is replaced only with --overwrite.
        std::fs::write(&file, b"x").unwrap();
        assert!(Destination::from_args(Some(&file), true, false).is_err());
        assert!(Destination::from_args(Some(&file), true, true).is_ok());
        let _ = std::fs::remove_file(&file);
        let missing = Path::new("/nonexistent-dir-qstp/x.bin");
        assert!(Destination::from_args(Some(missing), true, false).is_err());
    }

    #[test]
    fn the_stated_memory_bound_holds_for_the_limits_used() {
        let wire = crate::wire_args::WireArgs {
            psk: None,
            pcap: None,
            pcap_limit: 1,
            mtu: None,
            idle_timeout: Duration::from_secs(30),
        };
        let config = accept_config(&wire, true).unwrap();
        config.validate().unwrap();
        // Window, queue towards the sender, the file sink's two blocks and the transfer's block.
        let per_transfer =
            config.recv_buffer + config.send_buffer + 2 * crate::sink::BLOCK + transfer::IO_BLOCK;
        assert!(
            per_transfer <= (6 << 20) + (64 << 10),
            "{per_transfer} bytes per transfer"
        );
        assert_eq!(config.recv_buffer, RECV_WINDOW);
    }

    #[test]
    fn concurrent_placements_of_one_name_never_share_or_replace_a_file() {
        let dir = std::env::temp_dir().join(format!("qstp-place-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("same.bin"), b"old").unwrap();
        let threads: Vec<_> = (0..8u8)
            .map(|i| {
                let dir = dir.clone();
                std::thread::spawn(move || {
                    let part = dir.join(format!(".part-{i}"));
                    std::fs::write(&part, [i; 100]).unwrap();
                    let placed = place_new(&part, &dir, "same.bin").unwrap();
                    std::fs::remove_file(&part).unwrap();
                    (i, placed)
                })
            })
            .collect();
        let placed: Vec<(u8, PathBuf)> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(std::fs::read(dir.join("same.bin")).unwrap(), b"old");
        for (i, path) in &placed {
            assert_eq!(
                std::fs::read(path).unwrap(),
                [*i; 100],
                "{} holds another transfer",
                path.display()
            );
        }
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        let mut expected: Vec<String> = (1..=8).map(|n| format!("same.bin.{n}")).collect();
        expected.push("same.bin".into());
        expected.sort();
        assert_eq!(
            names, expected,
            "the part files are gone, each transfer has its own name"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn placement_gives_up_after_the_numbered_alternatives() {
        let dir = std::env::temp_dir().join(format!("qstp-place-full-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f"), b"0").unwrap();
        for n in 1..=MAX_ALTERNATIVES {
            std::fs::write(dir.join(format!("f.{n}")), b"0").unwrap();
        }
        let part = dir.join(".part");
        std::fs::write(&part, b"new").unwrap();
        let err = place_new(&part, &dir, "f").unwrap_err();
        assert!(format!("{err:#}").contains("alternatives"), "{err:#}");
        assert_eq!(std::fs::read(dir.join("f.1000")).unwrap(), b"0");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
