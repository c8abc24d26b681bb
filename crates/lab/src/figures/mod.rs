//! The figures of a finished plan, as in the papers: throughput over time against the target
//! (QSTP Fig. 4, gTFRC Figs. 4 and 10), jitter over time (QSTP Fig. 7), and, when the sweep is over
//! a number of flows, the mean with min/max bars (QSTP Fig. 5) and the standard deviation (Fig. 6)
//! against that number.

pub mod delegation;

use crate::metrics::{FlowFigure, Panel, RunSeries, SeriesMetric, OPTIONAL_SERIES};
use crate::plot::{Chart, Line, Reference, Shade};
use crate::runner::PointResult;
use crate::scenario::{protocol_name, Plan};
use crate::summary::{params_label, short_key, Summary};
use qstp_sim::QstpSpec;

/// A chart and the file stem it is saved under.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// File name without extension, unique in the plan.
    pub stem: String,
    /// The sweep point it shows, for figures of one point.
    pub point: Option<usize>,
    /// The chart (for a multi-panel figure, its title only).
    pub chart: Chart,
    /// The panels of a multi-panel figure drawn side by side; empty for a single chart.
    pub panels: Vec<Chart>,
}

/// `text` with every character but ASCII letters, digits and `-_.=` made `_`, for file names.
fn file_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.=".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A file-name-safe label of point `p`: `p03-AB.protocol=qstp`.
pub fn point_stem(summary: &Summary, p: usize) -> String {
    stem_of(&summary.points[p].params, p)
}

/// The file-name-safe label of point `p` with the swept values `params`.
pub fn stem_of(params: &serde_json::Map<String, serde_json::Value>, p: usize) -> String {
    let label = if params.is_empty() {
        String::new()
    } else {
        params_label(params)
    };
    let safe = file_safe(&label);
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

/// Every figure of the plan: per point the throughput over time (mean over the runs kept, with
/// their min-max band and the warm-up shaded) and the jitter's CDF; all points' throughput side
/// by side when there are two to four; the flow-count figures of QSTP Figs. 5 and 6; a figure per
/// other numeric swept key.
pub fn figures(plan: &Plan, results: &[PointResult], summary: &Summary) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut panels = Vec::new();
    for (p, (point, result)) in plan.points.iter().zip(results).enumerate() {
        let kept: Vec<&RunSeries> = result
            .runs
            .iter()
            .filter_map(|r| r.series.as_ref())
            .collect();
        let Some(first) = kept.first() else {
            continue;
        };
        let label = params_label(&summary.points[p].params);
        let bin = first.bin.as_secs_f64();
        let time = |i: usize| (i + 1) as f64 * bin;
        let groups = &point.scenario.groups;
        let runs_text = if kept.len() == 1 {
            format!("seed {}", result.runs[0].seed)
        } else {
            format!("mean of {} runs, band min-max", kept.len())
        };
        let lines = groups
            .iter()
            .enumerate()
            .map(|(g, spec)| {
                let per_run: Vec<Vec<f64>> = kept
                    .iter()
                    .map(|s| group_series(s, g, |f| &f.throughput_bps))
                    .collect();
                let bins = per_run.iter().map(Vec::len).min().unwrap_or(0);
                let at = |i: usize| per_run.iter().map(move |r| r[i] / 1e3);
                Line {
                    label: format!(
                        "{} ({}, {} flow{})",
                        spec.name,
                        protocol_name(&spec.protocol),
                        spec.flows,
                        if spec.flows == 1 { "" } else { "s" }
                    ),
                    points: (0..bins)
                        .map(|i| (time(i), at(i).sum::<f64>() / per_run.len() as f64))
                        .collect(),
                    band: if per_run.len() > 1 {
                        (0..bins)
                            .map(|i| {
                                let lo = at(i).fold(f64::INFINITY, f64::min);
                                let hi = at(i).fold(f64::NEG_INFINITY, f64::max);
                                (time(i), lo, hi)
                            })
                            .collect()
                    } else {
                        Vec::new()
                    },
                    ..Default::default()
                }
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
        let warmup = point.scenario.warmup.as_secs_f64();
        let chart = Chart {
            title: format!("Throughput at the receiver (1 s TSW), {label}, {runs_text}"),
            x_label: "time (s)".into(),
            y_label: "throughput (kbit/s)".into(),
            lines,
            references,
            shade: (warmup > 0.0).then(|| Shade {
                label: "warm-up (not in the means)".into(),
                from: 0.0,
                to: warmup,
            }),
            ..Default::default()
        };
        // In the side-by-side figure a line is named by its group alone (the protocol may be
        // what the points differ in).
        let mut panel = Chart {
            title: label.clone(),
            ..chart.clone()
        };
        for (line, spec) in panel.lines.iter_mut().zip(groups) {
            line.label = spec.name.clone();
        }
        panels.push(panel);
        out.push(Figure {
            stem: format!("throughput-{}", point_stem(summary, p)),
            point: Some(p),
            chart,
            panels: Vec::new(),
        });
        let first_bin = (warmup / bin).ceil() as usize;
        let jitter_lines = groups
            .iter()
            .enumerate()
            .map(|(g, spec)| {
                let mut samples: Vec<f64> = kept
                    .iter()
                    .flat_map(|s| mean_jitter(s, g).into_iter().skip(first_bin).flatten())
                    .collect();
                samples.sort_by(f64::total_cmp);
                let n = samples.len() as f64;
                Line {
                    label: format!("{} ({})", spec.name, protocol_name(&spec.protocol)),
                    points: samples
                        .iter()
                        .enumerate()
                        .map(|(i, &j)| (j, (i + 1) as f64 / n))
                        .collect(),
                    ..Default::default()
                }
            })
            .collect();
        out.push(Figure {
            stem: format!("jitter-cdf-{}", point_stem(summary, p)),
            point: Some(p),
            chart: Chart {
                title: format!(
                    "Jitter (IPDV, mean per {bin} s bin) after the warm-up, CDF, {label}, {runs_text}"
                ),
                x_label: "jitter (ms)".into(),
                y_label: "fraction of bins".into(),
                lines: jitter_lines,
                y_range: Some((0.0, 1.0)),
                ..Default::default()
            },
            panels: Vec::new(),
        });
        if let Some(figure) = delay_figure(point, result, summary, p, &label) {
            out.push(figure);
        }
        if let Some(figure) = sender_figure(point, first, summary, p, &label, result.runs[0].seed) {
            out.push(figure);
        }
        if let Some(figure) = rate_figure(point, first, summary, p, &label, result.runs[0].seed) {
            out.push(figure);
        }
        if let Some(figure) = queue_figure(first, summary, p, &label, result.runs[0].seed, warmup) {
            out.push(figure);
        }
        if let Some(d) = delegation::delegation_series(&point.scenario, first) {
            out.push(delegation::delegation_figure(
                &point.scenario,
                &d,
                summary,
                p,
                &label,
                result.runs[0].seed,
            ));
        }
    }
    if (2..=4).contains(&panels.len()) {
        // One y scale for every panel, so they compare at a glance.
        let top = panels
            .iter()
            .flat_map(|c| {
                c.lines
                    .iter()
                    .flat_map(|l| {
                        l.points
                            .iter()
                            .map(|p| p.1)
                            .chain(l.band.iter().map(|b| b.2))
                    })
                    .chain(c.references.iter().map(|r| r.y))
            })
            .filter(|y| y.is_finite())
            .fold(0.0f64, f64::max);
        for panel in &mut panels {
            panel.y_range = Some((0.0, if top > 0.0 { top * 1.08 } else { 1.0 }));
        }
        out.push(Figure {
            stem: "throughput-panels".into(),
            point: None,
            chart: Chart {
                title: format!(
                    "{}: throughput at the receiver, every point",
                    summary.scenario
                ),
                ..Default::default()
            },
            panels,
        });
    }
    out.extend(flow_sweep_figures(plan, summary));
    out.extend(swept_key_figures(plan, summary));
    out.extend(categorical_figures(plan, summary));
    out.extend(metric_figures(plan, summary));
    out.extend(delegation::matching_figures(plan, summary));
    out.extend(atm_figures(plan, results, summary));
    out
}

/// On an ATM trunk, the measured goodput beside the AF-over-ATM paper's estimate (AF-over-ATM paper §4.1):
/// per point, every connection's (its Fig. 2); across a one-key sweep, each AF group's and the
/// mean DF group's total (its Figs. 3-5).
fn atm_figures(plan: &Plan, results: &[PointResult], summary: &Summary) -> Vec<Figure> {
    let has_estimates =
        |p: &crate::summary::PointSummary| p.flows.iter().any(|g| g.estimate_bps.is_some());
    if !summary.points.iter().any(has_estimates) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (p, (point, result)) in summary.points.iter().zip(results).enumerate() {
        let runs = result.runs.len().max(1) as f64;
        let connections = result.runs.first().map_or(0, |r| r.flows.len());
        let measured: Vec<(f64, f64)> = (0..connections)
            .map(|i| {
                let sum: f64 = result
                    .runs
                    .iter()
                    .filter_map(|r| r.flows.get(i))
                    .map(|f| f.goodput_bps)
                    .sum();
                ((i + 1) as f64, sum / runs / 1e6)
            })
            .collect();
        let mut estimate = Vec::new();
        for group in &point.flows {
            let Some(e) = group.estimate_bps else {
                continue;
            };
            for _ in 0..group.flows {
                estimate.push(((estimate.len() + 1) as f64, e / 1e6));
            }
        }
        out.push(Figure {
            stem: format!("atm-connections-{}", point_stem(summary, p)),
            point: Some(p),
            chart: Chart {
                title: format!(
                    "Goodput of each connection (groups in order) and the paper's estimate, {}",
                    params_label(&point.params)
                ),
                x_label: "connection".into(),
                y_label: "goodput (Mbit/s)".into(),
                lines: vec![
                    Line {
                        label: "measured".into(),
                        points: measured,
                        ..Default::default()
                    },
                    Line {
                        label: "estimate (AF-over-ATM paper §4.1)".into(),
                        points: estimate,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
            panels: Vec::new(),
        });
    }
    if plan.points.len() < 2 || plan.sweep_keys.len() != 1 {
        return out;
    }
    // The swept value as a number: a rate in Mbit/s, a duration in ms, or the number itself.
    let x_of = |p: usize| -> f64 {
        let v = &plan.points[p].params[0].1;
        if let Some(text) = v.as_str() {
            if let Ok(rate) = qstp_proto::Rate::parse(text) {
                return rate.bps() as f64 / 1e6;
            }
            if let Ok(d) = qstp_proto::Duration::parse(text) {
                return d.as_secs_f64() * 1e3;
            }
        }
        v.as_float()
            .or(v.as_integer().map(|i| i as f64))
            .unwrap_or(p as f64)
    };
    let first = &summary.points[0];
    let mut lines = Vec::new();
    let total = |g: &crate::summary::GroupSummary| {
        (
            g.aggregate_bps.mean / 1e6,
            g.estimate_bps.unwrap_or(0.0) * f64::from(g.flows) / 1e6,
        )
    };
    for (g, group) in first.flows.iter().enumerate() {
        if group.phb.as_deref() != Some("af") {
            continue;
        }
        let at = |p: usize| total(&summary.points[p].flows[g]);
        let xs = 0..summary.points.len();
        lines.push(Line {
            label: format!("{} measured", group.group),
            points: xs.clone().map(|p| (x_of(p), at(p).0)).collect(),
            ..Default::default()
        });
        lines.push(Line {
            label: format!("{} estimate", group.group),
            points: xs.map(|p| (x_of(p), at(p).1)).collect(),
            ..Default::default()
        });
    }
    let df_mean = |p: usize, pick: &dyn Fn((f64, f64)) -> f64| {
        let dfs: Vec<f64> = summary.points[p]
            .flows
            .iter()
            .filter(|g| g.phb.as_deref() == Some("df"))
            .map(|g| pick(total(g)))
            .collect();
        dfs.iter().sum::<f64>() / dfs.len().max(1) as f64
    };
    if first.flows.iter().any(|g| g.phb.as_deref() == Some("df")) {
        lines.push(Line {
            label: "DF (mean per VP) measured".into(),
            points: (0..summary.points.len())
                .map(|p| (x_of(p), df_mean(p, &|t| t.0)))
                .collect(),
            ..Default::default()
        });
        lines.push(Line {
            label: "DF (mean per VP) estimate".into(),
            points: (0..summary.points.len())
                .map(|p| (x_of(p), df_mean(p, &|t| t.1)))
                .collect(),
            ..Default::default()
        });
    }
    let short = short_key(&plan.sweep_keys[0]);
    out.push(Figure {
        stem: "atm-estimates".into(),
        point: None,
        chart: Chart {
            title: format!(
                "Total goodput per VP, measured and estimated (AF-over-ATM paper §4.1), against {short}"
            ),
            x_label: short.to_string(),
            y_label: "goodput (Mbit/s)".into(),
            lines,
            ..Default::default()
        },
        panels: Vec::new(),
    });
    out
}

/// The bottleneck queue's length (and each CBQ class's) over time in the point's first run, in
/// packets at the end of each bin.
fn queue_figure(
    series: &RunSeries,
    summary: &Summary,
    p: usize,
    label: &str,
    seed: u64,
    warmup: f64,
) -> Option<Figure> {
    if series.queues.is_empty() {
        return None;
    }
    let bin = series.bin.as_secs_f64();
    let lines = series
        .queues
        .iter()
        .map(|q| Line {
            label: q.name.clone(),
            points: q
                .packets
                .iter()
                .enumerate()
                .map(|(i, &v)| ((i + 1) as f64 * bin, v))
                .collect(),
            ..Default::default()
        })
        .collect();
    Some(Figure {
        stem: format!("queue-{}", point_stem(summary, p)),
        point: Some(p),
        chart: Chart {
            title: format!(
                "Bottleneck queue length at the end of each {bin} s bin, {label}, seed {seed}"
            ),
            x_label: "time (s)".into(),
            y_label: "queue length (packets)".into(),
            lines,
            shade: (warmup > 0.0).then(|| Shade {
                label: "warm-up".into(),
                from: 0.0,
                to: warmup,
            }),
            ..Default::default()
        },
        panels: Vec::new(),
    })
}

/// The high-speed TCP paper's Figs. 8-19 for one point where TCP flows alone share the
/// bottleneck: each flow's throughput, smoothed RTT and loss rate (share of its data packets sent
/// again) against time, in the point's first run, as three panels.
fn sender_figure(
    point: &crate::scenario::Point,
    series: &RunSeries,
    summary: &Summary,
    p: usize,
    label: &str,
    seed: u64,
) -> Option<Figure> {
    let groups = &point.scenario.groups;
    if !tcp_only(groups) || series.flows.iter().all(|f| f.rtt_ms.is_empty()) {
        return None;
    }
    let bin = series.bin.as_secs_f64();
    let time = |i: usize| (i + 1) as f64 * bin;
    let name = |f: &crate::metrics::FlowSeries| format!("{}.{}", groups[f.group].name, f.flow);
    let panel =
        |title: &str,
         y_label: &str,
         pick: &dyn Fn(&crate::metrics::FlowSeries) -> Vec<(f64, f64)>| Chart {
            title: title.into(),
            x_label: "time (s)".into(),
            y_label: y_label.into(),
            lines: series
                .flows
                .iter()
                .map(|f| Line {
                    label: name(f),
                    points: pick(f),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
    let present = |v: &[Option<f64>], scale: f64| -> Vec<(f64, f64)> {
        v.iter()
            .enumerate()
            .filter_map(|(i, x)| x.map(|x| (time(i), x * scale)))
            .collect()
    };
    let mut panels = vec![panel("Throughput (1 s TSW)", "throughput (Mbit/s)", &|f| {
        f.throughput_bps
            .iter()
            .enumerate()
            .map(|(i, &x)| (time(i), x / 1e6))
            .collect()
    })];
    panels.extend(series_panels(FlowFigure::Tcp).map(|(m, look)| {
        panel(look.title, look.y_label, &|f| {
            present((m.values)(f), look.scale)
        })
    }));
    Some(Figure {
        stem: format!("flows-{}", point_stem(summary, p)),
        point: Some(p),
        chart: Chart {
            title: format!("Each flow's throughput, RTT and loss rate, {label}, seed {seed}"),
            ..Default::default()
        },
        panels,
    })
}

/// For a point with qstp/gTFRC/TFRC groups: each such flow's allowed sending rate X (dashed: its
/// gTFRC target g, in the flow's colour), the receive rate X_recv its feedback reported, and the
/// loss event rate p, at the end of each bin of the point's first run, as three panels.
fn rate_figure(
    point: &crate::scenario::Point,
    series: &RunSeries,
    summary: &Summary,
    p: usize,
    label: &str,
    seed: u64,
) -> Option<Figure> {
    let groups = &point.scenario.groups;
    let flows: Vec<&crate::metrics::FlowSeries> = series
        .flows
        .iter()
        .filter(|f| !f.rate_bps.is_empty())
        .collect();
    if flows.is_empty() {
        return None;
    }
    let bin = series.bin.as_secs_f64();
    let warmup = point.scenario.warmup.as_secs_f64();
    let present = |v: &[Option<f64>], scale: f64| -> Vec<(f64, f64)> {
        v.iter()
            .enumerate()
            .filter_map(|(i, x)| x.map(|x| ((i + 1) as f64 * bin, x * scale)))
            .collect()
    };
    let panel =
        |title: &str,
         y_label: &str,
         pick: &dyn Fn(&crate::metrics::FlowSeries) -> Vec<(f64, f64)>| Chart {
            title: title.into(),
            x_label: "time (s)".into(),
            y_label: y_label.into(),
            lines: flows
                .iter()
                .map(|f| Line {
                    label: format!("{}.{}", groups[f.group].name, f.flow),
                    points: pick(f),
                    ..Default::default()
                })
                .collect(),
            shade: (warmup > 0.0).then(|| Shade {
                label: "warm-up".into(),
                from: 0.0,
                to: warmup,
            }),
            ..Default::default()
        };
    // Each flow's own gTFRC floor g (the group's target over its flows), on the panel of X.
    let targets: Vec<Reference> = flows
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let g = match &groups.get(f.group)?.protocol {
                qstp_sim::Protocol::Qstp(QstpSpec { config, .. }) => match config.congestion {
                    qstp_proto::Congestion::Gtfrc { target, .. } if !target.is_zero() => target,
                    _ => return None,
                },
                _ => return None,
            };
            Some(Reference {
                label: format!("{}.{} target", groups[f.group].name, f.flow),
                y: g.bps() as f64 / 1e3,
                line: Some(i),
            })
        })
        .collect();
    let panels = series_panels(FlowFigure::Rate)
        .map(|(m, look)| {
            let mut chart = panel(look.title, look.y_label, &|f| {
                present((m.values)(f), look.scale)
            });
            if m.name == "rate_bps" {
                chart.references = targets.clone();
            }
            chart
        })
        .collect();
    Some(Figure {
        stem: format!("rates-{}", point_stem(summary, p)),
        point: Some(p),
        chart: Chart {
            title: format!(
                "Each rate-controlled flow's X, X_recv and p at the end of each {bin} s bin, {label}, seed {seed}"
            ),
            ..Default::default()
        },
        panels,
    })
}

/// The series drawn in `figure`, with how each is drawn, in [`OPTIONAL_SERIES`]' order.
fn series_panels(
    figure: FlowFigure,
) -> impl Iterator<Item = (&'static SeriesMetric, &'static Panel)> {
    OPTIONAL_SERIES.iter().filter_map(move |m| {
        m.panel
            .as_ref()
            .filter(|look| look.figure == figure)
            .map(|look| (m, look))
    })
}

/// Whether a swept key (or one of the keys joined with `+`) is a number of flows.
fn is_flows_key(key: &str) -> bool {
    key.split(['+', ','])
        .any(|part| part.trim().ends_with(".flows"))
}

/// The index of the swept key that is a number of flows, if one is.
fn flows_axis(plan: &Plan) -> Option<usize> {
    plan.sweep_keys.iter().position(|k| is_flows_key(k))
}

/// Whether every group runs TCP (the high-speed TCP paper's setting).
fn tcp_only(groups: &[qstp_sim::GroupSpec]) -> bool {
    groups
        .iter()
        .all(|g| matches!(g.protocol, qstp_sim::Protocol::Tcp(_)))
}

/// The points grouped by the values of the swept keys other than `key`, in order of first
/// appearance, each group labelled `key=value, ...` (empty when `key` is the only one).
pub(crate) fn by_other_keys(plan: &Plan, key: &str) -> Vec<(String, Vec<usize>)> {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (p, point) in plan.points.iter().enumerate() {
        let others: serde_json::Map<String, serde_json::Value> = point
            .params
            .iter()
            .filter(|(k, _)| k != key)
            .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or_default()))
            .collect();
        let label = if others.is_empty() {
            String::new()
        } else {
            params_label(&others)
        };
        match groups.iter_mut().find(|(l, _)| *l == label) {
            Some((_, ps)) => ps.push(p),
            None => groups.push((label, vec![p])),
        }
    }
    groups
}

/// The high-speed TCP paper's Figs. 3-7 for a sweep over a number of TCP flows: efficiency, Jain's
/// fairness and performance for each weight against the number of flows, one line per value of
/// the other swept keys (one per congestion control in `scenarios/hstcp-qos.toml`).
fn metric_figures(plan: &Plan, summary: &Summary) -> Vec<Figure> {
    let Some(axis) = flows_axis(plan) else {
        return Vec::new();
    };
    // The paper's setting: TCP flows alone share the bottleneck.
    let all_tcp = plan.points.iter().all(|p| tcp_only(&p.scenario.groups));
    if !all_tcp || summary.points.iter().any(|p| p.metrics.is_none()) {
        return Vec::new();
    }
    let x_of = |p: usize| plan.points[p].params[axis].1.as_integer().unwrap_or(0) as f64;
    let series = by_other_keys(plan, &plan.sweep_keys[axis]);
    let metric = |p: usize, which: &str| {
        let m = summary.points[p].metrics.as_ref().expect("checked above");
        match which {
            "efficiency" => m.efficiency.mean,
            "jain" => m.jain.mean,
            a => m.performance.get(a).copied().unwrap_or(f64::NAN),
        }
    };
    let mut charts: Vec<(String, String, String)> = vec![
        (
            "efficiency".into(),
            "efficiency-vs-flows".into(),
            "Efficiency E = Q / Q_opt".into(),
        ),
        (
            "jain".into(),
            "jain-vs-flows".into(),
            "Jain's fairness index F".into(),
        ),
    ];
    for a in crate::summary::PERFORMANCE_WEIGHTS.iter().rev() {
        let key = crate::summary::weight_key(*a);
        charts.push((
            key.clone(),
            format!("performance-{key}-vs-flows"),
            format!("Performance a E + (1 - a) F, a = {key}"),
        ));
    }
    charts
        .into_iter()
        .map(|(which, stem, title)| {
            let lines = series
                .iter()
                .map(|(label, ps)| {
                    let mut ps = ps.clone();
                    ps.sort_by(|&a, &b| x_of(a).total_cmp(&x_of(b)));
                    Line {
                        label: if label.is_empty() {
                            "all".into()
                        } else {
                            label.clone()
                        },
                        points: ps.iter().map(|&p| (x_of(p), metric(p, &which))).collect(),
                        ..Default::default()
                    }
                })
                .collect();
            Figure {
                stem,
                point: None,
                panels: Vec::new(),
                chart: Chart {
                    title: format!("{title}, mean of {} run(s)", summary.runs),
                    x_label: "number of flows".into(),
                    y_label: which.clone(),
                    lines,
                    y_range: Some((0.0, 1.05)),
                    ..Default::default()
                },
            }
        })
        .collect()
}

/// For every swept key with numbers for values (other than flow counts, which
/// [`flow_sweep_figures`] draws), each group's mean total throughput against it, with the 95%
/// confidence interval of the mean as bars; the other swept keys' combinations are separate
/// lines.
/// What a swept value measures on a figure's axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AxisUnit {
    /// A number as the scenario writes it.
    Number,
    /// A rate (`"40M"`), drawn in Mbit/s.
    Mbps,
    /// A duration (`"100ms"`), drawn in ms.
    Ms,
}

/// A swept value's place on a numeric axis: a number as it is, a rate in Mbit/s, a duration in
/// ms; `None` for anything else (a name, a table).
fn axis_value(v: &toml::Value) -> Option<(f64, AxisUnit)> {
    if let Some(x) = v.as_float().or(v.as_integer().map(|i| i as f64)) {
        return Some((x, AxisUnit::Number));
    }
    let text = v.as_str()?;
    if let Ok(rate) = text.parse::<qstp_proto::Rate>() {
        return Some((rate.bps() as f64 / 1e6, AxisUnit::Mbps));
    }
    text.parse::<qstp_proto::Duration>()
        .ok()
        .map(|d| (d.as_secs_f64() * 1e3, AxisUnit::Ms))
}

/// The axis title of swept key `short` in `unit`: rates and durations say theirs; numbers the
/// unit their key is counted in, where the scenario reference gives one.
pub(crate) fn axis_label(short: &str, unit: AxisUnit) -> String {
    let last = short.rsplit('.').next().unwrap_or(short);
    let unit = match unit {
        AxisUnit::Mbps => Some("Mbit/s"),
        AxisUnit::Ms => Some("ms"),
        AxisUnit::Number => match last {
            "limit" | "min_th" | "max_th" => Some("packets"),
            "bucket" | "cbs" | "ebs" | "pbs" | "packet_size" | "quantum" => Some("bytes"),
            "flows" => Some("flows"),
            _ => None,
        },
    };
    match unit {
        Some(unit) => format!("{short} ({unit})"),
        None => short.to_string(),
    }
}

/// The numeric axis of sweep key `axis` over every point, with its unit; `None` if some point's
/// value has no place on one, or the points mix units.
pub(crate) fn numeric_axis(plan: &Plan, axis: usize) -> Option<(Vec<f64>, AxisUnit)> {
    let mut unit = None;
    let mut xs = Vec::with_capacity(plan.points.len());
    for p in &plan.points {
        let (x, u) = axis_value(&p.params[axis].1)?;
        if unit.is_some_and(|seen| seen != u) {
            return None;
        }
        unit = Some(u);
        xs.push(x);
    }
    Some((xs, unit?))
}

fn swept_key_figures(plan: &Plan, summary: &Summary) -> Vec<Figure> {
    let mut out = Vec::new();
    for (axis, key) in plan.sweep_keys.iter().enumerate() {
        let Some((xs, unit)) = numeric_axis(plan, axis) else {
            continue;
        };
        if is_flows_key(key) {
            continue;
        }
        let x_of = |p: usize| xs[p];
        let series = by_other_keys(plan, key);
        let groups = summary.points[0].flows.len();
        let mut lines = Vec::new();
        for (label, ps) in &series {
            let mut ps = ps.clone();
            ps.sort_by(|&a, &b| x_of(a).total_cmp(&x_of(b)));
            for g in 0..groups {
                let stat = |p: usize| summary.points[p].flows[g].aggregate_bps;
                let name = &summary.points[ps[0]].flows[g];
                lines.push(Line {
                    label: if label.is_empty() {
                        format!("{} ({})", name.group, name.protocol)
                    } else {
                        format!("{} ({}) [{label}]", name.group, name.protocol)
                    },
                    points: ps.iter().map(|&p| (x_of(p), stat(p).mean / 1e3)).collect(),
                    // No bar where one run leaves the interval undefined.
                    bars: ps
                        .iter()
                        .filter_map(|&p| {
                            let s = stat(p);
                            let ci = s.ci95?;
                            Some((x_of(p), (s.mean - ci) / 1e3, (s.mean + ci) / 1e3))
                        })
                        .collect(),
                    ..Default::default()
                });
            }
        }
        let short = short_key(key);
        let safe = file_safe(short);
        out.push(Figure {
            stem: format!("throughput-vs-{safe}"),
            point: None,
            chart: Chart {
                title: format!(
                    "Mean total throughput per group against {short}, 95% confidence interval of {} runs",
                    summary.runs
                ),
                x_label: axis_label(short, unit),
                y_label: "throughput (kbit/s)".into(),
                lines,
                ..Default::default()
            },
            panels: Vec::new(),
        });
    }
    out
}

/// A swept value as a category's name: text as it is, a table by its `kind` (a queue), an array
/// of values (keys swept together) joined with commas, anything else as TOML writes it.
fn category_name(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Table(t) => match t.get("kind") {
            Some(kind) => category_name(kind),
            None => v.to_string(),
        },
        toml::Value::Array(items) => items
            .iter()
            .map(category_name)
            .collect::<Vec<_>>()
            .join(", "),
        _ => v.to_string(),
    }
}

/// A point's statistic drawn in a categorical figure: its mean, and its 95% confidence interval
/// where more than one run defines it.
fn dot(stats: &crate::metrics::Stats, scale: f64) -> (f64, Option<(f64, f64)>) {
    let interval = stats
        .ci95
        .map(|ci| ((stats.mean - ci) * scale, (stats.mean + ci) * scale));
    (stats.mean * scale, interval)
}

/// For every swept key whose values are names (congestion controls, queue kinds, protocols), the
/// main metrics per value: each group's mean total throughput, one-way delay p95, the
/// bottleneck's sojourn p95, and the point's efficiency E and fairness F (the high-speed TCP
/// paper's §III B-C), as dots with the 95% confidence interval of the mean as whiskers, one
/// category per value; the groups (and the combinations of the other swept keys) sit side by
/// side within a category.
fn categorical_figures(plan: &Plan, summary: &Summary) -> Vec<Figure> {
    let mut out = Vec::new();
    for (axis, key) in plan.sweep_keys.iter().enumerate() {
        if numeric_axis(plan, axis).is_some() || summary.points.is_empty() {
            continue;
        }
        // Categories are the distinct values, in order of first appearance, named shortly
        // (a queue by its kind) unless two short names would be the same.
        let raw = |p: usize| plan.points[p].params[axis].1.to_string();
        let mut values: Vec<(String, String)> = Vec::new();
        for p in 0..plan.points.len() {
            if !values.iter().any(|(r, _)| *r == raw(p)) {
                values.push((raw(p), category_name(&plan.points[p].params[axis].1)));
            }
        }
        let names: std::collections::BTreeSet<&String> = values.iter().map(|(_, n)| n).collect();
        let categories: Vec<String> = if names.len() == values.len() {
            values.iter().map(|(_, n)| n.clone()).collect()
        } else {
            values.iter().map(|(r, _)| r.clone()).collect()
        };
        let category = |p: usize| values.iter().position(|(r, _)| *r == raw(p)).unwrap_or(0);
        let series = by_other_keys(plan, key);
        let short = short_key(key);
        let safe = file_safe(short);
        // (stem, title, y label, per point: a statistic of group g, or of the point for None).
        type Pick<'a> = Box<dyn Fn(usize, Option<usize>) -> Option<crate::metrics::Stats> + 'a>;
        let group_metric = |name: &'static str| -> Pick<'_> {
            Box::new(move |p, g| summary.points[p].flows[g?].metrics.get(name).copied())
        };
        let charts: Vec<(&str, String, &str, bool, f64, Pick<'_>)> = vec![
            (
                "throughput",
                "Mean total throughput per group".into(),
                "throughput (kbit/s)",
                true,
                1e-3,
                Box::new(|p, g| Some(summary.points[p].flows[g?].aggregate_bps)),
            ),
            (
                "delay-p95",
                "95th-percentile one-way delay per group".into(),
                "delay p95 (ms)",
                true,
                1.0,
                group_metric("delay_p95_ms"),
            ),
            (
                "sojourn-p95",
                "95th-percentile sojourn time at the bottleneck queue".into(),
                "sojourn p95 (ms)",
                false,
                1.0,
                Box::new(|p, _| {
                    let q = summary.points[p]
                        .queues
                        .iter()
                        .find(|q| q.name == "bottleneck")?;
                    q.sojourn_ms.as_ref().map(|s| s.p95)
                }),
            ),
            (
                "efficiency",
                "Efficiency E = Q / Q_opt".into(),
                "efficiency E",
                false,
                1.0,
                Box::new(|p, _| summary.points[p].metrics.as_ref().map(|m| m.efficiency)),
            ),
            (
                "fairness",
                "Jain's fairness index F".into(),
                "Jain's index F",
                false,
                1.0,
                Box::new(|p, _| summary.points[p].metrics.as_ref().map(|m| m.jain)),
            ),
        ];
        for (stem, title, y_label, per_group, scale, pick) in charts {
            // One line per group (if per group) and combination of the other keys.
            let mut lines: Vec<(String, Vec<usize>, Option<usize>)> = Vec::new();
            for (label, ps) in &series {
                let groups: Vec<Option<usize>> = if per_group {
                    (0..summary.points[ps[0]].flows.len()).map(Some).collect()
                } else {
                    vec![None]
                };
                for g in groups {
                    let name = match g {
                        Some(g) => {
                            let f = &summary.points[ps[0]].flows[g];
                            format!("{} ({})", f.group, f.protocol)
                        }
                        None => "all flows".into(),
                    };
                    let name = match (label.is_empty(), g) {
                        (true, _) => name,
                        (false, None) => label.clone(),
                        (false, Some(_)) => format!("{name} [{label}]"),
                    };
                    lines.push((name, ps.clone(), g));
                }
            }
            // Side by side within a category: 0.6 of its width shared among the lines.
            let n = lines.len() as f64;
            let offset = |i: usize| (i as f64 - (n - 1.0) / 2.0) * 0.6 / n;
            let drawn: Vec<Line> = lines
                .iter()
                .enumerate()
                .map(|(i, (label, ps, g))| {
                    let mut line = Line {
                        label: label.clone(),
                        ..Default::default()
                    };
                    for &p in ps {
                        // A group missing at a point (or a metric it has none of) draws nothing.
                        if g.is_some_and(|g| g >= summary.points[p].flows.len()) {
                            continue;
                        }
                        let Some(stats) = pick(p, *g) else { continue };
                        let x = category(p) as f64 + offset(i);
                        let (y, interval) = dot(&stats, scale);
                        line.points.push((x, y));
                        if let Some((lo, hi)) = interval {
                            line.bars.push((x, lo, hi));
                        }
                    }
                    line
                })
                .filter(|l| !l.points.is_empty())
                .collect();
            if drawn.is_empty() {
                continue;
            }
            out.push(Figure {
                stem: format!("{stem}-by-{safe}"),
                point: None,
                chart: Chart {
                    title: format!(
                        "{title} for each {short}, mean and 95% confidence interval of {} run(s)",
                        summary.runs
                    ),
                    x_label: short.to_string(),
                    y_label: y_label.into(),
                    lines: drawn,
                    scatter: true,
                    categories: categories.clone(),
                    ..Default::default()
                },
                panels: Vec::new(),
            });
        }
    }
    out
}

/// Throughput against one-way delay at point `p` (Pantheon's picture): one mark per flow and
/// run, its 95th-percentile delay after the warm-up across, its throughput up, a colour and shape
/// per group; `None` when no flow has a delay (the fluid model).
fn delay_figure(
    point: &crate::scenario::Point,
    result: &PointResult,
    summary: &Summary,
    p: usize,
    label: &str,
) -> Option<Figure> {
    let lines: Vec<Line> = point
        .scenario
        .groups
        .iter()
        .enumerate()
        .map(|(g, spec)| Line {
            label: format!("{} ({})", spec.name, protocol_name(&spec.protocol)),
            points: result
                .runs
                .iter()
                .flat_map(|r| r.flows.iter().filter(|f| f.group == g))
                .filter_map(|f| Some((f.delay_p95_ms?, f.throughput_bps / 1e3)))
                .collect(),
            ..Default::default()
        })
        .collect();
    if lines.iter().all(|l| l.points.is_empty()) {
        return None;
    }
    let runs = result.runs.len();
    Some(Figure {
        stem: format!("delay-throughput-{}", point_stem(summary, p)),
        point: Some(p),
        chart: Chart {
            title: format!(
                "Throughput against one-way delay after the warm-up, {label}, one mark per flow and run ({runs} run{})",
                if runs == 1 { "" } else { "s" }
            ),
            x_label: "one-way delay, 95th percentile (ms)".into(),
            y_label: "throughput (kbit/s)".into(),
            lines,
            scatter: true,
            ..Default::default()
        },
        panels: Vec::new(),
    })
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
    let Some(axis) = flows_axis(plan) else {
        return Vec::new();
    };
    let axis_key = &plan.sweep_keys[axis];
    let panels: Vec<(String, Vec<usize>)> = by_other_keys(plan, axis_key)
        .into_iter()
        .map(|(label, ps)| {
            let label = if label.is_empty() {
                params_label(&serde_json::Map::new())
            } else {
                label
            };
            (label, ps)
        })
        .collect();
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
                ..Default::default()
            });
            std_lines.push(Line {
                label: if panels.len() > 1 {
                    format!("{line_label} [{label}]")
                } else {
                    line_label
                },
                points: ps.iter().map(|&p| (x_of(p), stat(p).std / 1e3)).collect(),
                ..Default::default()
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
            panels: Vec::new(),
            chart: Chart {
                title: format!(
                    "Mean throughput per group, min/max of {} runs, {label}",
                    summary.runs
                ),
                x_label: format!("{} (micro-flows)", axis_key),
                y_label: "throughput (kbit/s)".into(),
                lines,
                references,
                ..Default::default()
            },
        });
    }
    out.push(Figure {
        stem: "std-vs-flows".into(),
        point: None,
        panels: Vec::new(),
        chart: Chart {
            title: "Standard deviation of the throughput across runs".into(),
            x_label: format!("{} (micro-flows)", axis_key),
            y_label: "standard deviation (kbit/s)".into(),
            lines: std_lines,
            references: Vec::new(),
            ..Default::default()
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
    fn swept_rates_and_durations_get_numeric_axes_with_their_units() {
        let text = PLAN.replace(
            "\"group.B.flows\" = [1, 2]",
            "\"bottleneck.rate\" = [\"500k\", \"2M\"]\n\"group.A.rtt\" = [\"30ms\", \"1s\"]",
        );
        let plan = parse(&text, "t.toml", &Overrides::default()).unwrap();
        let results = execute(&plan, 1, fake, &|_| {}).unwrap();
        let summary = build(&plan, &results, &Overrides::default());
        let figs = figures(&plan, &results, &summary);
        let find = |stem: &str| {
            figs.iter()
                .find(|f| f.stem == stem)
                .unwrap_or_else(|| panic!("no {stem}"))
        };
        let rate = &find("throughput-vs-bottleneck.rate").chart;
        assert_eq!(rate.x_label, "bottleneck.rate (Mbit/s)");
        let xs: Vec<f64> = rate.lines[0].points.iter().map(|p| p.0).collect();
        assert_eq!(xs, [0.5, 2.0]);
        let rtt = &find("throughput-vs-A.rtt").chart;
        assert_eq!(rtt.x_label, "A.rtt (ms)");
        assert_eq!(rtt.lines[0].points[1].0, 1000.0);
        // Names have no place on a numeric axis; a key counted in packets says so.
        assert_eq!(axis_value(&toml::Value::String("qstp".into())), None);
        assert_eq!(
            axis_label("bottleneck.queue.limit", AxisUnit::Number),
            "bottleneck.queue.limit (packets)"
        );
        assert_eq!(
            axis_label("delegation.controller.gain", AxisUnit::Number),
            "delegation.controller.gain"
        );
    }

    #[test]
    fn a_categorical_sweep_gets_dots_with_whiskers_per_category() {
        let text = PLAN.replace(
            "\"group.B.flows\" = [1, 2]",
            "\"group.B.congestion\" = [\"newreno\", \"cubic\", \"bbr\"]",
        );
        let plan = parse(&text, "t.toml", &Overrides::default()).unwrap();
        let results = execute(&plan, 1, fake, &|_| {}).unwrap();
        let summary = build(&plan, &results, &Overrides::default());
        let figs = figures(&plan, &results, &summary);
        let find = |stem: &str| {
            &figs
                .iter()
                .find(|f| f.stem == stem)
                .unwrap_or_else(|| panic!("no {stem}"))
                .chart
        };
        // Names have no numeric axis: no line figure against them.
        assert!(!figs.iter().any(|f| f.stem == "throughput-vs-B.congestion"));
        let thr = find("throughput-by-B.congestion");
        assert_eq!(thr.categories, ["newreno", "cubic", "bbr"]);
        assert_eq!(thr.x_label, "B.congestion");
        assert_eq!(thr.y_label, "throughput (kbit/s)");
        assert!(thr.scatter);
        // One line per group, each with a dot per category, the two side by side around it.
        assert_eq!(thr.lines.len(), 2);
        assert_eq!(thr.lines[0].label, "A (qstp)");
        assert!(
            thr.lines[1].label.starts_with("B (tcp"),
            "{}",
            thr.lines[1].label
        );
        for (i, line) in thr.lines.iter().enumerate() {
            assert_eq!(line.points.len(), 3);
            for (c, &(x, y)) in line.points.iter().enumerate() {
                let side = if i == 0 { -1.0 } else { 1.0 };
                assert!((x - (c as f64 + side * 0.15)).abs() < 1e-9, "{x}");
                // The fake gives group A (seed s) s * 1000 bytes per 1 s bin: seeds 5-7.
                if i == 0 {
                    assert!((y - 6000.0 * 8.0 / 1e3).abs() < 1e-9, "{y}");
                }
            }
            // Three runs: a 95% interval around each mean.
            assert_eq!(line.bars.len(), 3);
            for (&(x, y), &(bx, lo, hi)) in line.points.iter().zip(&line.bars) {
                assert!(bx == x && lo < y && y < hi);
            }
        }
        // The point's E and F, the groups' delay p95 and the queue's sojourn p95 too.
        for stem in ["efficiency", "fairness", "delay-p95", "sojourn-p95"] {
            let chart = find(&format!("{stem}-by-B.congestion"));
            assert_eq!(chart.categories.len(), 3, "{stem}");
            assert!(chart.lines.iter().all(|l| l.points.len() == 3), "{stem}");
        }
        assert_eq!(find("efficiency-by-B.congestion").lines.len(), 1);
        assert_eq!(find("delay-p95-by-B.congestion").y_label, "delay p95 (ms)");
        let soj = find("sojourn-p95-by-B.congestion");
        assert_eq!(soj.lines[0].points[0].1, 30.0);
        // The figure draws: each category named under its place.
        let svg = crate::plot::render(thr).unwrap();
        for name in ["newreno", "cubic", "bbr"] {
            // The SVG backend writes a text element's content on a line of its own.
            assert!(
                svg.contains(&format!(">\n{name}\n<")),
                "{name} not on the axis"
            );
        }
    }

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
                "jitter-cdf-p00-B.flows=1",
                "delay-throughput-p00-B.flows=1",
                "rates-p00-B.flows=1",
                "queue-p00-B.flows=1",
                "throughput-p01-B.flows=2",
                "jitter-cdf-p01-B.flows=2",
                "delay-throughput-p01-B.flows=2",
                "rates-p01-B.flows=2",
                "queue-p01-B.flows=2",
                "throughput-panels",
                "mean-vs-flows-00",
                "std-vs-flows"
            ]
        );
        // Three runs kept: the mean with a min-max band, the 2 s warm-up shaded.
        let thr = &figs[0].chart;
        assert_eq!(thr.lines[0].band.len(), thr.lines[0].points.len());
        assert!(thr.lines[0]
            .band
            .iter()
            .zip(&thr.lines[0].points)
            .all(|(b, p)| b.1 <= p.1 && p.1 <= b.2 && b.1 < b.2));
        assert_eq!(thr.shade.as_ref().map(|s| (s.from, s.to)), Some((0.0, 2.0)));
        // The jitter CDF rises to 1 over the bins after the warm-up (8 bins x 3 runs).
        let cdf = &figs[1].chart.lines[0].points;
        assert_eq!(cdf.len(), 24);
        assert_eq!(cdf.last().unwrap().1, 1.0);
        assert!(cdf.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        // Throughput against delay: one unjoined mark per flow and run, per group (at point 1:
        // group A's one flow and group B's two, in 3 runs).
        let delay = &figs[7].chart;
        assert!(delay.scatter);
        let marks: Vec<usize> = delay.lines.iter().map(|l| l.points.len()).collect();
        assert_eq!(marks, [3, 6]);
        // The fake flows' 95th percentile is 25 ms.
        assert!(delay.lines[1]
            .points
            .iter()
            .all(|&(x, y)| x == 25.0 && y > 0.0));
        // The qstp flow's X (its target dashed in its colour), X_recv and p: the TCP flows have
        // no lines there, and the first bin (not yet established) no point.
        let rates = &figs[3];
        assert_eq!(rates.panels.len(), 3);
        for panel in &rates.panels {
            let names: Vec<&str> = panel.lines.iter().map(|l| l.label.as_str()).collect();
            assert_eq!(names, ["A.0"]);
            assert_eq!(panel.lines[0].points.len(), 9);
            assert_eq!(panel.shade.as_ref().map(|s| s.to), Some(2.0));
        }
        assert_eq!(rates.panels[0].lines[0].points[0], (2.0, 410.0));
        assert_eq!(
            rates.panels[0].references,
            vec![Reference {
                label: "A.0 target".into(),
                y: 500.0,
                line: Some(0)
            }]
        );
        assert_eq!(rates.panels[1].lines[0].points[8], (10.0, 390.0));
        assert_eq!(rates.panels[2].lines[0].points[8], (10.0, 0.001234567));
        // The queue figure: the whole queue and its class, in packets at the end of each bin.
        let queue = &figs[4].chart;
        let names: Vec<&str> = queue.lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(names, ["bottleneck", "bottleneck/af"]);
        assert_eq!(queue.lines[0].points[9], (10.0, 9.0));
        assert_eq!(figs[10].panels.len(), 2);
        let thr = &figs[5].chart;
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
        assert!(b.label.starts_with("B (tcp/newreno, 2 flows)"));
        let mean = &figs[11].chart;
        assert_eq!(
            mean.lines[1].points.iter().map(|p| p.0).collect::<Vec<_>>(),
            [1.0, 2.0]
        );
        assert_eq!(mean.lines[1].bars.len(), 2);
        let bar = mean.lines[1].bars[1];
        assert!(bar.1 <= mean.lines[1].points[1].1 && mean.lines[1].points[1].1 <= bar.2);
    }
}
