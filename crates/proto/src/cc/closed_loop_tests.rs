//! Closed-loop scenarios: a sender, the TFRC receiver and an AF-like path in between.
//!
//! The path marks each packet with a token bucket of rate g and depth 10^4 bytes (QSTP paper §5
//! testbed marker) and drops a share of the out-of-profile packets (what RIO does to them under
//! congestion); in-profile packets are dropped only when the bottleneck's 50-packet drop-tail queue
//! is full. This is the situation of gTFRC paper §3.1: the network carries g, but losses of excess
//! packets pull TFRC's equation rate below g.

use super::*;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

const S: usize = 1460;

/// What one run measured.
struct Outcome {
    /// Bytes delivered per second over the second half of the run.
    goodput: f64,
    /// Lowest allowed rate seen after slow start ended, bytes/s.
    lowest_rate_after_slow_start: f64,
}

/// The path: marker rate g, share of out-of-profile packets dropped, bottleneck capacity, base RTT.
struct Path {
    g: Rate,
    out_drop: f64,
    capacity: Rate,
    rtt: Duration,
}

/// Packets the bottleneck queue holds (QSTP paper §5: 50-packet queues).
const QUEUE_PACKETS: u64 = 50;

/// Run `controller` for `secs` over `path`.
fn run(controller: &mut dyn RateController, path: &Path, secs: u64) -> Outcome {
    let Path {
        g,
        out_drop,
        capacity,
        rtt,
    } = *path;
    let service = capacity.transmit_time(S);
    let mut link_free_at = Time::ZERO;
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut receiver = TfrcReceiver::new(S);
    let one_way = rtt / 2;
    let tick = Duration::from_micros(500);
    let end = Time::ZERO + Duration::from_secs(secs);
    let half = Time::ZERO + Duration::from_secs(secs / 2);

    let (mut tokens, depth, mut last_mark) = (10_000.0_f64, 10_000.0_f64, Time::ZERO);
    let mut data_in_flight: VecDeque<(Time, u64, u32)> = VecDeque::new();
    let mut feedback_in_flight: VecDeque<(Time, ReceiverReport)> = VecDeque::new();
    let (mut next_send, mut number, mut delivered) = (Time::ZERO, 0u64, 0u64);
    let mut lowest = f64::INFINITY;
    let mut now = Time::ZERO;
    while now < end {
        // Sender: paced at X.
        while next_send <= now {
            let send_time = next_send;
            controller.on_packet_sent(send_time, S);
            // Marker: token bucket of rate g, depth 10^4 bytes.
            tokens = (tokens
                + g.bytes_per_sec() * send_time.saturating_since(last_mark).as_secs_f64())
            .min(depth);
            last_mark = send_time;
            let in_profile = tokens >= S as f64;
            if in_profile {
                tokens -= S as f64;
            }
            let dropped = !in_profile && (rng.next_u64() as f64 / u64::MAX as f64) < out_drop;
            // Bottleneck: drop-tail FIFO served at `capacity`.
            let queued =
                link_free_at.saturating_since(send_time).as_nanos() / service.as_nanos().max(1);
            if !dropped && queued < QUEUE_PACKETS {
                link_free_at = link_free_at.max(send_time) + service;
                data_in_flight.push_back((link_free_at + one_way, number, send_time.wire_micros()));
            }
            number += 1;
            next_send = send_time + controller.allowed_rate().transmit_time(S);
        }
        // Receiver.
        while let Some(&(arrive, n, ts)) = data_in_flight.front() {
            if arrive > now {
                break;
            }
            data_in_flight.pop_front();
            if now >= half {
                delivered += S as u64;
            }
            let rtt_estimate = controller.state().rtt;
            if receiver.on_data(now, n, ts, rtt_estimate, S) {
                feedback_in_flight.push_back((now + one_way, receiver.feedback(now)));
            }
        }
        if receiver.handle_timeout(now) {
            feedback_in_flight.push_back((now + one_way, receiver.feedback(now)));
        }
        // Sender: feedback and its timer.
        while let Some(&(arrive, report)) = feedback_in_flight.front() {
            if arrive > now {
                break;
            }
            feedback_in_flight.pop_front();
            let echoed = Time::from_nanos(u64::from(report.timestamp_echo) * 1000);
            let sample = now.saturating_since(echoed).saturating_sub(report.t_delay);
            controller.on_feedback(
                now,
                &FeedbackReport {
                    rtt_sample: sample,
                    x_recv: report.x_recv,
                    loss_event_rate: report.loss_event_rate,
                },
            );
        }
        if controller.poll_timeout().is_some_and(|t| t <= now) {
            controller.handle_timeout(now);
        }
        if !controller.state().slow_start {
            lowest = lowest.min(controller.allowed_rate().bytes_per_sec());
        }
        now += tick;
    }
    Outcome {
        goodput: delivered as f64 / (secs - secs / 2) as f64,
        lowest_rate_after_slow_start: lowest,
    }
}

#[test]
fn on_an_af_path_tfrc_dips_below_the_target_and_gtfrc_does_not() {
    // gTFRC paper §4, Fig. 10: g = 600 kbit/s, RTT 640 ms; 30% of out-of-profile packets dropped.
    let g = Rate::from_kbps(600);
    let rtt = Duration::from_millis(640);
    let path = Path {
        g,
        out_drop: 0.3,
        capacity: Rate::from_mbps(10),
        rtt,
    };
    let mut tfrc = TfrcSender::new(S, Some(rtt), Time::ZERO);
    let mut gtfrc = Gtfrc::new(g, S, Some(rtt), Time::ZERO);
    let t = run(&mut tfrc, &path, 120);
    let q = run(&mut gtfrc, &path, 120);
    let g_bytes = g.bytes_per_sec();
    // In this smooth model TFRC averages just under g (measured 0.99 g), but each out-of-profile
    // loss pulls its rate well below g (measured down to 0.73 g) and it climbs back slowly.
    assert!(
        t.goodput < g_bytes,
        "TFRC goodput {} vs g {}",
        t.goodput,
        g_bytes
    );
    assert!(
        t.lowest_rate_after_slow_start < 0.8 * g_bytes,
        "TFRC lowest {}",
        t.lowest_rate_after_slow_start
    );
    // gTFRC never goes below g after slow start, and delivers at least g.
    assert!(
        q.lowest_rate_after_slow_start >= g_bytes - 1.0,
        "gTFRC fell to {}",
        q.lowest_rate_after_slow_start
    );
    assert!(
        q.goodput >= g_bytes,
        "gTFRC goodput {} vs g {}",
        q.goodput,
        g_bytes
    );
}

#[test]
fn tfrc_fills_a_drop_tail_bottleneck() {
    // Best effort (g = 0, no random drops): slow start until the queue overflows, then the equation.
    let rtt = Duration::from_millis(100);
    let capacity = Rate::from_mbps(2);
    let mut tfrc = TfrcSender::new(S, Some(rtt), Time::ZERO);
    let path = Path {
        g: Rate::ZERO,
        out_drop: 0.0,
        capacity,
        rtt,
    };
    let out = run(&mut tfrc, &path, 60);
    assert!(!tfrc.state().slow_start);
    let utilisation = out.goodput / capacity.bytes_per_sec();
    assert!(
        utilisation > 0.7 && utilisation <= 1.0,
        "utilisation {utilisation}"
    );
}
