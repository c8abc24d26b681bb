#!/usr/bin/env python3
"""The lab beside ns-2.35 (and ns-3 where installed) on the same dumbbell, one core each: CPU
seconds of each, and the ratios from pairs measured in the same round.

    python3 validation/ns2/speed.py                      # 8 x reno and 24 flows of every control, 5 rounds
    python3 validation/ns2/speed.py --cell reno:8 --rounds 3
    python3 validation/ns2/speed.py --qstp target/release/qstp --duration 60

Each cell is the high-speed TCP paper's dumbbell (hstcp_dumbbell.tcl: 200 Mbit/s, 98 ms, 100
packets of drop-tail, 1 Gbit/s 1 ms access links, 60 s) with FLOWS flows of one control, in ns-2
as hstcp_dumbbell.tcl runs it and in the lab as compare.py sets it up (the same start times). Per
round and cell, ns-2 runs once, then `qstp run` twice: simulating only (`--series none
--no-plots`, the bare simulation with summary.json and runs.csv) and as a user runs it (series
and figures written), so the split between simulating and writing shows. CPU seconds are the
child's user + system time (os.wait4), so the machine's other work does not count; each
simulator runs alone, one after the other, on one core (`--jobs 1`).

A benchmark, not a test. It prints one table per cell and then the medians.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def cpu_seconds(argv, cwd=None):
    """Run argv to the end; its CPU seconds (user + system, children included). Fails loudly."""
    with open(os.devnull, "w") as null:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=null, cwd=cwd, text=True)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed with status {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, out


def ns2_run(cc, flows, duration, seed):
    secs, out = cpu_seconds(["ns", os.path.join(HERE, "hstcp_dumbbell.tcl"), cc, str(flows),
                             str(duration), str(seed)])
    line = [l for l in out.splitlines() if l.startswith("{")][-1]
    return secs, json.loads(line)


def lab_run(qstp, text, work, bare):
    path = os.path.join(work, "s.toml")
    with open(path, "w") as f:
        f.write(text)
    out = os.path.join(work, "out-bare" if bare else "out-full")
    shutil.rmtree(out, ignore_errors=True)
    extra = ["--series", "none", "--no-plots"] if bare else []
    secs, _ = cpu_seconds([qstp, "run", path, "--out", out, "--jobs", "1"] + extra)
    return secs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--qstp", default=os.path.join(ROOT, "target", "release", "qstp"))
    p.add_argument("--cell", action="append",
                   help="CC:FLOWS (ns-2's Linux module name), repeatable; default reno:8 and "
                        "every control at 24 flows")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=int, default=60, help="simulated seconds")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if shutil.which("ns") is None:
        sys.exit("ns is not installed (apt-get install ns2)")
    if not os.access(args.qstp, os.X_OK):
        sys.exit(f"{args.qstp} is not built (cargo build --release -p qstp)")
    cells = [(c.split(":")[0], int(c.split(":")[1])) for c in args.cell] if args.cell else \
        [("reno", 8)] + [(cc, 24) for cc in compare.HSTCP_CONTROLS]
    work = tempfile.mkdtemp(prefix="qstp-speed-")
    summary = []
    try:
        for cc, flows in cells:
            print(f"\n{cc}, {flows} flows, {args.duration} s, seed {args.seed}", flush=True)
            print("| round | ns-2 CPU s | lab CPU s, simulating | lab CPU s, all outputs | "
                  "ns-2 / lab simulating | ns-2 / lab all |")
            print("|---|---|---|---|---|---|")
            ratios, full_ratios, ns2s, bares, fulls = [], [], [], [], []
            for r in range(1, args.rounds + 1):
                ns2_secs, result = ns2_run(cc, flows, args.duration, args.seed)
                text = compare.hstcp_scenario(cc, result["start_times_s"], args.duration,
                                              args.seed)
                bare = lab_run(args.qstp, text, work, True)
                full = lab_run(args.qstp, text, work, False)
                ratios.append(ns2_secs / bare)
                full_ratios.append(ns2_secs / full)
                ns2s.append(ns2_secs)
                bares.append(bare)
                fulls.append(full)
                print(f"| {r} | {ns2_secs:.2f} | {bare:.3f} | {full:.3f} | {ratios[-1]:.1f} | "
                      f"{full_ratios[-1]:.1f} |", flush=True)
            summary.append((cc, flows, statistics.median(ns2s), statistics.median(bares),
                            statistics.median(fulls), statistics.median(ratios),
                            statistics.median(full_ratios)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nmedians of {args.rounds} rounds")
    print("| cell | ns-2 CPU s | lab CPU s, simulating | lab CPU s, all outputs | "
          "ns-2 / lab simulating | ns-2 / lab all |")
    print("|---|---|---|---|---|---|")
    for cc, flows, n, b, f, rb, rf in summary:
        print(f"| {cc} x {flows} | {n:.2f} | {b:.3f} | {f:.3f} | {rb:.1f} | {rf:.1f} |")


if __name__ == "__main__":
    main()
