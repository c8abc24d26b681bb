#!/usr/bin/env python3
"""The high-speed TCP sweep in full, in the lab and in ns-2.35, on two cores: wall-clock and CPU.

    python3 validation/ns2/sweep_speed.py                   # both, 2 at a time
    python3 validation/ns2/sweep_speed.py --only lab --jobs 2
    python3 validation/ns2/sweep_speed.py --duration 60     # a short rehearsal

The lab runs `qstp run scenarios/hstcp-qos.toml --jobs N` as a user would (9 controls x 9 flow
counts x 3 runs of 600 s, with every output: series, figures, report), then once more with
`--series none --no-plots` (simulating only), so the split between simulating and writing
shows. ns-2 runs the same 243 runs of hstcp_dumbbell.tcl (the same controls as ns-2's Linux
modules, the same flow counts, seeds 1-3, 600 s with the first 20 s left out of its figures),
N at a time. CPU seconds are the children's user + system time; wall-clock is from start to the
last run's end. The machine's other work during each part is shown (CPU seconds of every
process but ours, from /proc/stat), since wall-clock means little if something else ran.

A benchmark, not a test: validation/speed.md keeps its figures with the date.
"""

import argparse
import concurrent.futures
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SCENARIO = os.path.join(ROOT, "scenarios", "hstcp-qos.toml")
# hstcp-qos.toml's sweep: its flow counts, and its runs (seeds 1..3).
FLOWS = [1, 2, 4, 6, 8, 10, 12, 16, 24]
SEEDS = [1, 2, 3]


def machine_busy_seconds():
    """CPU seconds every process on the machine has used so far (/proc/stat: all but idle and
    iowait)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    busy = sum(fields) - fields[3] - fields[4]
    return busy / os.sysconf("SC_CLK_TCK")


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class Measure:
    """Wall-clock, our children's CPU seconds and everybody else's over a block."""

    def __enter__(self):
        self.wall = time.monotonic()
        self.cpu = children_cpu()
        self.busy = machine_busy_seconds()
        return self

    def __exit__(self, *exc):
        self.wall = time.monotonic() - self.wall
        self.cpu = children_cpu() - self.cpu
        self.others = max(0.0, machine_busy_seconds() - self.busy - self.cpu)


def lab(qstp, jobs, duration, bare):
    out = tempfile.mkdtemp(prefix="qstp-sweep-")
    shutil.rmtree(out)
    argv = [qstp, "run", SCENARIO, "--jobs", str(jobs), "--out", out]
    if duration:
        argv += ["--duration", f"{duration}s"]
    if bare:
        argv += ["--series", "none", "--no-plots"]
    try:
        with Measure() as m:
            subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return m


def ns2(jobs, duration):
    runs = [(cc, n, seed) for cc in compare.HSTCP_CONTROLS for n in FLOWS for seed in SEEDS]
    done = [0]
    lock = threading.Lock()

    def one(run):
        cc, n, seed = run
        subprocess.run(["ns", os.path.join(HERE, "hstcp_dumbbell.tcl"), cc, str(n),
                        str(duration or 600), str(seed), "20"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with lock:
            done[0] += 1
            print(f"  ns-2: {done[0]}/{len(runs)} runs", file=sys.stderr, flush=True)

    with Measure() as m:
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            list(pool.map(one, runs))
    return m, len(runs)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--qstp", default=os.path.join(ROOT, "target", "release", "qstp"))
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--only", choices=["lab", "ns2"])
    p.add_argument("--duration", type=int, help="simulated seconds (default: the file's 600)")
    args = p.parse_args()
    rows = []
    if args.only != "ns2":
        if not os.access(args.qstp, os.X_OK):
            sys.exit(f"{args.qstp} is not built (cargo build --release -p qstp)")
        print("lab, every output ...", file=sys.stderr, flush=True)
        rows.append(("lab, every output", lab(args.qstp, args.jobs, args.duration, False)))
        print("lab, simulating only ...", file=sys.stderr, flush=True)
        rows.append(("lab, simulating only", lab(args.qstp, args.jobs, args.duration, True)))
    if args.only != "lab":
        if shutil.which("ns") is None:
            sys.exit("ns is not installed (apt-get install ns2)")
        print("ns-2.35 ...", file=sys.stderr, flush=True)
        m, n = ns2(args.jobs, args.duration)
        rows.append((f"ns-2.35 ({n} runs)", m))
    print(f"\nscenarios/hstcp-qos.toml, {args.duration or 600} s per run, {args.jobs} at a time")
    print("| | wall-clock s | CPU s | other processes' CPU s meanwhile |")
    print("|---|---|---|---|")
    for name, m in rows:
        print(f"| {name} | {m.wall:.0f} | {m.cpu:.0f} | {m.others:.0f} |")


if __name__ == "__main__":
    main()
