//! `qstp send`: send one file (or stdin) to a `qstp recv`, verified end to end.

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use qstp_net::transfer::{self, Header, Verdict};
use qstp_net::{Config, Connection, Dscp, Endpoint, EndpointOptions, Preset, Rate};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Arguments of `qstp send`.
#[derive(clap::Args)]
pub struct SendArgs {
    /// The file to send, or `-` for standard input.
    pub file: String,
    /// The file name announced to the receiver (default: the file's own name, `stdin` for `-`);
    /// a plain visible name, no path, checked as the receiver checks it before any byte moves.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The receiver's address: `HOST:PORT`, or `HOST` for port 4433, or `:PORT` for this host.
    #[arg(long)]
    pub to: String,
    /// The target rate g negotiated with the network, e.g. `500k`, `20M`, `2Mbit/s`: a FLOOR,
    /// the rate qstp keeps even when TCP would back off (none by default).
    #[arg(long, value_name = "RATE")]
    pub target_rate: Option<String>,
    /// A CAP on the sending rate, like iperf3's `-b` (none by default); at least the target.
    #[arg(long, value_name = "RATE")]
    pub max_rate: Option<String>,
    /// The composition: `qstp` (gTFRC + SACK), `tfrc-sack`; `tfrc` has no reliable stream and is refused.
    #[arg(long, default_value = "qstp")]
    pub profile: String,
    /// DiffServ code point of the datagrams: AF11..AF43, EF, CS0..CS7 or 0..63 (AF11 with a
    /// target rate, CS0 without, by default).
    #[arg(long)]
    pub dscp: Option<String>,
    /// Write final statistics as JSON to this file.
    #[arg(long, value_name = "PATH")]
    pub stats_json: Option<PathBuf>,
    /// Print the final statistics as JSON on stdout (the `--stats-json` object).
    #[arg(long)]
    pub json: bool,
    /// Also report every SECONDS seconds, one line each on stderr: bytes sent, rate, losses.
    #[arg(long, value_name = "SECONDS", value_parser = parse_interval)]
    pub interval: Option<f64>,
    /// Hide the progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// --psk, --pcap and --pcap-limit, shared with the other side's command.
    #[command(flatten)]
    pub wire: crate::wire_args::WireArgs,
}

/// A number of seconds between reports (`--interval` of `send` and `recv`).
pub(crate) fn parse_interval(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.1..=3600.0).contains(&s) => Ok(s),
        _ => Err(format!("'{text}' is not a number of seconds in 0.1..=3600")),
    }
}

/// What `--stats-json` holds (and `--json` prints): every field is listed in the README.
#[derive(serde::Serialize)]
struct FinalStats {
    /// The file name announced to the receiver.
    file: String,
    /// The receiver's address.
    remote: String,
    /// File bytes sent and confirmed.
    bytes: u64,
    /// Seconds from the connection's start to the receiver's verdict.
    duration_s: f64,
    /// `bytes` in bits over `duration_s`.
    goodput_bps: f64,
    /// Data packets that carried data sent before.
    retransmissions: u64,
    /// Datagrams sent, of any kind.
    packets_sent: u64,
    /// Data packets declared lost.
    packets_lost: u64,
    /// Datagram bytes sent (headers, retransmissions and probes included) in bits over
    /// `duration_s`.
    mean_rate_bps: f64,
    /// The target rate g asked for (0 without `--target-rate`).
    target_bps: u64,
    /// Smoothed RTT at the end.
    rtt_ms: f64,
    /// TFRC's loss event rate p at the end (RFC 5348 §5).
    loss_event_rate: f64,
    /// Whether the goodput over the whole transfer reached the target (true without a target).
    target_met: bool,
    /// Whether the protocol's running check saw the target missed at the end: losses kept the
    /// rate at or below g while the receiver reported less than 95% of g (QSTP paper §4.3.2).
    sla_breach: bool,
    /// The receive rate X_recv of the latest feedback that check judged; 0 when it judged none
    /// (no target, the transfer ended in slow start, or the sender ran out of data each time).
    delivered_rate_bps: u64,
    /// The receive rate X_recv of the latest feedback, judged or not.
    receive_rate_bps: u64,
    /// The largest datagram data packets used at the end, bytes of UDP payload: what path MTU
    /// discovery found, or what `--mtu` pinned.
    datagram_size: usize,
    /// Whether path MTU discovery ran (false with `--mtu`).
    pmtu_discovery: bool,
    /// Path MTU probes sent.
    pmtu_probes_sent: u64,
    /// Path MTU probes lost or refused (EMSGSIZE) by the path.
    pmtu_probes_lost: u64,
    /// ICMP Packet Too Big messages that quoted a probe and were believed (RFC 8899 §4.6).
    pmtu_ptb_accepted: u64,
    /// With `--interval`, one record per interval (iperf3's `intervals`); empty without.
    intervals: Vec<IntervalRecord>,
    profile: String,
    dscp: String,
    /// Whether the receiver confirmed every byte (the end-to-end hash matched).
    verified: bool,
}

/// One `--interval` report, as `--json` gives it (iperf3's names).
#[derive(serde::Serialize, Debug, Clone, PartialEq)]
struct IntervalRecord {
    /// Seconds since the connection started, at the interval's start and end.
    start: f64,
    end: f64,
    /// Datagram bytes sent in the interval (headers, retransmissions and probes included).
    bytes: u64,
    /// `bytes` in bits over the interval.
    bits_per_second: f64,
    /// Data packets sent again in the interval.
    retransmits: u64,
}

/// Most interval records kept (an hour at the shortest interval, 0.1 s).
const MAX_INTERVALS: usize = 36_000;

/// What `--json` prints when `send` fails: the reason, and that nothing was confirmed.
#[derive(serde::Serialize)]
pub(crate) struct FailureStats<'a> {
    /// The error, as the last line of stderr gives it.
    pub(crate) error: String,
    /// The file name, when known.
    pub(crate) file: Option<&'a str>,
    /// The peer's address or name, as given.
    pub(crate) remote: &'a str,
    /// Always false: the transfer was not confirmed.
    pub(crate) verified: bool,
}

/// Everything checked before the network is touched.
struct Plan {
    config: Config,
    dscp: Option<Dscp>,
    profile: Preset,
    psk: Option<qstp_proto::PreSharedKey>,
}

fn plan(args: &SendArgs) -> anyhow::Result<Plan> {
    let profile: Preset = args.profile.parse().map_err(anyhow::Error::msg)?;
    if profile == Preset::Tfrc {
        // No error control means lost bytes stay lost: a verified file cannot be promised.
        bail!("profile 'tfrc' has no reliable byte stream, so it cannot carry a verified file; use qstp or tfrc-sack");
    }
    let target = match &args.target_rate {
        Some(text) => Rate::parse(text).with_context(|| "invalid --target-rate")?,
        None => Rate::ZERO,
    };
    if profile == Preset::TfrcSack && !target.is_zero() {
        bail!("--target-rate needs the qstp profile (tfrc-sack has no target rate)");
    }
    let dscp = match &args.dscp {
        Some(text) => Some(text.parse::<Dscp>().with_context(|| "invalid --dscp")?),
        None => None,
    };
    let mut config = Config::preset(profile, target);
    if let Some(text) = &args.max_rate {
        let cap = Rate::parse(text).with_context(|| "invalid --max-rate")?;
        if cap < target {
            bail!(
                "--max-rate {cap:?} is below --target-rate {target:?}: the floor could not be met"
            );
        }
        config.max_rate = Some(cap);
    }
    // The address family is known once the receiver's name is resolved: checked with IPv6's
    // larger headers now, applied again then.
    args.wire.apply(&mut config, false)?;
    if let Some(name) = &args.name {
        transfer::check_file_name(name).context("invalid --name")?;
    }
    let psk = args.wire.psk()?;
    Ok(Plan {
        config,
        dscp,
        profile,
        psk,
    })
}

/// The application close code of a transfer the user interrupted (Ctrl-C).
const CLOSE_INTERRUPTED: u32 = 1;

/// The file bytes in the first `stream` bytes of a transfer: its header and each chunk's 4-byte
/// length left out (chunks counted full-size, so shorter ones make this a slight overestimate).
fn file_bytes_within(stream: u64, header: u64) -> u64 {
    let body = stream.saturating_sub(header);
    let frame = transfer::MAX_CHUNK as u64 + 4;
    body.saturating_sub(4 * body.div_ceil(frame))
}

/// The port `qstp recv` listens on and `qstp send` connects to when none is given.
pub(crate) const DEFAULT_PORT: u16 = 4433;

/// `text` with a port: `:PORT` means every local address (`listen`) or this host (not
/// `listen`); `HOST` or an IP alone gets [`DEFAULT_PORT`]. Refused: a `:` with no port after it,
/// a port that is not a number up to 65535, and port 0 where a peer is named (not `listen`).
pub(crate) fn with_default_port(text: &str, listen: bool) -> anyhow::Result<String> {
    use std::net::IpAddr;
    let t = text.trim();
    let checked = |port: &str| -> anyhow::Result<u16> {
        match port.parse::<u16>() {
            Ok(0) if !listen => {
                bail!("'{t}': port 0 cannot be connected to; give the receiver's port")
            }
            Ok(port) => Ok(port),
            Err(_) if port.is_empty() => {
                bail!("'{t}': no port after ':' (write HOST:PORT, or HOST for port {DEFAULT_PORT})")
            }
            Err(_) => bail!("'{t}': '{port}' is not a port number (0 to 65535)"),
        }
    };
    if let Some(port) = t.strip_prefix(':').filter(|p| !p.contains(':')) {
        let port = checked(port)?;
        let host = if listen { "0.0.0.0" } else { "127.0.0.1" };
        return Ok(format!("{host}:{port}"));
    }
    if let Ok(addr) = t.parse::<SocketAddr>() {
        checked(&addr.port().to_string())?;
        return Ok(t.to_string());
    }
    if let Ok(ip) = t
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return Ok(SocketAddr::new(ip, DEFAULT_PORT).to_string());
    }
    match t.rsplit_once(':') {
        Some((_, port)) => {
            checked(port)?;
            Ok(t.to_string())
        }
        None => Ok(format!("{t}:{DEFAULT_PORT}")),
    }
}

/// Resolve `HOST:PORT` to its first address.
pub(crate) async fn resolve(text: &str) -> anyhow::Result<SocketAddr> {
    let mut addresses = tokio::net::lookup_host(text)
        .await
        .with_context(|| format!("cannot resolve address '{text}'"))?;
    addresses
        .next()
        .with_context(|| format!("cannot resolve address '{text}': no address found"))
}

/// Pipe capacity asked for when stdin is a pipe.
#[cfg(target_os = "linux")]
const STDIN_PIPE: usize = 1 << 20;

/// When stdin is a pipe, ask the kernel to make it `STDIN_PIPE` bytes (Linux's F_SETPIPE_SZ; best
/// effort, the system's pipe-max-size may refuse): a producer writing small pieces (`head` writes
/// 4 KiB) then fills it while the transfer runs, and each read takes a large piece instead of
/// costing a thread hop per 4 KiB.
#[cfg(target_os = "linux")]
fn widen_stdin_pipe() {
    // SAFETY: fcntl with an integer argument on descriptor 0; on anything but a pipe it fails
    // with EBADF or EINVAL and changes nothing.
    unsafe {
        libc::fcntl(0, libc::F_SETPIPE_SZ, STDIN_PIPE as libc::c_int);
    }
}

#[cfg(not(target_os = "linux"))]
fn widen_stdin_pipe() {}

/// Run `qstp send`.
pub fn main(args: SendArgs) -> anyhow::Result<()> {
    let plan = plan(&args)?;
    let capture = args.wire.capture()?;
    let tap = capture.as_ref().map(crate::capture::Capture::tap);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let json = args.json;
    let (file, remote) = (args.file.clone(), args.to.clone());
    let result = crate::capture::finish_after(capture, runtime.block_on(run(args, plan, tap)));
    if let (true, Err(e)) = (json, &result) {
        let failure = FailureStats {
            error: format!("{e:#}"),
            file: Some(&file),
            remote: &remote,
            verified: false,
        };
        println!("{}", serde_json::to_string_pretty(&failure)?);
    }
    result
}

async fn run(args: SendArgs, plan: Plan, tap: Option<qstp_net::Tap>) -> anyhow::Result<()> {
    let (mut source, header): (Box<dyn AsyncRead + Unpin>, Header) = if args.file == "-" {
        widen_stdin_pipe();
        (
            Box::new(tokio::io::BufReader::with_capacity(
                1 << 20,
                tokio::io::stdin(),
            )),
            Header {
                name: args.name.clone().unwrap_or_else(|| "stdin".into()),
                size: None,
            },
        )
    } else {
        let file = tokio::fs::File::open(&args.file)
            .await
            .with_context(|| format!("cannot read '{}'", args.file))?;
        let meta = file
            .metadata()
            .await
            .with_context(|| format!("cannot read '{}'", args.file))?;
        if !meta.is_file() {
            bail!("cannot read '{}': not a regular file", args.file);
        }
        let name = match &args.name {
            Some(name) => name.clone(),
            None => transfer::safe_file_name(&args.file),
        };
        (
            Box::new(tokio::io::BufReader::with_capacity(1 << 20, file)),
            Header {
                name,
                size: Some(meta.len()),
            },
        )
    };
    let remote = resolve(&with_default_port(&args.to, false)?).await?;
    let mut plan = plan;
    args.wire.apply(&mut plan.config, remote.is_ipv4())?;
    let local: SocketAddr = if remote.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let options = EndpointOptions {
        dscp: plan.dscp,
        psk: plan.psk.clone(),
        tap,
        ..EndpointOptions::default()
    };
    let endpoint = Endpoint::bind_with(local, options).context("cannot open a UDP socket")?;
    let mut conn = endpoint
        .connect(remote, plan.config.clone())
        .await
        .map_err(|e| match e {
            // The error names the address already.
            qstp_net::Error::NothingListens(_) => anyhow::Error::new(e),
            e => anyhow::Error::new(e).context(format!("cannot connect to {remote}")),
        })?;

    let bar = progress_bar(header.size, args.quiet);
    let interval = args.interval.map(Duration::from_secs_f64);
    let intervals = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let ticker = tokio::spawn(show_stats(
        conn.clone(),
        bar.clone(),
        interval,
        intervals.clone(),
    ));
    let started = Instant::now();
    let sent = std::cell::Cell::new(0u64);
    let exchange = async {
        let progress = |n| {
            sent.set(n);
            bar.set_position(n);
        };
        let outcome = transfer::send(&mut conn, &header, &mut source, progress)
            .await
            .context("transfer failed")?;
        conn.finish()?;
        let verdict = Verdict::read_from(&mut conn)
            .await
            .context("no verdict from the receiver")?;
        anyhow::Ok((outcome, verdict))
    };
    let finished = tokio::select! {
        result = exchange => Some(result),
        _ = tokio::signal::ctrl_c() => None,
    };
    let duration = started.elapsed();
    ticker.abort();
    let (outcome, verdict) = match finished {
        Some(Ok(done)) => done,
        Some(Err(e)) => {
            bar.abandon();
            return Err(e);
        }
        None => {
            bar.finish_and_clear();
            // Tell the receiver now, so that it drops the partial file instead of waiting for
            // its idle timeout; the driver sends the close within a turn.
            conn.close(CLOSE_INTERRUPTED, b"interrupted by the sender");
            let _ = tokio::time::timeout(Duration::from_millis(500), conn.closed()).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            // What the receiver acknowledged, in file bytes (the framing taken out).
            let acked = conn.stats().map_or(0, |s| s.bytes_acked);
            let n = file_bytes_within(acked, header.encode().len() as u64).min(sent.get());
            match header.size {
                Some(m) => bail!("interrupted: {n} of {m} bytes sent, transfer not complete"),
                None => bail!("interrupted: {n} bytes sent, transfer not complete"),
            }
        }
    };
    let stats = conn.stats()?;
    bar.finish_and_clear();
    // Let the connection end gracefully so the receiver is not left waiting for acknowledgements.
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        let _ = (&mut conn).take(1 << 16).read_to_end(&mut rest).await;
        let _ = conn.closed().await;
    })
    .await;

    let secs = duration.as_secs_f64().max(1e-9);
    let goodput_bps = outcome.bytes as f64 * 8.0 / secs;
    let target = plan.config.congestion.target();
    // The promise is a rate of useful bytes: met only if the whole transfer's goodput reached it.
    let target_met = goodput_bps >= target.bps() as f64;
    let final_stats = FinalStats {
        file: header.name.clone(),
        remote: remote.to_string(),
        bytes: outcome.bytes,
        duration_s: secs,
        goodput_bps,
        retransmissions: stats.packets_retransmitted,
        packets_sent: stats.packets_sent,
        packets_lost: stats.packets_lost,
        mean_rate_bps: stats.bytes_sent as f64 * 8.0 / secs,
        target_bps: plan.config.congestion.target().bps(),
        rtt_ms: stats.rtt.as_secs_f64() * 1e3,
        loss_event_rate: stats.loss_event_rate,
        target_met,
        sla_breach: !stats.target_met,
        delivered_rate_bps: stats.delivered_rate.bps(),
        receive_rate_bps: stats.x_recv.bps(),
        datagram_size: stats.datagram_size,
        pmtu_discovery: plan.config.pmtu_discovery,
        pmtu_probes_sent: stats.pmtu.probes_sent,
        pmtu_probes_lost: stats.pmtu.probes_lost,
        pmtu_ptb_accepted: stats.pmtu.ptb_accepted,
        intervals: std::mem::take(&mut *intervals.lock().unwrap_or_else(|e| e.into_inner())),
        profile: plan.profile.to_string(),
        dscp: conn.dscp().to_string(),
        verified: verdict == Verdict::Verified,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&final_stats)?);
    }
    if let Some(path) = &args.stats_json {
        let json = serde_json::to_string_pretty(&final_stats)?;
        std::fs::write(path, json + "\n")
            .with_context(|| format!("cannot write '{}'", path.display()))?;
    }
    if !target_met {
        // QSTP paper §4.3.2 leaves the reaction open: say it, once, and let the user decide.
        eprintln!(
            "warning: target rate {target} not met: goodput {} over the transfer{}",
            Rate::from_bps(goodput_bps as u64),
            if stats.target_met {
                ""
            } else {
                " (losses kept the rate at or below the target)"
            }
        );
    }
    if verdict != Verdict::Verified {
        bail!("transfer not confirmed: {verdict}");
    }
    if !args.quiet {
        eprintln!(
            "sent {} ({} bytes) in {:.2} s: {} goodput, {} retransmissions, verified by the receiver",
            header.name,
            outcome.bytes,
            secs,
            Rate::from_bps(final_stats.goodput_bps as u64),
            final_stats.retransmissions
        );
    }
    Ok(())
}

fn progress_bar(size: Option<u64>, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = match size {
        Some(size) => ProgressBar::new(size).with_style(
            ProgressStyle::with_template(
                "{bar:30} {decimal_bytes}/{decimal_total_bytes} {decimal_bytes_per_sec} eta {eta} {msg}",
            )
            .expect("valid template"),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} {decimal_bytes} {decimal_bytes_per_sec} {msg}")
                .expect("valid template"),
        ),
    };
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// Refresh the bar's message with the connection's rate, target, RTT and losses; with an
/// interval, also print one line per interval (above the bar, or alone with --quiet).
async fn show_stats(
    conn: Connection,
    bar: ProgressBar,
    interval: Option<Duration>,
    records: std::sync::Arc<std::sync::Mutex<Vec<IntervalRecord>>>,
) {
    let started = Instant::now();
    let mut last = (Duration::ZERO, 0u64, 0u64, 0u64);
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let Ok(stats) = conn.stats() else { return };
        bar.set_message(progress_message(&stats));
        let Some(every) = interval else { continue };
        let now = started.elapsed();
        if now < last.0 + every {
            continue;
        }
        let (t0, bytes0, sent0, again0) = last;
        let line = interval_line(
            t0.as_secs_f64(),
            now.as_secs_f64(),
            stats.bytes_sent - bytes0,
            stats.packets_sent - sent0,
            stats.packets_retransmitted - again0,
        );
        if bar.is_hidden() {
            eprintln!("{line}");
        } else {
            bar.println(line);
        }
        let bytes = stats.bytes_sent - bytes0;
        let span = (now - t0).as_secs_f64().max(1e-9);
        let mut kept = records.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < MAX_INTERVALS {
            kept.push(IntervalRecord {
                start: t0.as_secs_f64(),
                end: now.as_secs_f64(),
                bytes,
                bits_per_second: bytes as f64 * 8.0 / span,
                retransmits: stats.packets_retransmitted - again0,
            });
        }
        last = (
            now,
            stats.bytes_sent,
            stats.packets_sent,
            stats.packets_retransmitted,
        );
    }
}

/// One interval report: its span, the bytes sent in it (decimal units), the rate, and the share
/// of its data packets sent again.
fn interval_line(from_s: f64, to_s: f64, bytes: u64, sent: u64, again: u64) -> String {
    let share = if sent == 0 {
        0.0
    } else {
        again as f64 / sent as f64 * 100.0
    };
    format!(
        "{}, retransmitted {share:.2}% ({again} of {sent})",
        interval_bytes(from_s, to_s, bytes, "sent")
    )
}

/// The start of every interval report of `send` and `recv`: the span, the bytes that `verb`
/// (sent, received) in it in decimal megabytes, and their rate in bit/s (decimal units, as
/// iperf3).
pub(crate) fn interval_bytes(from_s: f64, to_s: f64, bytes: u64, verb: &str) -> String {
    let span = (to_s - from_s).max(1e-9);
    format!(
        "[{from_s:6.2}-{to_s:6.2} s] {:.3} MB {verb}, {}",
        bytes as f64 / 1e6,
        Rate::from_bps((bytes as f64 * 8.0 / span) as u64)
    )
}

/// The progress line's figures, in decimal units (as iperf3): the allowed rate X and the target
/// in bit/s, the RTT, the share of data packets sent again, and TFRC's loss event rate p (RFC
/// 5348 §5), each named.
fn progress_message(stats: &qstp_net::Stats) -> String {
    let target = if stats.target.is_zero() {
        "none".to_string()
    } else {
        stats.target.to_string()
    };
    let retransmitted = if stats.packets_sent == 0 {
        0.0
    } else {
        stats.packets_retransmitted as f64 / stats.packets_sent as f64 * 100.0
    };
    format!(
        "rate {} target {} rtt {:.1} ms retransmitted {retransmitted:.2}% loss-event-rate {:.4}",
        stats.rate,
        target,
        stats.rtt.as_secs_f64() * 1e3,
        stats.loss_event_rate
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn an_interval_line_gives_its_span_bytes_rate_and_retransmissions() {
        assert_eq!(
            interval_line(1.0, 2.0, 2_500_000, 1700, 17),
            "[  1.00-  2.00 s] 2.500 MB sent, 20Mbit/s, retransmitted 1.00% (17 of 1700)"
        );
        assert!(parse_interval("0").is_err());
        assert_eq!(parse_interval("0.5"), Ok(0.5));
    }

    #[test]
    fn acknowledged_stream_bytes_count_as_file_bytes_without_framing() {
        assert_eq!(file_bytes_within(10, 20), 0);
        assert_eq!(file_bytes_within(20 + 4 + 100, 20), 100);
        assert_eq!(file_bytes_within(20 + 2 * 65540, 20), 2 * 65536);
        assert_eq!(file_bytes_within(22, 20), 0);
    }

    #[test]
    fn the_progress_line_names_both_loss_figures_in_decimal_units() {
        let stats = qstp_net::Stats {
            rate: Rate::from_mbps(20),
            target: Rate::from_mbps(8),
            rtt: qstp_net::proto::Duration::from_millis(12),
            packets_sent: 2000,
            packets_retransmitted: 30,
            loss_event_rate: 0.0042,
            ..Default::default()
        };
        assert_eq!(
            progress_message(&stats),
            "rate 20Mbit/s target 8Mbit/s rtt 12.0 ms retransmitted 1.50% loss-event-rate 0.0042"
        );
    }

    #[test]
    fn addresses_get_the_default_port_and_a_bare_port_its_host() {
        let ok = |text: &str, listen: bool| with_default_port(text, listen).unwrap();
        assert_eq!(ok(":5000", true), "0.0.0.0:5000");
        assert_eq!(ok(":5000", false), "127.0.0.1:5000");
        assert_eq!(ok("10.0.0.2", false), "10.0.0.2:4433");
        assert_eq!(ok("::1", false), "[::1]:4433");
        assert_eq!(ok("::", true), "[::]:4433");
        assert_eq!(ok("[::1]:80", false), "[::1]:80");
        assert_eq!(ok("example.org", false), "example.org:4433");
        assert_eq!(ok("example.org:9", false), "example.org:9");
        assert_eq!(ok("127.0.0.1:7", true), "127.0.0.1:7");
        assert_eq!(ok(":0", true), "0.0.0.0:0");
        let err = |text: &str, listen: bool| {
            format!("{:#}", with_default_port(text, listen).unwrap_err())
        };
        assert!(err("127.0.0.1:", false).contains("no port after ':'"));
        assert!(err("[::1]:", true).contains("no port after ':'"));
        assert!(err(":", true).contains("no port after ':'"));
        assert!(err("example.org:", false).contains("no port after ':'"));
        assert!(err("host:http", false).contains("not a port number"));
        assert!(err("10.0.0.2:70000", false).contains("not a port number"));
        assert!(err("127.0.0.1:0", false).contains("port 0"));
        assert!(err(":0", false).contains("port 0"));
    }

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: SendArgs,
    }

    fn parse(extra: &[&str]) -> SendArgs {
        let mut argv = vec!["send", "file.bin", "--to", "127.0.0.1:9"];
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv).unwrap().args
    }

    #[test]
    fn the_plan_follows_the_flags() {
        let p = plan(&parse(&["--target-rate", "20M", "--dscp", "af21"])).unwrap();
        assert_eq!(p.config.congestion.target(), Rate::from_mbps(20));
        assert_eq!(p.dscp, Some("AF21".parse().unwrap()));
        let p = plan(&parse(&["--profile", "tfrc-sack"])).unwrap();
        assert!(p.config.congestion.target().is_zero());
        assert_eq!(p.dscp, None);
    }

    #[test]
    fn bad_flags_are_refused_with_the_reason() {
        let e = plan(&parse(&["--target-rate", "fast"])).err().unwrap();
        assert!(format!("{e:#}").contains("not a rate"), "{e:#}");
        let e = plan(&parse(&["--dscp", "AF55"])).err().unwrap();
        assert!(format!("{e:#}").contains("unknown DSCP"), "{e:#}");
        let e = plan(&parse(&["--profile", "tfrc"])).err().unwrap();
        assert!(
            format!("{e:#}").contains("no reliable byte stream"),
            "{e:#}"
        );
        let e = plan(&parse(&["--profile", "quic"])).err().unwrap();
        assert!(format!("{e:#}").contains("unknown profile"), "{e:#}");
        let e = plan(&parse(&["--target-rate", "2M", "--max-rate", "1M"]))
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("below --target-rate"), "{e:#}");
        let e = plan(&parse(&["--name", "../etc/passwd"])).err().unwrap();
        assert!(format!("{e:#}").contains("invalid --name"), "{e:#}");
        assert!(plan(&parse(&["--name", "data.bin"])).is_ok());
        let ok = plan(&parse(&["--target-rate", "1M", "--max-rate", "5M"])).unwrap();
        assert_eq!(ok.config.max_rate, Some(Rate::from_mbps(5)));
    }
}
