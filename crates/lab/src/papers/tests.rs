use super::*;
use crate::runner::execute;
use crate::scenario::parse as parse_scenario;
use crate::summary::build;
use crate::testkit::{fake, PLAN};

/// The test plan (`t`: group A qstp 500k, group B tcp, B.flows swept over 1 and 2) run with the
/// stand-in simulator: A gets 8 x seed kbit/s in each run (seeds 5, 6, 7: a mean of 48), B's
/// single flow 8 x seed + 0.8.
fn runs() -> BTreeMap<String, ScenarioRun> {
    let plan = parse_scenario(PLAN, "t.toml", &Overrides::default()).unwrap();
    let results = execute(&plan, 1, fake, &|_| {}).unwrap();
    let summary = build(&plan, &results, &Overrides::default());
    BTreeMap::from([(
        "t".to_string(),
        ScenarioRun {
            plan,
            results,
            summary,
            whole_run: None,
        },
    )])
}

const HEAD: &str = r#"
[[paper]]
id = "p"
title = "A paper"
file = "p.txt"

[[figure]]
paper = "p"
figure = "Fig. 1"
shows = "throughput"
scenarios = ["t"]

[[figure]]
paper = "p"
figure = "Fig. 2"
shows = "the topology"
note = "a drawing"
"#;

fn claim(body: &str) -> String {
    format!(
        "{HEAD}\n[[claim]]\npaper = \"p\"\nfigure = \"Fig. 1\"\nsource = \"§1\"\nsays = \"it\"\nscenario = \"t\"\n{body}\n"
    )
}

/// ns-2.35 gives 50 in row `E | A` and 40 in `E | B`.
fn settings() -> Settings {
    let table =
        "| experiment | metric | seeds | paper | ns-2.35 | lab |\n|---|---|---|---|---|---|\n\
                 | E | A | 3 | - | 50k | 48k |\n| E | B | 3 | - | 40k | 48k |\n";
    Settings {
        command: "qstp papers".into(),
        claims_file: "c.toml".into(),
        ns2: Ns2Table::parse(table, "t.md").unwrap(),
        ns2_file: "t.md".into(),
    }
}

#[test]
fn where_the_lab_disagrees_the_table_says_whether_ns2_reproduces_the_paper() {
    // The lab's 48 is outside 50 +- 1; ns-2's 50 (row E | A) reproduces the paper, its 40 (row
    // E | B) does not, and a note alone is "not run".
    for (ns2, judged) in [
        (
            "ns2 = { rows = [\"E | A\"] }",
            "| 50.0 | **reproduces the paper** |  |",
        ),
        (
            "ns2 = { rows = [\"E | B\"], note = \"why\" }",
            "| 40.0 | does not reproduce it either | why |",
        ),
        (
            "ns2 = { note = \"gTFRC not built\" }",
            "| - | not run | gTFRC not built |",
        ),
    ] {
        let (o, text) = one(&format!(
            "id = \"a\"\npoint = \"1\"\ngroup = \"A\"\nmetric = \"throughput\"\ncheck = \"near\"\npaper_value = 50.0\ntolerance = 1.0\n{ns2}"
        ));
        assert_eq!(o.verdict, Verdict::Disagree);
        assert!(text.contains("## Where the lab disagrees"), "{text}");
        assert!(text.contains(&format!("| 50.0 | 48.0 {judged}")), "{text}");
    }
    // A row the table lacks is an error naming the claim.
    let claims = claims::parse(
        &claim("id = \"a\"\npoint = \"1\"\ngroup = \"A\"\nmetric = \"throughput\"\ncheck = \"near\"\npaper_value = 50.0\ntolerance = 1.0\nns2 = { rows = [\"E | Z\"] }"),
        "c.toml",
    )
    .unwrap();
    let runs = runs();
    let rows = evaluate_all(&claims, &runs).unwrap();
    let e = render(&claims, &runs, &rows, &settings())
        .unwrap_err()
        .to_string();
    assert!(e.contains("claim a") && e.contains("E | Z"), "{e}");
}

fn one(body: &str) -> (Outcome, String) {
    let claims = claims::parse(&claim(body), "c.toml").unwrap();
    let runs = runs();
    let rows = evaluate_all(&claims, &runs).unwrap();
    let settings = settings();
    let text = render(&claims, &runs, &rows, &settings).unwrap();
    (rows[0].outcome.clone(), text)
}

#[test]
fn a_paper_value_is_held_against_the_lab_with_its_tolerance() {
    let (o, text) = one(
        "id = \"a\"\npoint = \"1\"\ngroup = \"A\"\nmetric = \"throughput\"\ncheck = \"near\"\npaper_value = 50.0\ntolerance = 2.5",
    );
    assert_eq!(o.verdict, Verdict::Agree);
    assert!((o.lab.unwrap() - 48.0).abs() < 1e-6, "{o:?}");
    assert!(
        text.contains("| 50.0 | 48.0 | -2.0 (-4%) | within ±2.5 | agree |"),
        "{text}"
    );
    let (o, text) = one(
        "id = \"a\"\npoint = \"1\"\ngroup = \"A\"\nmetric = \"throughput\"\ncheck = \"near\"\npaper_value = 50.0\ntolerance = \"2%\"",
    );
    assert_eq!(o.verdict, Verdict::Disagree);
    assert!(text.contains("**disagree**"), "{text}");
    assert!(text.contains("| p | 1 | 0 | 1 | 0 |"), "{text}");
    let (o, _) = one(
        "id = \"a\"\npoint = \"2\"\ngroup = \"A\"\nmetric = \"throughput\"\ncheck = \"below\"\npaper_value = 500.0\ntolerance = \"5%\"",
    );
    assert_eq!(o.verdict, Verdict::Agree);
    let (o, _) = one(
        "id = \"a\"\npoint = \"2\"\ngroup = \"A\"\nmetric = \"throughput\"\ncheck = \"at-least\"\npaper_value = 500.0\ntolerance = \"5%\"",
    );
    assert_eq!(o.verdict, Verdict::Disagree);
}

#[test]
fn points_compare_with_each_other_and_combine_across_a_wildcard() {
    // B's total: one flow 48.8 kbit/s, two flows 97.6.
    let (o, text) = one(
        "id = \"a\"\npoint = \"2\"\ngroup = \"B\"\nmetric = \"throughput\"\ncheck = \"more-than\"\nother = \"1\"\ntolerance = \"50%\"",
    );
    assert_eq!(o.verdict, Verdict::Agree, "{o:?}");
    assert!((o.reference.unwrap() - 48.8).abs() < 1e-6);
    assert!(text.contains("higher than at `1`"), "{text}");
    let (o, _) = one(
        "id = \"a\"\npoint = \"*\"\nacross = \"max\"\ngroup = \"B\"\nmetric = \"throughput\"\ncheck = \"similar-to\"\nother = \"1\"\nother_group = \"A\"\ntolerance = 1.0",
    );
    assert_eq!(o.verdict, Verdict::Disagree);
    assert!((o.lab.unwrap() - 97.608).abs() < 1e-6, "{o:?}");
    assert!((o.reference.unwrap() - 48.0).abs() < 1e-6);
}

#[test]
fn queue_shares_and_series_metrics_are_measured() {
    // Green packets 105, 106 and 107 in the three runs, yellow 10 and red 40 in each.
    let (o, _) = one(
        "id = \"a\"\npoint = \"1\"\nmetric = \"in-share\"\ncheck = \"near\"\npaper_value = 68.0\ntolerance = 0.1",
    );
    assert!(
        (o.lab.unwrap() - 100.0 * 318.0 / 468.0).abs() < 1e-9,
        "{o:?}"
    );
    assert_eq!(o.verdict, Verdict::Agree);
    // A is far below its 500k target in every bin after the warm-up.
    let (o, _) = one(
        "id = \"a\"\npoint = \"1\"\ngroup = \"A\"\nmetric = \"below-target-time\"\ncheck = \"near\"\npaper_value = 100.0\ntolerance = 0",
    );
    assert_eq!(o.verdict, Verdict::Agree, "{o:?}");
    // It never reaches it: the run's length.
    let (o, _) = one(
        "id = \"a\"\npoint = \"1\"\ngroup = \"A\"\nmetric = \"time-to-target\"\ncheck = \"near\"\npaper_value = 10.0\ntolerance = 0",
    );
    assert_eq!(o.verdict, Verdict::Agree, "{o:?}");
    let (o, text) = one(
        "id = \"a\"\npoint = \"1\"\ngroup = \"A\"\nmetric = \"window-throughput\"\nwindow = [\"5s\", \"20s\"]\ncheck = \"near\"\npaper_value = 48.0\ntolerance = 1",
    );
    assert!(matches!(o.verdict, Verdict::NotMeasured(_)), "{o:?}");
    assert!(
        text.contains("not measured: the window ends at 20s"),
        "{text}"
    );
    let (o, _) = one(
        "id = \"a\"\npoint = \"1\"\ngroup = \"A\"\nmetric = \"window-throughput\"\nwindow = [\"5s\", \"10s\"]\ncheck = \"near\"\npaper_value = 48.0\ntolerance = 0.5",
    );
    assert_eq!(o.verdict, Verdict::Agree, "{o:?}");
}

#[test]
fn wrong_claims_are_refused_with_their_id() {
    let refused = |body: &str| {
        let text = claim(body);
        match claims::parse(&text, "c.toml") {
            Err(e) => e.to_string(),
            Ok(c) => evaluate_all(&c, &runs()).unwrap_err().to_string(),
        }
    };
    let base = "id = \"x\"\ngroup = \"A\"\nmetric = \"throughput\"\ncheck = \"near\"\npaper_value = 1.0\ntolerance = 1";
    assert!(refused(&format!("point = \"3\"\n{base}")).contains("no point matches '3'"));
    assert!(refused(&format!("point = \"1, 2\"\n{base}")).contains("sweeps 1 key"));
    assert!(refused(&format!("point = \"*\"\n{base}")).contains("say across"));
    let e = refused("id = \"x\"\npoint = \"1\"\ngroup = \"Z\"\nmetric = \"throughput\"\ncheck = \"near\"\npaper_value = 1.0\ntolerance = 1");
    assert!(e.contains("claim x") && e.contains("no group 'Z'"), "{e}");
    let e = refused("id = \"x\"\npoint = \"1\"\ngroup = \"A\"\nmetric = \"throughput\"\ncheck = \"less-than\"\npaper_value = 1.0\ntolerance = 1");
    assert!(e.contains("names the other point"), "{e}");
    let e = refused("id = \"x\"\npoint = \"1\"\ngroup = \"A\"\nmetric = \"throughput\"\ncheck = \"near\"\npaper_value = 1.0\ntolerance = \"ten\"");
    assert!(e.contains("tolerance 'ten'"), "{e}");
    let e = refused("id = \"x\"\npoint = \"1\"\nmetric = \"throughput\"\ncheck = \"near\"\npaper_value = 1.0\ntolerance = 1");
    assert!(e.contains("needs a group"), "{e}");
    let e = refused("id = \"x\"\npoint = \"1\"\ngroup = \"B\"\nmetric = \"time-to-target\"\ncheck = \"near\"\npaper_value = 1.0\ntolerance = 1");
    assert!(e.contains("has no target"), "{e}");
    let e = claims::parse(&format!("{}\n[[claim]]\nid = \"y\"\npaper = \"p\"\nfigure = \"Fig. 9\"\nsource = \"\"\nsays = \"\"\nscenario = \"t\"\nmetric = \"in-share\"\ncheck = \"near\"\npaper_value = 1.0\ntolerance = 1\n", HEAD), "c.toml").unwrap_err();
    assert!(e.to_string().contains("no [[figure]] 'Fig. 9'"), "{e}");
}

#[test]
fn questions_are_answered_from_their_claims_and_every_figure_is_listed() {
    let text = format!(
        "{}\n[[question]]\nask = \"Is it so?\"\nclaims = [\"a\"]\n",
        claim("id = \"a\"\npoint = \"1\"\ngroup = \"A\"\nmetric = \"throughput\"\ncheck = \"below\"\npaper_value = 500.0\ntolerance = 0")
    );
    let claims = claims::parse(&text, "c.toml").unwrap();
    let runs = runs();
    let rows = evaluate_all(&claims, &runs).unwrap();
    let settings = settings();
    let md = render(&claims, &runs, &rows, &settings).unwrap();
    assert!(md.contains("**Is it so?** **Yes**"), "{md}");
    assert!(md.contains("### Fig. 2: the topology\n\na drawing"), "{md}");
    assert!(
        md.contains("### Fig. 1: throughput (`scenarios/t.toml`)"),
        "{md}"
    );
    assert_eq!(verdict_lines(&rows), "a agree\n");
    let bad = format!("{}\n[[question]]\nask = \"Q\"\nclaims = [\"nope\"]\n", claim("id = \"a\"\npoint = \"1\"\ngroup = \"A\"\nmetric = \"throughput\"\ncheck = \"below\"\npaper_value = 500.0\ntolerance = 0"));
    assert!(claims::parse(&bad, "c.toml")
        .unwrap_err()
        .to_string()
        .contains("no claim 'nope'"));
}
