//! `validation/papers.md` is what `qstp papers` writes: every claim of
//! `validation/paper-claims.toml` run in full (each scenario file's own runs and duration, about
//! 30 CPU seconds in a release build) and rendered beside ns-2.35's values from
//! `validation/ns2/table.md`. A difference means the lab's behaviour, a scenario, the claims or
//! ns-2's table moved: look at the rows that changed, and if the move is meant, regenerate the
//! file with `qstp papers --force` (or `QSTP_BLESS=1 cargo test --release -p qstp-lab --test it
//! papers`) and say why in the commit.

use qstp_lab::papers::{self, Ns2Table, Settings};
use qstp_lab::scenario::Overrides;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

#[test]
fn papers_md_is_what_qstp_papers_writes() {
    let claims = papers::claims::load(&root().join("validation/paper-claims.toml")).unwrap();
    let ns2 = Ns2Table::load(&root().join("validation/ns2/table.md")).unwrap();
    let jobs = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(2);
    let runs = papers::run_scenarios(
        &claims,
        &root().join("scenarios"),
        &Overrides::default(),
        jobs,
        &|_, _| {},
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let rows = papers::evaluate_all(&claims, &runs).unwrap_or_else(|e| panic!("{e}"));
    // As `qstp papers` with its defaults, run from the repository's root.
    let settings = Settings {
        command: "qstp papers".into(),
        claims_file: "validation/paper-claims.toml".into(),
        ns2,
        ns2_file: "validation/ns2/table.md".into(),
    };
    let actual = papers::render(&claims, &runs, &rows, &settings).unwrap_or_else(|e| panic!("{e}"));
    let path = root().join("validation/papers.md");
    if std::env::var_os("QSTP_BLESS").is_some() {
        std::fs::write(&path, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    let changed: Vec<String> = actual
        .lines()
        .zip(expected.lines().chain(std::iter::repeat("")))
        .filter(|(a, e)| a != e)
        .take(20)
        .map(|(a, e)| format!("- {e}\n+ {a}"))
        .collect();
    assert!(
        actual == expected,
        "validation/papers.md is not what `qstp papers` writes ({} lines against {}); first \
         changed lines:\n{}",
        actual.lines().count(),
        expected.lines().count(),
        changed.join("\n")
    );
    // Every claim ends in a verdict the table states; none is left unmeasured.
    assert!(rows.iter().all(|r| r.outcome.lab.is_some()));
}
