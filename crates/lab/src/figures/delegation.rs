//! What a Free & Stunts run looks like (Free & Stunts paper Figs. 4 and 6): the trace, the
//! Free's throughput, the mean Stunt's and the mean cross flow's over time, as a series file and
//! a figure; and, over a sweep, V+, V- and V* against the swept key (Figs. 5 and 7).

use super::{group_series, point_stem, Figure};
use crate::metrics::RunSeries;
use crate::plot::{Chart, Line, Shade};
use crate::scenario::{Plan, Scenario};
use crate::summary::Summary;
use qstp_proto::Duration;
use std::fmt::Write as _;

/// Per bin: the end of the bin (s), the trace's target there, and the Free's, the mean Stunt's
/// and the mean cross flow's throughput at the receiver (bit/s, the lab's 1 s TSW), or another
/// per-flow series ([`delegation_series_of`]).
#[derive(Debug, Clone, PartialEq)]
pub struct DelegationSeries {
    /// End of each bin, seconds.
    pub time_s: Vec<f64>,
    /// The trace at the end of each bin.
    pub target_bps: Vec<f64>,
    /// The Free connection.
    pub free_bps: Vec<f64>,
    /// The Stunts' total over their number.
    pub stunt_mean_bps: Vec<f64>,
    /// Every other group's flows' total over their number (a flow switched off counts as 0);
    /// empty when there is no cross traffic.
    pub cross_mean_bps: Vec<f64>,
}

/// The delegation series of one run of `scenario`, if it has a delegation group.
pub fn delegation_series(scenario: &Scenario, series: &RunSeries) -> Option<DelegationSeries> {
    delegation_series_of(scenario, series, |f| &f.throughput_bps)
}

/// [`delegation_series`] of another per-flow series than the throughput (`pick`), in its units.
pub fn delegation_series_of(
    scenario: &Scenario,
    series: &RunSeries,
    pick: fn(&crate::metrics::FlowSeries) -> &Vec<f64>,
) -> Option<DelegationSeries> {
    let d = scenario.delegation.as_ref()?;
    let index = |name: &str| scenario.groups.iter().position(|g| g.name == name);
    let (free, stunts) = (index(&d.free)?, index(&d.stunts)?);
    let total = |g: usize| group_series(series, g, pick);
    let free_bps = total(free);
    let bins = free_bps.len();
    let per_flow = |groups: &[usize]| -> Vec<f64> {
        let flows: u32 = groups.iter().map(|&g| scenario.groups[g].flows).sum();
        let sums: Vec<Vec<f64>> = groups.iter().map(|&g| total(g)).collect();
        (0..bins)
            .map(|i| {
                let sum: f64 = sums.iter().map(|s| s.get(i).copied().unwrap_or(0.0)).sum();
                sum / f64::from(flows.max(1))
            })
            .collect()
    };
    let cross: Vec<usize> = (0..scenario.groups.len())
        .filter(|&g| g != free && g != stunts)
        .collect();
    let bin = series.bin.as_secs_f64();
    let time_s: Vec<f64> = (0..bins).map(|i| (i + 1) as f64 * bin).collect();
    Some(DelegationSeries {
        target_bps: time_s
            .iter()
            .map(|&t| d.trace.at(Duration::from_secs_f64(t)).bps() as f64)
            .collect(),
        stunt_mean_bps: per_flow(&[stunts]),
        cross_mean_bps: if cross.is_empty() {
            Vec::new()
        } else {
            per_flow(&cross)
        },
        free_bps,
        time_s,
    })
}

/// The series as CSV: `time_s,target_bps,free_bps,stunt_mean_bps,cross_mean_bps`.
pub fn delegation_csv(s: &DelegationSeries) -> String {
    let mut out = String::from("time_s,target_bps,free_bps,stunt_mean_bps,cross_mean_bps\n");
    for (i, t) in s.time_s.iter().enumerate() {
        let cross = s
            .cross_mean_bps
            .get(i)
            .map_or(String::new(), |c| format!("{c:.0}"));
        let _ = writeln!(
            out,
            "{t:.3},{:.0},{:.0},{:.0},{cross}",
            s.target_bps[i], s.free_bps[i], s.stunt_mean_bps[i]
        );
    }
    out
}

/// Figs. 4 and 6 for one point: the target, the Free, the mean Stunt and the mean cross flow
/// over time (Mbit/s), the warm-up shaded.
pub fn delegation_figure(
    scenario: &Scenario,
    s: &DelegationSeries,
    summary: &Summary,
    p: usize,
    label: &str,
    seed: u64,
) -> Figure {
    let line = |name: &str, values: &[f64]| Line {
        label: name.into(),
        points: s
            .time_s
            .iter()
            .zip(values)
            .map(|(&t, &v)| (t, v / 1e6))
            .collect(),
        ..Default::default()
    };
    let d = scenario.delegation.as_ref();
    let mut lines = vec![
        line("target (trace)", &s.target_bps),
        line(
            &format!("Free ({})", d.map_or("", |d| d.free.as_str())),
            &s.free_bps,
        ),
        line(
            &format!(
                "mean Stunt ({} x {})",
                d.map_or("", |d| d.stunts.as_str()),
                d.and_then(|d| scenario.groups.iter().find(|g| g.name == d.stunts))
                    .map_or(0, |g| g.flows)
            ),
            &s.stunt_mean_bps,
        ),
    ];
    if !s.cross_mean_bps.is_empty() {
        lines.push(line("mean cross flow", &s.cross_mean_bps));
    }
    let warmup = scenario.warmup.as_secs_f64();
    Figure {
        stem: format!("delegation-{}", point_stem(summary, p)),
        point: Some(p),
        chart: Chart {
            title: format!(
                "Free & Stunts: the Free against its target, {label}, seed {seed} (throughput at the receiver, 1 s TSW)"
            ),
            x_label: "time (s)".into(),
            y_label: "throughput (Mbit/s)".into(),
            lines,
            shade: (warmup > 0.0).then(|| Shade {
                label: "warm-up (not in V+, V-, V*)".into(),
                from: 0.0,
                to: warmup,
            }),
            ..Default::default()
        },
        panels: Vec::new(),
    }
}

/// Figs. 5 and 7: for each numeric swept key, the Free's V+, V- and V* (mean over runs, in
/// (Mbit/s)^2) against it, one set of lines per combination of the other keys.
pub fn matching_figures(plan: &Plan, summary: &Summary) -> Vec<Figure> {
    let Some(free) = plan.base().delegation.as_ref().map(|d| d.free.clone()) else {
        return Vec::new();
    };
    let matching = |p: usize| {
        summary.points[p]
            .flows
            .iter()
            .find(|g| g.group == free)
            .and_then(|g| g.matching)
    };
    let mut out = Vec::new();
    for (axis, key) in plan.sweep_keys.iter().enumerate() {
        // A numeric axis, in the unit of its key (a rate in Mbit/s, a duration in ms).
        let Some((xs, unit)) = super::numeric_axis(plan, axis) else {
            continue;
        };
        let x_of = |p: usize| xs.get(p).copied();
        if (0..plan.points.len()).any(|p| matching(p).is_none()) {
            continue;
        }
        let mut lines = Vec::new();
        for (label, mut ps) in super::by_other_keys(plan, key) {
            ps.sort_by(|&a, &b| x_of(a).unwrap_or(0.0).total_cmp(&x_of(b).unwrap_or(0.0)));
            let suffix = if label.is_empty() {
                String::new()
            } else {
                format!(" [{label}]")
            };
            type Pick = fn(&qstp_sim::delegation::Matching) -> f64;
            let picks: [(&str, Pick); 3] = [
                ("V* (eq. 18)", |m| m.v_star),
                ("V+ (eq. 16)", |m| m.v_plus),
                ("V- (eq. 17)", |m| m.v_minus),
            ];
            for (name, pick) in picks {
                lines.push(Line {
                    label: format!("{name}{suffix}"),
                    points: ps
                        .iter()
                        .filter_map(|&p| Some((x_of(p)?, pick(&matching(p)?) / 1e12)))
                        .collect(),
                    ..Default::default()
                });
            }
        }
        let short = crate::summary::short_key(key);
        let mut x_label = super::axis_label(short, unit);
        if x_label == short {
            // A ratio or a gain: a pure number, said so.
            x_label.push_str(" (dimensionless)");
        }
        out.push(Figure {
            stem: format!("matching-vs-{}", key.replace(['.', '+', '/'], "-")),
            point: None,
            chart: Chart {
                title: format!(
                    "How the Free matched its trace against {key}, mean of {} run(s)",
                    summary.runs
                ),
                x_label,
                y_label: "variance ((Mbit/s)^2)".into(),
                lines,
                ..Default::default()
            },
            panels: Vec::new(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::execute;
    use crate::scenario::{parse, Overrides};

    /// The example file, shortened, with `sweep` in place of its own.
    fn run(sweep: &str) -> (Plan, Vec<crate::runner::PointResult>, Summary) {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/examples/free-stunts.toml"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let text = format!(
            "{}[sweep]\n{sweep}\n",
            &text[..text.find("[sweep]").unwrap()]
        );
        let overrides = Overrides {
            runs: Some(1),
            duration: Some(Duration::from_secs(70)),
            ..Default::default()
        };
        let plan = parse(&text, path, &overrides).unwrap();
        let results = execute(&plan, 2, crate::simulate, &|_| {}).unwrap();
        let summary = crate::summary::build(&plan, &results, &overrides);
        (plan, results, summary)
    }

    #[test]
    fn the_series_put_the_free_beside_the_trace_and_the_group_means() {
        let (plan, results, summary) = run("\"group.S.flows\" = [2, 4]");
        for (p, point) in plan.points.iter().enumerate() {
            let series = results[p].runs[0].series.as_ref().unwrap();
            let d = delegation_series(&point.scenario, series).unwrap();
            let stunts = point.scenario.groups[1].flows;
            let bins = (70.0 / series.bin.as_secs_f64()).round() as usize;
            assert_eq!(d.time_s.len(), bins);
            // The trace: 2.5 Mbit/s, then 1.5 from 60 s (at the end of each bin).
            let at = |t: f64| d.time_s.iter().position(|&x| x >= t).unwrap();
            assert_eq!(d.target_bps[at(59.0)], 2_500_000.0);
            assert_eq!(d.target_bps[at(60.5)], 1_500_000.0);
            let group = |g: usize| group_series(series, g, |f| &f.throughput_bps);
            assert_eq!(d.free_bps, group(0));
            for i in [at(10.0), at(40.0), at(65.0)] {
                assert!((d.stunt_mean_bps[i] - group(1)[i] / f64::from(stunts)).abs() < 1e-6);
                assert!((d.cross_mean_bps[i] - group(2)[i] / 5.0).abs() < 1e-6);
                assert!(d.free_bps[i] > 0.0 && d.stunt_mean_bps[i] > 0.0);
            }
            let csv = delegation_csv(&d);
            assert!(csv.starts_with("time_s,target_bps,free_bps,stunt_mean_bps,cross_mean_bps\n"));
            assert_eq!(csv.lines().count(), bins + 1);
            let figure = delegation_figure(&point.scenario, &d, &summary, p, "x", 1);
            assert_eq!(figure.chart.lines.len(), 4);
            assert!(figure.stem.starts_with("delegation-p0"));
        }
        // Figs. 5 and 7: V+, V- and V* against the number of Stunts, one point per value.
        let figures = matching_figures(&plan, &summary);
        assert_eq!(figures.len(), 1);
        let lines = &figures[0].chart.lines;
        assert_eq!(lines.len(), 3);
        // Units on both axes.
        assert_eq!(figures[0].chart.x_label, "S.flows (flows)");
        assert_eq!(figures[0].chart.y_label, "variance ((Mbit/s)^2)");
        assert!(lines
            .iter()
            .all(|l| l.points.len() == 2 && l.points[0].0 == 2.0));
        let v_star = summary.points[1].flows[0].matching.unwrap().v_star / 1e12;
        assert!((lines[0].points[1].1 - v_star).abs() < 1e-9);
    }

    #[test]
    fn a_sweep_over_a_word_draws_no_matching_figure() {
        let (plan, _, summary) = run("\"delegation.controller.kind\" = [\"none\", \"pi\"]");
        assert!(matching_figures(&plan, &summary).is_empty());
    }
}
