"""qstp.run and qstp.load on this machine: the Summary's contents, the overrides, the files."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pandas
import pytest

import qstp
from conftest import cli_run


def test_summary_is_summary_json(tiny: Path, tmp_path: Path) -> None:
    s = qstp.run(tiny, out=tmp_path / "out", jobs=2, progress=False)
    text = (tmp_path / "out" / "summary.json").read_text()
    assert s.to_json() == text
    assert s.to_dict() == json.loads(text)
    d = s.to_dict()
    assert d["scenario"] == "py-tiny"
    assert d["runs"] == 2 and d["seed"] == 11
    assert [p["params"] for p in d["points"]] == [
        {"bottleneck.rate": "1M"},
        {"bottleneck.rate": "2M"},
    ]
    assert s.points == [p["params"] for p in d["points"]]
    for name in ["runs.csv", "series.csv", "scenario.toml", "report.html"]:
        assert (tmp_path / "out" / name).is_file(), name
    assert s.out == tmp_path / "out"


def test_nothing_written_without_out(tiny: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = qstp.run(tiny, progress=False)
    assert s.out is None
    assert list(tmp_path.iterdir()) == []


def test_same_summary_whatever_the_threads(tiny: Path) -> None:
    one = qstp.run(tiny, jobs=1, progress=False)
    two = qstp.run(tiny, jobs=3, progress=False)
    assert one.to_json() == two.to_json()


def test_path_text_and_dict_are_one_scenario(tiny: Path) -> None:
    from_path = qstp.run(tiny, progress=False)
    from_str_path = qstp.run(str(tiny), progress=False)
    from_text = qstp.run(tiny.read_text(), progress=False)
    as_dict = {
        "name": "py-tiny",
        "description": "TCP beside a gTFRC flow with a target, bottleneck rate swept",
        "duration": "4s",
        "warmup": "1s",
        "runs": 2,
        "seed": 11,
        "bin": "200ms",
        "bottleneck": {
            "rate": "1M",
            "delay": "5ms",
            "queue": {"kind": "rio", "limit": 40, "in": [15, 30, 0.02], "out": [5, 15, 0.1]},
        },
        "group": [
            {
                "name": "A",
                "protocol": "gtfrc",
                "rtt": "40ms",
                "target": "400k",
                "marker": {"kind": "token-bucket", "rate": "400k", "bucket": 10000},
            },
            {"name": "B", "protocol": "tcp", "flows": 2, "rtt": "60ms"},
        ],
        "sweep": {"bottleneck.rate": ["1M", "2M"]},
    }
    from_dict = qstp.run(as_dict, progress=False)
    assert from_path.to_json() == from_str_path.to_json()
    assert from_path.to_json() == from_text.to_json()
    assert from_path.to_json() == from_dict.to_json()


def test_dict_keeps_the_sweep_order(tiny: Path) -> None:
    scenario = {
        "name": "order",
        "duration": "2s",
        "bottleneck": {"rate": "1M", "queue": {"kind": "droptail", "limit": 20}},
        "group": [{"name": "A", "protocol": "tcp", "rtt": "20ms"}],
        "sweep": {"group.A.rtt": ["20ms", "40ms"], "bottleneck.rate": ["1M", "2M"]},
    }
    s = qstp.run(scenario, progress=False)
    assert s.to_dict()["sweep"] == ["group.A.rtt", "bottleneck.rate"]
    text = """
name = "order"
duration = "2s"
bottleneck = { rate = "1M", queue = { kind = "droptail", limit = 20 } }
group = [{ name = "A", protocol = "tcp", rtt = "20ms" }]
[sweep]
"group.A.rtt" = ["20ms", "40ms"]
"bottleneck.rate" = ["1M", "2M"]
"""
    assert s.to_json() == qstp.run(text, progress=False).to_json()


def test_overrides_as_the_cli(tiny: Path) -> None:
    s = qstp.run(tiny, runs=3, seed=5, duration="2s", progress=False)
    d = s.to_dict()
    assert (d["runs"], d["seed"], d["duration_s"]) == (3, 5, 2.0)
    assert d["overrides"] == {"runs": 3, "seed": 5, "duration_s": 2.0}
    # The warm-up is scaled as the duration: 1 s of 4 s becomes 0.5 s of 2 s.
    assert d["warmup_s"] == 0.5
    assert qstp.run(tiny, runs=3, seed=5, duration=2, progress=False).to_json() == s.to_json()


def test_flows_has_a_row_per_point_group_and_statistic(tiny: Path) -> None:
    s = qstp.run(tiny, progress=False)
    flows = s.flows
    assert len(flows) == 2 * 2 * len(qstp.STATISTICS)
    assert list(flows.columns[:3]) == ["point", "bottleneck.rate", "group"]
    assert set(flows["statistic"]) == set(qstp.STATISTICS)
    d = s.to_dict()
    for p, point in enumerate(d["points"]):
        for g in point["flows"]:
            rows = flows[(flows.point == p) & (flows.group == g["group"])]
            by_stat = rows.set_index("statistic")
            assert by_stat.loc["mean", "throughput_bps"] == g["throughput_bps"]["mean"]
            assert by_stat.loc["ci95", "goodput_bps"] == g["goodput_bps"]["ci95"]
            assert by_stat.loc["n", "aggregate_bps"] == g["aggregate_bps"]["n"]
            # The one-way delays, from the group's `metrics`: above the bottleneck's 5 ms.
            p99 = g["metrics"]["delay_p99_ms"]
            assert by_stat.loc["mean", "delay_p99_ms"] == p99["mean"]
            assert p99["mean"] >= by_stat.loc["mean", "delay_p50_ms"] > 5
            assert (rows["bottleneck.rate"] == point["params"]["bottleneck.rate"]).all()
    tcp = flows[(flows.group == "B") & (flows.statistic == "mean")]
    assert tcp["target_bps"].isna().all()
    assert (tcp["flows"] == 2).all()


def test_series_in_long_format(tiny: Path) -> None:
    s = qstp.run(tiny, progress=False)
    series = s.series(1)
    assert list(series.columns) == [
        "time_s", "point", "run", "group", "flow", "metric", "value", "queue"
    ]
    assert (series["point"] == 1).all()
    # Rows of the bottleneck queue name it in `queue` and have no group nor flow.
    queues = series[series.queue != ""]
    assert set(queues["metric"]) == {"queue_packets", "queue_bytes"}
    assert set(queues["queue"]) == {"bottleneck"}
    assert queues["flow"].isna().all() and (queues["group"] == "").all()
    assert len(queues) == 20 * 2 * 2
    series = series[series.queue == ""]
    # Every flow's receiver series, and each sender's own: the TCP sender's (group B) window and
    # retransmission share, the gTFRC sender's (group A) rate X, X_recv and p, and both RTT and
    # loss events.
    assert {"throughput_bps", "goodput_bps", "jitter_ms"} <= set(series["metric"])
    tcp_only = {"cwnd_bytes", "loss_rate"}
    rate_only = {"rate_bps", "x_recv_bps", "loss_event_rate"}
    both = {"rtt_ms", "loss_events"}
    assert tcp_only | rate_only | both <= set(series["metric"])
    assert set(series[series.metric.isin(tcp_only)]["group"]) == {"B"}
    assert set(series[series.metric.isin(rate_only)]["group"]) == {"A"}
    assert set(series[series.metric.isin(both)]["group"]) == {"A", "B"}
    assert set(series["run"]) == {0, 1}
    # 4 s in 200 ms bins, for the 3 flows of each of the 2 runs.
    thr = series[series.metric == "throughput_bps"]
    assert len(thr) == 20 * 3 * 2
    assert thr["time_s"].max() == pytest.approx(4.0)
    assert (thr["value"] >= 0).all() and thr["value"].max() > 0
    with pytest.raises(IndexError):
        s.series(2)


def test_runs_frame(tiny: Path) -> None:
    runs = qstp.run(tiny, progress=False).runs
    assert len(runs) == 2 * 2 * 3
    assert list(runs["seed"].unique()) == [11, 12]
    assert set(runs["group"]) == {"A", "B"}
    for column in ["delay_mean_ms", "delay_p50_ms", "delay_p95_ms", "delay_p99_ms"]:
        assert runs[column].dtype == float and (runs[column] > 0).all(), column
    # Both senders (TCP and gTFRC) measure their RTT, never below the one-way delay.
    for column in ["rtt_mean_ms", "rtt_p50_ms", "rtt_p95_ms", "rtt_p99_ms"]:
        assert runs[column].dtype == float and (runs[column] > 0).all(), column
    assert (runs["rtt_p50_ms"] > runs["delay_p50_ms"]).all()
    # The bottleneck's sojourn times, the same on every row of a run.
    for column in ["queue_sojourn_mean_ms", "queue_sojourn_p50_ms", "queue_sojourn_p95_ms"]:
        assert runs[column].dtype == float and (runs[column] >= 0).all(), column
    assert (runs["queue_sojourn_p95_ms"] <= runs["queue_sojourn_p99_ms"]).all()
    assert runs.groupby(["point", "run"])["queue_sojourn_p99_ms"].nunique().eq(1).all()


def test_queues_frame(tiny: Path) -> None:
    s = qstp.run(tiny, progress=False)
    queues = s.queues
    assert len(queues) == sum(len(p["queues"]) for p in s.to_dict()["points"])
    whole = queues[queues["queue"] == "bottleneck"]
    assert len(whole) == len(s.points)
    assert (whole["sojourn_p50_ms"] <= whole["sojourn_p99_ms"]).all()
    first = s.to_dict()["points"][0]["queues"][0]["sojourn_ms"]
    assert whole["sojourn_mean_ms"].iloc[0] == first["mean"]["mean"]


def test_load_reads_back_the_same(tiny: Path, tmp_path: Path) -> None:
    s = qstp.run(tiny, out=tmp_path / "r", progress=False)
    back = qstp.load(tmp_path / "r")
    assert back.to_json() == s.to_json()
    pandas.testing.assert_frame_equal(back.flows, s.flows)
    pandas.testing.assert_frame_equal(back.series(0), s.series(0))
    pandas.testing.assert_frame_equal(back.runs, s.runs)
    assert back.out == tmp_path / "r"


def test_load_reads_the_cli_folder(cli: Path, tiny: Path, tmp_path: Path) -> None:
    cli_run(cli, tiny, tmp_path / "cli")
    back = qstp.load(tmp_path / "cli")
    assert back.to_json() == (tmp_path / "cli" / "summary.json").read_text()
    assert back.to_json() == qstp.run(tiny, progress=False).to_json()


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(qstp.LoadError, match="summary.json"):
        qstp.load(tmp_path)


def test_write_later(tiny: Path, tmp_path: Path) -> None:
    s = qstp.run(tiny, progress=False)
    report = s.write(tmp_path / "later")
    assert report == tmp_path / "later" / "report.html"
    assert (tmp_path / "later" / "summary.json").read_text() == s.to_json()


def test_gil_released_while_running(tiny: Path) -> None:
    # Python code in this thread keeps running while the other thread's run is under way: the
    # counter moves between the run's first and last progress report.
    counter = [0]
    seen: list[int] = []
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            counter[0] += 1

    from qstp import _native

    plan = _native.Plan.load(str(tiny), 6, None, "300s")
    counting = threading.Thread(target=count)
    counting.start()
    try:
        plan.execute(1, lambda *_: seen.append(counter[0]))
    finally:
        stop.set()
        counting.join()
    assert len(seen) >= 2
    assert seen[-1] - seen[0] > 1000


def test_module_cli_writes_the_results_folder(tiny: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "qstp", "run", str(tiny), "--out", str(tmp_path / "m"),
         "--runs", "1", "--jobs", "2"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "bottleneck.rate=2M" in done.stdout
    expected = qstp.run(tiny, runs=1, progress=False).to_json()
    assert (tmp_path / "m" / "summary.json").read_text() == expected
