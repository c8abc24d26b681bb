//! The fluid model against the packet simulator on one chart (`qstp fluid --compare-with`): for
//! a Free & Stunts scenario, the Free's, the mean Stunt's and the mean cross flow's goodput over
//! time from both, with the Free's target, in packets per second as the paper's Fig. 3.

use crate::figures::delegation::delegation_series_of;
use crate::metrics::RunSeries;
use crate::plot::{Chart, Line, Shade};
use crate::scenario::Scenario;

/// The curves of one run: time (s) against packets per second.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Curves {
    /// The Free.
    pub free: Vec<(f64, f64)>,
    /// The mean over the Stunts.
    pub stunt: Vec<(f64, f64)>,
    /// The mean over the cross flows (every group but the Free's and the Stunts').
    pub cross: Vec<(f64, f64)>,
    /// The Free's target.
    pub target: Vec<(f64, f64)>,
}

/// Packets per second of payload, the unit of the trace: the scenario's segment payload.
fn payload_bits(scenario: &Scenario) -> f64 {
    qstp_dataplane::headers::tcp_payload(scenario.packet_size as u64) as f64 * 8.0
}

/// The curves of `series` (a run of `scenario`), from the goodput through the lab's 1 s window;
/// `None` when the scenario has no delegation group.
pub fn curves(scenario: &Scenario, series: &RunSeries) -> Option<Curves> {
    let d = delegation_series_of(scenario, series, |f| &f.goodput_bps)?;
    let bits = payload_bits(scenario);
    let packets = |bps: &[f64]| -> Vec<(f64, f64)> {
        d.time_s
            .iter()
            .zip(bps)
            .map(|(&t, &v)| (t, v / bits))
            .collect()
    };
    Some(Curves {
        free: packets(&d.free_bps),
        stunt: packets(&d.stunt_mean_bps),
        cross: packets(&d.cross_mean_bps),
        target: packets(&d.target_bps),
    })
}

/// One chart of both models' curves; `title` names the scenario.
pub fn comparison(title: &str, fluid: &Curves, packet: &Curves, warmup: f64) -> Chart {
    let line = |label: &str, points: &[(f64, f64)]| Line {
        label: label.into(),
        points: points.to_vec(),
        ..Default::default()
    };
    let mut lines = vec![
        line("Free, fluid", &fluid.free),
        line("Free, packet", &packet.free),
        line("mean Stunt, fluid", &fluid.stunt),
        line("mean Stunt, packet", &packet.stunt),
    ];
    if !fluid.cross.is_empty() {
        lines.push(line("mean cross, fluid", &fluid.cross));
        lines.push(line("mean cross, packet", &packet.cross));
    }
    lines.push(line("Free's target", &fluid.target));
    Chart {
        title: format!("{title}: fluid model against packet simulation"),
        x_label: "time (s)".into(),
        y_label: "goodput, 1 s window (packets/s)".into(),
        lines,
        references: Vec::new(),
        shade: (warmup > 0.0).then(|| Shade {
            label: "warm-up".into(),
            from: 0.0,
            to: warmup,
        }),
        y_range: None,
        scatter: false,
        categories: Vec::new(),
    }
}

/// Mean of a curve's values from time `from` (s) on; `None` when it has none there.
pub fn mean_after(curve: &[(f64, f64)], from: f64) -> Option<f64> {
    let values: Vec<f64> = curve
        .iter()
        .filter(|(t, _)| *t > from)
        .map(|p| p.1)
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::FlowSeries;
    use crate::scenario::{parse, Overrides};
    use qstp_proto::Duration;

    const PLAN: &str = r#"
name = "c"
duration = "3s"
bin = "1s"
packet_size = 1040
[bottleneck]
rate = "10M"
queue = { kind = "red", limit = 40, curve = [10, 40, 0.1] }
[[group]]
name = "F"
protocol = "tcp"
rtt = "100ms"
[[group]]
name = "S"
protocol = "tcp"
flows = 2
rtt = "100ms"
[[group]]
name = "X"
protocol = "tcp"
flows = 2
rtt = "100ms"
[delegation]
free = "F"
stunts = "S"
controller = { kind = "none" }
trace = { kind = "step", at = ["0s", "2s"], rate = ["8000", "16000"] }
preprocess = false
"#;

    fn flow(group: usize, flow: u32, goodput_bps: Vec<f64>) -> FlowSeries {
        FlowSeries {
            group,
            flow,
            goodput_bps,
            ..FlowSeries::default()
        }
    }

    #[test]
    fn curves_are_per_flow_means_in_payload_packets() {
        let plan = parse(PLAN, "c.toml", &Overrides::default()).unwrap();
        let scenario = &plan.points[0].scenario;
        // 1000-byte payloads: 8000 bit/s is one packet per second.
        let series = RunSeries {
            bin: Duration::from_secs(1),
            flows: vec![
                flow(0, 0, vec![8000.0, 16000.0, 24000.0]),
                flow(1, 0, vec![8000.0; 3]),
                flow(1, 1, vec![24000.0; 3]),
                flow(2, 0, vec![0.0; 3]),
                flow(2, 1, vec![80000.0; 3]),
            ],
            queues: Vec::new(),
        };
        let c = curves(scenario, &series).unwrap();
        assert_eq!(c.free, vec![(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)]);
        assert_eq!(c.stunt[0], (1.0, 2.0));
        assert_eq!(c.cross[2], (3.0, 5.0));
        assert_eq!(c.target, vec![(1.0, 1.0), (2.0, 2.0), (3.0, 2.0)]);
        assert_eq!(mean_after(&c.free, 1.5), Some(2.5));
        let chart = comparison("c", &c, &c, 0.0);
        assert_eq!(chart.lines.len(), 7);
        assert!(crate::plot::render(&chart).is_ok());
    }
}
