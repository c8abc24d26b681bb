//! The high-speed TCPs on the high-speed TCP paper's dumbbell (§III A:
//! 1 Gbit/s, 1 ms access links; 200 Mbit/s, 98 ms, 100-packet drop-tail bottleneck; MSS 1460),
//! one flow alone: each of the eight regains the link after its losses far sooner than NewReno, whose window
//! grows by one segment per 200 ms round trip against a bandwidth-delay product of 3,333.

use qstp_proto::{Duration, Rate};
use qstp_sim::TcpSpec;
use qstp_sim::{run, AccessSpec, GroupSpec, Protocol, SimSpec};
use qstp_tcp::{CcSpec, TcpOptions};

const SECONDS: u64 = 120;

/// Per 1-s bin, the flow's share of the 200 Mbit/s bottleneck.
fn utilisation(cc: &str) -> Vec<f64> {
    let mut spec = SimSpec::dumbbell(
        Rate::from_mbps(200),
        Duration::from_millis(98),
        100,
        SECONDS,
    );
    spec.packet_size = 1500;
    let mut g = GroupSpec::new(
        "S",
        Protocol::Tcp(TcpSpec {
            congestion: CcSpec::named(cc),
            options: TcpOptions::default(),
        }),
        1,
        Duration::from_millis(200),
    );
    g.access = Some(AccessSpec {
        rate: Rate::from_mbps(1000),
        delay: Duration::from_millis(1),
    });
    spec.groups.push(g);
    let out = run(&spec).unwrap();
    out.flows[0]
        .received_bytes
        .iter()
        .map(|&b| b as f64 * 8.0 / 200e6)
        .collect()
}

/// Mean utilisation over the second half of the run.
fn late_mean(u: &[f64]) -> f64 {
    let late = &u[u.len() / 2..];
    late.iter().sum::<f64>() / late.len() as f64
}

#[test]
fn high_speed_controls_hold_the_link_where_newreno_cannot() {
    let reno = utilisation("newreno");
    let reno_late = late_mean(&reno);
    assert!(reno_late < 0.5, "newreno {reno_late:.3}");
    for cc in [
        "highspeed",
        "bic",
        "scalable",
        "cubic",
        "htcp",
        "illinois",
        "yeah",
        "compound",
    ] {
        let u = utilisation(cc);
        let late = late_mean(&u);
        // After the first losses (the slow-start overshoot, within 10 s), the link is back at
        // 90% within the run, and the second half averages well above NewReno's.
        let back = u.iter().skip(10).position(|&x| x >= 0.9);
        assert!(back.is_some(), "{cc} never regains 90%: {u:?}");
        assert!(
            late > reno_late + 0.2,
            "{cc} {late:.3} vs newreno {reno_late:.3}"
        );
    }
}
