#!/usr/bin/env python3
"""How the flows of one high-speed cell meet congestion, in ns-2.35 and in the lab.

Runs one cell of the high-speed dumbbell (hstcp_dumbbell.tcl, 60 s, seeds 1..N) in ns-2 with its
window and bottleneck-queue traces and in the lab (compare.py's scenario, with the flows' series)
and prints per seed and simulator: the bottleneck's drops, the window reductions (ns-2: its
ncwndcuts_ trace, one step per fast recovery or timeout; the lab: fast recoveries and timeouts),
the timeouts, the congestion
episodes after slow start (reductions of the flows no more than 0.5 s apart) with how many
reductions each held, the share of reductions that came within 0.45 s of the same flow's last
one, the fewest and most episodes in which one flow reduced, and the cell's utilisation and Jain
index.

    python3 validation/ns2/episodes.py --cc scalable --flows 24
    python3 validation/ns2/episodes.py --cc illinois --flows 24 --lab-tcp 'rto = "linux"'
    python3 validation/ns2/episodes.py --cc scalable --flows 24 --graph   # ns-2's network exactly

A diagnosis tool for the rows of table.md the README's "Not traced" names; its numbers are not
cached and nothing in CI runs it.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

# Reductions of different flows no further apart than this belong to one congestion episode
# (about two round trips of the 200 ms dumbbell).
EPISODE_GAP_S = 0.5
# A flow's reduction this soon after its previous one answers the same episode (ns-2's flows
# never reduce twice within it in the cells traced so far).
REPEAT_S = 0.45


def episodes(events):
    """Group (time, flow) reductions into episodes: lists of consecutive events at most
    EPISODE_GAP_S apart."""
    out = []
    for t, flow in sorted(events):
        if out and t - out[-1][-1][0] <= EPISODE_GAP_S:
            out[-1].append((t, flow))
        else:
            out.append([(t, flow)])
    return out


def repeats(events):
    """Reductions that came within REPEAT_S of the same flow's previous one."""
    last, n = {}, 0
    for t, flow in sorted(events):
        if flow in last and t - last[flow] < REPEAT_S:
            n += 1
        last[flow] = t
    return n


def ns2_cell(cc, flows, seed, work):
    """ns-2's run with traces: (its JSON line, reductions as (time, flow), drops)."""
    trace, queue = os.path.join(work, "cwnd.tr"), os.path.join(work, "queue.tr")
    out = subprocess.run(["nice", "-n", "10", "ns", os.path.join(HERE, "hstcp_dumbbell.tcl"), cc,
                          str(flows), "60", str(seed), "0", trace, queue],
                         check=True, capture_output=True, text=True)
    result = json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])
    events, cuts = [], {}
    with open(trace) as f:
        for line in f:
            p = line.split()
            # "time src_addr src_port dst_addr dst_port var value"; t = 0 is the initial value.
            # Not ssthresh_'s changes: a flow in a steady cycle reduces to the ssthresh it had,
            # and the trace shows no change (24 Scalable flows, seed 1: 518 changes, 844 cuts).
            if len(p) == 7 and p[5] == "ncwndcuts_":
                value = int(float(p[6]))
                if float(p[0]) > 0:
                    events += [(float(p[0]), p[1])] * (value - cuts.get(p[1], 0))
                cuts[p[1]] = value
    with open(queue) as f:
        drops = sum(1 for line in f if line.startswith("d "))
    return result, events, drops


def lab_cell(qstp, cc, flows, seed, starts, extra, work, graph=False):
    """The lab's run: (runs.csv rows, reductions as (time, flow), drops)."""
    path = os.path.join(work, "s.toml")
    scenario = compare.hstcp_graph_scenario if graph else compare.hstcp_scenario
    with open(path, "w") as f:
        f.write(scenario(cc, starts, 60, seed, extra=extra))
    out = os.path.join(work, "lab")
    subprocess.run(["nice", "-n", "10", qstp, "run", path, "--out", out, "--jobs", "1",
                    "--no-plots"], check=True, capture_output=True)
    events = []
    with open(os.path.join(out, "series.csv")) as f:
        for r in csv.DictReader(f):
            if r["metric"] == "loss_events" and float(r["value"]) > 0:
                events += [(float(r["time_s"]), r["group"])] * int(float(r["value"]))
    with open(os.path.join(out, "runs.csv")) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(out, "summary.json")) as f:
        point = json.load(f)["points"][0]
    drops = sum(q["out_profile"]["ldrops"] + q["out_profile"]["edrops"]
                for q in point["queues"] if q["name"] == "bottleneck")
    return rows, events, drops


def describe(name, drops, events, timeouts, util, jain_index):
    eps = episodes(events)[1:]  # the first is slow start's end, alike in both
    held = [len(e) for e in eps]
    mean_held = sum(held) / len(held) if held else 0.0
    # Per flow, the episodes in which it reduced its window at least once.
    took = {}
    for e in eps:
        for flow in {f for _, f in e}:
            took[flow] = took.get(flow, 0) + 1
    print(f"  {name:5s} drops {drops:6.0f}  reductions {len(events):4d}  timeouts {timeouts:4d}  "
          f"repeats within {REPEAT_S} s {repeats(events):4d}  episodes {len(eps):3d} "
          f"(reductions each: mean {mean_held:4.1f}, {min(held, default=0)}-{max(held, default=0)};"
          f" a flow in {min(took.values(), default=0)}-{max(took.values(), default=0)} of them)"
          f"  utilisation {util:.3f}  Jain {jain_index:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cc", required=True, choices=compare.HSTCP_CONTROLS)
    ap.add_argument("--flows", type=int, default=24)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--lab-tcp", default="", metavar="KEYS",
                    help="more keys of the lab's tcp table, for diagnosis (e.g. 'rto = \"linux\"')")
    ap.add_argument("--graph", action="store_true",
                    help="run the lab on ns-2's network exactly, written as a graph (no trunk, "
                         "reverse links at the forward rates: compare.hstcp_graph_scenario)")
    ap.add_argument("--qstp", default=os.environ.get("QSTP_BIN",
                                                     os.path.join(compare.ROOT, "target",
                                                                  "release", "qstp")))
    args = ap.parse_args()
    if args.flows < 1 or args.seeds < 1:
        ap.error("--flows and --seeds must be at least 1")
    for seed in range(1, args.seeds + 1):
        with tempfile.TemporaryDirectory(prefix="qstp-episodes-") as work:
            ns2, ns2_events, ns2_drops = ns2_cell(args.cc, args.flows, seed, work)
            rows, lab_events, lab_drops = lab_cell(
                args.qstp, args.cc, args.flows, seed, ns2["start_times_s"], args.lab_tcp, work,
                args.graph)
        print(f"{args.cc} x {args.flows}, seed {seed}:")
        describe("ns-2", ns2_drops, ns2_events, sum(ns2["timeouts"]), ns2["utilisation"],
                 ns2["jain"])
        # compare.py's measures: goodput over 200 Mbit/s, Jain's index of the goodputs.
        goodput = [float(r["goodput_bps"]) for r in rows]
        describe("lab", lab_drops, lab_events, sum(int(r["timeouts"]) for r in rows),
                 sum(goodput) / 200e6, compare.jain(goodput))


if __name__ == "__main__":
    main()
