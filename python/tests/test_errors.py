"""Errors: the CLI's messages, ScenarioError.key, refusals before any run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import qstp
from qstp import _native

BASE = """
name = "bad"
duration = "2s"
[bottleneck]
rate = "1M"
delay = "20ms"
queue = { kind = "droptail", limit = 20 }
[[group]]
name = "A"
protocol = "tcp"
rtt = "RTT"
"""


def test_invalid_value_names_file_and_key() -> None:
    with pytest.raises(qstp.ScenarioError) as e:
        qstp.run(BASE.replace("RTT", "10ms"))
    assert e.value.key == "group.A.rtt"
    assert str(e.value).startswith("<string>: group.A.rtt: ")
    assert "rtt 10ms is shorter than the path's propagation both ways" in str(e.value)


def test_unknown_key(tmp_path: Path) -> None:
    path = tmp_path / "typo.toml"
    path.write_text(BASE.replace("RTT", "60ms") + "colour = 1\n")
    with pytest.raises(qstp.ScenarioError) as e:
        qstp.run(path)
    assert e.value.key == "group.A.colour"
    assert str(e.value) == f"{path}: group.A.colour: unknown key"


def test_missing_file_has_no_key(tmp_path: Path) -> None:
    with pytest.raises(qstp.ScenarioError) as e:
        qstp.run(tmp_path / "none.toml")
    assert e.value.key is None
    assert "cannot read" in str(e.value)


def test_override_errors() -> None:
    text = BASE.replace("RTT", "60ms")
    with pytest.raises(qstp.ScenarioError) as e:
        qstp.run(text, runs=0)
    assert e.value.key == "runs"
    with pytest.raises(qstp.ScenarioError) as e:
        qstp.run(text, duration="two seconds")
    assert e.value.key == "duration"
    with pytest.raises(qstp.ScenarioError) as e:
        qstp.run(text, seed=-1)
    assert e.value.key == "seed"


def test_dict_value_without_toml_form() -> None:
    with pytest.raises(qstp.ScenarioError) as e:
        qstp.run({"name": "x", "duration": None})
    assert e.value.key == "duration"


def test_foreign_folder_refused_before_running(tiny: Path, tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(qstp.OutputError, match="was not written by `qstp run`"):
        qstp.run(tiny, out=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]


def test_unknown_executor(tiny: Path) -> None:
    with pytest.raises(ValueError, match="executor"):
        qstp.run(tiny, executor="dask")


def test_ray_missing_says_how_to_install(tiny: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'qstp\[ray\]'"):
        qstp.run(tiny, executor="ray")


def test_tasks_outside_the_plan(tiny: Path) -> None:
    plan = _native.Plan.load(str(tiny))
    assert plan.tasks() == [(0, 0), (0, 1), (1, 0), (1, 1)]
    with pytest.raises(qstp.RunError, match="not part of this plan"):
        plan.run_task(0, 2)
    done = [(p, r, plan.run_task(p, r)) for p, r in plan.tasks()]
    with pytest.raises(qstp.RunError, match="has no result"):
        plan.assemble(done[:-1])
    with pytest.raises(qstp.RunError, match="handed in twice"):
        plan.assemble(done + done[:1])
    with pytest.raises(qstp.RunError, match="do not read back"):
        plan.assemble(done[:-1] + [(1, 1, "{}")])


def test_module_cli_reports_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(BASE.replace("RTT", "10ms"))
    done = subprocess.run(
        [sys.executable, "-m", "qstp", "run", str(path), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert f"Error: {path}: group.A.rtt: " in done.stderr
    assert "shorter than the path's propagation both ways" in done.stderr
