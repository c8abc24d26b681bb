use super::*;
use crate::runner::execute;
use crate::scenario::{parse, Overrides};
use crate::summary::build;
use crate::testkit::{fake, PLAN};

fn write_plan(dir: &Path) -> Written {
    let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
    let results = execute(&plan, 2, fake, &|_| {}).unwrap();
    let summary = build(&plan, &results, &Overrides::default());
    write_all(dir, &plan, &results, &summary).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("qstp-lab-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn every_output_is_written_and_the_report_gathers_them() {
    let dir = temp_dir("outputs");
    let w = write_plan(&dir);
    assert_eq!(w.series.len(), 2);
    assert_eq!(w.plots.len(), 26, "13 figures, each as SVG and PDF");
    for pdf in w
        .plots
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "pdf"))
    {
        let bytes = std::fs::read(pdf).unwrap();
        assert!(bytes.starts_with(b"%PDF-"), "{}", pdf.display());
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&w.summary).unwrap()).unwrap();
    assert_eq!(json["points"].as_array().unwrap().len(), 2);

    let report = std::fs::read_to_string(w.report.as_ref().unwrap()).unwrap();
    assert!(report.starts_with("<!DOCTYPE html>"));
    // Self-contained: nothing loaded from elsewhere; links only within the page or to the full
    // size of a plot that is there.
    assert!(
        !report.contains("src=\""),
        "self-contained: no external files"
    );
    for href in report.split("href=\"").skip(1) {
        let href = &href[..href.find('"').unwrap()];
        assert!(
            href.starts_with('#') || dir.join(href).is_file(),
            "a link to nothing: {href}"
        );
    }
    assert_eq!(report.matches("<svg").count(), 13, "every plot inline");
    assert_eq!(
        report.matches("<details id=\"p").count(),
        2,
        "a section per point"
    );
    assert!(report.contains("Point 1: B.flows=2"));
    assert!(
        report.contains("&quot;group.B.flows&quot; = [1, 2]"),
        "the scenario file is shown"
    );
    for cell in [
        "<td>B</td><td>tcp/newreno</td><td>2</td>",
        "<td>A</td><td>qstp</td><td>1</td><td>500.0</td>",
        "in-profile",
        "out-profile",
    ] {
        assert!(report.contains(cell), "missing {cell}");
    }
    // Seed 5, group A, flow 0: 5000 B/s = 40 kbit/s, below the 500k target, so flagged.
    assert!(
        report.contains("<td class=\"short\">"),
        "a group below its target is flagged"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn series_have_one_row_per_bin_and_named_columns() {
    let dir = temp_dir("series");
    let w = write_plan(&dir);
    let csv = std::fs::read_to_string(
        w.series
            .iter()
            .find(|p| p.to_string_lossy().contains("p01"))
            .unwrap(),
    )
    .unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "time_s,A.throughput_bps,A.0.throughput_bps,A.0.goodput_bps,A.0.jitter_ms,\
         B.throughput_bps,B.0.throughput_bps,B.0.goodput_bps,B.0.jitter_ms,B.1.throughput_bps,B.1.goodput_bps,B.1.jitter_ms"
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 10, "10 s in 1 s bins");
    let first: Vec<&str> = rows[0].split(',').collect();
    assert_eq!(first[0], "1.000");
    assert_eq!(first[4], "1.000", "1 ms of jitter for the bin's one packet");
    // The group column is the sum of its flows.
    let b: f64 = first[5].parse().unwrap();
    let b0: f64 = first[6].parse().unwrap();
    let b1: f64 = first[9].parse().unwrap();
    assert!((b - b0 - b1).abs() <= 1.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn with_many_points_the_time_series_are_linked_not_inlined() {
    let dir = temp_dir("many");
    let text = PLAN.replace(
        "\"group.B.flows\" = [1, 2]",
        "\"group.B.flows\" = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]",
    );
    let plan = parse(
        &text,
        "t.toml",
        &Overrides {
            runs: Some(1),
            ..Default::default()
        },
    )
    .unwrap();
    let results = execute(&plan, 2, fake, &|_| {}).unwrap();
    let summary = build(&plan, &results, &Overrides::default());
    let w = write_all(&dir, &plan, &results, &summary).unwrap();
    assert_eq!(
        w.plots.len(),
        2 * (13 * 5 + 2),
        "every figure is still written, as SVG and PDF"
    );
    let report = std::fs::read_to_string(w.report.as_ref().unwrap()).unwrap();
    assert_eq!(
        report.matches("<svg").count(),
        2,
        "only the mean and std figures inline"
    );
    assert_eq!(report.matches("<li><a href=\"plots/").count(), 65);
    assert!(report.contains("href=\"plots/throughput-p12-B.flows=13.svg\""));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn runs_csv_has_a_row_per_point_run_and_flow() {
    let dir = temp_dir("runs");
    let w = write_plan(&dir);
    let csv = std::fs::read_to_string(&w.runs).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "point,params,run,seed,group,flow,protocol,target_bps,throughput_bps,goodput_bps,\
         jitter_ms,packets_sent,packets_retransmitted,retransmitted,timeouts,fast_recoveries,\
         delay_mean_ms,delay_p50_ms,delay_p95_ms,delay_p99_ms,rtt_mean_ms,rtt_p50_ms,rtt_p95_ms,\
         rtt_p99_ms,queue_sojourn_mean_ms,queue_sojourn_p50_ms,queue_sojourn_p95_ms,\
         queue_sojourn_p99_ms,messages_delivered,messages_expired"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // Point 0: 3 runs x 2 flows; point 1: 3 runs x 3 flows.
    assert_eq!(rows.len(), 15);
    // Point 1, run 2 (seed 7), group B flow 1: 7101 B/s per bin of 1 s.
    let row = rows
        .iter()
        .find(|r| r[0] == "1" && r[2] == "2" && r[4] == "B" && r[5] == "1")
        .unwrap();
    assert_eq!(row[1], "B.flows=2");
    assert_eq!(row[3], "7");
    assert_eq!(row[8].parse::<f64>().unwrap(), 7101.0 * 8.0);
    // The fake sender has 2 loss events a bin, one of them a timeout.
    let timeouts: u64 = row[14].parse().unwrap();
    assert!(timeouts > 0);
    assert_eq!(row[15], row[14]);
    // The fake recorder's delays: a mean of 20 ms + 7101 us, percentiles 20, 25 and 30 ms.
    assert_eq!(
        row[16..20],
        ["27.101000", "20.000000", "25.000000", "30.000000"]
    );
    // And its sender's RTT: 41 ms on average, percentiles 40, 50 and 60 ms.
    assert_eq!(
        row[20..24],
        ["41.000000", "40.000000", "50.000000", "60.000000"]
    );
    // The bottleneck's sojourn times in that run, on each of its rows.
    assert_eq!(
        row[24..28],
        ["10.000000", "8.000000", "30.000000", "50.000000"]
    );
    // A TCP flow carries no messages; the qstp flow of the same run delivered 9 of 10.
    assert_eq!(row[28..30], ["", ""]);
    let a = rows
        .iter()
        .find(|r| r[0] == "1" && r[2] == "2" && r[4] == "A")
        .unwrap();
    assert_eq!(a[28..30], ["0.900000", "0.100000"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn series_csv_holds_every_run_in_long_format() {
    let dir = temp_dir("long");
    let w = write_plan(&dir);
    let csv = std::fs::read_to_string(w.long_series.as_ref().unwrap()).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "time_s,point,run,group,flow,metric,value,queue"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == 8));
    let (queue_rows, flow_rows): (Vec<_>, Vec<_>) = rows.iter().partition(|r| !r[7].is_empty());
    // (2 + 3 flows) x 3 runs x 10 bins x 7 metrics (the fake has a packet, a send, an ACK and
    // loss events in every bin), and the qstp flow's rate, X_recv and p in the 9 bins after its
    // connection was established (1 flow per point x 2 points x 3 runs).
    assert_eq!(flow_rows.len(), 5 * 3 * 10 * 7 + 2 * 3 * 9 * 3);
    // 2 points x 3 runs x 10 bins x 2 queues (the whole and a class) x 2 metrics.
    assert_eq!(queue_rows.len(), 2 * 3 * 10 * 2 * 2);
    assert!(queue_rows
        .iter()
        .all(|r| r[3].is_empty() && r[4].is_empty()));
    assert!(queue_rows.iter().any(|r| r[0] == "10.000"
        && r[5] == "queue_packets"
        && r[6] == "9"
        && r[7] == "bottleneck"));
    assert!(queue_rows.iter().any(|r| r[0] == "10.000"
        && r[5] == "queue_bytes"
        && r[6] == "4000"
        && r[7] == "bottleneck/af"));
    // The rate series are the qstp group's only, and absent in the bin before it connected.
    let rate_rows: Vec<_> = flow_rows.iter().filter(|r| r[5] == "rate_bps").collect();
    assert!(rate_rows.iter().all(|r| r[3] == "A" && r[0] != "1.000"));
    assert!(rate_rows
        .iter()
        .any(|r| r[0] == "2.000" && r[6] == "410000"));
    let runs: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[2]).collect();
    assert_eq!(runs.into_iter().collect::<Vec<_>>(), ["0", "1", "2"]);
    assert!(rows
        .iter()
        .any(|r| r[0] == "10.000" && r[5] == "jitter_ms" && r[6] == "1.000"));
    for (metric, value) in [
        ("rtt_ms", "30.000"),
        ("cwnd_bytes", "15000"),
        ("loss_rate", "0.100000"),
        ("loss_events", "2"),
        ("rate_bps", "490000"),
        ("x_recv_bps", "390000"),
        ("loss_event_rate", "0.001234567"),
    ] {
        assert!(
            rows.iter().any(|r| r[5] == metric && r[6] == value),
            "{metric}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_second_run_replaces_only_what_the_lab_wrote_and_a_foreign_folder_is_refused() {
    let dir = temp_dir("rerun");
    write_plan(&dir);
    let stale = dir.join("plots").join("from-an-earlier-scenario.svg");
    std::fs::write(&stale, "<svg/>").unwrap();
    let mine = dir.join("notes.txt");
    std::fs::write(&mine, "my notes").unwrap();
    write_plan(&dir);
    assert!(!stale.exists(), "stale plots are cleared");
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "my notes");

    let foreign = temp_dir("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("summary.json"), "precious").unwrap();
    let err = claim(&foreign).unwrap_err();
    assert!(
        err.to_string().contains("was not written by `qstp run`"),
        "{err}"
    );
    let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
    let results = execute(&plan, 1, fake, &|_| {}).unwrap();
    let summary = build(&plan, &results, &Overrides::default());
    assert!(write_all(&foreign, &plan, &results, &summary).is_err());
    assert_eq!(
        std::fs::read_to_string(foreign.join("summary.json")).unwrap(),
        "precious"
    );
    // An empty folder, or none, is fine.
    let empty = temp_dir("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert!(claim(&empty).is_ok() && claim(&empty.join("new")).is_ok());
    for d in [dir, foreign, empty] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// The integer path of the long series writes what `format!("{v:.0}")` writes: halves to even,
/// the sign of every negative value (-0 included), and the float formatter beyond 2^52 and for
/// the non-finite.
#[test]
fn rounding_to_an_integer_writes_what_the_float_formatter_writes() {
    let check = |v: f64| {
        let mut fast = String::new();
        push_rounded(&mut fast, v);
        assert_eq!(fast, format!("{v:.0}"), "{v:?}");
    };
    for v in [
        0.0,
        -0.0,
        0.5,
        1.5,
        2.5,
        -0.5,
        -2.5,
        -0.3,
        0.49999999999999994,
        4503599627370495.5,
        4503599627370496.0,
        3.9e15,
        4.1e15,
        1e300,
        f64::MAX,
        f64::MIN_POSITIVE,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ] {
        check(v);
    }
    // Random values of every magnitude and random halves.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..200_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        check(f64::from_bits(state));
        check((state % 20_000_000) as f64 / 2.0 - 5_000_000.0);
        check((state >> 11) as f64 * 1e-3);
    }
}

/// Streamed to a writer, the long series are the same bytes as the string the library returns.
#[test]
fn the_long_series_streamed_are_the_long_series() {
    let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
    let results = execute(&plan, 2, fake, &|_| {}).unwrap();
    let dir = temp_dir("long-series");
    let written = write_plan(&dir);
    let on_disk = std::fs::read_to_string(written.long_series.unwrap()).unwrap();
    assert_eq!(on_disk, long_series_csv(&plan, &results));
    assert!(on_disk.lines().count() > 10, "{on_disk}");
    let _ = std::fs::remove_dir_all(&dir);
}
