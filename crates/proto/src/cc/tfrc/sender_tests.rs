use super::*;

const S: usize = 1460;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(millis: u64) -> Time {
    Time::ZERO + ms(millis)
}

fn report(rtt_ms: u64, x_recv_bytes: f64, p: f64) -> FeedbackReport {
    FeedbackReport {
        rtt_sample: ms(rtt_ms),
        x_recv: Rate::from_bytes_per_sec(x_recv_bytes),
        loss_event_rate: p,
    }
}

fn bytes_per_sec(c: &impl RateController) -> f64 {
    c.allowed_rate().bytes_per_sec()
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    ((a - b) / b).abs() <= rel
}

/// Send one packet at `now` while the application has more data (not data-limited).
fn send(c: &mut TfrcSender, now: Time) {
    c.on_packet_sent(now, S);
}

/// Send a packet every 10 ms in `[from, to)` milliseconds, never data-limited.
fn send_span(c: &mut TfrcSender, from: u64, to: u64) {
    for t in (from..to).step_by(10) {
        c.on_packet_sent(at(t), S);
    }
}

#[test]
fn starts_at_one_packet_per_second_without_an_rtt() {
    let c = TfrcSender::new(S, None, Time::ZERO);
    assert!(close(bytes_per_sec(&c), S as f64, 1e-3));
    assert_eq!(c.poll_timeout(), Some(Time::ZERO + Duration::from_secs(2)));
    assert!(c.state().slow_start);
}

#[test]
fn starts_at_w_init_over_r_with_a_handshake_rtt() {
    // RFC 5348 §4.2: W_init = min(4*1460, max(2*1460, 4380)) = 4380 bytes; / 100 ms = 43800 B/s.
    assert_eq!(initial_window(1460.0), 4380.0);
    assert_eq!(initial_window(500.0), 2000.0);
    assert_eq!(initial_window(4000.0), 8000.0);
    let c = TfrcSender::new(S, Some(ms(100)), Time::ZERO);
    assert!(close(bytes_per_sec(&c), 43_800.0, 1e-3));
}

#[test]
fn first_feedback_sets_the_initial_rate_from_the_rtt() {
    let mut c = TfrcSender::new(S, None, Time::ZERO);
    send(&mut c, at(0));
    c.on_feedback(at(100), &report(100, 1460.0, 0.0));
    assert_eq!(c.state().rtt, ms(100));
    // max(min(2 * 1460, Infinity), 43800) = 43800.
    assert!(close(bytes_per_sec(&c), 43_800.0, 1e-3));
}

#[test]
fn rtt_is_an_ewma_with_q_0_9() {
    let mut c = TfrcSender::new(S, None, Time::ZERO);
    c.on_feedback(at(100), &report(100, 1e6, 0.0));
    c.on_feedback(at(200), &report(200, 1e6, 0.0));
    // 0.9 * 100 + 0.1 * 200 = 110 ms.
    assert!(close(c.state().rtt.as_secs_f64(), 0.110, 1e-6));
}

#[test]
fn slow_start_doubles_once_per_rtt_limited_by_twice_x_recv() {
    let mut c = TfrcSender::new(S, Some(ms(100)), Time::ZERO);
    let mut now = 0;
    // Feedback every RTT, receiver sees everything the sender sends.
    let mut rates = vec![];
    for _ in 0..6 {
        send(&mut c, at(now));
        now += 100;
        let x = bytes_per_sec(&c);
        c.on_feedback(at(now), &report(100, x, 0.0));
        rates.push(bytes_per_sec(&c));
    }
    for w in rates.windows(2) {
        assert!(close(w[1], 2.0 * w[0], 1e-3), "{rates:?}");
    }
    // A second feedback within the same RTT does not double again.
    let before = bytes_per_sec(&c);
    c.on_feedback(at(now + 10), &report(100, before, 0.0));
    assert!(close(bytes_per_sec(&c), before, 1e-9));
    // Once Infinity has aged out of X_recv_set, a low X_recv caps the doubling at 2*X_recv.
    now += 200;
    send(&mut c, at(now - 1));
    c.on_feedback(at(now), &report(100, 50_000.0, 0.0));
    // The recent values (within 2 RTTs) are kept: the limit is twice the largest of them.
    let largest_recent = rates[rates.len() - 1];
    assert!(bytes_per_sec(&c) <= 2.0 * largest_recent + 1.0);
    for _ in 0..3 {
        now += 100;
        send(&mut c, at(now - 1));
        c.on_feedback(at(now), &report(100, 50_000.0, 0.0));
    }
    assert!(
        close(bytes_per_sec(&c), 100_000.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
}

#[test]
fn with_loss_the_rate_is_the_equation_limited_by_twice_x_recv() {
    let mut c = TfrcSender::new(S, Some(ms(100)), Time::ZERO);
    send(&mut c, at(0));
    c.on_feedback(at(100), &report(100, 1e9, 0.01));
    // X_calc(p = 0.01, R = 100 ms) = 164005 B/s; X_recv is huge.
    assert!(close(bytes_per_sec(&c), 164_005.0, 1e-3));
    assert!(!c.state().slow_start);
    assert!(close(c.state().x_calc.bytes_per_sec(), 164_005.0, 1e-3));
    // Later, the receiver sees only 20 kB/s for several RTTs: X = 2 * 20000.
    let mut now = 100;
    for _ in 0..4 {
        now += 100;
        send(&mut c, at(now - 1));
        c.on_feedback(at(now), &report(100, 20_000.0, 0.01));
    }
    assert!(
        close(bytes_per_sec(&c), 40_000.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
}

#[test]
fn recv_limit_is_the_max_of_recent_x_recv_values() {
    let mut c = TfrcSender::new(S, Some(ms(100)), Time::ZERO);
    let mut now = 0;
    for x_recv in [1e9, 30_000.0, 20_000.0] {
        send_span(&mut c, now, now + 100);
        now += 100;
        c.on_feedback(at(now), &report(100, x_recv, 0.01));
    }
    send_span(&mut c, now, now + 50);
    now += 50;
    c.on_feedback(at(now), &report(100, 10_000.0, 0.01));
    // 1e9 (at 100 ms) has aged out; 30000 (200 ms) is within two RTTs: limit 60000.
    assert!(
        close(bytes_per_sec(&c), 60_000.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
}

#[test]
fn data_limited_interval_does_not_let_a_low_x_recv_cut_the_rate() {
    let mut c = TfrcSender::new(S, Some(ms(100)), Time::ZERO);
    let mut now = 0;
    for _ in 0..3 {
        now += 100;
        send(&mut c, at(now - 50));
        c.on_feedback(at(now), &report(100, 50_000.0, 0.01));
    }
    let limit_before = bytes_per_sec(&c);
    assert!(close(limit_before, 100_000.0, 1e-3));
    // The application goes quiet: every send opportunity finds no data, X_recv drops.
    for _ in 0..5 {
        c.on_data_limited(at(now + 10));
        now += 100;
        c.on_feedback(at(now), &report(100, 5_000.0, 0.01));
    }
    // RFC 5348 §4.3: a data-limited interval keeps the largest X_recv seen (Maximize_X_recv_set).
    assert!(
        close(bytes_per_sec(&c), 100_000.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
    // A loss increase during a data-limited interval: entries halved, X_recv * 0.85, limit = max.
    c.on_data_limited(at(now + 10));
    now += 100;
    c.on_feedback(at(now), &report(100, 5_000.0, 0.02));
    // max(50000 / 2, 0.85 * 5000) = 25000.
    assert!(
        close(bytes_per_sec(&c), 25_000.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
}

#[test]
fn not_data_limited_interval_follows_x_recv() {
    let mut c = TfrcSender::new(S, Some(ms(100)), Time::ZERO);
    let mut now = 0;
    for _ in 0..6 {
        now += 100;
        send(&mut c, at(now - 60));
        send(&mut c, at(now - 50));
        c.on_feedback(at(now), &report(100, 5_000.0, 0.01));
    }
    assert!(
        close(bytes_per_sec(&c), 10_000.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
}

#[test]
fn no_feedback_timer_expires_after_max_4r_2s_over_x_and_halves() {
    let mut c = TfrcSender::new(S, Some(ms(100)), Time::ZERO);
    send(&mut c, at(0));
    c.on_feedback(at(100), &report(100, 1e9, 0.01));
    let x = bytes_per_sec(&c);
    // 4R = 400 ms > 2s/X = 2*1460/164005 = 17.8 ms.
    assert_eq!(c.poll_timeout(), Some(at(500)));
    send(&mut c, at(200));
    c.handle_timeout(at(499));
    assert!(close(bytes_per_sec(&c), x, 1e-9), "not yet due");
    c.handle_timeout(at(500));
    // X_Bps limited the rate (X_recv huge): Update_Limits(X_Bps / 2) gives X = X_Bps / 2.
    assert!(
        close(bytes_per_sec(&c), x / 2.0, 1e-3),
        "{} vs {}",
        bytes_per_sec(&c),
        x
    );
    assert_eq!(c.poll_timeout(), Some(at(900)));
    send(&mut c, at(600));
    c.handle_timeout(at(900));
    assert!(close(bytes_per_sec(&c), x / 4.0, 1e-3));
}

#[test]
fn no_feedback_timer_uses_x_recv_when_that_was_the_limit() {
    let mut c = TfrcSender::new(S, Some(ms(100)), Time::ZERO);
    let mut now = 0;
    for _ in 0..4 {
        now += 100;
        send(&mut c, at(now - 1));
        c.on_feedback(at(now), &report(100, 10_000.0, 0.01));
    }
    assert!(close(bytes_per_sec(&c), 20_000.0, 1e-3));
    send(&mut c, at(now + 1));
    c.handle_timeout(c.poll_timeout().unwrap());
    // Update_Limits(X_recv = 10000): X_recv_set = {5000}, X = min(X_Bps, 10000).
    assert!(
        close(bytes_per_sec(&c), 10_000.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
}

#[test]
fn no_feedback_before_any_rtt_halves_every_two_seconds() {
    let mut c = TfrcSender::new(S, None, Time::ZERO);
    send(&mut c, at(0));
    c.handle_timeout(at(2000));
    assert!(close(bytes_per_sec(&c), S as f64 / 2.0, 1e-3));
    assert_eq!(c.poll_timeout(), Some(at(4000)));
}

#[test]
fn idle_sender_at_a_low_rate_is_not_halved() {
    let mut c = TfrcSender::new(S, None, Time::ZERO);
    send(&mut c, at(0));
    c.on_feedback(at(100), &report(100, 20_000.0, 0.0));
    let x = bytes_per_sec(&c);
    assert!(close(x, 43_800.0, 1e-3));
    // Nothing sent since the timer was set: RFC 5348 §4.4 keeps the rate.
    c.handle_timeout(c.poll_timeout().unwrap());
    assert!(close(bytes_per_sec(&c), x, 1e-9));
}

#[test]
fn rate_never_drops_below_s_over_t_mbi() {
    let mut c = TfrcSender::new(S, Some(ms(100)), Time::ZERO);
    c.on_feedback(at(100), &report(100, 100.0, 1.0));
    for _ in 0..200 {
        let t = c.poll_timeout().unwrap();
        send(&mut c, t);
        c.handle_timeout(t);
    }
    assert!(
        bytes_per_sec(&c) >= S as f64 / 64.0 - 0.1,
        "{}",
        bytes_per_sec(&c)
    );
    assert!(
        bytes_per_sec(&c) <= S as f64 / 64.0 + 0.1,
        "{}",
        bytes_per_sec(&c)
    );
}

#[test]
fn state_reports_the_rate_variables() {
    let mut c = TfrcSender::new(S, Some(ms(100)), Time::ZERO);
    c.on_feedback(at(100), &report(80, 30_000.0, 0.05));
    let st = c.state();
    assert_eq!(st.rtt, ms(80));
    assert_eq!(st.loss_event_rate, 0.05);
    assert_eq!(st.x_recv, Rate::from_bytes_per_sec(30_000.0));
    assert!(close(
        st.x_calc.bytes_per_sec(),
        1460.0 / (0.08 * equation::loss_factor(0.05)),
        1e-3
    ));
    assert_eq!(st.rate, c.allowed_rate());
    assert_eq!(st.target, Rate::ZERO);
    assert!(!st.slow_start);
}

// RFC 3448 mode: each test below would fail under RFC 5348's rules (the comments say how).

fn rfc3448(initial_rtt: Option<Duration>) -> TfrcSender {
    TfrcSender::with_version(TfrcVersion::Rfc3448, S, initial_rtt, Time::ZERO)
}

#[test]
fn rfc3448_starts_at_one_packet_per_second_even_with_a_handshake_rtt() {
    // RFC 3448 §4.2: X = 1 packet/second, R undefined; RFC 5348 §4.2 would give W_init / R =
    // 43800 B/s here.
    let c = rfc3448(Some(ms(100)));
    assert_eq!(c.version(), TfrcVersion::Rfc3448);
    assert!(close(bytes_per_sec(&c), S as f64, 1e-3));
    assert_eq!(c.state().rtt, Duration::ZERO);
    assert_eq!(c.poll_timeout(), Some(Time::ZERO + Duration::from_secs(2)));
    let c5348 = TfrcSender::new(S, Some(ms(100)), Time::ZERO);
    assert!(close(bytes_per_sec(&c5348), 43_800.0, 1e-3));
}

#[test]
fn rfc3448_slow_start_starts_from_one_packet_per_rtt_and_doubles_capped_by_2_x_recv() {
    let mut c = rfc3448(None);
    send(&mut c, at(0));
    c.on_feedback(at(100), &report(100, 1460.0, 0.0));
    // RFC 3448 §4.3 step 4: max(min(2 * 1460, 2 * 1460), s/R = 14600) = 14600 B/s, where RFC 5348
    // raises X to W_init / R = 43800 B/s.
    assert!(
        close(bytes_per_sec(&c), 14_600.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
    send_span(&mut c, 100, 200);
    c.on_feedback(at(200), &report(100, 14_600.0, 0.0));
    assert!(
        close(bytes_per_sec(&c), 29_200.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
    // Capped by 2 X_recv.
    send_span(&mut c, 200, 300);
    c.on_feedback(at(300), &report(100, 20_000.0, 0.0));
    assert!(
        close(bytes_per_sec(&c), 40_000.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
    // At most one doubling per RTT.
    c.on_feedback(at(350), &report(100, 1e6, 0.0));
    assert!(
        close(bytes_per_sec(&c), 40_000.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
    // The nofeedback timer runs max(4R, 2s/X) from the new X (§4.3 step 5): 4 * 100 ms.
    assert_eq!(c.poll_timeout(), Some(at(350) + ms(400)));
}

#[test]
fn rfc3448_a_data_limited_period_lets_a_low_x_recv_cut_the_rate() {
    // The RFC 5348 twin of this test (data_limited_interval_does_not_let_a_low_x_recv_cut_the_rate)
    // keeps 100000 B/s through the quiet period; RFC 3448 §4.3 has no X_recv_set and no
    // data-limited rule, so X = max(min(X_calc, 2 X_recv), s/t_mbi) follows the last report.
    let mut c = rfc3448(None);
    let mut now = 0;
    for _ in 0..3 {
        now += 100;
        send(&mut c, at(now - 50));
        c.on_feedback(at(now), &report(100, 50_000.0, 0.01));
    }
    assert!(
        close(bytes_per_sec(&c), 100_000.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
    for _ in 0..5 {
        c.on_data_limited(at(now + 10));
        now += 100;
        c.on_feedback(at(now), &report(100, 5_000.0, 0.01));
    }
    assert!(
        close(bytes_per_sec(&c), 10_000.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
}

#[test]
fn rfc3448_no_feedback_before_any_report_halves_x_and_waits_2s_over_x() {
    // RFC 3448 §4.4: X = max(X/2, s/t_mbi), then the timer runs max(2 s, 2s/X) with no R yet:
    // 2 * 1460 / 730 = 4 s (RFC 5348 restarts it at 2 s).
    let mut c = rfc3448(None);
    c.handle_timeout(at(2000));
    assert!(
        close(bytes_per_sec(&c), 730.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
    assert_eq!(c.poll_timeout(), Some(at(6000)));
    let mut c5348 = TfrcSender::new(S, None, Time::ZERO);
    c5348.handle_timeout(at(2000));
    assert_eq!(c5348.poll_timeout(), Some(at(4000)));
}

#[test]
fn rfc3448_no_feedback_halves_the_cached_x_recv() {
    let mut c = rfc3448(None);
    let mut now = 0;
    for _ in 0..3 {
        now += 100;
        send(&mut c, at(now - 50));
        c.on_feedback(at(now), &report(100, 200_000.0, 0.01));
    }
    let x_calc = c.state().x_calc.bytes_per_sec();
    assert!(close(bytes_per_sec(&c), x_calc, 1e-3));
    // X_calc <= 2 X_recv: X_recv = X_calc / 4, X = min(X_calc, 2 X_recv) = X_calc / 2.
    send(&mut c, at(now + 10));
    let t = c.poll_timeout().unwrap();
    c.handle_timeout(t);
    assert!(
        close(bytes_per_sec(&c), x_calc / 2.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
    assert!(close(c.state().x_recv.bytes_per_sec(), x_calc / 4.0, 1e-3));
    // X_calc > 2 X_recv now: X_recv = X_recv / 2 and X = 2 X_recv = X_calc / 4.
    send(&mut c, t + ms(10));
    let t = c.poll_timeout().unwrap();
    c.handle_timeout(t);
    assert!(
        close(bytes_per_sec(&c), x_calc / 4.0, 1e-3),
        "{}",
        bytes_per_sec(&c)
    );
    // Idle since the timer was set with X_recv below four packets per RTT: not halved again.
    let mut idle = rfc3448(None);
    idle.on_feedback(at(100), &report(100, 20_000.0, 0.01));
    let before = bytes_per_sec(&idle);
    let t = idle.poll_timeout().unwrap();
    idle.handle_timeout(t);
    assert_eq!(bytes_per_sec(&idle), before);
}

#[test]
fn oscillation_prevention_paces_by_the_root_of_the_rtt_sample_against_its_mean() {
    // RFC 5348 §4.5: the same feedback (p = 1%, X_recv high) to two senders, one with the
    // mechanism. A first sample of 100 ms makes R_sqmean = sqrt(0.1): X_inst = X. A second
    // of 400 ms (a queue building) gives R_sqmean = 0.9 sqrt(0.1) + 0.1 sqrt(0.4) and
    // X_inst = X R_sqmean / sqrt(0.4), below X; a third back at 100 ms lifts X_inst above X.
    let mut plain = TfrcSender::new(S, Some(ms(100)), Time::ZERO);
    let mut damped =
        TfrcSender::new(S, Some(ms(100)), Time::ZERO).with_oscillation_prevention(true);
    let mut mean = 0.1f64.sqrt();
    for (k, rtt) in [100u64, 400, 100].into_iter().enumerate() {
        let now = at(1000 * (k as u64 + 1));
        for c in [&mut plain, &mut damped] {
            send_span(c, 1000 * k as u64, 1000 * (k as u64 + 1));
            c.on_feedback(now, &report(rtt, 1e6, 0.01));
        }
        let root = (rtt as f64 / 1000.0).sqrt();
        if k > 0 {
            mean = 0.9 * mean + 0.1 * root;
        }
        let x = bytes_per_sec(&plain);
        assert!(
            close(bytes_per_sec(&damped), x * mean / root, 1e-6),
            "{k}: {x}"
        );
    }
    assert!(bytes_per_sec(&damped) > bytes_per_sec(&plain));
    // Off (the default), the pacing rate is X.
    assert_eq!(plain.state().rate, Rate::from_bytes_per_sec(plain.x));
}
