//! The papers' numbers beside the lab's: `validation/papers.md`.
//!
//! The claims (every number and verdict the QSTP and gTFRC papers state, transcribed once into a
//! data file, see [`claims`]) are held against the lab's runs of the scenario files they name:
//! [`run_scenarios`] runs each scenario a claim names, [`evaluate_all`] measures every claim and
//! gives its verdict, [`render`] writes the Markdown table. Nothing of the paper's side is typed
//! into the output: it all comes from the data file.

pub mod claims;
mod measure;
pub mod ns2;
mod render;

pub use claims::{Claim, ClaimError, Claims};
pub use measure::{matching, Outcome, ScenarioRun, Verdict};
pub use ns2::Ns2Table;
pub use render::{render, verdict_lines, Settings};

use crate::runner::{execute, Progress, RunError};
use crate::scenario::{load, Overrides, ScenarioError};
use std::collections::BTreeMap;
use std::path::Path;

/// Why the table could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PapersError {
    /// The claims file is wrong.
    #[error(transparent)]
    Claims(#[from] ClaimError),
    /// A scenario file is wrong.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A scenario could not be run.
    #[error("{scenario}: {error}")]
    Run {
        /// The scenario.
        scenario: String,
        /// What failed.
        error: RunError,
    },
    /// A scenario file's `name` is not its file name.
    #[error(
        "{file}: its name is '{name}'; claims refer to scenarios by file name, so they must agree"
    )]
    Name {
        /// The file.
        file: String,
        /// The name it gives.
        name: String,
    },
}

/// One claim and what the lab says about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row<'a> {
    /// The claim.
    pub claim: &'a Claim,
    /// The lab's value and verdict.
    pub outcome: Outcome,
}

/// The scenarios the claims name, each once, in name order.
pub fn scenario_names(claims: &Claims) -> Vec<String> {
    let names: std::collections::BTreeSet<&str> =
        claims.claims.iter().map(|c| c.scenario.as_str()).collect();
    names.into_iter().map(str::to_string).collect()
}

/// Run every scenario the claims name, from `dir/<name>.toml`, with `overrides`, on `jobs`
/// threads; `progress` hears of each scenario as it starts and of its runs.
pub fn run_scenarios(
    claims: &Claims,
    dir: &Path,
    overrides: &Overrides,
    jobs: usize,
    progress: &(dyn Fn(&str, Progress) + Sync),
) -> Result<BTreeMap<String, ScenarioRun>, PapersError> {
    let mut out = BTreeMap::new();
    for name in scenario_names(claims) {
        let path = dir.join(format!("{name}.toml"));
        let plan = load(&path, overrides)?;
        if plan.base().name != name {
            return Err(PapersError::Name {
                file: path.display().to_string(),
                name: plan.base().name.clone(),
            });
        }
        let results =
            execute(&plan, jobs, crate::simulate, &|p| progress(&name, p)).map_err(|error| {
                PapersError::Run {
                    scenario: name.clone(),
                    error,
                }
            })?;
        let summary = crate::summary::build(&plan, &results, overrides);
        // The papers' tables count the queue over whole runs (ns-2's queue statistics are
        // cumulative): run the same seeds again with no warm-up for those claims.
        let reads_queue = claims
            .claims
            .iter()
            .any(|c| c.scenario == name && !c.metric.of_group());
        let whole_run = if reads_queue {
            let mut whole = plan.clone();
            for point in &mut whole.points {
                point.scenario.warmup = qstp_proto::Duration::ZERO;
            }
            let results = execute(&whole, jobs, crate::simulate, &|p| progress(&name, p)).map_err(
                |error| PapersError::Run {
                    scenario: name.clone(),
                    error,
                },
            )?;
            Some(crate::summary::build(&whole, &results, overrides))
        } else {
            None
        };
        out.insert(
            name,
            ScenarioRun {
                plan,
                results,
                summary,
                whole_run,
            },
        );
    }
    Ok(out)
}

/// Every claim's outcome, in the data file's order. A claim naming a scenario not in `runs`, a
/// point or a group that does not exist is an error.
pub fn evaluate_all<'a>(
    claims: &'a Claims,
    runs: &BTreeMap<String, ScenarioRun>,
) -> Result<Vec<Row<'a>>, ClaimError> {
    claims
        .claims
        .iter()
        .map(|claim| {
            let run = runs
                .get(&claim.scenario)
                .ok_or_else(|| ClaimError::Invalid {
                    file: "claims".into(),
                    entry: format!("claim {}", claim.id),
                    reason: format!("scenario '{}' was not run", claim.scenario),
                })?;
            Ok(Row {
                claim,
                outcome: measure::evaluate(claim, run)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
