//! qstp-lab's integration tests, one binary: a module per subject.

mod examples;
mod paper_results;
mod papers;
mod summary_schema;
