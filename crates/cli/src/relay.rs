//! `qstp relay`: an impairing UDP relay between a `qstp send` and a `qstp recv` (or any client
//! and server of one socket each), so that a path with a bottleneck, delay and losses can be
//! tried on one machine ([`qstp_net::relay`]).

use anyhow::{bail, Context};
use qstp_net::relay::{Counts, Impairment, Relay};
use qstp_net::Rate;
use std::time::{Duration, Instant};

/// Arguments of `qstp relay`.
#[derive(clap::Args)]
pub struct RelayArgs {
    /// Where the client sends: `HOST:PORT`, `:PORT` (every local address) or `HOST` (port 4433).
    #[arg(long)]
    pub listen: String,
    /// The server the datagrams go on to: `HOST:PORT`, `HOST` (port 4433) or `:PORT` (this host).
    #[arg(long)]
    pub to: String,
    /// Bottleneck rate towards the server, e.g. `20M`, `500k` (no limit by default); the data
    /// plane's link and drop-tail queue, as the lab's.
    #[arg(long, value_name = "RATE")]
    pub rate: Option<String>,
    /// Packets the bottleneck's drop-tail queue holds (of 1500 bytes), with --rate.
    #[arg(long, value_name = "PACKETS", default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub queue: u32,
    /// One-way delay each way, e.g. `5ms`, `20ms` (a unit is required; none by default, at most
    /// 10 s).
    #[arg(long, value_name = "DURATION")]
    pub delay: Option<String>,
    /// Share of datagrams dropped at random each way: `0.01` or `1%`.
    #[arg(long, value_name = "SHARE", default_value = "0")]
    pub loss: String,
    /// Share of datagrams delivered twice each way: `0.01` or `1%`.
    #[arg(long, value_name = "SHARE", default_value = "0")]
    pub duplicate: String,
    /// Share of datagrams held back 3 ms each way, so later ones pass: `0.01` or `1%`.
    #[arg(long, value_name = "SHARE", default_value = "0")]
    pub reorder: String,
    /// Seed of the random drops, duplicates and reorderings: the same seed draws the same.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print only the totals when stopped.
    #[arg(long, short)]
    pub quiet: bool,
}

/// A share of datagrams: a number in 0..=1, or a percentage in 0..=100 followed by `%`.
fn parse_share(flag: &str, text: &str) -> anyhow::Result<f64> {
    let t = text.trim();
    let (number, scale) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), 100.0),
        None => (t, 1.0),
    };
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=scale).contains(&v) => Ok(v / scale),
        _ => bail!("invalid --{flag} '{text}': give a share in 0..=1 (0.01) or a percentage (1%)"),
    }
}

/// The impairment the flags describe, checked before any socket is opened.
fn impairment(args: &RelayArgs) -> anyhow::Result<Impairment> {
    let rate_bps = match &args.rate {
        Some(text) => {
            let rate = Rate::parse(text).with_context(|| format!("invalid --rate '{text}'"))?;
            if rate.is_zero() {
                bail!("invalid --rate '{text}': a rate of 0 carries nothing");
            }
            Some(rate.bps())
        }
        None => None,
    };
    let delay = match &args.delay {
        Some(text) => {
            let d = qstp_net::proto::Duration::parse(text)
                .with_context(|| format!("invalid --delay '{text}'"))?;
            Duration::from_nanos(d.as_nanos())
        }
        None => Duration::ZERO,
    };
    let impairment = Impairment {
        loss: parse_share("loss", &args.loss)?,
        duplicate: parse_share("duplicate", &args.duplicate)?,
        reorder: parse_share("reorder", &args.reorder)?,
        delay,
        rate_bps,
        queue_bytes: args.queue as usize * 1500,
        seed: args.seed,
        ..Impairment::default()
    };
    impairment.check().map_err(anyhow::Error::msg)?;
    Ok(impairment)
}

/// Run `qstp relay`.
pub fn main(args: RelayArgs) -> anyhow::Result<()> {
    let impairment = impairment(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run(args, impairment))
}

async fn run(args: RelayArgs, impairment: Impairment) -> anyhow::Result<()> {
    let listen = crate::send::resolve(&crate::send::with_default_port(&args.listen, true)?).await?;
    let server = crate::send::resolve(&crate::send::with_default_port(&args.to, false)?).await?;
    if listen.is_ipv4() != server.is_ipv4() {
        bail!("--listen {listen} and --to {server} are of different IP versions");
    }
    let relay = Relay::bind(listen, server, impairment.clone())
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AddrInUse => {
                anyhow::anyhow!("cannot listen on {listen}: address already in use")
            }
            _ => anyhow::Error::new(e).context(format!("cannot relay {listen} to {server}")),
        })?;
    if !args.quiet {
        eprintln!(
            "relaying {} -> {server}: {} (Ctrl-C stops)",
            relay.addr,
            describe(&impairment)
        );
    }
    let started = Instant::now();
    let mut last = (Counts::default(), Counts::default());
    let mut second = 0u64;
    let mut interrupted = std::pin::pin!(tokio::signal::ctrl_c());
    loop {
        second += 1;
        let tick = tokio::time::Instant::from_std(started + Duration::from_secs(second));
        tokio::select! {
            () = tokio::time::sleep_until(tick) => {}
            _ = &mut interrupted => break,
        }
        let now = (relay.stats.to_server.get(), relay.stats.to_client.get());
        if !args.quiet {
            eprintln!(
                "[{:4}-{:4} s] {}",
                second - 1,
                second,
                line(&now.0.since(&last.0), &now.1.since(&last.1), 1.0)
            );
        }
        last = now;
    }
    let secs = started.elapsed().as_secs_f64();
    let (up, down) = (relay.stats.to_server.get(), relay.stats.to_client.get());
    drop(relay);
    eprintln!(
        "relay stopped after {secs:.1} s: {}",
        line(&up, &down, secs.max(1e-9))
    );
    Ok(())
}

/// What the relay does, in words.
fn describe(imp: &Impairment) -> String {
    let mut parts = Vec::new();
    match imp.rate_bps {
        Some(rate) => parts.push(format!(
            "bottleneck {} with a {}-packet drop-tail queue",
            Rate::from_bps(rate),
            (imp.queue_bytes / 1500).max(1)
        )),
        None => parts.push("no rate limit".into()),
    }
    parts.push(format!("delay {:?} each way", imp.delay));
    for (name, p) in [
        ("loss", imp.loss),
        ("duplicate", imp.duplicate),
        ("reorder", imp.reorder),
    ] {
        if p > 0.0 {
            parts.push(format!("{name} {:.3}%", p * 100.0));
        }
    }
    parts.push(format!("seed {}", imp.seed));
    parts.join(", ")
}

/// One report: per direction, what was forwarded (datagrams and rate over `secs`) and dropped,
/// with the drops' causes.
fn line(up: &Counts, down: &Counts, secs: f64) -> String {
    let side = |c: &Counts| {
        let mut causes = Vec::new();
        for (name, n) in [
            ("queue", c.queue_drops),
            ("lost", c.lost),
            ("over the bound", c.overflow),
            ("unsent", c.send_failed),
        ] {
            if n > 0 {
                causes.push(format!("{name} {n}"));
            }
        }
        let causes = if causes.is_empty() {
            String::new()
        } else {
            format!(" ({})", causes.join(", "))
        };
        format!(
            "forwarded {} ({}), dropped {}{causes}",
            c.forwarded,
            Rate::from_bps((c.forwarded_bytes as f64 * 8.0 / secs) as u64),
            c.dropped()
        )
    };
    format!("to server: {}; to client: {}", side(up), side(down))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: RelayArgs,
    }

    fn parse(extra: &[&str]) -> RelayArgs {
        let mut argv = vec!["relay", "--listen", ":5000", "--to", ":4433"];
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv).unwrap().args
    }

    #[test]
    fn the_flags_make_the_impairment() {
        let imp = impairment(&parse(&[
            "--rate", "20M", "--queue", "30", "--delay", "5ms", "--loss", "1%", "--seed", "7",
        ]))
        .unwrap();
        assert_eq!(imp.rate_bps, Some(20_000_000));
        assert_eq!(imp.queue_bytes, 45_000);
        assert_eq!(imp.delay, Duration::from_millis(5));
        assert!((imp.loss - 0.01).abs() < 1e-12);
        assert_eq!(imp.seed, 7);
        let imp = impairment(&parse(&["--loss", "0.02"])).unwrap();
        assert!((imp.loss - 0.02).abs() < 1e-12);
        assert_eq!(imp.rate_bps, None);
    }

    #[test]
    fn bad_flags_are_refused_with_the_reason() {
        let err = |extra: &[&str]| format!("{:#}", impairment(&parse(extra)).unwrap_err());
        assert!(err(&["--rate", "fast"]).contains("invalid --rate 'fast'"));
        assert!(err(&["--rate", "0"]).contains("carries nothing"));
        assert!(err(&["--delay", "5"]).contains("invalid --delay '5'"));
        assert!(err(&["--delay", "20s"]).contains("limit"));
        assert!(err(&["--loss", "2"]).contains("invalid --loss '2'"));
        assert!(err(&["--loss", "150%"]).contains("invalid --loss"));
        assert!(err(&["--reorder=-0.1"]).contains("invalid --reorder"));
        assert!(err(&["--duplicate", "NaN"]).contains("invalid --duplicate"));
    }

    #[test]
    fn a_report_names_each_direction_and_the_causes_of_its_drops() {
        let up = Counts {
            forwarded: 1000,
            forwarded_bytes: 1_250_000,
            queue_drops: 12,
            lost: 3,
            ..Counts::default()
        };
        assert_eq!(
            line(&up, &Counts::default(), 1.0),
            "to server: forwarded 1000 (10Mbit/s), dropped 15 (queue 12, lost 3); \
             to client: forwarded 0 (0bit/s), dropped 0"
        );
    }
}
