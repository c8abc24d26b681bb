"""``python -m qstp run SCENARIO [--ray [ADDRESS]]``: ``qstp run`` from Python, on this machine or
on a Ray cluster, writing the same results folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from ._errors import QstpError
from ._run import run


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m qstp", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    r = commands.add_parser(
        "run",
        help="run a scenario file's every point and run, and write its results folder",
        description="Run a scenario file's every point and run, as `qstp run` does.",
    )
    r.add_argument("scenario", type=Path, help="the scenario file (TOML)")
    r.add_argument(
        "--out",
        type=Path,
        help="folder for summary.json, series/, plots/ and report.html "
        "[default: results/<scenario name>/]",
    )
    r.add_argument("--runs", type=int, help="runs per sweep point, instead of the file's")
    r.add_argument("--seed", type=int, help="seed of the first run, instead of the file's")
    r.add_argument(
        "--duration", help="simulated time per run, e.g. 60s, instead of the file's"
    )
    r.add_argument(
        "--jobs", type=int, help="worker threads of a local run [default: the available cores]"
    )
    r.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="run every (point, run) as a Ray task, on the cluster at ADDRESS (e.g. auto, "
        "ray://head:10001) or, without one, on ray.init()'s (local, or RAY_ADDRESS's)",
    )
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = _parser().parse_args(argv)
    from . import _scenario

    try:
        # The folder name comes from the scenario, so read it once before running.
        name = _scenario.plan(args.scenario, args.runs, args.seed, args.duration).name
        out = args.out if args.out is not None else Path("results") / name
        summary = run(
            args.scenario,
            runs=args.runs,
            seed=args.seed,
            duration=args.duration,
            jobs=args.jobs,
            out=out,
            executor="local" if args.ray is None else "ray",
            address=args.ray or None,
            progress=sys.stderr.isatty() or None,
        )
    except (QstpError, ImportError, ValueError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    print(summary.text_table(), end="")
    print(f"summary: {out / 'summary.json'}")
    print(f"report:  {out / 'report.html'}")
    print(f"runs:    {out / 'runs.csv'}")
    print(f"series:  {out / 'series.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
