//! Free & Stunts in the simulator (Free & Stunts paper): a Free TCP connection that delegates
//! its congestion signals to Stunts reaches a target above its fair share, and the group takes no
//! more than as many plain TCP flows would.

use crate::common::newreno;
use qstp_proto::{Config, Duration, Preset, Rate};
use qstp_sim::delegation::{ControllerSpec, Trace};
use qstp_sim::spec::source::{Protocol, QstpSpec};
use qstp_sim::spec::DelegationSpec;
use qstp_sim::{run, GroupSpec, RunOutput, SimError, SimSpec};

const SECONDS: u64 = 60;

/// 1 Free, 6 Stunts and 5 cross flows on 10 Mbit/s, 100 ms: a fair share of 0.83 Mbit/s; the
/// Free asks for 2.5 Mbit/s.
fn scenario(controller: Option<ControllerSpec>) -> SimSpec {
    let rtt = Duration::from_millis(100);
    let mut spec = SimSpec::dumbbell(Rate::from_mbps(10), Duration::from_millis(20), 40, SECONDS);
    spec.groups = vec![
        GroupSpec::new("F", newreno(), 1, rtt),
        GroupSpec::new("S", newreno(), 6, rtt),
        GroupSpec::new("X", newreno(), 5, rtt),
    ];
    spec.delegation = controller.map(|controller| DelegationSpec {
        free: "F".into(),
        stunts: "S".into(),
        controller,
        period: Duration::from_millis(500),
        trace: Trace::step(&[Duration::ZERO], &[Rate::from_kbps(2500)]).unwrap(),
        reverse: true,
    });
    spec
}

/// Mean goodput of `group`'s flows over the second half of the run, bit/s.
fn goodput(out: &RunOutput, group: usize) -> f64 {
    let from = (SECONDS / 2) as usize;
    let flows: Vec<_> = out.flows.iter().filter(|f| f.group == group).collect();
    let bytes: u64 = flows
        .iter()
        .map(|f| f.delivered_bytes[from..].iter().sum::<u64>())
        .sum();
    bytes as f64 * 8.0 / (SECONDS - from as u64) as f64
}

#[test]
fn the_free_reaches_its_target_on_its_stunts_backs() {
    let plain = run(&scenario(None)).unwrap();
    let none = run(&scenario(Some(ControllerSpec::None))).unwrap();
    let on_off = run(&scenario(Some(ControllerSpec::OnOff))).unwrap();
    let (free_plain, free_none, free_on_off) =
        (goodput(&plain, 0), goodput(&none, 0), goodput(&on_off, 0));
    eprintln!(
        "Free: plain {free_plain:.0}, none {free_none:.0}, on/off {free_on_off:.0} bit/s; \
         cross: plain {:.0}, on/off {:.0}",
        goodput(&plain, 2),
        goodput(&on_off, 2)
    );
    // Without delegation the Free is one TCP flow among 12 (the "none" controller changes
    // nothing but who decides).
    assert!(free_none < 1.6e6, "no delegation: {free_none}");
    assert!(
        (free_none - free_plain).abs() < 0.5e6,
        "{free_none} vs {free_plain}"
    );
    // Delegating, it gets well above its share, towards its 2.5 Mbit/s.
    assert!(free_on_off > 1.8e6, "on/off: {free_on_off}");
    let record = on_off.delegation.as_ref().unwrap();
    assert!(record.delegated > 0, "{record:?}");
    // A control instant every 500 ms, the last before the end of the run.
    assert_eq!(record.samples.len(), (SECONDS * 2 - 1) as usize);
    // The Free and its Stunts together take no more than seven plain flows would (§II-B: the
    // group is not more aggressive than as many ordinary TCP flows): at most their 7/12 of what
    // all flows got, with 10% for the noise of one run.
    let share = |out: &RunOutput| {
        let group = goodput(out, 0) + goodput(out, 1);
        group / (group + goodput(out, 2))
    };
    let fair = 7.0 / 12.0;
    assert!(
        share(&on_off) < fair * 1.1,
        "delegating: {}",
        share(&on_off)
    );
    assert!(share(&plain) < fair * 1.1, "plain: {}", share(&plain));
}

#[test]
fn a_delegation_group_must_name_tcp_groups_and_a_single_free() {
    let mut spec = scenario(Some(ControllerSpec::OnOff));
    spec.delegation.as_mut().unwrap().free = "X".into();
    let err = run(&spec).unwrap_err();
    assert!(
        matches!(&err, SimError::Invalid { key, .. } if key == "delegation.free"),
        "{err}"
    );
    let mut spec = scenario(Some(ControllerSpec::OnOff));
    spec.delegation.as_mut().unwrap().stunts = "nobody".into();
    assert!(matches!(run(&spec), Err(SimError::Invalid { key, .. }) if key == "delegation.stunts"));
}

/// The same group of QSTP connections (TFRC + SACK byte streams; qstp-proto's connection module
/// `delegation`): `controller` None is the same connections each on its own.
fn qstp_scenario(controller: ControllerSpec) -> SimSpec {
    let tfrc_sack = || {
        Protocol::Qstp(QstpSpec {
            name: "tfrc-sack".into(),
            config: Config::preset(Preset::TfrcSack, Rate::ZERO),
            message_rate: None,
        })
    };
    let mut spec = scenario(Some(controller));
    spec.groups[0].protocol = tfrc_sack();
    spec.groups[1].protocol = tfrc_sack();
    spec
}

#[test]
fn a_qstp_free_reaches_its_target_on_its_qstp_stunts_backs_and_strangers_do_not_pay() {
    let none = run(&qstp_scenario(ControllerSpec::None)).unwrap();
    let pi = run(&qstp_scenario(ControllerSpec::Pi { gain: 0.0005 })).unwrap();
    let (free_none, free_pi) = (goodput(&none, 0), goodput(&pi, 0));
    let (cross_none, cross_pi) = (goodput(&none, 2), goodput(&pi, 2));
    eprintln!(
        "QSTP Free: none {free_none:.0}, pi {free_pi:.0} bit/s; cross: {cross_none:.0}, {cross_pi:.0}"
    );
    // On its own the Free is one of 12 (0.83 Mbit/s); delegating, it nears its 2.5 Mbit/s.
    assert!(free_none < 1.2e6, "no delegation: {free_none}");
    assert!(free_pi > 1.8e6, "pi: {free_pi}");
    let record = pi.delegation.as_ref().unwrap();
    assert!(record.delegated > 0, "{record:?}");
    let idle = none.delegation.as_ref().unwrap();
    assert_eq!(idle.delegated, 0, "controller none delegates nothing");
    // The Stunts pay, not the cross traffic: within 10% of what it got beside 7 plain flows.
    assert!(
        (cross_pi / cross_none - 1.0).abs() < 0.1,
        "cross traffic {cross_pi} against {cross_none}"
    );
}

#[test]
fn a_qstp_group_needs_byte_streams_of_one_protocol() {
    let mut spec = qstp_scenario(ControllerSpec::OnOff);
    spec.groups[1].protocol = crate::common::newreno();
    let err = run(&spec).unwrap_err();
    assert!(
        matches!(&err, SimError::Invalid { key, reason } if key == "delegation.stunts" && reason.contains("one protocol")),
        "{err}"
    );
    let mut spec = qstp_scenario(ControllerSpec::OnOff);
    spec.groups[0].protocol = Protocol::Qstp(QstpSpec {
        name: "tfrc".into(),
        config: Config::preset(Preset::Tfrc, Rate::ZERO),
        message_rate: None,
    });
    let err = run(&spec).unwrap_err();
    assert!(
        matches!(&err, SimError::Invalid { key, reason } if key == "delegation.free" && reason.contains("byte stream")),
        "{err}"
    );
}
