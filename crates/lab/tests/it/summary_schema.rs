//! summary.json follows the JSON Schema committed at docs/summary.schema.json.

use qstp_lab::runner::execute;
use qstp_lab::scenario::{load, Overrides};
use qstp_lab::summary::build;
use qstp_proto::Duration;
use std::path::Path;

fn schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/summary.schema.json");
    let text = std::fs::read_to_string(&path).expect("the schema file");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
}

/// A real summary of a short run of `scenario`.
fn summary(scenario: &str) -> serde_json::Value {
    let overrides = Overrides {
        runs: Some(2),
        duration: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(scenario);
    let plan = load(&path, &overrides).unwrap();
    let results = execute(&plan, 2, qstp_lab::simulate, &|_| {}).unwrap();
    serde_json::to_value(build(&plan, &results, &overrides)).unwrap()
}

fn errors(validator: &jsonschema::Validator, value: &serde_json::Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

#[test]
fn real_summaries_follow_the_schema() {
    let validator = schema();
    // A swept RIO scenario, and a CBQ scenario with a UDP group without target.
    for scenario in ["qstp-fig4.toml", "qstp-fig7.toml"] {
        let value = summary(scenario);
        assert_eq!(
            errors(&validator, &value),
            Vec::<String>::new(),
            "{scenario}"
        );
    }
}

#[test]
fn the_schema_refuses_a_summary_that_drifted() {
    let validator = schema();
    let good = summary("gtfrc-fig4.toml");
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("git_commit");
    assert!(!errors(&validator, &missing).is_empty());
    let mut extra = good.clone();
    extra["points"][0]["flows"][0]["surprise"] = serde_json::json!(1);
    assert!(!errors(&validator, &extra).is_empty());
    let mut wrong = good;
    wrong["points"][0]["flows"][0]["throughput_bps"]["ci95"] = serde_json::json!(-1.0);
    assert!(!errors(&validator, &wrong).is_empty());
}
