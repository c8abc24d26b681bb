//! The generator of `validation/papers.md` on shortened runs: every claim of
//! `validation/paper-claims.toml` must keep the verdict committed in `papers_short_verdicts.txt`.
//!
//! The runs are shortened to two per point (the files' durations kept, so that time windows such as
//! QSTP Fig. 7's 60-120 s still exist), so these verdicts are the short runs' and may differ from
//! the full table's. A flip means the lab's behaviour moved: look at the claim, and if the move is
//! meant, regenerate the expectation with `QSTP_BLESS=1 cargo test -p qstp-lab --test it papers` and
//! say why in the commit.

use qstp_lab::papers::{self, Settings};
use qstp_lab::scenario::Overrides;
use std::path::Path;

const EXPECTED: &str = "tests/it/papers_short_verdicts.txt";

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

#[test]
fn no_verdict_flips_on_short_runs() {
    let claims = papers::claims::load(&root().join("validation/paper-claims.toml")).unwrap();
    let overrides = Overrides {
        runs: Some(2),
        ..Default::default()
    };
    let jobs = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(2);
    let runs = papers::run_scenarios(
        &claims,
        &root().join("scenarios"),
        &overrides,
        jobs,
        &|_, _| {},
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let rows = papers::evaluate_all(&claims, &runs).unwrap_or_else(|e| panic!("{e}"));
    let actual = papers::verdict_lines(&rows);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(EXPECTED);
    if std::env::var_os("QSTP_BLESS").is_some() {
        std::fs::write(&path, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    let table = papers::render(
        &claims,
        &runs,
        &rows,
        &Settings {
            command: "qstp papers --runs 2".into(),
            claims_file: "validation/paper-claims.toml".into(),
        },
    );
    let flips: Vec<String> = actual
        .lines()
        .filter(|line| !expected.lines().any(|e| e == *line))
        .map(|line| {
            let id = line.split(' ').next().unwrap_or_default();
            let row = table
                .lines()
                .find(|l| {
                    rows.iter().any(|r| {
                        r.claim.id == id
                            && l.starts_with(&format!("| {}", r.claim.says.replace('|', "\\|")))
                    })
                })
                .unwrap_or_default();
            format!(
                "{line} (expected: {})\n    {row}",
                expected_of(&expected, id)
            )
        })
        .collect();
    assert!(
        flips.is_empty() && actual.lines().count() == expected.lines().count(),
        "verdicts moved on short runs (see {EXPECTED}):\n{}",
        flips.join("\n")
    );
    // Every claim ends in a verdict the table states; none is left unmeasured.
    assert!(rows.iter().all(|r| r.outcome.lab.is_some()), "{actual}");
    assert!(table.contains("| qstp | ") && table.contains("| gtfrc | "));
}

fn expected_of<'a>(expected: &'a str, id: &str) -> &'a str {
    expected
        .lines()
        .find_map(|l| l.strip_prefix(id).and_then(|r| r.strip_prefix(' ')))
        .unwrap_or("nothing: a new claim")
}
