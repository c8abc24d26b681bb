//! The high-speed TCP paper's "dynamic tool of choice" (§III D): from
//! a finished sweep over congestion controls and flow counts, the control with the best
//! performance `a E + (1 - a) F` for a number of flows and a weight `a` between efficiency and
//! fairness, with the full ranking.

use crate::summary::{performance, PointSummary, Summary};
use serde::Serialize;

/// One control's standing at one (flows, a).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ranked {
    /// The control (`cubic`; groups of different protocols are joined with `+`).
    pub congestion: String,
    /// a E + (1 - a) F.
    pub performance: f64,
    /// Mean efficiency E.
    pub efficiency: f64,
    /// Mean Jain index F.
    pub jain: f64,
}

/// The answer for one (flows, a).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    /// Number of flows.
    pub flows: u32,
    /// Weight of efficiency.
    pub alpha: f64,
    /// The best control.
    pub best: String,
    /// Every control at this number of flows, best first.
    pub ranking: Vec<Ranked>,
}

/// Why no choice can be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChooseError {
    /// The weight is outside [0, 1].
    #[error("--alpha {0} is outside [0, 1]")]
    BadAlpha(f64),
    /// No point has this many flows.
    #[error("no point of the results has {flows} flows (they have: {known})")]
    NoSuchFlows {
        /// Flows asked for.
        flows: u32,
        /// Flow counts present.
        known: String,
    },
    /// The summary has no efficiency and fairness (written before they existed).
    #[error(
        "the results hold no efficiency/fairness metrics: run the scenario again with this qstp"
    )]
    NoMetrics,
}

/// The control a point runs: its groups' protocols, `tcp/` dropped, distinct, joined with `+`.
pub fn control_of(point: &PointSummary) -> String {
    let mut names: Vec<&str> = Vec::new();
    for g in &point.flows {
        let name = g.protocol.strip_prefix("tcp/").unwrap_or(&g.protocol);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.join("+")
}

/// Flows of a point: all groups together.
pub fn flows_of(point: &PointSummary) -> u32 {
    point.flows.iter().map(|g| g.flows).sum()
}

/// The flow counts of the results, ascending.
pub fn flow_counts(summary: &Summary) -> Vec<u32> {
    let mut counts: Vec<u32> = summary.points.iter().map(flows_of).collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// The ranking at `flows` flows for weight `alpha`. Ties keep the results' order.
pub fn choose(summary: &Summary, flows: u32, alpha: f64) -> Result<Choice, ChooseError> {
    if !(0.0..=1.0).contains(&alpha) {
        return Err(ChooseError::BadAlpha(alpha));
    }
    let points: Vec<&PointSummary> = summary
        .points
        .iter()
        .filter(|p| flows_of(p) == flows)
        .collect();
    if points.is_empty() {
        let known: Vec<String> = flow_counts(summary).iter().map(|n| n.to_string()).collect();
        return Err(ChooseError::NoSuchFlows {
            flows,
            known: known.join(", "),
        });
    }
    let mut ranking = Vec::new();
    for p in points {
        let m = p.metrics.as_ref().ok_or(ChooseError::NoMetrics)?;
        ranking.push(Ranked {
            congestion: control_of(p),
            performance: performance(alpha, m.efficiency.mean, m.jain.mean),
            efficiency: m.efficiency.mean,
            jain: m.jain.mean,
        });
    }
    ranking.sort_by(|a, b| b.performance.total_cmp(&a.performance));
    Ok(Choice {
        flows,
        alpha,
        best: ranking[0].congestion.clone(),
        ranking,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Stats;
    use crate::summary::{GroupSummary, PointMetrics};

    fn point(cc: &str, flows: u32, e: f64, f: f64) -> PointSummary {
        let stats = |mean| Stats {
            mean,
            ..Stats::default()
        };
        PointSummary {
            params: Default::default(),
            flows: vec![GroupSummary {
                group: "S".into(),
                protocol: format!("tcp/{cc}"),
                flows,
                ..GroupSummary::default()
            }],
            queues: vec![],
            target_fairness: None,
            metrics: Some(PointMetrics {
                efficiency: stats(e),
                jain: stats(f),
                performance: Default::default(),
            }),
        }
    }

    fn summary(points: Vec<PointSummary>) -> Summary {
        let mut s: Summary = serde_json::from_value(serde_json::json!({
            "scenario": "t", "qstp_version": "0", "git_commit": "x",
            "overrides": {"runs": null, "seed": null, "duration_s": null},
            "description": "", "seed": 1, "runs": 1, "duration_s": 1.0, "warmup_s": 0.0,
            "simulated_s": 1.0, "events": 0, "sweep": [], "series_runs": "all", "points": []
        }))
        .unwrap();
        s.points = points;
        s
    }

    #[test]
    fn the_weight_decides_between_an_efficient_and_a_fair_control() {
        let s = summary(vec![
            point("efficient", 4, 0.95, 0.80),
            point("fair", 4, 0.85, 0.99),
            point("efficient", 8, 0.90, 0.70),
        ]);
        // a = 0.8: 0.92 vs 0.878; a = 0.2: 0.83 vs 0.962.
        assert_eq!(choose(&s, 4, 0.8).unwrap().best, "efficient");
        let fair = choose(&s, 4, 0.2).unwrap();
        assert_eq!(fair.best, "fair");
        assert!((fair.ranking[0].performance - 0.962).abs() < 1e-12);
        assert_eq!(fair.ranking.len(), 2);
        assert_eq!(flow_counts(&s), [4, 8]);
        assert_eq!(
            choose(&s, 6, 0.5).unwrap_err().to_string(),
            "no point of the results has 6 flows (they have: 4, 8)"
        );
        assert!(matches!(choose(&s, 4, 1.5), Err(ChooseError::BadAlpha(_))));
    }
}
