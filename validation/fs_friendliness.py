#!/usr/bin/env python3
"""Free & Stunts friendliness over several seeds: does the cross traffic pay for a Free's target?

    python3 validation/fs_friendliness.py                 # 5 seeds, every scenario below
    python3 validation/fs_friendliness.py --runs 10 --qstp target/release/qstp

For each delegating point of the scenarios below, the cross traffic's throughput (its group's
flows together, after the warm-up) is set beside its throughput at the baseline point: the same
connections with controller "none", each reacting to its own signals (s + 1 plain flows). The
issue's bar is 5% in every seed. Each run of a point uses the same seed as the same run of its
baseline (`qstp run` seeds run k alike at every point), so the table pairs them by seed.
Exits 1 if any seed's change is beyond the bar.
"""

import argparse
import collections
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))

# (scenario, cross-traffic group, [(delegating point's params, baseline point's params)]).
CASES = [
    ("scenarios/examples/free-stunts.toml", "X", [
        ("delegation.controller.kind=onoff", "delegation.controller.kind=none"),
        ("delegation.controller.kind=pi", "delegation.controller.kind=none"),
    ]),
    ("scenarios/examples/qstp-free-stunts.toml", "X", [
        ("delegation.controller.kind=onoff", "delegation.controller.kind=none"),
        ("delegation.controller.kind=pi", "delegation.controller.kind=none"),
    ]),
    ("scenarios/examples/soft-hard-guarantee.toml", "X", [
        ('bottleneck.queue={"kind":"red","limit":"auto","wait":true}, F.protocol=tfrc-sack, '
         'delegation.controller.kind=pi',
         'bottleneck.queue={"kind":"red","limit":"auto","wait":true}, F.protocol=tfrc-sack, '
         'delegation.controller.kind=none'),
    ]),
    ("scenarios/examples/free-stunts-ecn.toml", "X", [
        ("delegation.by=host, delegation.controller.kind=pi",
         "delegation.by=host, delegation.controller.kind=none"),
        ("delegation.by=network, delegation.controller.kind=pi",
         "delegation.by=network, delegation.controller.kind=none"),
    ]),
]

BAR = 0.05


def cross_by_seed(runs_csv, group):
    """{(params, seed): the group's throughput, bit/s} from a runs.csv."""
    total = collections.defaultdict(float)
    with open(runs_csv) as f:
        for row in csv.DictReader(f):
            if row["group"] == group:
                total[(row["params"], int(row["seed"]))] += float(row["throughput_bps"])
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--qstp", default=os.path.join(ROOT, "target", "release", "qstp"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    worst = 0.0
    print("| scenario | point | cross traffic against the baseline, per seed | worst |")
    print("|---|---|---|---|")
    for scenario, group, pairs in CASES:
        with tempfile.TemporaryDirectory() as work:
            out = os.path.join(work, "out")
            subprocess.run([args.qstp, "run", os.path.join(ROOT, scenario), "--runs",
                            str(args.runs), "--out", out, "--series", "none", "--no-plots"],
                           check=True, stdout=subprocess.DEVNULL)
            total = cross_by_seed(os.path.join(out, "runs.csv"), group)
        seeds = sorted({s for _, s in total})
        for point, base in pairs:
            missing = [p for p in (point, base) if (p, seeds[0]) not in total]
            if missing:
                sys.exit(f"{scenario}: no point {missing[0]!r} in its runs.csv")
            changes = [total[(point, s)] / total[(base, s)] - 1 for s in seeds]
            w = max(changes, key=abs)
            worst = max(worst, abs(w))
            cells = " ".join(f"{100 * c:+.1f}%" for c in changes)
            print(f"| {os.path.basename(scenario)} | {point} | {cells} | {100 * w:+.1f}% |")
    verdict = "within" if worst <= BAR else "BEYOND"
    print(f"\nworst seed: {100 * worst:.1f}%, {verdict} the {100 * BAR:.0f}% bar")
    sys.exit(0 if worst <= BAR else 1)


if __name__ == "__main__":
    main()
