//! Stories of rate control on a path with Bernoulli loss and a constant RTT: TFRC settles near
//! its equation rate, and gTFRC holds its target g where TFRC falls short of it.

use crate::support::{Pair, PathModel};
use qstp_proto::cc::tfrc::equation::throughput;
use qstp_proto::{Config, Duration, Rate, RateControl, Stats, Time};

/// 50 ms each way (R = 100 ms), 2% of data packets lost, feedback never lost, no bottleneck.
fn lossy_path() -> (PathModel, PathModel) {
    let to_server = PathModel {
        loss: 0.02,
        ..PathModel::with_delay(Duration::from_millis(50))
    };
    let to_client = PathModel::with_delay(Duration::from_millis(50));
    (to_server, to_client)
}

/// Once a second after `warmup`, and every RTT for `rate_samples`.
struct Run {
    /// Bytes the sender put on the path between the end of the warm-up and the end.
    bytes_after_warmup: u64,
    /// Length of the measured span.
    measured: Duration,
    /// The sender's statistics at the end.
    end: Stats,
    /// The allowed rate X sampled every 100 ms once out of slow start (and after the warm-up).
    rate_samples: Vec<(Time, Rate)>,
}

/// A bulk transfer client to server with `congestion`; the application always has data to send
/// and the receiver reads everything at once.
fn bulk_transfer(congestion: RateControl, seed: u64, warmup: Duration, total: Duration) -> Run {
    let (to_server, to_client) = lossy_path();
    let mut pair = Pair::new(Config::default(), to_server, seed);
    pair.to_client = to_client;
    let config = Config {
        congestion: congestion.into(),
        ..Config::default()
    };
    pair.connect_and_establish(config);
    let start = pair.time;
    let chunk = vec![0x5Au8; 64 * 1024];
    let mut sink = vec![0u8; 64 * 1024];
    let mut bytes_at_warmup = None;
    let mut next_sample = start + warmup;
    let mut rate_samples = Vec::new();
    pair.drive_until(total, |p| {
        while p.client.conn_mut().write(&chunk).is_ok() {}
        while let Ok(n) = p.server.conn_mut().read(&mut sink) {
            if n == 0 {
                break;
            }
        }
        let stats = p.client.conn().stats();
        if bytes_at_warmup.is_none() && p.time >= start + warmup {
            bytes_at_warmup = Some(stats.bytes_sent);
        }
        while p.time >= next_sample {
            if !stats.slow_start {
                rate_samples.push((p.time, stats.rate));
            }
            next_sample += Duration::from_millis(100);
        }
        false
    });
    let end = pair.client.conn().stats();
    assert_eq!(pair.stalls, 0);
    Run {
        bytes_after_warmup: end.bytes_sent - bytes_at_warmup.expect("ran past the warm-up"),
        measured: total - warmup,
        end,
        rate_samples,
    }
}

impl Run {
    /// Mean sending rate over the measured span, bytes per second.
    fn mean_bytes_per_sec(&self) -> f64 {
        self.bytes_after_warmup as f64 / self.measured.as_secs_f64()
    }
}

/// RFC 5348 §3.1: a TFRC flow's long-run rate follows X = s / (R*sqrt(2p/3) + t_RTO*(3*sqrt(3p/8))*p*(1+32p^2)).
/// Stated tolerance: the measured mean rate is within 25% of X(p, R) computed from the loss event
/// rate the receiver measured and the RTT the sender measured.
#[test]
fn tfrc_settles_near_its_equation_rate_under_bernoulli_loss() {
    let run = bulk_transfer(
        RateControl::Tfrc,
        51,
        Duration::from_secs(20),
        Duration::from_secs(80),
    );
    let p = run.end.loss_event_rate;
    let rtt = run.end.rtt.as_secs_f64();
    assert!(p > 0.01 && p < 0.03, "p = {p} for 2% Bernoulli loss");
    assert!((rtt - 0.1).abs() < 0.01, "R = {rtt}");
    let expected = throughput(Config::default().segment_size() as f64, rtt, p);
    let measured = run.mean_bytes_per_sec();
    let ratio = measured / expected;
    assert!(
        (0.75..=1.25).contains(&ratio),
        "measured {measured:.0} B/s, equation {expected:.0} B/s (ratio {ratio:.2})"
    );
}

/// gTFRC paper §3 / Fig. 1: once out of slow start, X = max(X_calc, g). On the same path with the
/// same loss, plain TFRC's mean rate stays below g while gTFRC's allowed rate, sampled every RTT,
/// never drops below g.
#[test]
fn gtfrc_holds_its_target_where_tfrc_falls_short() {
    let target = Rate::from_kbps(1_500);
    let tfrc = bulk_transfer(
        RateControl::Tfrc,
        52,
        Duration::from_secs(10),
        Duration::from_secs(40),
    );
    assert!(
        tfrc.mean_bytes_per_sec() * 8.0 < target.bps() as f64,
        "TFRC alone reaches {:.0} bit/s, the target must be out of its reach",
        tfrc.mean_bytes_per_sec() * 8.0
    );

    let gtfrc = bulk_transfer(
        RateControl::Gtfrc { target },
        52,
        Duration::from_secs(10),
        Duration::from_secs(40),
    );
    assert!(
        gtfrc.rate_samples.len() > 250,
        "{} samples",
        gtfrc.rate_samples.len()
    );
    for (at, rate) in &gtfrc.rate_samples {
        assert!(
            *rate >= target,
            "at {at} the allowed rate {rate} fell below g = {target}"
        );
    }
    let achieved = gtfrc.mean_bytes_per_sec() * 8.0;
    assert!(
        achieved >= 0.95 * target.bps() as f64,
        "gTFRC sent {achieved:.0} bit/s for g = {target}"
    );
    assert_eq!(gtfrc.end.target, target);
}

#[test]
fn the_target_can_change_at_run_time() {
    let mut pair = Pair::new(Config::default(), PathModel::default(), 53);
    pair.connect_and_establish(Config::qstp(Rate::ZERO));
    let g = Rate::from_kbps(800);
    pair.client.conn_mut().set_target_rate(g);
    assert_eq!(pair.client.conn().stats().target, g);
    assert_eq!(
        pair.client.conn().config().congestion,
        RateControl::Gtfrc { target: g }.into()
    );
    // Without gTFRC there is no target to change.
    let mut tfrc = Pair::new(Config::default(), PathModel::default(), 54);
    tfrc.connect_and_establish(Config {
        congestion: RateControl::Tfrc.into(),
        ..Config::default()
    });
    tfrc.client.conn_mut().set_target_rate(g);
    assert_eq!(tfrc.client.conn().stats().target, Rate::ZERO);
}

/// `Config::max_rate` caps the pacer: on a clean 100 ms path where TFRC would climb far higher,
/// the sender never averages more than the cap over a second.
#[test]
fn max_rate_caps_the_sending_rate() {
    let cap = Rate::from_kbps(800);
    let path = PathModel::with_delay(Duration::from_millis(50));
    let mut pair = Pair::new(Config::default(), path.clone(), 5);
    pair.to_client = path;
    pair.connect_and_establish(Config {
        max_rate: Some(cap),
        ..Config::default()
    });
    let chunk = vec![0x5Au8; 64 * 1024];
    let mut sink = vec![0u8; 64 * 1024];
    let start = pair.time;
    let mut per_second = Vec::new();
    let (mut last_bytes, mut next) = (0u64, start + Duration::from_secs(1));
    pair.drive_until(Duration::from_secs(10), |p| {
        while p.client.conn_mut().write(&chunk).is_ok() {}
        while let Ok(n) = p.server.conn_mut().read(&mut sink) {
            if n == 0 {
                break;
            }
        }
        if p.time >= next {
            let sent = p.client.conn().stats().bytes_sent;
            per_second.push(sent - last_bytes);
            last_bytes = sent;
            next += Duration::from_secs(1);
        }
        false
    });
    // 800 kbit/s is 100,000 B/s; allow one burst of datagrams above it per second.
    let most = cap.bytes_per_sec() as u64 + 16 * 1500;
    assert!(per_second.len() >= 8, "{per_second:?}");
    assert!(per_second.iter().all(|&b| b <= most), "{per_second:?}");
    // And it does use the cap (TFRC on a clean path would allow far more).
    assert!(
        per_second[3..].iter().all(|&b| b >= 80_000),
        "{per_second:?}"
    );
    // A cap below a gTFRC target is refused.
    let mut bad = Config::qstp(Rate::from_mbps(1));
    bad.max_rate = Some(cap);
    assert!(bad.validate().is_err());
}

/// `Stats::loss_event_rate_increases` counts the feedbacks whose p rose: none on a clean path
/// (p stays 0), and on a lossy one some, never more than the packets lost (each new loss event
/// loses at least one).
#[test]
fn loss_event_rate_increases_count_new_loss_events() {
    let run = bulk_transfer(
        RateControl::Tfrc,
        53,
        Duration::from_secs(2),
        Duration::from_secs(20),
    );
    let (increases, lost) = (run.end.loss_event_rate_increases, run.end.packets_lost);
    assert!(run.end.loss_event_rate > 0.0);
    assert!(
        increases > 10 && increases <= lost,
        "{increases} rises, {lost} lost"
    );

    let mut pair = Pair::new(
        Config::default(),
        PathModel::with_delay(Duration::from_millis(20)),
        54,
    );
    pair.connect_and_establish(Config::default());
    let chunk = vec![0u8; 64 * 1024];
    let mut sink = vec![0u8; 64 * 1024];
    pair.drive_until(Duration::from_secs(3), |p| {
        while p.client.conn_mut().write(&chunk).is_ok() {}
        while matches!(p.server.conn_mut().read(&mut sink), Ok(n) if n > 0) {}
        false
    });
    let clean = pair.client.conn().stats();
    assert!(clean.bytes_acked > 1_000_000, "{clean:?}");
    assert_eq!(clean.loss_event_rate, 0.0);
    assert_eq!(clean.loss_event_rate_increases, 0);
}
