//! The papers' claims as transcribed into one data file (`validation/paper-claims.toml`): the
//! papers, every figure and table of each (with the scenario that reproduces it or the reason none
//! does), each number or verdict the text states, and questions answered from those verdicts.
//!
//! A claim names a scenario, a point of its sweep, a group and a metric, the paper's value or the
//! other point it is compared with, a check and a tolerance. [`parse`] reads and checks the file:
//! every reference must resolve, so a typo is an error naming the claim, not a silent row.

use serde::Deserialize;
use std::collections::BTreeSet;

/// Why a claims file was refused, or a claim could not be evaluated.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// The file could not be read.
    #[error("{file}: cannot read: {error}")]
    Read {
        /// The file.
        file: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The file is not TOML of the expected shape.
    #[error("{file}: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// The parser's message, with line and column.
        message: String,
    },
    /// One entry is wrong: a missing field, a reference that does not resolve, a value out of range.
    #[error("{file}: {entry}: {reason}")]
    Invalid {
        /// The file.
        file: String,
        /// The entry (a claim id, a figure, a question).
        entry: String,
        /// Why.
        reason: String,
    },
}

/// The whole data file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    /// The papers, in the order the report shows them.
    #[serde(rename = "paper")]
    pub papers: Vec<Paper>,
    /// Every figure and table of the papers, in the order of each paper.
    #[serde(rename = "figure")]
    pub figures: Vec<Figure>,
    /// The numbers and verdicts the papers state.
    #[serde(rename = "claim")]
    pub claims: Vec<Claim>,
    /// Questions answered from the verdicts of some claims.
    #[serde(rename = "question", default)]
    pub questions: Vec<Question>,
}

/// One paper.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Paper {
    /// Short name the other entries use (`qstp`, `gtfrc`).
    pub id: String,
    /// Full reference.
    pub title: String,
    /// The text it was transcribed from.
    pub file: String,
}

/// One figure or table of a paper.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figure {
    /// The paper's id.
    pub paper: String,
    /// As the paper names it (`Fig. 4`, `Table 1`).
    pub figure: String,
    /// What it shows.
    pub shows: String,
    /// The scenario files (names without `.toml`) that reproduce it; empty when none does.
    #[serde(default)]
    pub scenarios: Vec<String>,
    /// Why no scenario reproduces it, or what else stands for it.
    #[serde(default)]
    pub note: Option<String>,
}

/// One statement of a paper, and how the lab checks it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// Unique, stable name (the test's expectation refers to it).
    pub id: String,
    /// The paper's id.
    pub paper: String,
    /// The figure or table it belongs to (a [`Figure::figure`] of the same paper).
    pub figure: String,
    /// Where in the paper: section, table cell, sentence.
    pub source: String,
    /// What the paper says, quoted where it can be.
    pub says: String,
    /// The scenario file (name without `.toml`).
    pub scenario: String,
    /// The point: its swept values joined by `, ` in the sweep's order, `*` for any value of one
    /// key; empty for a scenario without a sweep.
    #[serde(default)]
    pub point: String,
    /// How to combine the values of several matching points.
    #[serde(default)]
    pub across: Option<Across>,
    /// The group measured (not needed for queue metrics).
    #[serde(default)]
    pub group: Option<String>,
    /// What is measured.
    pub metric: Metric,
    /// For `window-throughput`: `["60s", "120s"]`.
    #[serde(default)]
    pub window: Option<[String; 2]>,
    /// How lab and paper are compared.
    pub check: Check,
    /// The paper's number, in the metric's unit (`near`, `below`, `above`, `at-least`).
    #[serde(default)]
    pub paper_value: Option<f64>,
    /// The point compared with (`less-than`, `more-than`, `similar-to`), as `point` is written.
    #[serde(default)]
    pub other: Option<String>,
    /// The group at the other point, when not the same group.
    #[serde(default)]
    pub other_group: Option<String>,
    /// A number in the metric's unit, or a share of the reference value (`"10%"`).
    pub tolerance: Tolerance,
    /// The same quantity in ns-2.35, the papers' own simulator (`validation/ns2/table.md`).
    #[serde(default)]
    pub ns2: Option<Ns2Ref>,
}

/// Where ns-2.35's value of a claim's quantity is: rows of `validation/ns2/table.md`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ns2Ref {
    /// Rows as `experiment | metric`; several are averaged (as the claim's `across = "mean"`).
    #[serde(default)]
    pub rows: Vec<String>,
    /// What the reader should know beside ns-2's value, or why there is none.
    #[serde(default)]
    pub note: Option<String>,
}

/// How the values of several points matching one claim combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Across {
    /// The smallest.
    Min,
    /// The largest.
    Max,
    /// The mean.
    Mean,
}

impl Across {
    /// Its name in the data file.
    pub fn name(self) -> &'static str {
        match self {
            Across::Min => "min",
            Across::Max => "max",
            Across::Mean => "mean",
        }
    }
}

/// A measured quantity of one group (or of the bottleneck queue) at one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// The group's total throughput at the receiver after the warm-up, mean over runs, kbit/s.
    Throughput,
    /// Standard deviation over runs of that total, kbit/s.
    ThroughputStd,
    /// Largest minus smallest run of that total, kbit/s.
    ThroughputRange,
    /// The group's total goodput, mean over runs, kbit/s.
    Goodput,
    /// Mean jitter (IPDV) of the group's flows, ms.
    Jitter,
    /// The 1 s TSW throughput within `window`, mean over the runs with series, kbit/s.
    WindowThroughput,
    /// Share of the bins after the warm-up in which the 1 s TSW throughput is below 95% of the
    /// target, %.
    BelowTargetTime,
    /// Mean distance of the 1 s TSW throughput from the target after the warm-up, kbit/s.
    TargetDeviation,
    /// First time the 1 s TSW throughput reaches 95% of the target, s (the run's length if never).
    TimeToTarget,
    /// In-profile (green) packets' share of the bottleneck's packets, %.
    InShare,
    /// Out-profile packets' share of the bottleneck's packets, %.
    OutShare,
    /// In-profile packets dropped because the queue was full, % of in-profile packets.
    InLdrops,
    /// In-profile packets dropped early, % of in-profile packets.
    InEdrops,
    /// Out-profile packets dropped because the queue was full, % of out-profile packets.
    OutLdrops,
    /// Out-profile packets dropped early, % of out-profile packets.
    OutEdrops,
}

impl Metric {
    /// The unit its values are written in.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Throughput
            | Metric::ThroughputStd
            | Metric::ThroughputRange
            | Metric::Goodput
            | Metric::WindowThroughput
            | Metric::TargetDeviation => "kbit/s",
            Metric::Jitter => "ms",
            Metric::TimeToTarget => "s",
            _ => "%",
        }
    }

    /// Whether it is about one group (otherwise about the bottleneck queue).
    pub fn of_group(self) -> bool {
        !matches!(
            self,
            Metric::InShare
                | Metric::OutShare
                | Metric::InLdrops
                | Metric::InEdrops
                | Metric::OutLdrops
                | Metric::OutEdrops
        )
    }

    /// Whether it needs the group's target.
    pub fn needs_target(self) -> bool {
        matches!(
            self,
            Metric::BelowTargetTime | Metric::TargetDeviation | Metric::TimeToTarget
        )
    }

    /// Its name in the data file.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Throughput => "throughput",
            Metric::ThroughputStd => "throughput-std",
            Metric::ThroughputRange => "throughput-range",
            Metric::Goodput => "goodput",
            Metric::Jitter => "jitter",
            Metric::WindowThroughput => "window-throughput",
            Metric::BelowTargetTime => "below-target-time",
            Metric::TargetDeviation => "target-deviation",
            Metric::TimeToTarget => "time-to-target",
            Metric::InShare => "in-share",
            Metric::OutShare => "out-share",
            Metric::InLdrops => "in-ldrops",
            Metric::InEdrops => "in-edrops",
            Metric::OutLdrops => "out-ldrops",
            Metric::OutEdrops => "out-edrops",
        }
    }
}

/// How the lab's value `lab` is held against the reference `r` (the paper's value, or the lab's
/// value at the other point) with the tolerance `t` in the metric's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// `|lab - r| <= t`: the paper's number.
    Near,
    /// `lab < r - t`: "does not reach".
    Below,
    /// `lab >= r - t`: "reaches".
    AtLeast,
    /// `lab > r + t`: "outperforms".
    Above,
    /// `lab < r - t`, `r` at the other point.
    LessThan,
    /// `lab > r + t`, `r` at the other point.
    MoreThan,
    /// `|lab - r| <= t`, `r` at the other point.
    SimilarTo,
}

impl Check {
    /// Its name in the data file.
    pub fn name(self) -> &'static str {
        match self {
            Check::Near => "near",
            Check::Below => "below",
            Check::AtLeast => "at-least",
            Check::Above => "above",
            Check::LessThan => "less-than",
            Check::MoreThan => "more-than",
            Check::SimilarTo => "similar-to",
        }
    }

    /// Whether the reference is the lab's value at another point.
    pub fn compares_points(self) -> bool {
        matches!(self, Check::LessThan | Check::MoreThan | Check::SimilarTo)
    }
}

/// A tolerance: absolute in the metric's unit, or relative to the reference value.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(try_from = "ToleranceText")]
pub enum Tolerance {
    /// In the metric's unit.
    Absolute(f64),
    /// A fraction of the reference value (`"10%"` is 0.1).
    Relative(f64),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ToleranceText {
    Number(f64),
    Text(String),
}

impl TryFrom<ToleranceText> for Tolerance {
    type Error = String;

    fn try_from(t: ToleranceText) -> Result<Self, String> {
        match t {
            ToleranceText::Number(v) if v.is_finite() && v >= 0.0 => Ok(Tolerance::Absolute(v)),
            ToleranceText::Text(s) => s
                .strip_suffix('%')
                .and_then(|n| n.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0)
                .map(|v| Tolerance::Relative(v / 100.0))
                .ok_or_else(|| format!("tolerance '{s}': write a number or a share like \"10%\"")),
            ToleranceText::Number(v) => Err(format!("tolerance {v}: must be a number >= 0")),
        }
    }
}

impl Tolerance {
    /// The tolerance in the metric's unit for reference value `reference`.
    pub fn absolute(self, reference: f64) -> f64 {
        match self {
            Tolerance::Absolute(v) => v,
            Tolerance::Relative(f) => f * reference.abs(),
        }
    }
}

/// A question answered yes or no from the verdicts of some claims.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The question.
    pub ask: String,
    /// The claims whose agreement means "yes".
    pub claims: Vec<String>,
}

/// Read and check a claims file.
pub fn load(path: &std::path::Path) -> Result<Claims, ClaimError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| ClaimError::Read {
        file: file.clone(),
        error,
    })?;
    parse(&text, &file)
}

/// Read and check claims text; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Claims, ClaimError> {
    let claims: Claims = toml::from_str(text).map_err(|e| ClaimError::Syntax {
        file: file.into(),
        message: e.to_string(),
    })?;
    check(&claims, file)?;
    Ok(claims)
}

fn check(c: &Claims, file: &str) -> Result<(), ClaimError> {
    let bad = |entry: &str, reason: String| ClaimError::Invalid {
        file: file.into(),
        entry: entry.into(),
        reason,
    };
    let papers: BTreeSet<&str> = c.papers.iter().map(|p| p.id.as_str()).collect();
    let mut figures = BTreeSet::new();
    for f in &c.figures {
        let entry = format!("figure {} {}", f.paper, f.figure);
        if !papers.contains(f.paper.as_str()) {
            return Err(bad(&entry, format!("no paper '{}'", f.paper)));
        }
        if f.scenarios.is_empty() && f.note.is_none() {
            return Err(bad(
                &entry,
                "give its scenarios or a note saying why none".into(),
            ));
        }
        if !figures.insert((f.paper.as_str(), f.figure.as_str())) {
            return Err(bad(&entry, "listed twice".into()));
        }
    }
    let mut ids = BTreeSet::new();
    for claim in &c.claims {
        let entry = format!("claim {}", claim.id);
        if !ids.insert(claim.id.as_str()) {
            return Err(bad(&entry, "duplicate id".into()));
        }
        if !figures.contains(&(claim.paper.as_str(), claim.figure.as_str())) {
            return Err(bad(
                &entry,
                format!(
                    "no [[figure]] '{}' of paper '{}'",
                    claim.figure, claim.paper
                ),
            ));
        }
        if claim.metric.of_group() && claim.group.is_none() {
            return Err(bad(
                &entry,
                format!("metric {} needs a group", claim.metric.name()),
            ));
        }
        if (claim.metric == Metric::WindowThroughput) != claim.window.is_some() {
            return Err(bad(
                &entry,
                "window is given with window-throughput only, and it needs one".into(),
            ));
        }
        if claim.check.compares_points() {
            if claim.other.is_none() || claim.paper_value.is_some() {
                return Err(bad(
                    &entry,
                    "a comparison names the other point and no paper_value".into(),
                ));
            }
        } else if claim.paper_value.is_none()
            || claim.other.is_some()
            || claim.other_group.is_some()
        {
            return Err(bad(
                &entry,
                "this check needs a paper_value and no other point".into(),
            ));
        }
    }
    for q in &c.questions {
        if let Some(missing) = q.claims.iter().find(|id| !ids.contains(id.as_str())) {
            return Err(bad(
                &format!("question '{}'", q.ask),
                format!("no claim '{missing}'"),
            ));
        }
        if q.claims.is_empty() {
            return Err(bad(
                &format!("question '{}'", q.ask),
                "names no claim".into(),
            ));
        }
    }
    Ok(())
}
