"""The Free & Stunts paper's on/off cross traffic (Figs. 4, 5 and 7) without delegation.

ns-2.35 runs fs_red.tcl with its switching arguments; the lab runs scenarios/fs-fig4.toml,
fs-fig5.toml and fs-fig7.toml without their [delegation] table (the paper's baseline: the Free and
its Stunts as plain TCP), at the scenario's own duration and warm-up, seeds 1..SEEDS. compare.py
adds these rows to its "fs" section (`rows(args, compare)`).

Per setup, four rows: the utilisation (the goodput of every flow over the bottleneck rate), Jain's
index of all flows, the Free's goodput and the cross traffic's aggregate goodput (its switched and
continuous flows over the whole measured span: the paper's Fig. 7 explains the Free's excess by
"their combined throughput decreased the utilization at the bottleneck", §IV-C).

The switching has the same distribution in both simulators, not the same draws: each switched
flow starts on, and every on and off period is uniform in [0, 20] s (the scenarios' `onoff = { on
= "10s", off = "10s", random = true }`); the lab's periods come from each flow's own stream, ns-2's
from a stream of their own.
"""

import csv
import json
import os
import re

from labrun import lab_output

# Per figure: the lab's scenario, its sweep for these rows (the scenario's [sweep] is replaced),
# and per sweep point, in the sweep's order: (bottleneck Mbit/s, Stunts, cross flows, switched).
EXPERIMENTS = [
    # §IV-A: 10 Stunts; left panel 40 Mbit/s with 8 of 10 cross flows switched, middle and right
    # 80 Mbit/s with 20 (the scenario keeps the left panel's mix, 16 of 20). The three traces only
    # matter with delegation, so each rate is one setup.
    ("4", "fs-fig4.toml",
     '"bottleneck.rate,group.X.flows,group.X.onoff.flows" = [["40M", 10, 8], ["80M", 20, 16]]\n',
     [(40, 10, 10, 8), (80, 10, 20, 16)]),
    # §IV-B, the randomised plot: 19 of 20 switched, 1..20 Stunts; four of the scenario's 15 points
    # (2, 10 and 20 as Fig. 6's non-random rows, 5 the non-random plot's optimum).
    ("5", "fs-fig5.toml", '"group.S.flows" = [2, 5, 10, 20]\n"group.X.onoff.flows" = [19]\n',
     [(80, s, 20, 19) for s in (2, 5, 10, 20)]),
    # §IV-C: 10 Stunts, 0..20 of the 20 cross flows switched; 0 is the continuous network of the
    # Fig. 6 rows (10 Stunts), so the other five points.
    ("7", "fs-fig7.toml", '"group.X.onoff.flows" = [4, 8, 12, 16, 20]\n',
     [(80, 10, 20, k) for k in (4, 8, 12, 16, 20)]),
]

METRICS = (("utilisation", "utilisation", "utilisation (goodput)"),
           ("jain", "jain", "Jain index of all flows"),
           ("free", "throughput", "the Free's goodput"),
           ("cross", "throughput", "the cross traffic's aggregate goodput"))

# Named causes of lab-vs-ns-2 differences beyond tolerance, by (figure, (rate, stunts, cross,
# switched), metric key) (README.md, "The QSTP and Free & Stunts rows").
CAUSES = {}


def seconds(text, key):
    """A scenario's top-level duration key ("300s") in seconds."""
    m = re.search(r'^%s = "(\d+)s"' % key, text, re.M)
    if not m:
        raise ValueError(f"no {key} in whole seconds")
    return int(m.group(1))


def switching(text):
    """The scenario's on/off table of its cross group X: (on s, off s, random)."""
    m = re.search(r'^onoff = \{ on = "(\d+)s", off = "(\d+)s", random = (true|false)', text, re.M)
    if not m:
        raise ValueError("no onoff table")
    return int(m.group(1)), int(m.group(2)), m.group(3) == "true"


def lab_runs(qstp, text, sweep, seeds):
    """The scenario `text` without [delegation], with `sweep`, seeds 1..N: per sweep point, per
    run, the goodput of each flow by group."""
    text = text[:text.index("[delegation]")] + "[sweep]\n" + sweep
    with lab_output(qstp, text, seeds) as out:
        with open(os.path.join(out, "runs.csv")) as f:
            rows = list(csv.DictReader(f))
        with open(os.path.join(out, "summary.json")) as f:
            points = json.load(f)["points"]
    result = []
    for point in range(len(points)):
        runs = []
        for run in sorted({r["run"] for r in rows}, key=int):
            mine = [r for r in rows if int(r["point"]) == point and r["run"] == run]
            runs.append({g: [float(r["goodput_bps"]) for r in mine if r["group"] == g]
                         for g in ("F", "S", "X")})
        result.append((points[point]["params"], runs))
    return result


def metrics(c, rate_mbps, free, stunts, cross):
    """The four metrics of one run from its goodputs, bit/s."""
    every = free + stunts + cross
    return {"utilisation": sum(every) / (rate_mbps * 1e6), "jain": c.jain(every),
            "free": free[0], "cross": sum(cross)}


def rows(args, c):
    """The rows; `c` is the compare module (run_ns2, row, jain, mean, ROOT)."""
    out = []
    for fig, scenario, sweep, points in EXPERIMENTS:
        with open(os.path.join(c.ROOT, "scenarios", scenario)) as f:
            text = f.read()
        duration, warmup = seconds(text, "duration"), seconds(text, "warmup")
        on, off, random = switching(text)
        lab = lab_runs(args.qstp, text, sweep, args.seeds)
        assert len(lab) == len(points), (scenario, len(lab))
        for (rate, stunts, ncross, switched), (params, lab_point) in zip(points, lab):
            flows = 1 + stunts + ncross
            assert len(lab_point[0]["S"]) == stunts and len(lab_point[0]["X"]) == ncross, params
            ns2 = []
            for seed in range(1, args.seeds + 1):
                r = c.run_ns2("fs_red.tcl", [rate, flows, duration, warmup, seed, ncross, switched,
                                             on, off, int(random)],
                              f"fs-onoff-fig{fig}-{rate}M-{flows}flows-{switched}of{ncross}-"
                              f"on{on}s-off{off}s{'-random' if random else ''}-{duration}s-"
                              f"w{warmup}-seed{seed}.json", args.fresh)
                p = r["per_flow_bps"]
                first = r["cross"]["first"]
                ns2.append(metrics(c, rate, p[:1], p[1:first], p[first:]))
            labs = [metrics(c, rate, run["F"], run["S"], run["X"]) for run in lab_point]
            exp = (f"F&S Fig. {fig}, {rate} Mbit/s RED, Free + {stunts} Stunts + {ncross} cross "
                   f"({switched} on/off), no delegation")
            for key, metric, label in METRICS:
                r = c.row("fs", exp, metric, None, c.mean([m[key] for m in ns2]),
                          c.mean([m[key] for m in labs]),
                          CAUSES.get((fig, (rate, stunts, ncross, switched), key)), args.seeds)
                r["label"] = label
                out.append(r)
    return out
