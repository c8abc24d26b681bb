//! The Free & Stunts fluid model (Free & Stunts paper §III): TCP flows sharing a RED
//! bottleneck converge to their fair share, the solution does not depend on the step, delegation
//! lets the Free follow a target above its share, and what the model cannot solve is refused
//! naming its key.

// The simulator's spec builders for tests, shared rather than copied.
#[path = "../../sim/tests/it/common/mod.rs"]
mod common;

use common::{cbr, newreno};
use qstp_dataplane::queue::{QueueSpec, RedParams, RedSpec};
use qstp_fluid::{solve, FluidParams};
use qstp_proto::{Duration, Rate};
use qstp_sim::delegation::{matching, ControllerSpec, Matching, Trace};
use qstp_sim::spec::DelegationSpec;
use qstp_sim::{GroupSpec, RunOutput, SimError, SimSpec, Topology};

const PACKET: usize = 1000;

/// A dumbbell of C packets per second whose bottleneck is RED with `curve`.
fn red_dumbbell(c: u64, limit: usize, curve: [f64; 3], seconds: u64) -> SimSpec {
    let mut spec = SimSpec::dumbbell(
        Rate::from_bps(c * PACKET as u64 * 8),
        Duration::from_millis(10),
        limit,
        seconds,
    );
    spec.packet_size = PACKET;
    if let Topology::Dumbbell { bottleneck } = &mut spec.topology {
        bottleneck.queue = QueueSpec::Red(RedSpec {
            limit,
            params: RedParams {
                min_th: curve[0],
                max_th: curve[1],
                max_p: curve[2],
            },
            weight: 0.002,
            wait: false,
            ecn: false,
        });
    }
    spec
}

fn run(spec: &SimSpec, step: Duration) -> RunOutput {
    let params = FluidParams {
        step,
        ..FluidParams::default()
    };
    solve(spec, &params, &mut |_| {}).unwrap()
}

/// Packets per second of flow `i` over the bins from `from` on (1 s bins).
fn rate(out: &RunOutput, i: usize, from: usize) -> f64 {
    let p = &out.flows[i].received_packets[from..];
    p.iter().sum::<u64>() as f64 / p.len() as f64
}

// A setting the TCP/RED loop is stable in: the queue settles above B_min by more than half the
// bandwidth-delay product (RC = 30 packets). With RC large against the RED ramp the model,
// like TCP over RED, oscillates in a limit cycle instead (Hollot et al. 2001).
const C: u64 = 500;
const CURVE: [f64; 3] = [10.0, 200.0, 0.2];

#[test]
fn identical_flows_converge_to_their_fair_share_with_the_average_queue_on_the_red_ramp() {
    let m = 10u32;
    let [b_min, b_max, p_max] = CURVE;
    let mut spec = red_dumbbell(C, 200, CURVE, 60);
    spec.groups = vec![GroupSpec::new("A", newreno(), m, Duration::from_millis(60))];
    let out = run(&spec, Duration::from_millis(1));
    let fair = C as f64 / f64::from(m);
    for i in 0..m as usize {
        let x = rate(&out, i, 30);
        assert!((x - fair).abs() < 0.02 * fair, "flow {i}: {x} vs {fair}");
    }
    // The queue, sampled at the end of each second of the last half, sits on RED's ramp: below
    // B_min RED would not signal, at B_max it would drop everything.
    let q = &out.queue_series[0].packets[30..];
    let mean = q.iter().sum::<u64>() as f64 / q.len() as f64;
    assert!(b_min < mean && mean < b_max, "queue {mean}");
    // Eq. (14) at equilibrium: x = sqrt(2 / p) / r, so p = 2 / (x r)^2 with r = D + b / C; RED
    // gives p on its line through (B_min, 0) and (B_max, P_max) (eq. 8).
    let r = 0.06 + mean / C as f64;
    let p = 2.0 / (fair * r).powi(2);
    let v = b_min + p / p_max * (b_max - b_min);
    assert!((v - mean).abs() < 2.0, "queue {mean}, equilibrium {v}");
}

/// 1 Free, 4 Stunts and 5 cross flows (RTTs 50 to 70 ms) on C packets/s, the Free asking for
/// `target` packets per second.
fn delegated(controller: ControllerSpec, target: f64, reverse: bool) -> SimSpec {
    let mut spec = red_dumbbell(C, 200, CURVE, 40);
    spec.warmup = Duration::from_secs(10);
    let ms = Duration::from_millis;
    spec.groups = vec![
        GroupSpec::new("F", newreno(), 1, ms(60)),
        GroupSpec::new("S", newreno(), 4, ms(60)),
        GroupSpec::new("X1", newreno(), 2, ms(50)),
        GroupSpec::new("X2", newreno(), 1, ms(60)),
        GroupSpec::new("X3", newreno(), 2, ms(70)),
    ];
    // The controller compares payload throughput with the trace.
    let payload_bits = qstp_dataplane::headers::tcp_payload(PACKET as u64) as f64 * 8.0;
    spec.delegation = Some(DelegationSpec {
        free: "F".into(),
        stunts: "S".into(),
        controller,
        period: ms(200),
        trace: Trace::step(
            &[Duration::ZERO],
            &[Rate::from_bps((target * payload_bits) as u64)],
        )
        .unwrap(),
        reverse,
        by: Default::default(),
    });
    spec
}

/// The Free's matching after the warm-up.
fn matched(out: &RunOutput, warmup: Duration) -> Matching {
    let d = out.delegation.as_ref().unwrap();
    let skip = (warmup.as_nanos() / d.period.as_nanos()) as usize;
    matching(&d.samples[skip..]).unwrap()
}

#[test]
fn halving_the_step_leaves_the_solution_unchanged() {
    let spec = delegated(ControllerSpec::Pi { gain: 0.002 }, 100.0, true);
    let coarse = run(&spec, Duration::from_millis(1));
    let fine = run(&spec, Duration::from_micros(500));
    let (a, b) = (rate(&coarse, 0, 10), rate(&fine, 0, 10));
    assert!((a - b).abs() < 0.01 * b, "Free's mean rate {a} vs {b}");
    let (va, vb) = (
        matched(&coarse, spec.warmup).v_star,
        matched(&fine, spec.warmup).v_star,
    );
    eprintln!("Free {a:.2} vs {b:.2} packets/s, V* {va:.4e} vs {vb:.4e}");
    assert!((va - vb).abs() < 0.1 * vb.max(va), "V* {va} vs {vb}");
    let (qa, qb) = (
        &coarse.queue_series[0].packets,
        &fine.queue_series[0].packets,
    );
    let mean = |q: &[u64]| q[10..].iter().sum::<u64>() as f64 / (q.len() - 10) as f64;
    assert!((mean(qa) - mean(qb)).abs() < 1.0, "{qa:?} vs {qb:?}");
}

#[test]
fn delegation_lets_the_free_follow_a_target_above_its_share() {
    // Twice the fair share of 50 packets/s.
    let target = 100.0;
    // Without reverse delegation: above its share the Free would also take every smaller Stunt's
    // signals whenever it overshoots, a sawtooth this test is not about.
    let none = delegated(ControllerSpec::None, target, false);
    let pi = delegated(ControllerSpec::Pi { gain: 0.002 }, target, false);
    let step = Duration::from_millis(1);
    let (out_none, out_pi) = (run(&none, step), run(&pi, step));
    let (m_none, m_pi) = (matched(&out_none, none.warmup), matched(&out_pi, pi.warmup));
    let (x_none, x_pi) = (rate(&out_none, 0, 10), rate(&out_pi, 0, 10));
    eprintln!(
        "Free: none {x_none:.1}, pi {x_pi:.1} packets/s; V* none {:.3e}, pi {:.3e}",
        m_none.v_star, m_pi.v_star
    );
    assert!(x_none < 0.7 * target, "without delegation: {x_none}");
    assert!(
        (x_pi - target).abs() < 0.05 * target,
        "with delegation: {x_pi}"
    );
    assert!(
        m_pi.v_star * 4.0 < m_none.v_star,
        "V* {} vs {}",
        m_pi.v_star,
        m_none.v_star
    );
    // The Stunts pay: each gets less than a cross flow of the same RTT.
    let (stunt, cross) = (rate(&out_pi, 1, 10), rate(&out_pi, 7, 10));
    assert!(stunt < cross, "Stunt {stunt} vs cross {cross}");
    let record = out_pi.delegation.as_ref().unwrap();
    assert!(record.delegated > 0, "{record:?}");
    // Handed the trace itself, as the packet simulator's controller, the PI integrates the
    // fluid Free up to eqs. 3-4's 1.33 T, the peak a packet sawtooth would aim at.
    let margin = FluidParams {
        margin: true,
        ..FluidParams::default()
    };
    let out = solve(&pi, &margin, &mut |_| {}).unwrap();
    let x = rate(&out, 0, 10);
    let goal = qstp_sim::delegation::controller::MARGIN * target;
    assert!(
        (x - goal).abs() < 0.05 * goal,
        "with the margin: {x} vs {goal}"
    );
}

fn refused(spec: &SimSpec, step: Duration) -> String {
    let params = FluidParams {
        step,
        ..FluidParams::default()
    };
    match solve(spec, &params, &mut |_| {}) {
        Err(SimError::Invalid { key, .. }) => key,
        other => panic!("not refused as invalid: {other:?}"),
    }
}

#[test]
fn what_the_model_cannot_solve_is_refused_naming_the_key() {
    let mut spec = red_dumbbell(1000, 100, [20.0, 80.0, 0.1], 10);
    spec.groups = vec![GroupSpec::new("A", newreno(), 2, Duration::from_millis(40))];
    // The sender's side of the path is 40 ms / 2 - 10 ms = 10 ms.
    assert_eq!(refused(&spec, Duration::from_millis(11)), "fluid.step");
    assert_eq!(refused(&spec, Duration::ZERO), "fluid.step");
    assert!(solve(
        &spec,
        &FluidParams {
            step: Duration::from_millis(10),
            ..FluidParams::default()
        },
        &mut |_| {}
    )
    .is_ok());
    let mut tail = spec.clone();
    if let Topology::Dumbbell { bottleneck } = &mut tail.topology {
        bottleneck.queue = QueueSpec::drop_tail(100);
    }
    assert_eq!(refused(&tail, Duration::from_millis(1)), "bottleneck.queue");
    let mut udp = spec.clone();
    udp.groups.push(GroupSpec::new(
        "U",
        cbr(Rate::from_mbps(1)),
        1,
        Duration::from_millis(40),
    ));
    assert_eq!(
        refused(&udp, Duration::from_millis(1)),
        "groups[U].protocol"
    );
    let mut switched = spec.clone();
    switched.groups[0].onoff = Some(qstp_sim::Switching {
        on: Duration::from_secs(10),
        off: Duration::from_secs(10),
        random: true,
        flows: None,
    });
    assert_eq!(
        refused(&switched, Duration::from_millis(1)),
        "groups[A].onoff"
    );
}
