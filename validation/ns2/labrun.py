"""One `qstp run` for the comparisons: compare.py, cbq_rows.py and fs_onoff_rows.py share it."""

import contextlib
import os
import shutil
import subprocess
import tempfile


@contextlib.contextmanager
def lab_output(qstp, text, seeds=None):
    """`qstp run` of the scenario `text` (written to a temporary file) on one core, under `nice`,
    with runs from seed 1 to `seeds` (the text's own runs and seed when None): its output
    folder, removed on leaving the `with` block."""
    work = tempfile.mkdtemp(prefix="qstp-ns2-")
    try:
        path = os.path.join(work, "s.toml")
        with open(path, "w") as f:
            f.write(text)
        out = os.path.join(work, "out")
        extra = [] if seeds is None else ["--runs", str(seeds), "--seed", "1"]
        subprocess.run(["nice", "-n", "10", qstp, "run", path, "--out", out, "--jobs", "1"] +
                       extra, check=True, capture_output=True)
        yield out
    finally:
        shutil.rmtree(work, ignore_errors=True)
