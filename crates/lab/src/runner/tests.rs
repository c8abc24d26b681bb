use super::*;
use crate::scenario::{parse, Overrides};
use crate::testkit::{fake, PLAN};
use qstp_proto::Duration;
use std::sync::atomic::AtomicU64;

#[test]
fn results_do_not_depend_on_the_number_of_threads() {
    let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
    let one = execute(&plan, 1, fake, &|_| {}).unwrap();
    let three = execute(&plan, 3, fake, &|_| {}).unwrap();
    assert_eq!(one, three);
    assert_eq!(one.len(), 2);
    assert_eq!(one[1].runs.len(), 3);
    let seeds: Vec<u64> = one[1].runs.iter().map(|r| r.seed).collect();
    assert_eq!(seeds, [5, 6, 7]);
    // Point 1 has two B flows; run 2 (seed 7), group B flow 1: 7101 B/s.
    assert_eq!(one[1].runs[2].flows[2].throughput_bps, 7101.0 * 8.0);
    // The plan's series are small: every run keeps them.
    assert_eq!(series_runs(&plan), SeriesRuns::All);
    assert!(one
        .iter()
        .all(|p| p.runs.iter().all(|r| r.series.is_some())));
}

#[test]
fn progress_reaches_the_totals() {
    let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
    let last_runs = AtomicU64::new(0);
    let last_sim = AtomicU64::new(0);
    execute(&plan, 2, fake, &|p: Progress| {
        assert_eq!(p.runs_total, 6);
        assert_eq!(p.simulated_ns_total, 60 * 1_000_000_000);
        assert!(p.simulated_ns_done <= p.simulated_ns_total);
        last_runs.fetch_max(p.runs_done, Ordering::Relaxed);
        last_sim.fetch_max(p.simulated_ns_done, Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(last_runs.into_inner(), 6);
    assert_eq!(last_sim.into_inner(), Duration::from_secs(60).as_nanos());
}

#[test]
fn a_failed_run_is_reported_with_its_point_and_seed() {
    let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
    let failing = |spec: &SimSpec, p: &mut dyn FnMut(Time) -> ControlFlow<()>| {
        if spec.seed == 6 && spec.groups[1].flows == 2 {
            Err("queue exploded".to_string())
        } else {
            fake(spec, p)
        }
    };
    let err = execute(&plan, 2, failing, &|_| {}).unwrap_err();
    let RunError::Simulation {
        point, run, seed, ..
    } = &err
    else {
        panic!("not a simulation error: {err}");
    };
    assert_eq!((*point, *run, *seed), (1, 1, 6));
    assert_eq!(
        err.to_string(),
        "point 1 [group.B.flows=2], run 1 (seed 6): queue exploded"
    );
}

#[test]
fn tasks_run_anywhere_in_any_order_assemble_to_the_local_result() {
    let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
    let local = execute(&plan, 2, fake, &|_| {}).unwrap();
    let all = tasks(&plan);
    assert_eq!(all.len(), 6);
    // Each task shipped out and back as JSON (as a remote worker would), last task first.
    let shipped: Vec<(Task, RunMetrics)> = all
        .iter()
        .rev()
        .map(|&task| {
            let metrics = run_task(&plan, task, fake, &mut |_| ControlFlow::Continue(())).unwrap();
            let wire = serde_json::to_string(&(task, metrics)).unwrap();
            serde_json::from_str(&wire).unwrap()
        })
        .collect();
    assert_eq!(assemble(&plan, shipped).unwrap(), local);
}

#[test]
fn assembly_refuses_missing_duplicate_and_foreign_tasks() {
    let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
    let run = |task| {
        (
            task,
            run_task(&plan, task, fake, &mut |_| ControlFlow::Continue(())).unwrap(),
        )
    };
    let mut done: Vec<_> = tasks(&plan).into_iter().map(run).collect();
    let last = done.pop().unwrap();
    assert!(matches!(
        assemble(&plan, done.clone()),
        Err(RunError::MissingTask {
            task: Task { point: 1, run: 2 }
        })
    ));
    done.push(last.clone());
    done.push(last);
    assert!(matches!(
        assemble(&plan, done),
        Err(RunError::DuplicateTask { .. })
    ));
    let foreign = Task { point: 0, run: 3 };
    assert!(matches!(
        run_task(&plan, foreign, fake, &mut |_| ControlFlow::Continue(())),
        Err(RunError::UnknownTask { .. })
    ));
    let metrics = run_task(&plan, Task { point: 0, run: 0 }, fake, &mut |_| {
        ControlFlow::Continue(())
    })
    .unwrap();
    assert!(matches!(
        assemble(&plan, [(foreign, metrics)]),
        Err(RunError::UnknownTask { .. })
    ));
}

#[test]
fn a_plan_whose_series_would_not_fit_keeps_the_first_runs_only() {
    // 10,000 bins x (2 + 3 flows over the two points) x 3 metrics x 50 runs: 7.5 M values.
    let o = Overrides {
        runs: Some(50),
        duration: Some(Duration::from_secs(1000)),
        ..Default::default()
    };
    let text = PLAN.replace("bin = \"1s\"", "bin = \"100ms\"");
    let plan = parse(&text, "t.toml", &o).unwrap();
    assert_eq!(series_runs(&plan), SeriesRuns::First);
    let task = |run| Task { point: 0, run };
    let first = run_task(&plan, task(0), fake, &mut |_| ControlFlow::Continue(())).unwrap();
    let second = run_task(&plan, task(1), fake, &mut |_| ControlFlow::Continue(())).unwrap();
    assert!(first.series.is_some() && second.series.is_none());
}

#[test]
fn a_stopped_execution_keeps_the_points_whose_every_run_finished() {
    let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
    let stop = AtomicBool::new(false);
    // One worker: point 0's runs finish, then the stop comes during point 1's first run.
    let simulate = |task: Task, spec: &SimSpec, p: &mut dyn FnMut(Time) -> ControlFlow<()>| {
        if task.point == 1 {
            stop.store(true, Ordering::Relaxed);
        }
        fake(spec, p)
    };
    let finished = execute_until(&plan, 1, simulate, &|_| {}, &stop).unwrap();
    assert!(finished.stopped);
    assert_eq!(finished.plan.points.len(), 1);
    assert_eq!(finished.plan.points[0], plan.points[0]);
    assert_eq!(finished.results.len(), 1);
    assert_eq!(
        finished.results[0].runs.len() as u32,
        plan.points[0].scenario.runs
    );
    // Not stopped: everything, as execute gives it.
    let never = AtomicBool::new(false);
    let all = execute_until(
        &plan,
        2,
        |_, s: &SimSpec, p: &mut dyn FnMut(Time) -> ControlFlow<()>| fake(s, p),
        &|_| {},
        &never,
    )
    .unwrap();
    assert!(!all.stopped);
    assert_eq!(all.results, execute(&plan, 2, fake, &|_| {}).unwrap());
}
