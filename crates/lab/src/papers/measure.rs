//! The lab's value of a claim's metric, at the points its pattern matches, and the verdict.

use super::claims::{Across, Check, Claim, ClaimError, Metric};
use crate::figures::group_series;
use crate::runner::PointResult;
use crate::scenario::Plan;
use crate::summary::Summary;
use qstp_proto::Duration;

/// The share of its target at which a flow counts as having reached it in the time-series
/// quantities: the claims' "reaches its target" tolerance (5%).
pub const REACHED: f64 = 0.95;

/// One scenario's finished runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioRun {
    /// The plan as run (overrides applied).
    pub plan: Plan,
    /// Every point's runs.
    pub results: Vec<PointResult>,
    /// Their summary.
    pub summary: Summary,
    /// The same runs' summary with no warm-up, for the queue counters: the papers' tables count
    /// packets and drops over whole runs (ns-2's queue statistics are cumulative), while the lab's
    /// summary leaves the warm-up out. `None` when no claim on this scenario reads a queue.
    pub whole_run: Option<Summary>,
}

/// What the lab says about one claim.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The check holds.
    Agree,
    /// The check fails.
    Disagree,
    /// The lab cannot measure it in these runs (say, a time window beyond a shortened run).
    NotMeasured(String),
}

impl Verdict {
    /// One word for tables and the test's expectation.
    pub fn word(&self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Disagree => "disagree",
            Verdict::NotMeasured(_) => "not-measured",
        }
    }
}

/// The lab's side of one claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The lab's value, in the metric's unit.
    pub lab: Option<f64>,
    /// The value compared against: the paper's, or the lab's at the other point.
    pub reference: Option<f64>,
    /// The tolerance in the metric's unit.
    pub tolerance: f64,
    /// The verdict.
    pub verdict: Verdict,
}

/// Evaluate `claim` on `run`. A claim whose point or group does not exist is an error; a value
/// that these runs cannot give (no series kept, a window beyond the run) is
/// [`Verdict::NotMeasured`].
pub fn evaluate(claim: &Claim, run: &ScenarioRun) -> Result<Outcome, ClaimError> {
    let lab = value(claim, run, &claim.point, claim.group.as_deref())?;
    let reference = if claim.check.compares_points() {
        let other = claim.other.as_deref().unwrap_or_default();
        let group = claim.other_group.as_deref().or(claim.group.as_deref());
        value(claim, run, other, group)?
    } else {
        Ok(claim.paper_value.unwrap_or_default())
    };
    let (lab, reference) = match (lab, reference) {
        (Ok(l), Ok(r)) => (l, r),
        (Err(why), _) | (_, Err(why)) => {
            return Ok(Outcome {
                lab: None,
                reference: None,
                tolerance: 0.0,
                verdict: Verdict::NotMeasured(why),
            });
        }
    };
    let t = claim.tolerance.absolute(reference);
    let holds = holds(claim.check, lab, reference, t);
    Ok(Outcome {
        lab: Some(lab),
        reference: Some(reference),
        tolerance: t,
        verdict: if holds {
            Verdict::Agree
        } else {
            Verdict::Disagree
        },
    })
}

/// Whether `value` passes `check` against `reference` within `t`.
pub fn holds(check: Check, value: f64, reference: f64, t: f64) -> bool {
    match check {
        Check::Near | Check::SimilarTo => (value - reference).abs() <= t,
        Check::Below | Check::LessThan => value < reference - t,
        Check::AtLeast => value >= reference - t,
        Check::Above | Check::MoreThan => value > reference + t,
    }
}

/// The metric at the points `pattern` matches, combined as the claim says. The outer error is a
/// wrong claim; the inner one a value these runs cannot give.
fn value(
    claim: &Claim,
    run: &ScenarioRun,
    pattern: &str,
    group: Option<&str>,
) -> Result<Result<f64, String>, ClaimError> {
    let wrong = |reason: String| ClaimError::Invalid {
        file: "claims".into(),
        entry: format!("claim {}", claim.id),
        reason,
    };
    let points = matching(&run.summary, pattern).map_err(wrong)?;
    if points.len() > 1 && claim.across.is_none() {
        return Err(wrong(format!(
            "point '{pattern}' matches {} points: say across = min, max or mean",
            points.len()
        )));
    }
    let mut values = Vec::with_capacity(points.len());
    for p in points {
        match at_point(claim.metric, claim.window.as_ref(), run, p, group).map_err(wrong)? {
            Ok(v) => values.push(v),
            Err(why) => return Ok(Err(why)),
        }
    }
    let n = values.len() as f64;
    Ok(Ok(match claim.across.unwrap_or(Across::Mean) {
        Across::Min => values.iter().copied().fold(f64::INFINITY, f64::min),
        Across::Max => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        Across::Mean => values.iter().sum::<f64>() / n,
    }))
}

/// The points whose swept values, joined by `, `, match `pattern` (`*` matches any one value).
pub fn matching(summary: &Summary, pattern: &str) -> Result<Vec<usize>, String> {
    let wanted: Vec<&str> = if pattern.is_empty() {
        Vec::new()
    } else {
        pattern.split(", ").collect()
    };
    let mut out = Vec::new();
    for (i, p) in summary.points.iter().enumerate() {
        if p.params.len() != wanted.len() {
            return Err(format!(
                "point '{pattern}': the scenario sweeps {} key(s) ({}); give one value each, joined by ', '",
                p.params.len(),
                summary.sweep.join("; ")
            ));
        }
        let values = p.params.values().map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        if values.zip(&wanted).all(|(v, w)| *w == "*" || v == *w) {
            out.push(i);
        }
    }
    if out.is_empty() {
        return Err(format!("no point matches '{pattern}'"));
    }
    Ok(out)
}

/// One point's value. The outer error is a wrong claim (no such group, no target); the inner one a
/// value these runs cannot give.
fn at_point(
    metric: Metric,
    window: Option<&[String; 2]>,
    run: &ScenarioRun,
    p: usize,
    group: Option<&str>,
) -> Result<Result<f64, String>, String> {
    let point = &run.summary.points[p];
    if !metric.of_group() {
        let whole = run.whole_run.as_ref().unwrap_or(&run.summary);
        let Some(q) = whole.points[p].queues.first() else {
            return Ok(Err("the scenario has no bottleneck queue statistics".into()));
        };
        return Ok(Ok(100.0
            * match metric {
                Metric::InShare => q.in_profile.share,
                Metric::OutShare => q.out_profile.share,
                Metric::InLdrops => q.in_profile.ldrop_rate,
                Metric::InEdrops => q.in_profile.edrop_rate,
                Metric::OutLdrops => q.out_profile.ldrop_rate,
                _ => q.out_profile.edrop_rate,
            }));
    }
    let name = group.unwrap_or_default();
    let g = point
        .flows
        .iter()
        .position(|f| f.group == name)
        .ok_or_else(|| format!("no group '{name}' in {}", run.summary.scenario))?;
    let s = &point.flows[g];
    let target = s.target_bps.filter(|&t| t > 0).map(|t| t as f64);
    if metric.needs_target() && target.is_none() {
        return Err(format!(
            "group '{name}' has no target for {}",
            metric.name()
        ));
    }
    Ok(Ok(match metric {
        Metric::Throughput => s.aggregate_bps.mean / 1e3,
        Metric::ThroughputStd => s.aggregate_bps.std / 1e3,
        Metric::ThroughputRange => (s.aggregate_bps.max - s.aggregate_bps.min) / 1e3,
        Metric::Goodput => s.goodput_bps.mean * s.flows as f64 / 1e3,
        Metric::Jitter => match s.jitter_ms {
            Some(j) => j.mean,
            None => return Ok(Err(format!("group '{name}' received no packets"))),
        },
        _ => {
            let scenario = &run.plan.points[p].scenario;
            let window = match window {
                Some([from, to]) => {
                    let parse =
                        |t: &str| Duration::parse(t).map_err(|e| format!("window '{t}': {e}"));
                    Some((parse(from)?, parse(to)?))
                }
                None => None,
            };
            if let Some((_, to)) = window {
                if to > scenario.duration {
                    return Ok(Err(format!(
                        "the window ends at {to}, after the {} run",
                        scenario.duration
                    )));
                }
            }
            let series = series_metric(
                metric,
                &run.results[p],
                g,
                target.unwrap_or(0.0),
                scenario.warmup,
                scenario.duration,
                window,
            );
            match series {
                Some(v) => v,
                None => return Ok(Err("no run kept its time series".into())),
            }
        }
    }))
}

/// A metric of the group's 1 s TSW throughput series, mean over the runs that kept theirs.
fn series_metric(
    metric: Metric,
    result: &PointResult,
    g: usize,
    target_bps: f64,
    warmup: Duration,
    duration: Duration,
    window: Option<(Duration, Duration)>,
) -> Option<f64> {
    let per_run: Vec<f64> = result
        .runs
        .iter()
        .filter_map(|r| r.series.as_ref())
        .map(|s| {
            let bin = s.bin.as_secs_f64();
            let values = group_series(s, g, |f| &f.throughput_bps);
            let first = (warmup.as_secs_f64() / bin).ceil() as usize;
            let after: Vec<f64> = values.iter().skip(first).copied().collect();
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
            match metric {
                Metric::BelowTargetTime => {
                    let below = after.iter().filter(|&&v| v < REACHED * target_bps).count();
                    100.0 * below as f64 / after.len().max(1) as f64
                }
                Metric::TargetDeviation => {
                    let d: Vec<f64> = after.iter().map(|v| (v - target_bps).abs()).collect();
                    mean(&d) / 1e3
                }
                Metric::TimeToTarget => values
                    .iter()
                    .position(|&v| v >= REACHED * target_bps)
                    .map_or(duration.as_secs_f64(), |i| (i + 1) as f64 * bin),
                _ => {
                    // WindowThroughput: bins lying wholly within [from, to].
                    let (from, to) = window.map_or((0.0, f64::INFINITY), |(a, b)| {
                        (a.as_secs_f64(), b.as_secs_f64())
                    });
                    let inside: Vec<f64> = values
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| {
                            *i as f64 * bin >= from - 1e-9 && (i + 1) as f64 * bin <= to + 1e-9
                        })
                        .map(|(_, v)| *v)
                        .collect();
                    mean(&inside) / 1e3
                }
            }
        })
        .collect();
    (!per_run.is_empty()).then(|| per_run.iter().sum::<f64>() / per_run.len() as f64)
}
