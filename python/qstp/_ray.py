"""Sweeps on Ray: every (point, run) of a plan as one Ray task, merged back on the driver.

A run is a pure function of the scenario text, the overrides and the task, so a worker reads the
scenario again (once per worker, cached) and runs its task; its metrics come back as JSON that
reads back bit-exact, and the driver merges them in plan order into the same results as a local
run. A worker built from another qstp version or commit refuses its task rather than mix results.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

from . import _native
from ._errors import QstpError, RunError
from ._progress import Bar

__all__ = ["import_ray", "execute", "gather", "INSTALL_HINT"]

INSTALL_HINT = (
    "executor='ray' needs Ray, which is not installed here: "
    "pip install 'qstp[ray]' (from a qstp checkout: pip install './python[ray]'), or pip install ray"
)

# Seconds between two looks at the tasks under way (progress, and a failure seen early).
_POLL_S = 0.2

# What a worker needs to rebuild the plan: (text, file, runs, seed, duration, build id).
Spec = tuple[str, str, Optional[int], Optional[int], Optional[str], str]


def import_ray() -> Any:
    """The ``ray`` module, or ImportError saying how to install it."""
    try:
        import ray
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return ray


@functools.lru_cache(maxsize=4)
def _plan(
    text: str, file: str, runs: Optional[int], seed: Optional[int], duration: Optional[str]
) -> _native.Plan:
    return _native.Plan.parse(text, file, runs, seed, duration)


def run_task(spec: Spec, point: int, run: int) -> tuple[bool, str]:
    """The body of one Ray task: ``(True, metrics JSON)``, or ``(False, the error's message)``."""
    text, file, runs, seed, duration, build = spec
    here = _native.build_id()
    if build != here:
        return (
            False,
            f"a Ray worker runs qstp {here}, the driver {build}: "
            "install the same qstp build on every node",
        )
    try:
        return True, _plan(text, file, runs, seed, duration).run_task(point, run)
    except QstpError as e:
        return False, str(e)


def spec(plan: _native.Plan, build: Optional[str] = None) -> Spec:
    """What a worker needs to run the tasks of ``plan`` (``build``: the driver's build id)."""
    runs, seed, duration = plan.overrides
    return (plan.source, plan.file, runs, seed, duration, build or _native.build_id())


def execute(
    plan: _native.Plan,
    *,
    address: Optional[str] = None,
    progress: Optional[bool] = None,
    build: Optional[str] = None,
) -> _native.Results:
    """Run every task of ``plan`` on Ray and merge the results; ``ray.init(address)`` first unless
    Ray is already initialised."""
    ray = import_ray()
    if not ray.is_initialized():
        ray.init(address=address)
    remote = ray.remote(run_task)
    shared = ray.put(spec(plan, build))
    refs = {remote.remote(shared, p, r): (p, r) for p, r in plan.tasks()}
    done = gather(refs, progress=progress, desc=plan.name)
    return plan.assemble(done)


def _reason(ray: Any, error: Exception) -> str:
    """What went wrong in a Ray task: the exception it raised, else Ray's own message."""
    cause = getattr(error, "cause", None)
    if isinstance(error, ray.exceptions.RayTaskError) and isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"
    return str(error)


def gather(
    refs: dict[Any, tuple[int, int]],
    *,
    progress: Optional[bool] = None,
    desc: str = "qstp",
) -> list[tuple[int, int, str]]:
    """Wait for the tasks ``refs`` (object ref -> (point, run)), each returning ``(ok, payload)``,
    and return ``(point, run, metrics JSON)`` for each. The first failure cancels the tasks still
    pending and raises :class:`RunError` with the task's message (or Ray's, if the task could not
    run at all)."""
    ray = import_ray()
    pending = list(refs)
    done: list[tuple[int, int, str]] = []
    bar = Bar(progress, len(pending), "runs", desc)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=len(pending), timeout=_POLL_S)
            for ref in ready:
                point, run = refs[ref]
                try:
                    ok, payload = ray.get(ref)
                except ray.exceptions.RayError as e:
                    raise RunError(
                        f"point {point}, run {run}: the Ray task failed: {_reason(ray, e)}"
                    ) from e
                if not ok:
                    raise RunError(payload)
                done.append((point, run, payload))
            bar.show(len(done))
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        bar.close()
    return done
