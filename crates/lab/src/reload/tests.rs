use super::*;
use crate::figures::figures;
use crate::output::write_all;
use crate::runner::execute;
use crate::summary::build;
use crate::testkit::{fake, PLAN};

#[test]
fn a_results_folder_reads_back_into_the_same_figures() {
    let dir = std::env::temp_dir().join(format!("qstp-lab-reload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let overrides = Overrides {
        runs: Some(2),
        ..Default::default()
    };
    let plan = parse(PLAN, "t.toml", &overrides).unwrap();
    let results = execute(&plan, 2, fake, &|_| {}).unwrap();
    let summary = build(&plan, &results, &overrides);
    write_all(&dir, &plan, &results, &summary).unwrap();

    let loaded = load(&dir).unwrap();
    assert_eq!(loaded.summary, summary);
    assert_eq!(loaded.plan.points.len(), 2);
    assert_eq!(
        loaded.results[1].runs.len(),
        2,
        "the recorded --runs 2 applies"
    );
    for (a, b) in results.iter().zip(&loaded.results) {
        for (ra, rb) in a.runs.iter().zip(&b.runs) {
            assert_eq!(ra.seed, rb.seed);
            assert_eq!(ra.flows.len(), rb.flows.len());
            for (fa, fb) in ra.flows.iter().zip(&rb.flows) {
                assert_eq!((fa.group, fa.flow), (fb.group, fb.flow));
                assert!((fa.throughput_bps - fb.throughput_bps).abs() < 0.1);
            }
            let (sa, sb) = (ra.series.as_ref().unwrap(), rb.series.as_ref().unwrap());
            assert_eq!(sa.flows.len(), sb.flows.len());
            for (fa, fb) in sa.flows.iter().zip(&sb.flows) {
                assert!(fa
                    .throughput_bps
                    .iter()
                    .zip(&fb.throughput_bps)
                    .all(|(x, y)| (x - y).abs() <= 0.5));
                assert_eq!(fa.jitter_ms.len(), fb.jitter_ms.len());
                // The rate-based sender's series are written exactly (whole bit/s, p to 1e-9):
                // they come back as they were, absent bins included.
                assert_eq!(fa.rate_bps, fb.rate_bps);
                assert_eq!(fa.x_recv_bps, fb.x_recv_bps);
                assert_eq!(fa.loss_event_rate, fb.loss_event_rate);
                assert_eq!(fa.loss_events, fb.loss_events);
            }
            assert!(sa
                .flows
                .iter()
                .any(|f| f.rate_bps.iter().flatten().count() == 9));
            // Queue lengths are whole numbers: they come back exactly.
            assert_eq!(sa.queues, sb.queues);
        }
    }
    let before = figures(&plan, &results, &summary);
    let after = figures(&loaded.plan, &loaded.results, &loaded.summary);
    let stems = |f: &[crate::figures::Figure]| f.iter().map(|x| x.stem.clone()).collect::<Vec<_>>();
    assert_eq!(stems(&before), stems(&after));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_folder_without_a_summary_or_with_a_broken_csv_says_which_file() {
    let dir = std::env::temp_dir().join(format!("qstp-lab-reload-bad-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let err = load(&dir).unwrap_err();
    assert!(err.to_string().contains("summary.json"), "{err}");

    let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
    let results = execute(&plan, 1, fake, &|_| {}).unwrap();
    let summary = build(&plan, &results, &Overrides::default());
    let _ = std::fs::remove_dir_all(&dir);
    write_all(&dir, &plan, &results, &summary).unwrap();
    let runs = dir.join("runs.csv");
    let text = std::fs::read_to_string(&runs).unwrap();
    std::fs::write(&runs, text.replacen(",A,", ",Nobody,", 1)).unwrap();
    let err = load(&dir).unwrap_err();
    assert!(
        err.to_string()
            .contains("runs.csv, line 2: no group 'Nobody'"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_results_folder_keeps_the_trace_it_ran_so_it_redraws_alone() {
    let temp =
        |name: &str| std::env::temp_dir().join(format!("qstp-lab-{name}-{}", std::process::id()));
    let src = temp("inputs-src");
    let out = temp("inputs-out");
    let _ = std::fs::remove_dir_all(&src);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(src.join("traces")).unwrap();
    std::fs::write(src.join("traces/t.csv"), "seconds,bps\n0,2M\n5,1M\n").unwrap();
    let text = "name = \"t\"\nduration = \"10s\"\n[bottleneck]\nrate = \"10M\"\n\
                queue = { kind = \"droptail\", limit = 50 }\n\
                [[group]]\nname = \"F\"\nprotocol = \"tcp\"\nrtt = \"40ms\"\n\
                [[group]]\nname = \"S\"\nprotocol = \"tcp\"\nflows = 3\nrtt = \"40ms\"\n\
                [delegation]\nfree = \"F\"\nstunts = \"S\"\ncontroller = { kind = \"onoff\" }\n\
                trace = { file = \"traces/t.csv\" }\n";
    let file = src.join("t.toml");
    std::fs::write(&file, text).unwrap();
    let plan = crate::scenario::load(&file, &Overrides::default()).unwrap();
    let results = execute(&plan, 1, crate::simulate, &|_| {}).unwrap();
    let summary = build(&plan, &results, &Overrides::default());
    write_all(&out, &plan, &results, &summary).unwrap();
    assert!(out.join("inputs/traces/t.csv").is_file());
    // The scenario's own folder is gone: the results folder alone redraws.
    std::fs::remove_dir_all(&src).unwrap();
    let loaded = load(&out).unwrap_or_else(|e| panic!("{e}"));
    let trace = &loaded.plan.base().delegation.as_ref().unwrap().trace;
    assert_eq!(trace.points().len(), 2);
    let _ = std::fs::remove_dir_all(&out);
}
