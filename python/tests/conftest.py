"""Shared fixtures: the small test scenario and the `qstp` command to compare with."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
TINY = DATA / "tiny.toml"


@pytest.fixture
def tiny() -> Path:
    """A 2-point x 2-run sweep of 4 s runs."""
    return TINY


@pytest.fixture(scope="session")
def cli() -> Path:
    """The `qstp` binary built from this checkout (QSTP_CLI; .ci/run sets it)."""
    path = os.environ.get("QSTP_CLI")
    if not path:
        pytest.skip("QSTP_CLI is not set: the path of the `qstp` binary of this checkout")
    return Path(path)


def cli_run(cli: Path, scenario: Path, out: Path, *args: str) -> None:
    """`qstp run SCENARIO --out OUT ARGS...`, which must succeed."""
    done = subprocess.run(
        [str(cli), "run", str(scenario), "--out", str(out), *args],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
