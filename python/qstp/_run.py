"""``qstp.run`` and ``qstp.load``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union

from . import _native, _scenario
from ._progress import Bar
from ._summary import Summary

__all__ = ["run", "load", "EXECUTORS"]

#: Where :func:`run` can run the tasks.
EXECUTORS = ("local", "ray")

PathLike = Union[str, "os.PathLike[str]"]


def _available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def run(
    scenario: _scenario.Scenario,
    *,
    runs: Optional[int] = None,
    seed: Optional[int] = None,
    duration: Optional[_scenario.DurationLike] = None,
    jobs: Optional[int] = None,
    out: Optional[PathLike] = None,
    executor: str = "local",
    address: Optional[str] = None,
    progress: Optional[bool] = None,
) -> Summary:
    """Run every sweep point and run of a scenario and return its :class:`Summary`.

    ``scenario`` is a path to a scenario file (a ``str`` without ``=`` or a ``pathlib.Path``),
    TOML text, or a dict of the same structure as the file. ``runs``, ``seed`` and ``duration``
    override the file's, as ``qstp run --runs/--seed/--duration`` do (``duration`` is a string such
    as ``"60s"``, or seconds; the warm-up is scaled alike). ``out``, if given, is a folder that
    receives what ``qstp run`` writes there (summary.json, runs.csv, series.csv, plots/,
    report.html); without it nothing is written.

    ``executor="local"`` runs on ``jobs`` threads of this process (default: the available cores),
    the GIL released. ``executor="ray"`` sends every (point, run) as one Ray task to the cluster at
    ``address`` (default: the Ray instance already initialised, else ``ray.init()``'s: a local one,
    or ``RAY_ADDRESS``'s); every node needs the same qstp build installed. Both give the same
    summary, byte for byte, as ``qstp run`` on the same scenario and seeds.

    ``progress``: ``True`` always shows a progress bar, ``False`` never, ``None`` (default) once
    the run has taken two seconds.

    Raises :class:`ScenarioError` for a refused scenario (with ``.key``), :class:`RunError` for a
    failed run, :class:`OutputError` if ``out`` cannot be written (checked before any run);
    ``executor="ray"`` without Ray installed raises ``ImportError`` saying how to install it.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, not {executor!r}")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"jobs must be a positive integer, not {jobs!r}")
    if executor == "ray":
        from . import _ray

        _ray.import_ray()
    plan = _scenario.plan(scenario, runs=runs, seed=seed, duration=duration)
    if out is not None:
        _native.claim(os.fspath(out))
    if executor == "ray":
        results = _ray.execute(plan, address=address, progress=progress)
    else:
        results = _execute_local(plan, jobs or _available_cores(), progress)
    summary = Summary(results)
    if out is not None:
        summary.write(out)
    return summary


def _execute_local(plan: _native.Plan, jobs: int, progress: Optional[bool]) -> _native.Results:
    bar = Bar(progress, round(plan.simulated_s, 1), "s simulated", plan.name)

    def show(runs_done: int, runs_total: int, done_s: float, total_s: float) -> None:
        bar.show(round(done_s, 1), f"runs {runs_done}/{runs_total}")

    try:
        return plan.execute(jobs, show)
    finally:
        bar.close()


def load(results_dir: PathLike) -> Summary:
    """Read a results folder written by ``qstp run`` (or by :func:`run` with ``out=``) into the
    same :class:`Summary` a run returns. Raises :class:`LoadError` if it cannot be read, or
    :class:`ScenarioError` if its scenario.toml no longer reads."""
    path = Path(os.fspath(results_dir))
    return Summary(_native.load_results(os.fspath(path)), out=path)
