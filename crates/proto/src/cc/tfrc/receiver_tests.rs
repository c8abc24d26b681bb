use super::*;

const S: usize = 1000;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(millis: u64) -> Time {
    Time::ZERO + ms(millis)
}

/// Deliver packets `numbers` 1 ms apart from `start` ms with RTT 100 ms; returns the indexes
/// at which `on_data` asked for feedback.
fn deliver(r: &mut TfrcReceiver, start: u64, numbers: impl IntoIterator<Item = u64>) -> Vec<u64> {
    let mut asked = vec![];
    for (i, n) in numbers.into_iter().enumerate() {
        let t = start + i as u64;
        if r.on_data(at(t), n, (t * 1000) as u32, ms(100), S) {
            asked.push(n);
        }
    }
    asked
}

#[test]
fn first_packet_asks_for_feedback_and_the_timer_runs_one_rtt() {
    let mut r = TfrcReceiver::new(S);
    assert_eq!(r.poll_timeout(), None);
    assert!(r.on_data(at(0), 0, 0, ms(100), S));
    let fb = r.feedback(at(0));
    assert_eq!(fb.loss_event_rate, 0.0);
    assert_eq!(fb.timestamp_echo, 0);
    // One packet over at least one RTT: 1000 B / 100 ms.
    assert_eq!(fb.x_recv, Rate::from_bytes_per_sec(10_000.0));
    assert_eq!(r.poll_timeout(), Some(at(100)));
    assert!(deliver(&mut r, 1, 1..100).is_empty());
    assert!(!r.handle_timeout(at(99)));
    assert!(r.handle_timeout(at(100)));
    let fb = r.feedback(at(100));
    // 99 packets in 100 ms.
    assert_eq!(fb.x_recv, Rate::from_bytes_per_sec(990_000.0));
    assert_eq!(fb.timestamp_echo, 99_000);
    assert_eq!(fb.t_delay, ms(1));
    assert_eq!(r.poll_timeout(), Some(at(200)));
}

#[test]
fn no_data_no_feedback_then_feedback_on_the_next_packet() {
    let mut r = TfrcReceiver::new(S);
    r.on_data(at(0), 0, 0, ms(100), S);
    r.feedback(at(0));
    assert!(!r.handle_timeout(at(100)));
    assert_eq!(r.poll_timeout(), None);
    // RFC 5348 §6.2: the next data packet gets feedback at once.
    assert!(r.on_data(at(500), 1, 500_000, ms(100), S));
    assert!(!r.on_data(at(501), 2, 501_000, ms(100), S));
}

#[test]
fn a_new_loss_event_asks_for_feedback_immediately() {
    let mut r = TfrcReceiver::new(S);
    deliver(&mut r, 0, 0..1);
    r.feedback(at(0));
    // Packet 50 lost; it is detected when 53 arrives (three later packets).
    let asked = deliver(&mut r, 1, (1..100).filter(|&n| n != 50));
    assert_eq!(asked, vec![53]);
    assert!(r.loss_event_rate() > 0.0);
    // More losses within the same RTT do not ask again.
    let asked = deliver(&mut r, 100, (100..130).filter(|&n| n != 110));
    assert!(asked.is_empty());
}

#[test]
fn first_loss_interval_matches_the_receive_rate() {
    let mut r = TfrcReceiver::new(S);
    deliver(&mut r, 0, 0..1);
    r.feedback(at(0));
    deliver(&mut r, 1, 1..100);
    assert!(r.handle_timeout(at(100)));
    let fb = r.feedback(at(100));
    let x_recv = fb.x_recv.bytes_per_sec();
    // A single loss; p is then the rate that makes the equation give X_recv (RFC 5348 §6.3.1).
    deliver(&mut r, 100, (100..150).filter(|&n| n != 120));
    let p = r.loss_event_rate();
    let x_eq = equation::throughput(S as f64, 0.1, p);
    assert!(
        ((x_eq - x_recv) / x_recv).abs() < 0.05,
        "X(p = {p}) = {x_eq}, X_recv = {x_recv}"
    );
}

#[test]
fn early_feedback_measures_over_at_least_an_rtt() {
    let mut r = TfrcReceiver::new(S);
    deliver(&mut r, 0, 0..1);
    r.feedback(at(0));
    deliver(&mut r, 1, 1..100);
    assert!(r.handle_timeout(at(100)));
    r.feedback(at(100));
    // Feedback 10 ms later (e.g. on a loss): 10 packets; the previous 100 ms are counted too.
    deliver(&mut r, 100, 100..110);
    let fb = r.feedback(at(110));
    let x = fb.x_recv.bytes_per_sec();
    // (10 + 99) packets over 110 ms, not 10 packets over 10 ms or over 100 ms.
    assert!((x - 109_000.0 / 0.110).abs() < 1.0, "{x}");
}

#[test]
fn the_feedback_timer_follows_the_first_rtt_estimate() {
    let mut r = TfrcReceiver::new(S);
    // The sender had no RTT estimate yet: the timer starts with the default interval.
    assert!(r.on_data(at(0), 0, 0, Duration::ZERO, S));
    r.feedback(at(0));
    assert_eq!(r.poll_timeout(), Some(at(1_000)));
    // The next packet carries an estimate of 20 ms: feedback is due one RTT after the last.
    assert!(!r.on_data(at(120), 1, 120_000, ms(20), S));
    assert_eq!(r.poll_timeout(), Some(at(20)));
    assert!(
        r.handle_timeout(at(120)),
        "the data that arrived is reported at once"
    );
}
