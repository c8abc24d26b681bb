use super::*;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Feed packet numbers arriving 1 ms apart (in the given order); returns how many loss events began.
fn feed(h: &mut LossHistory, numbers: &[u64], rtt: Duration) -> usize {
    numbers
        .iter()
        .enumerate()
        .filter(|&(i, &n)| h.on_packet(n, Time::ZERO + ms(i as u64), rtt, || 100.0))
        .count()
}

#[test]
fn in_order_delivery_has_no_loss() {
    let mut h = LossHistory::new();
    let all: Vec<u64> = (0..1000).collect();
    assert_eq!(feed(&mut h, &all, ms(10)), 0);
    assert_eq!(h.loss_event_rate(), 0.0);
    assert_eq!(h.mean_interval(), None);
}

#[test]
fn reordering_within_three_packets_is_not_loss() {
    let mut h = LossHistory::new();
    // A packet overtaken by at most NDUPACK - 1 = 2 later ones is not lost (RFC 5348 §5.1).
    let order = [0, 1, 2, 4, 5, 3, 6, 7, 9, 8, 10, 13, 11, 12, 14, 15];
    assert_eq!(feed(&mut h, &order, ms(10)), 0);
    assert_eq!(h.lost_packets(), 0);
    // Duplicates change nothing either.
    let dups = [16, 16, 17, 15, 18, 18, 19];
    let mut h2 = h.clone();
    assert_eq!(feed(&mut h2, &dups, ms(10)), 0);
    assert_eq!(h2.lost_packets(), 0);
}

#[test]
fn a_packet_is_lost_after_three_later_arrivals() {
    let mut h = LossHistory::new();
    assert_eq!(feed(&mut h, &[0, 1, 2, 4, 5], ms(10)), 0);
    assert_eq!(h.lost_packets(), 0);
    assert!(h.on_packet(6, Time::ZERO + ms(6), ms(10), || 100.0));
    assert_eq!(h.lost_packets(), 1);
    // Arriving late after being declared lost changes nothing.
    assert!(!h.on_packet(3, Time::ZERO + ms(7), ms(10), || 100.0));
    assert_eq!(h.lost_packets(), 1);
    assert_eq!(h.loss_events(), 1);
}

#[test]
fn losses_within_one_rtt_count_as_one_event() {
    let mut h = LossHistory::new();
    // Packets 1 ms apart, RTT 10 ms: losses of 10, 12, 15 are within one RTT of 10.
    let numbers: Vec<u64> = (0..40).filter(|n| ![10, 12, 15].contains(n)).collect();
    assert_eq!(feed(&mut h, &numbers, ms(10)), 1);
    assert_eq!(h.lost_packets(), 3);
    assert_eq!(h.loss_events(), 1);
    // A loss more than one RTT later (30 ms after the first) is a new event.
    let mut h = LossHistory::new();
    let numbers: Vec<u64> = (0..60).filter(|n| ![10, 12, 40].contains(n)).collect();
    assert_eq!(feed(&mut h, &numbers, ms(10)), 2);
}

#[test]
fn a_burst_gap_spanning_many_rtts_is_several_events_and_bounded_work() {
    let mut h = LossHistory::new();
    let rtt = ms(10);
    for n in 0..10 {
        h.on_packet(n, Time::ZERO + ms(n), rtt, || 1000.0);
    }
    // Packets 10..109 lost; 110, 111, 112 arrive at 110 ms..: the gap spans 100 ms = 10 RTTs, so
    // losses interpolated 1 ms apart form ten events, every 11 packets: 10, 21, 32, ..., 109.
    let mut events = 0;
    for n in 110..113 {
        events += usize::from(h.on_packet(n, Time::ZERO + ms(n), rtt, || 1000.0));
    }
    assert_eq!(events, 1);
    assert_eq!(h.loss_events(), 10);
    assert_eq!(h.lost_packets(), 100);
    // A jump by 2^60 packet numbers resolves in bounded time.
    let far = 1u64 << 60;
    for (i, n) in (far..far + 3).enumerate() {
        h.on_packet(n, Time::ZERO + ms(200 + i as u64), rtt, || 1000.0);
    }
    assert!(h.loss_events() <= 10 + MAX_EVENTS_PER_GAP as u64);
    assert!(h.loss_event_rate() > 0.0 && h.loss_event_rate() <= 1.0);
}

#[test]
fn first_interval_comes_from_the_synthetic_value() {
    let mut h = LossHistory::new();
    let numbers: Vec<u64> = (0..20).filter(|&n| n != 10).collect();
    for (i, &n) in numbers.iter().enumerate() {
        h.on_packet(n, Time::ZERO + ms(i as u64), ms(5), || 400.0);
    }
    // Intervals: I_1 = 400 (synthetic), I_0 = 19 - 10 + 1 = 10. I_tot0 = 10, I_tot1 = 400, W = 1.
    assert_eq!(h.mean_interval(), Some(400.0));
    assert_eq!(h.loss_event_rate(), 1.0 / 400.0);
}

#[test]
fn weighted_average_uses_the_rfc_weights_and_the_open_interval_only_if_it_raises_it() {
    let mut h = LossHistory::new();
    // Events at 100, 200, ..., 900 (1 ms apart, RTT 1 ms: each loss its own event); synthetic 100.
    let numbers: Vec<u64> = (0..950).filter(|n| n % 100 != 0 || *n == 0).collect();
    for (i, &n) in numbers.iter().enumerate() {
        h.on_packet(n, Time::ZERO + ms(i as u64 * 2), ms(1), || 100.0);
    }
    assert_eq!(h.loss_events(), 9);
    // Eight closed intervals of 100; the open one is 949 - 900 + 1 = 50 (< 100, so ignored).
    assert!((h.mean_interval().unwrap() - 100.0).abs() < 1e-9);
    // Grow the open interval to 400: I_tot0 = 400 + 100 * (1+1+1+0.8+0.6+0.4+0.2) = 900 over W = 6.
    for n in 950..1300 {
        h.on_packet(n, Time::ZERO + ms(n * 2), ms(1), || 100.0);
    }
    assert!(
        (h.mean_interval().unwrap() - 900.0 / 6.0).abs() < 1e-9,
        "{:?}",
        h.mean_interval()
    );
}

#[test]
fn bernoulli_loss_gives_p_close_to_the_loss_rate() {
    for (q, seed) in [(0.01, 1u64), (0.02, 2), (0.005, 3)] {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut h = LossHistory::new();
        // 1 ms between packets, RTT 0.5 ms: losses never merge, so events are the losses. The
        // time average of p = 1/I_mean sits a little above q (measured: +7% to +10%).
        let (mut sum, mut samples) = (0.0, 0);
        for n in 0..400_000u64 {
            let lost = (rng.next_u64() as f64 / u64::MAX as f64) < q;
            if !lost {
                h.on_packet(n, Time::ZERO + ms(n), Duration::from_micros(500), || {
                    1.0 / q
                });
            }
            if n > 10_000 && n % 97 == 0 {
                sum += h.loss_event_rate();
                samples += 1;
            }
        }
        let mean_p = sum / samples as f64;
        assert!((mean_p - q).abs() < 0.2 * q, "q = {q}: mean p = {mean_p}");
    }
}

/// Packets 0..n arriving 1 ms apart, without those in `lost`, into `h` (RTT 1 ms, so each loss
/// is its own event); the history defers from packet `defer_from` on.
fn feed_deferring(h: &mut LossHistory, n: u64, lost: &[u64], defer_from: u64) {
    for k in 0..n {
        if k == defer_from {
            h.defer_events(true);
        }
        if !lost.contains(&k) {
            h.on_packet(k, Time::ZERO + ms(2 * k), ms(1), || 100.0);
        }
    }
}

#[test]
fn a_held_loss_event_is_out_of_p_until_counted_and_then_as_if_never_held() {
    let lost = [100, 200, 300];
    let mut plain = LossHistory::new();
    feed_deferring(&mut plain, 400, &lost, u64::MAX);
    let mut held = LossHistory::new();
    feed_deferring(&mut held, 400, &lost, 150);
    // The first event (the end of slow start) is counted at once; the next two wait.
    assert_eq!((held.loss_events(), held.deferred()), (1, 2));
    assert!(held.loss_event_rate() < plain.loss_event_rate());
    assert!(held.count_deferred(|| 100.0));
    assert!(held.count_deferred(|| 100.0));
    assert!(!held.count_deferred(|| 100.0), "nothing left to count");
    assert_eq!(held.loss_events(), plain.loss_events());
    assert_eq!(held.mean_interval(), plain.mean_interval());
}

#[test]
fn a_forgiven_event_lets_the_interval_run_on_and_swallows_its_own_later_losses() {
    let mut h = LossHistory::new();
    // Event at 100 counted; 200 held and forgiven; 202 is within an RTT (10 ms) of 200 and
    // belongs to the forgiven event, not a new one.
    for k in 0..400u64 {
        if k == 150 {
            h.defer_events(true);
        }
        if k == 250 {
            assert_eq!(h.deferred(), 1, "202 joined 200's event");
            assert!(h.forgive_deferred());
        }
        if ![100, 200, 202].contains(&k) {
            h.on_packet(k, Time::ZERO + ms(k), ms(10), || 100.0);
        }
    }
    assert_eq!((h.loss_events(), h.deferred()), (1, 0));
    // One closed interval (the synthetic 100) and the open one from 100 to 399: p as if the
    // forgiven losses had arrived.
    assert_eq!(h.mean_interval(), Some(300.0));
    assert!(!h.forgive_deferred());
}

#[test]
fn a_taken_event_closes_the_open_interval_after_the_highest_packet() {
    let mut h = LossHistory::new();
    feed_deferring(&mut h, 300, &[100], u64::MAX);
    // Intervals: synthetic 100, open 100..299 = 200.
    assert_eq!(h.mean_interval(), Some(200.0));
    h.take_event(Time::ZERO + ms(700), || 100.0);
    assert_eq!(h.loss_events(), 2);
    // Closed intervals 200 (100 to 300) and 100; the open one is empty: (200 + 100) / 2.
    assert_eq!(h.mean_interval(), Some(150.0));
    // Turning deferral off counts what was held.
    let mut h = LossHistory::new();
    feed_deferring(&mut h, 300, &[100, 200], 150);
    assert_eq!(h.deferred(), 1);
    h.defer_events(false);
    assert_eq!((h.deferred(), h.loss_events()), (0, 2));
}
