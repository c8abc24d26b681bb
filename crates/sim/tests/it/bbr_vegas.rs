//! BBR v1 and Vegas alone on a drop-tail dumbbell (20 Mbit/s, 40 ms RTT, a 100-packet queue):
//! BBR fills the link with a small queue, leaves STARTUP once the bandwidth stops growing and
//! dips into PROBE_RTT about every 10 s; Vegas keeps alpha to beta segments queued.

use qstp_proto::{Duration, Rate};
use qstp_sim::TcpSpec;
use qstp_sim::{run, GroupSpec, Protocol, RunOutput, SimSpec};
use qstp_tcp::{CcSpec, TcpOptions};

/// One flow of `cc` alone for `seconds`, with series in bins of `bin`.
fn alone(cc: &str, seconds: u64, bin: Duration) -> RunOutput {
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(20), Duration::from_millis(10), 100, seconds);
    spec.packet_size = 1500;
    spec.bin = bin;
    spec.groups.push(GroupSpec::new(
        "B",
        Protocol::Tcp(TcpSpec {
            congestion: CcSpec::named(cc),
            options: TcpOptions::default(),
        }),
        1,
        Duration::from_millis(40),
    ));
    run(&spec).unwrap()
}

/// Bottleneck capacity of `span` seconds, bytes.
fn capacity(span: f64) -> f64 {
    20e6 / 8.0 * span
}

#[test]
fn bbr_alone_fills_the_link_with_a_queue_near_empty() {
    let out = alone("bbr", 40, Duration::from_secs(1));
    let flow = &out.flows[0];
    let late: u64 = flow.received_bytes[10..].iter().sum();
    let utilisation = late as f64 / capacity(30.0);
    assert!(utilisation > 0.95, "utilisation {utilisation:.3}");
    // The bottleneck's base RTT is 40 ms plus a 0.6 ms packet time: the median RTT stays within
    // 10 ms of it (CUBIC's fills the 100-packet queue, 60 ms more), and the queue averages
    // under 10 packets.
    let rtt = flow.rtt.unwrap();
    assert!(rtt.p50_ns < 50_000_000, "{rtt:?}");
    let queue = &out.queue_series[0].packets[10..];
    let mean = queue.iter().sum::<u64>() as f64 / queue.len() as f64;
    assert!(mean < 10.0, "queue mean {mean}");
    // STARTUP's overshoot (2.885 x BDP against BDP + 100 packets) may lose; later, nothing.
    let resent: u64 = flow.sender.retransmitted[10..].iter().sum();
    assert_eq!(resent, 0, "no loss once STARTUP is over");
    let cubic = alone("cubic", 40, Duration::from_secs(1));
    assert!(cubic.flows[0].rtt.unwrap().p50_ns > 70_000_000);
}

#[test]
fn bbr_startup_ends_once_the_bandwidth_plateaus_and_probe_rtt_comes_every_ten_seconds() {
    let bin = Duration::from_millis(50);
    let out = alone("bbr", 45, bin);
    let mss = 1460;
    let cwnd: Vec<u64> = out.flows[0]
        .sender
        .cwnd_bytes
        .iter()
        .map(|c| c / mss)
        .collect();
    // STARTUP doubles up to 2.885 x the BDP (67 packets) in about 6 round trips; three rounds
    // without 25% growth later, DRAIN and PROBE_BW bring the window down to 2 x BDP plus the
    // send quantum, within the first second.
    let peak = cwnd[..20].iter().copied().max().unwrap();
    assert!((150..=260).contains(&peak), "STARTUP peak {peak}: {cwnd:?}");
    let settled = cwnd[20];
    assert!((130..=160).contains(&settled), "PROBE_BW window {settled}");
    // PROBE_RTT: the window at 4 packets for about 200 ms, once every ~10 s.
    let dips: Vec<f64> = cwnd
        .iter()
        .enumerate()
        .filter(|&(i, &c)| c <= 4 && (i == 0 || cwnd[i - 1] > 4) && i > 10)
        .map(|(i, _)| (i as f64 + 1.0) * bin.as_secs_f64())
        .collect();
    assert_eq!(dips.len(), 4, "PROBE_RTT at {dips:?}");
    for pair in dips.windows(2) {
        let gap = pair[1] - pair[0];
        assert!((10.0..11.0).contains(&gap), "PROBE_RTT at {dips:?}");
    }
    let length = cwnd.iter().filter(|&&c| c <= 4).count() as f64 * bin.as_secs_f64() / 4.0;
    assert!((0.2..0.4).contains(&length), "{length} s per PROBE_RTT");
}

#[test]
fn vegas_alone_keeps_alpha_to_beta_segments_queued() {
    let out = alone("vegas", 60, Duration::from_secs(1));
    let flow = &out.flows[0];
    // Slow start leaves at twice the BDP (the round's min RTT comes from its first segments,
    // which met an empty queue) and loses. After that overshoot drains (one segment less per
    // round trip), the queue holds
    // between alpha = 2 and beta = 4 segments (and one in service), and the link stays full.
    let queue = &out.queue_series[0].packets[40..];
    for &q in queue {
        assert!((2..=5).contains(&q), "queue {queue:?}");
    }
    let late: u64 = flow.received_bytes[40..].iter().sum();
    let utilisation = late as f64 / capacity(20.0);
    assert!(utilisation > 0.97, "utilisation {utilisation:.3}");
    let resent: u64 = flow.sender.retransmitted[40..].iter().sum();
    assert_eq!(resent, 0, "losses only in the slow-start overshoot");
}

#[test]
fn bbr_runs_are_reproducible_and_seeded_per_flow() {
    let a = alone("bbr", 12, Duration::from_secs(1));
    assert_eq!(a, alone("bbr", 12, Duration::from_secs(1)));
}
