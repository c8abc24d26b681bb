//! The figures of a finished plan, as in the papers: throughput over time against the target
//! (QSTP Fig. 4, gTFRC Figs. 4 and 10), jitter over time (QSTP Fig. 7), and, when the sweep is over
//! a number of flows, the mean with min/max bars (QSTP Fig. 5) and the standard deviation (Fig. 6)
//! against that number.

use crate::metrics::RunSeries;
use crate::plot::{Chart, Line, Reference};
use crate::runner::PointResult;
use crate::scenario::{protocol_name, Plan};
use crate::summary::{params_label, Summary};

/// A chart and the file stem it is saved under.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// File name without extension, unique in the plan.
    pub stem: String,
    /// The sweep point it shows, for figures of one point.
    pub point: Option<usize>,
    /// The chart.
    pub chart: Chart,
}

/// A file-name-safe label of point `p`: `p03-AB.protocol=qstp`.
pub fn point_stem(summary: &Summary, p: usize) -> String {
    let label = if summary.points[p].params.is_empty() {
        String::new()
    } else {
        params_label(&summary.points[p].params)
    };
    let safe: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.=".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() {
        format!("p{p:02}")
    } else {
        format!("p{p:02}-{safe}")
    }
}

/// The sum over a group's flows of a per-flow series.
pub fn group_series(
    series: &RunSeries,
    group: usize,
    pick: impl Fn(&crate::metrics::FlowSeries) -> &Vec<f64>,
) -> Vec<f64> {
    let mut total: Vec<f64> = Vec::new();
    for f in series.flows.iter().filter(|f| f.group == group) {
        let values = pick(f);
        if total.len() < values.len() {
            total.resize(values.len(), 0.0);
        }
        for (t, v) in total.iter_mut().zip(values) {
            *t += v;
        }
    }
    total
}

/// Every figure of the plan.
pub fn figures(plan: &Plan, results: &[PointResult], summary: &Summary) -> Vec<Figure> {
    let mut out = Vec::new();
    for (p, (point, result)) in plan.points.iter().zip(results).enumerate() {
        let Some(series) = result.runs.first().and_then(|r| r.series.as_ref()) else {
            continue;
        };
        let seed = result.runs[0].seed;
        let label = params_label(&summary.points[p].params);
        let bin = series.bin.as_secs_f64();
        let time = |i: usize| (i + 1) as f64 * bin;
        let groups = &point.scenario.groups;
        let lines = groups
            .iter()
            .enumerate()
            .map(|(g, spec)| Line {
                label: format!(
                    "{} ({}, {} flow{})",
                    spec.name,
                    protocol_name(&spec.protocol),
                    spec.flows,
                    if spec.flows == 1 { "" } else { "s" }
                ),
                points: group_series(series, g, |f| &f.throughput_bps)
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (time(i), v / 1e3))
                    .collect(),
                bars: Vec::new(),
            })
            .collect();
        let references = groups
            .iter()
            .enumerate()
            .filter_map(|(i, g)| {
                g.target.map(|t| Reference {
                    label: format!("{} target", g.name),
                    y: t.bps() as f64 / 1e3,
                    line: Some(i),
                })
            })
            .collect();
        out.push(Figure {
            stem: format!("throughput-{}", point_stem(summary, p)),
            point: Some(p),
            chart: Chart {
                title: format!("Throughput at the receiver (1 s TSW), {label}, seed {seed}"),
                x_label: "time (s)".into(),
                y_label: "throughput (kbit/s)".into(),
                lines,
                references,
            },
        });
        let jitter_lines = groups
            .iter()
            .enumerate()
            .map(|(g, spec)| Line {
                label: format!("{} ({})", spec.name, protocol_name(&spec.protocol)),
                points: mean_jitter(series, g)
                    .into_iter()
                    .enumerate()
                    .filter_map(|(i, j)| j.map(|j| (time(i), j)))
                    .collect(),
                bars: Vec::new(),
            })
            .collect();
        out.push(Figure {
            stem: format!("jitter-{}", point_stem(summary, p)),
            point: Some(p),
            chart: Chart {
                title: format!("Jitter, {label}, seed {seed}"),
                x_label: "time (s)".into(),
                y_label: "jitter (ms)".into(),
                lines: jitter_lines,
                references: Vec::new(),
            },
        });
    }
    out.extend(flow_sweep_figures(plan, summary));
    out
}

/// Per bin, the mean jitter over the group's flows that received packets.
fn mean_jitter(series: &RunSeries, group: usize) -> Vec<Option<f64>> {
    let flows: Vec<_> = series.flows.iter().filter(|f| f.group == group).collect();
    let bins = flows.iter().map(|f| f.jitter_ms.len()).max().unwrap_or(0);
    (0..bins)
        .map(|i| {
            let values: Vec<f64> = flows
                .iter()
                .filter_map(|f| f.jitter_ms.get(i).copied().flatten())
                .collect();
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        })
        .collect()
}

/// QSTP Figs. 5 and 6: when one swept key is a number of flows, the group throughputs against it.
fn flow_sweep_figures(plan: &Plan, summary: &Summary) -> Vec<Figure> {
    let Some(axis) = plan
        .sweep_keys
        .iter()
        .position(|k| k.split('+').any(|part| part.ends_with(".flows")))
    else {
        return Vec::new();
    };
    let axis_key = &plan.sweep_keys[axis];
    // Points grouped by the values of the other swept keys, in order of first appearance.
    let mut panels: Vec<(String, Vec<usize>)> = Vec::new();
    for (p, point) in plan.points.iter().enumerate() {
        let others: Vec<_> = point
            .params
            .iter()
            .filter(|(k, _)| k != axis_key)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let label = {
            let map = others
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or_default()))
                .collect();
            params_label(&map)
        };
        match panels.iter_mut().find(|(l, _)| *l == label) {
            Some((_, ps)) => ps.push(p),
            None => panels.push((label, vec![p])),
        }
    }
    let x_of = |p: usize| plan.points[p].params[axis].1.as_integer().unwrap_or(0) as f64;
    let groups = plan.base().groups.len();
    let mut out = Vec::new();
    let mut std_lines = Vec::new();
    for (panel, (label, ps)) in panels.iter().enumerate() {
        let mut lines = Vec::new();
        for g in 0..groups {
            let stat = |p: usize| summary.points[p].flows[g].aggregate_bps;
            let name = &summary.points[ps[0]].flows[g];
            let line_label = format!("{} ({})", name.group, name.protocol);
            lines.push(Line {
                label: line_label.clone(),
                points: ps.iter().map(|&p| (x_of(p), stat(p).mean / 1e3)).collect(),
                bars: ps
                    .iter()
                    .map(|&p| (x_of(p), stat(p).min / 1e3, stat(p).max / 1e3))
                    .collect(),
            });
            std_lines.push(Line {
                label: if panels.len() > 1 {
                    format!("{line_label} [{label}]")
                } else {
                    line_label
                },
                points: ps.iter().map(|&p| (x_of(p), stat(p).std / 1e3)).collect(),
                bars: Vec::new(),
            });
        }
        let mut references: Vec<Reference> = Vec::new();
        for g in &summary.points[ps[0]].flows {
            if let Some(t) = g.target_bps {
                references.push(Reference {
                    label: format!("{} target", g.group),
                    y: t as f64 / 1e3,
                    line: None,
                });
            }
        }
        out.push(Figure {
            stem: format!("mean-vs-flows-{panel:02}"),
            point: None,
            chart: Chart {
                title: format!(
                    "Mean throughput per group, min/max of {} runs, {label}",
                    summary.runs
                ),
                x_label: format!("{} (micro-flows)", axis_key),
                y_label: "throughput (kbit/s)".into(),
                lines,
                references,
            },
        });
    }
    out.push(Figure {
        stem: "std-vs-flows".into(),
        point: None,
        chart: Chart {
            title: "Standard deviation of the throughput across runs".into(),
            x_label: format!("{} (micro-flows)", axis_key),
            y_label: "standard deviation (kbit/s)".into(),
            lines: std_lines,
            references: Vec::new(),
        },
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::execute;
    use crate::scenario::{parse, Overrides};
    use crate::summary::build;
    use crate::testkit::{fake, PLAN};

    #[test]
    fn a_flows_sweep_gets_mean_and_std_figures() {
        let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
        let results = execute(&plan, 1, fake, &|_| {}).unwrap();
        let summary = build(&plan, &results, &Overrides::default());
        let figs = figures(&plan, &results, &summary);
        let stems: Vec<&str> = figs.iter().map(|f| f.stem.as_str()).collect();
        assert_eq!(
            stems,
            [
                "throughput-p00-B.flows=1",
                "jitter-p00-B.flows=1",
                "throughput-p01-B.flows=2",
                "jitter-p01-B.flows=2",
                "mean-vs-flows-00",
                "std-vs-flows"
            ]
        );
        let thr = &figs[2].chart;
        assert_eq!(
            thr.references,
            vec![Reference {
                label: "A target".into(),
                y: 500.0,
                line: Some(0)
            }]
        );
        // Group B's line is the sum of its two flows.
        let b = &thr.lines[1];
        assert!(b.label.starts_with("B (tcp, 2 flows)"));
        let mean = &figs[4].chart;
        assert_eq!(
            mean.lines[1].points.iter().map(|p| p.0).collect::<Vec<_>>(),
            [1.0, 2.0]
        );
        assert_eq!(mean.lines[1].bars.len(), 2);
        let bar = mean.lines[1].bars[1];
        assert!(bar.1 <= mean.lines[1].points[1].1 && mean.lines[1].points[1].1 <= bar.2);
    }
}
