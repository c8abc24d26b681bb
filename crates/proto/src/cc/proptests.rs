//! Property tests over all rate controllers, the receiver and the pacer.

use super::*;
use crate::config::GtfrcRule;
use proptest::prelude::*;

const S: usize = 1460;

/// One thing that can happen to a sender.
#[derive(Debug, Clone)]
enum Step {
    Feedback {
        rtt_us: u64,
        x_recv_bps: u64,
        p: f64,
    },
    Sent,
    DataLimited,
    Timeout,
    Wait {
        us: u64,
    },
}

fn any_p() -> impl Strategy<Value = f64> {
    prop_oneof![
        0.0..=1.0f64,
        Just(0.0),
        Just(1.0),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(-1.0),
        Just(7.5),
        1e-9..1e-3f64,
    ]
}

fn any_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (
            0..5_000_000u64,
            prop_oneof![0..100_000_000u64, any::<u64>()],
            any_p()
        )
            .prop_map(|(rtt_us, x_recv_bps, p)| Step::Feedback {
                rtt_us,
                x_recv_bps,
                p
            }),
        Just(Step::Sent),
        Just(Step::DataLimited),
        Just(Step::Timeout),
        (0..3_000_000u64).prop_map(|us| Step::Wait { us }),
    ]
}

/// Apply `steps`; after each, check the invariants every controller keeps. Returns the states.
fn run(
    c: &mut dyn RateController,
    steps: &[Step],
    target: Rate,
) -> Result<Vec<RateState>, TestCaseError> {
    let floor = S as f64 / 64.0;
    let mut now = Time::ZERO;
    let mut states = vec![];
    for step in steps {
        let mut after_feedback = false;
        match *step {
            Step::Feedback {
                rtt_us,
                x_recv_bps,
                p,
            } => {
                let report = FeedbackReport {
                    rtt_sample: Duration::from_micros(rtt_us),
                    x_recv: Rate::from_bps(x_recv_bps),
                    loss_event_rate: p,
                };
                c.on_feedback(now, &report);
                after_feedback = true;
            }
            Step::Sent => c.on_packet_sent(now, S),
            Step::DataLimited => c.on_data_limited(now),
            Step::Timeout => {
                if let Some(t) = c.poll_timeout() {
                    now = now.max(t);
                    c.handle_timeout(now);
                    // A handled timer moves into the future: no busy loop.
                    prop_assert!(!matches!(c.poll_timeout(), Some(t) if t <= now));
                }
            }
            Step::Wait { us } => now += Duration::from_micros(us),
        }
        let st = c.state();
        let rate = c.allowed_rate();
        prop_assert!(rate < Rate::MAX, "rate saturated");
        // RFC 5348 §4.3: never below s / t_mbi (one bit/s of rounding).
        prop_assert!(
            rate.bytes_per_sec() >= floor - 0.125,
            "rate {} below s/t_mbi",
            rate
        );
        prop_assert!(st.loss_event_rate.is_finite() && (0.0..=1.0).contains(&st.loss_event_rate));
        // gTFRC paper Fig. 1: out of slow start, a rate update from feedback never leaves X < g.
        if after_feedback && !st.slow_start {
            prop_assert!(rate >= target, "rate {} below target {}", rate, target);
        }
        states.push(st);
    }
    Ok(states)
}

proptest! {
    #[test]
    fn every_controller_stays_finite_and_above_the_minimum_rate(
        steps in prop::collection::vec(any_step(), 1..120),
        handshake_rtt_ms in prop::option::of(0..2_000u64),
        target_kbps in 0..5_000u64,
    ) {
        let rtt = handshake_rtt_ms.map(Duration::from_millis);
        let g = Rate::from_kbps(target_kbps);
        run(&mut TfrcSender::new(S, rtt, Time::ZERO), &steps, Rate::ZERO)?;
        run(&mut Aimd::new(S, rtt, Time::ZERO), &steps, Rate::ZERO)?;
        // Both rules may sit below g when the receiver reports less than g / 2: the QSTP rule
        // (eq. (2)) always, the gTFRC paper's Fig. 1 when the equation rate is above g.
        run(&mut Gtfrc::new(g, S, rtt, Time::ZERO), &steps, Rate::ZERO)?;
        run(&mut Gtfrc::with_rule(g, GtfrcRule::Fig1, S, rtt, Time::ZERO), &steps, Rate::ZERO)?;
        let fixed = run(&mut FixedRate::new(g.max(Rate::from_kbps(1))), &steps, Rate::ZERO)?;
        prop_assert!(fixed.iter().all(|s| s.rate == g.max(Rate::from_kbps(1))));
    }

    #[test]
    fn gtfrc_without_target_is_tfrc_on_any_sequence(
        steps in prop::collection::vec(any_step(), 1..120),
        handshake_rtt_ms in prop::option::of(1..2_000u64),
    ) {
        let rtt = handshake_rtt_ms.map(Duration::from_millis);
        let a = run(&mut TfrcSender::new(S, rtt, Time::ZERO), &steps, Rate::ZERO)?;
        let b = run(&mut Gtfrc::new(Rate::ZERO, S, rtt, Time::ZERO), &steps, Rate::ZERO)?;
        prop_assert_eq!(a, b);
    }

    #[test]
    fn receiver_reports_stay_sane_on_any_arrival_pattern(
        arrivals in prop::collection::vec((0..50u64, 0..20_000u64, 0..400u64, 0..2000usize), 1..300),
        far_jump in any::<bool>(),
    ) {
        let mut r = TfrcReceiver::new(S);
        let mut now = Time::ZERO;
        let mut number = 0u64;
        for (i, &(step, gap_us, rtt_ms, size)) in arrivals.iter().enumerate() {
            // Mostly increasing numbers with gaps and some going back (reordering, duplicates).
            number = if step < 40 { number + step } else { number.saturating_sub(step - 40) };
            if far_jump && i == arrivals.len() / 2 {
                number = number.saturating_add(1 << 62);
            }
            now += Duration::from_micros(gap_us);
            r.on_data(now, number, now.wire_micros(), Duration::from_millis(rtt_ms), size);
            let due = r.handle_timeout(now);
            if due || i % 7 == 0 {
                let fb = r.feedback(now);
                prop_assert!(fb.loss_event_rate.is_finite() && (0.0..=1.0).contains(&fb.loss_event_rate));
                prop_assert!(fb.x_recv < Rate::MAX);
            } else {
                // A timer that did not ask for feedback is in the future or disarmed: no busy loop.
                prop_assert!(!matches!(r.poll_timeout(), Some(t) if t <= now));
            }
        }
    }

    #[test]
    fn pacer_never_schedules_in_the_past_and_bursts_stay_bounded(
        sends in prop::collection::vec((0..10_000u64, 1..10_000_000_000u64, 1..9000usize), 1..200),
        max_burst in 1..64u32,
    ) {
        let mut p = Pacer::new(max_burst);
        let mut now = Time::ZERO;
        for &(gap_us, bps, size) in &sends {
            now += Duration::from_micros(gap_us);
            let rate = Rate::from_bps(bps);
            let t = p.next_send_time(now, rate, size).max(now);
            // Back to back, at most max(1, max_burst) packets leave at t.
            let mut burst = 0;
            while p.next_send_time(t, rate, size) <= t {
                p.on_sent(t, rate, size);
                burst += 1;
                prop_assert!(burst <= max_burst.max(1), "burst {} > {}", burst, max_burst);
            }
            now = t;
        }
    }
}
