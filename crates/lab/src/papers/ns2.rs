//! ns-2.35's side of the claims: the values `validation/ns2/table.md` gives for the same
//! quantities, so that where the lab disagrees with a paper, the table says whether the papers' own
//! simulator reproduces the paper.

use super::claims::{Claim, ClaimError};
use super::measure::holds;
use std::collections::BTreeMap;

/// ns-2.35's value per row of `validation/ns2/table.md`, keyed `experiment | metric`, in the unit
/// of the claims (kbit/s, %, or a plain number).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ns2Table {
    values: BTreeMap<String, f64>,
    /// The file, for errors.
    file: String,
}

/// ns-2.35 on one claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Ns2Outcome {
    /// ns-2's value (the mean of the claim's rows), if the claim names rows.
    pub value: Option<f64>,
    /// Whether that value passes the claim's check against the paper's number.
    pub agrees_with_paper: Option<bool>,
}

impl Ns2Table {
    /// Read the generated table.
    pub fn load(path: &std::path::Path) -> Result<Self, ClaimError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| ClaimError::Read {
            file: file.clone(),
            error,
        })?;
        Self::parse(&text, &file)
    }

    /// Parse the table's Markdown: the header row names the columns; `-` is no value.
    pub fn parse(text: &str, file: &str) -> Result<Self, ClaimError> {
        let cells = |line: &str| -> Vec<String> {
            line.trim()
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        };
        let syntax = |message: String| ClaimError::Syntax {
            file: file.to_string(),
            message,
        };
        let mut lines = text.lines().filter(|l| l.starts_with('|'));
        let header = cells(lines.next().ok_or_else(|| syntax("no table".into()))?);
        let column = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| syntax(format!("no '{name}' column")))
        };
        let (experiment, metric, ns2) =
            (column("experiment")?, column("metric")?, column("ns-2.35")?);
        let mut values = BTreeMap::new();
        for line in lines.filter(|l| !l.starts_with("|---")) {
            let row = cells(line);
            let (Some(e), Some(m), Some(v)) = (row.get(experiment), row.get(metric), row.get(ns2))
            else {
                return Err(syntax(format!("short row: {line}")));
            };
            if let Some(v) = number(v) {
                values.insert(format!("{e} | {m}"), v);
            }
        }
        Ok(Ns2Table {
            values,
            file: file.to_string(),
        })
    }

    /// ns-2.35 on `claim`: the mean of its rows, and that value's verdict against the paper.
    /// A row the table lacks is an error naming the claim.
    pub fn outcome(&self, claim: &Claim) -> Result<Option<Ns2Outcome>, ClaimError> {
        let Some(reference) = &claim.ns2 else {
            return Ok(None);
        };
        let mut sum = 0.0;
        for row in &reference.rows {
            sum += self.values.get(row).ok_or_else(|| ClaimError::Invalid {
                file: self.file.clone(),
                entry: format!("claim {}", claim.id),
                reason: format!("ns-2.35 has no value in the row '{row}'"),
            })?;
        }
        let value = (!reference.rows.is_empty()).then(|| sum / reference.rows.len() as f64);
        let agrees_with_paper = match (value, claim.paper_value) {
            (Some(v), Some(paper)) if !claim.check.compares_points() => Some(holds(
                claim.check,
                v,
                paper,
                claim.tolerance.absolute(paper),
            )),
            _ => None,
        };
        Ok(Some(Ns2Outcome {
            value,
            agrees_with_paper,
        }))
    }
}

/// A cell of the ns-2.35 column: `545k` (kbit/s), `12.76%`, `0.263`; `-` is none.
fn number(cell: &str) -> Option<f64> {
    let digits = cell.trim_end_matches(['k', '%']);
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "intro\n\n| experiment | metric | seeds | paper | ns-2.35 | lab |\n|---|---|---|---|---|---|\n\
        | gTFRC Fig. 8(a) | A throughput | 10 | - | 545k | 607k |\n\
        | gTFRC Fig. 4(a) | out-profile edrop rate | 10 | - | 3.75% | 5.00% |\n\
        | QSTP Fig. 5(b), 1 | A | 10 | - | 510k | 533k |\n\
        | QSTP Fig. 5(b), 5 | A | 10 | - | 420k | 415k |\n\
        | gTFRC Fig. 9(b) | A | 10 | - | - | 600k |\n";

    fn claim(extra: &str) -> Claim {
        let text = format!(
            "[[paper]]\nid = \"g\"\ntitle = \"T\"\nfile = \"f\"\n[[figure]]\npaper = \"g\"\nfigure = \"Fig. 1\"\nshows = \"s\"\nscenarios = [\"x\"]\n\
             [[claim]]\nid = \"c\"\npaper = \"g\"\nfigure = \"Fig. 1\"\nsource = \"s\"\nsays = \"s\"\nscenario = \"x\"\ngroup = \"A\"\n\
             metric = \"throughput\"\ncheck = \"near\"\npaper_value = 400.0\ntolerance = \"10%\"\n{extra}"
        );
        super::super::claims::parse(&text, "claims.toml")
            .unwrap()
            .claims
            .remove(0)
    }

    #[test]
    fn reads_units_averages_rows_and_judges_against_the_paper() {
        let table = Ns2Table::parse(TABLE, "table.md").unwrap();
        // 545k against the paper's 400 +- 40: ns-2 does not reproduce it.
        let one = claim("ns2 = { rows = [\"gTFRC Fig. 8(a) | A throughput\"] }");
        let o = table.outcome(&one).unwrap().unwrap();
        assert_eq!((o.value, o.agrees_with_paper), (Some(545.0), Some(false)));
        // The mean of 510 and 420 is 465: still outside 400 +- 40.
        let mean = claim("ns2 = { rows = [\"QSTP Fig. 5(b), 1 | A\", \"QSTP Fig. 5(b), 5 | A\"] }");
        assert_eq!(table.outcome(&mean).unwrap().unwrap().value, Some(465.0));
        // 3.75% parses as 3.75; a note alone has no value and no verdict.
        let pct = claim("ns2 = { rows = [\"gTFRC Fig. 4(a) | out-profile edrop rate\"] }");
        assert_eq!(table.outcome(&pct).unwrap().unwrap().value, Some(3.75));
        let note = claim("ns2 = { note = \"not run\" }");
        assert_eq!(
            table.outcome(&note).unwrap().unwrap(),
            Ns2Outcome {
                value: None,
                agrees_with_paper: None
            }
        );
        assert_eq!(table.outcome(&claim("")).unwrap(), None);
    }

    #[test]
    fn a_row_without_a_value_or_missing_is_an_error_naming_the_claim() {
        let table = Ns2Table::parse(TABLE, "table.md").unwrap();
        for row in ["gTFRC Fig. 9(b) | A", "gTFRC Fig. 99 | A"] {
            let e = table
                .outcome(&claim(&format!("ns2 = {{ rows = [\"{row}\"] }}")))
                .unwrap_err()
                .to_string();
            assert!(e.contains("claim c") && e.contains(row), "{e}");
        }
        assert!(Ns2Table::parse("no table here", "t.md").is_err());
    }
}
