"""Sweeps on Ray (a local Ray of 2 CPUs): the same results as a local run, byte for byte, and a
failed task failing the sweep."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

import qstp
from conftest import cli_run
from qstp import _native, _ray

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install './python[ray]'")

OUTPUTS = ["summary.json", "runs.csv", "series.csv", "scenario.toml"]


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_outputs_match_local_run(local_ray, tiny: Path, tmp_path: Path) -> None:
    on_ray = qstp.run(tiny, executor="ray", out=tmp_path / "ray", progress=False)
    local = qstp.run(tiny, out=tmp_path / "local", progress=False)
    assert on_ray.to_json() == local.to_json()
    for name in OUTPUTS:
        assert (tmp_path / "ray" / name).read_bytes() == (
            tmp_path / "local" / name
        ).read_bytes(), name


def test_ray_summary_matches_the_cli(local_ray, cli: Path, tiny: Path, tmp_path: Path) -> None:
    cli_run(cli, tiny, tmp_path / "cli", "--runs", "3", "--duration", "3s")
    qstp.run(tiny, runs=3, duration="3s", executor="ray", out=tmp_path / "ray", progress=False)
    for name in OUTPUTS:
        assert (tmp_path / "ray" / name).read_bytes() == (
            tmp_path / "cli" / name
        ).read_bytes(), name


def test_module_cli_on_ray(local_ray, tiny: Path, tmp_path: Path) -> None:
    # `--ray auto` joins the Ray this test process started.
    done = subprocess.run(
        [sys.executable, "-m", "qstp", "run", str(tiny), "--out", str(tmp_path / "m"),
         "--ray", "auto"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "summary: " in done.stdout
    local = qstp.run(tiny, progress=False)
    assert (tmp_path / "m" / "summary.json").read_text() == local.to_json()


def test_worker_of_another_build_fails_the_sweep(local_ray, tiny: Path) -> None:
    plan = _native.Plan.load(str(tiny))
    with pytest.raises(qstp.RunError, match="install the same qstp build on every node"):
        _ray.execute(plan, build="0.0.0+another", progress=False)


@ray.remote
def _fails_one(point: int, run: int) -> tuple[bool, str]:
    import time

    if (point, run) == (0, 1):
        return False, "point 0 [x=1], run 1 (seed 2): the task's own error"
    time.sleep(60)
    return True, "{}"


@ray.remote
def _raises(point: int, run: int) -> tuple[bool, str]:
    raise ValueError(f"broken task {point}/{run}")


def test_failed_task_fails_at_once_and_cancels_the_rest(local_ray) -> None:
    tasks = [(0, 0), (0, 1), (1, 0), (1, 1)]
    refs = {_fails_one.remote(p, r): (p, r) for p, r in tasks}
    with pytest.raises(qstp.RunError) as e:
        _ray.gather(refs, progress=False)
    assert str(e.value) == "point 0 [x=1], run 1 (seed 2): the task's own error"
    # The others were cancelled rather than waited for.
    for ref, task in refs.items():
        if task != (0, 1):
            with pytest.raises((ray.exceptions.TaskCancelledError, ray.exceptions.WorkerCrashedError)):
                ray.get(ref, timeout=30)


def test_task_that_raises_fails_the_sweep(local_ray) -> None:
    refs = {_raises.remote(0, 0): (0, 0)}
    with pytest.raises(qstp.RunError) as e:
        _ray.gather(refs, progress=False)
    assert str(e.value) == "point 0, run 0: the Ray task failed: ValueError: broken task 0/0"
