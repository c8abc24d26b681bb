#!/usr/bin/env python3
"""The lab beside ns-2.35 (and ns-3 where installed) on the same dumbbell, one core each: CPU
seconds of each, and the ratios from pairs measured in the same round.

    python3 validation/ns2/speed.py                      # 8 x reno and 24 flows of every control, 5 rounds
    python3 validation/ns2/speed.py --cell reno:8 --rounds 3
    python3 validation/ns2/speed.py --qstp target/release/qstp --duration 60 --ns3 no

Each cell is the high-speed TCP paper's dumbbell (hstcp_dumbbell.tcl: 200 Mbit/s, 98 ms, 100
packets of drop-tail, 1 Gbit/s 1 ms access links, 60 s) with FLOWS flows of one control, in ns-2
as hstcp_dumbbell.tcl runs it and in the lab as compare.py sets it up (the same start times). Per
round and cell, ns-2 runs once, then `qstp run` three times: simulating only (`--series none
--no-plots`, the bare simulation with summary.json and runs.csv), as a user runs it (series and
figures written), so the split between simulating and writing shows, and simulating only on
ns-2's network exactly (compare.hstcp_graph_scenario: no trunk between the access links and the
bottleneck, so three links each way where the lab's dumbbell has four, and the reverse links at
the forward rates), the same network for both simulators. CPU seconds are the
child's user + system time (os.wait4), so the machine's other work does not count; each
simulator runs alone, one after the other, on one core (`--jobs 1`).

Where ns-3 3.44 is installed (`pip install ns3==3.44.post0`; `--ns3 auto`, the default), the
first `--ns3-rounds` rounds (1 by default: an 8-flow minute takes ns-3 about a minute) also run
validation/ns3/ns3_dumbbell.py on the same dumbbell, with the lab's TCP settings where ns-3 has
them (initial window 2, an ACK per segment, 200 ms minimum RTO, SACK) and ns-3's own model of
each control (it has no Compound TCP: that cell has no ns-3 figure). Loading ns-3's Python
bindings costs seconds of CPU in every run; a run of 1 ms of one flow measures it once, and the
ns-3 column is the run's CPU less that.

With `--qstp-fast BIN` (the profile-guided build of scripts/build-fast.sh), each round also runs
that binary simulating only on the lab's dumbbell, and two more columns give its CPU seconds
and ns-2's over them; the script stops if its runs.csv differs in any byte from the plain
build's in the same round.

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


NS3 = os.path.join(ROOT, "validation", "ns3", "ns3_dumbbell.py")
# The lab's TCP settings in the high-speed scenarios (compare.HSTCP_TCP), as ns3_dumbbell.py
# names them: its defaults are ns-3's (initial window 10, delayed ACKs, 1 s minimum RTO).
NS3_TCP = ["--initial-window", "2", "--delayed-ack-count", "1", "--min-rto", "0.2", "--sack"]
# ns-2's Linux module names -> ns3_dumbbell.py's; None: ns-3 has no such control.
NS3_CC = {"reno": "newreno", "highspeed": "highspeed", "bic": "bic", "scalable": "scalable",
          "cubic": "cubic", "htcp": "htcp", "illinois": "illinois", "yeah": "yeah",
          "compound": None}


def ns3_installed():
    with open(os.devnull, "w") as null:
        return subprocess.run([sys.executable, "-c", "from ns import ns"], stdout=null,
                              stderr=null).returncode == 0


def ns3_run(cc, flows, duration, seed):
    """CPU seconds of one ns3_dumbbell.py run (bindings' load included)."""
    secs, _ = cpu_seconds([sys.executable, NS3, "--cc", cc, "--flows", str(flows), "--duration",
                           str(duration), "--seed", str(seed)] + NS3_TCP)
    return secs


def lab_command(qstp, text, work, bare, out="out-bare"):
    """Write scenario `text` into `work` and give the `qstp run` command for it on one core:
    simulating only (`bare`) or with every output, into the cleared folder `work/out`."""
    path = os.path.join(work, "s.toml")
    with open(path, "w") as f:
        f.write(text)
    out = os.path.join(work, out)
    shutil.rmtree(out, ignore_errors=True)
    extra = ["--series", "none", "--no-plots"] if bare else []
    return [qstp, "run", path, "--out", out, "--jobs", "1"] + extra


def lab_run(qstp, text, work, bare, out=None):
    out = out or ("out-bare" if bare else "out-full")
    secs, _ = cpu_seconds(lab_command(qstp, text, work, bare, out))
    return secs


def same_runs(work, a, b):
    """Whether two runs' runs.csv (in work/a and work/b) are the same bytes."""
    with open(os.path.join(work, a, "runs.csv"), "rb") as x, \
            open(os.path.join(work, b, "runs.csv"), "rb") as y:
        return x.read() == y.read()


def cell_arguments(description, default_cells):
    """The arguments of the side-by-side scripts (this one and budget.py): the lab's binary, the
    cells, the rounds and each run's length and seed."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--qstp", default=os.path.join(ROOT, "target", "release", "qstp"))
    p.add_argument("--cell", action="append",
                   help=f"CC:FLOWS (ns-2's Linux module name), repeatable; default {default_cells}")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=int, default=60, help="simulated seconds")
    p.add_argument("--seed", type=int, default=1)
    return p


def cells_of(args, default):
    """The (control, flows) cells `--cell` names, else `default`."""
    return [(c.split(":")[0], int(c.split(":")[1])) for c in args.cell] if args.cell else default


def main():
    p = cell_arguments(__doc__.split("\n")[0], "reno:8 and every control at 24 flows")
    p.add_argument("--ns3", choices=["auto", "yes", "no"], default="auto",
                   help="run ns-3 too: where installed (auto), always (yes: fail if missing), never")
    p.add_argument("--ns3-rounds", type=int, default=1,
                   help="rounds (from the first) that run ns-3 as well")
    p.add_argument("--qstp-fast", metavar="BIN",
                   help="also time this build (scripts/build-fast.sh's), simulating only")
    args = p.parse_args()
    if shutil.which("ns") is None:
        sys.exit("ns is not installed (apt-get install ns2)")
    if not os.access(args.qstp, os.X_OK):
        sys.exit(f"{args.qstp} is not built (cargo build --release -p qstp)")
    if args.qstp_fast and not os.access(args.qstp_fast, os.X_OK):
        sys.exit(f"{args.qstp_fast} is not built (scripts/build-fast.sh)")
    cells = cells_of(args, [("reno", 8)] + [(cc, 24) for cc in compare.HSTCP_CONTROLS])
    with_ns3 = args.ns3 == "yes" or (args.ns3 == "auto" and ns3_installed())
    if args.ns3 == "yes" and not ns3_installed():
        sys.exit("ns-3 is not installed (pip install ns3==3.44.post0)")
    ns3_load = None
    if with_ns3:
        ns3_load = ns3_run("newreno", 1, 0.001, args.seed)
        print(f"ns-3: loading its bindings and a 1 ms run take {ns3_load:.2f} CPU s, left out "
              "of the ns-3 figures below", flush=True)
    fast_head = " lab CPU s, simulating, fast build | ns-2 / fast build |" if args.qstp_fast else ""
    fast_rule = "---|---|" if args.qstp_fast else ""
    work = tempfile.mkdtemp(prefix="qstp-speed-")
    summary = []
    dash = "-"
    try:
        for cc, flows in cells:
            print(f"\n{cc}, {flows} flows, {args.duration} s, seed {args.seed}", flush=True)
            print("| round | ns-2 CPU s | lab CPU s, simulating | lab CPU s, all outputs | "
                  "ns-2 / lab simulating | ns-2 / lab all | lab CPU s on ns-2's network | "
                  "ns-2 / lab on its network | ns-3 CPU s | ns-3 / lab simulating |" + fast_head)
            print("|---|---|---|---|---|---|---|---|---|---|" + fast_rule)
            ratios, full_ratios, ns2s, bares, fulls, ns3s, ns3_ratios = [], [], [], [], [], [], []
            graphs, graph_ratios, fasts, fast_ratios = [], [], [], []
            for r in range(1, args.rounds + 1):
                ns2_secs, result = ns2_run(cc, flows, args.duration, args.seed)
                text = compare.hstcp_scenario(cc, result["start_times_s"], args.duration,
                                              args.seed)
                bare = lab_run(args.qstp, text, work, True)
                fast_cell = ""
                if args.qstp_fast:
                    fasts.append(lab_run(args.qstp_fast, text, work, True, "out-fast"))
                    fast_ratios.append(ns2_secs / fasts[-1])
                    if not same_runs(work, "out-bare", "out-fast"):
                        sys.exit(f"{args.qstp_fast} and {args.qstp} give different runs.csv "
                                 f"for {cc} x {flows}")
                    fast_cell = f" {fasts[-1]:.3f} | {fast_ratios[-1]:.1f} |"
                full = lab_run(args.qstp, text, work, False)
                graph = lab_run(args.qstp, compare.hstcp_graph_scenario(
                    cc, result["start_times_s"], args.duration, args.seed), work, True)
                graphs.append(graph)
                graph_ratios.append(ns2_secs / graph)
                ratios.append(ns2_secs / bare)
                full_ratios.append(ns2_secs / full)
                ns2s.append(ns2_secs)
                bares.append(bare)
                fulls.append(full)
                ns3_cell = dash, dash
                if with_ns3 and r <= args.ns3_rounds and NS3_CC.get(cc):
                    ns3_secs = ns3_run(NS3_CC[cc], flows, args.duration, args.seed) - ns3_load
                    ns3s.append(ns3_secs)
                    ns3_ratios.append(ns3_secs / bare)
                    ns3_cell = f"{ns3_secs:.1f}", f"{ns3_ratios[-1]:.0f}"
                print(f"| {r} | {ns2_secs:.2f} | {bare:.3f} | {full:.3f} | {ratios[-1]:.1f} | "
                      f"{full_ratios[-1]:.1f} | {graph:.3f} | {graph_ratios[-1]:.1f} | "
                      f"{ns3_cell[0]} | {ns3_cell[1]} |" + fast_cell, flush=True)
            summary.append((cc, flows, statistics.median(ns2s), statistics.median(bares),
                            statistics.median(fulls), statistics.median(ratios),
                            statistics.median(full_ratios), statistics.median(graphs),
                            statistics.median(graph_ratios),
                            f"{statistics.median(ns3s):.1f}" if ns3s else dash,
                            f"{statistics.median(ns3_ratios):.0f}" if ns3s else dash,
                            f" {statistics.median(fasts):.3f} | "
                            f"{statistics.median(fast_ratios):.1f} |" if fasts else ""))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nmedians of {args.rounds} rounds (ns-3: of the first {args.ns3_rounds})")
    print("| cell | ns-2 CPU s | lab CPU s, simulating | lab CPU s, all outputs | "
          "ns-2 / lab simulating | ns-2 / lab all | lab CPU s on ns-2's network | "
          "ns-2 / lab on its network | ns-3 CPU s | ns-3 / lab simulating |" + fast_head)
    print("|---|---|---|---|---|---|---|---|---|---|" + fast_rule)
    for cc, flows, n, b, f, rb, rf, g, rg, n3, r3, fast in summary:
        print(f"| {cc} x {flows} | {n:.2f} | {b:.3f} | {f:.3f} | {rb:.1f} | {rf:.1f} | {g:.3f} | "
              f"{rg:.1f} | {n3} | {r3} |" + fast)


if __name__ == "__main__":
    main()
