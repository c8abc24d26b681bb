#!/usr/bin/env python3
"""The free-stunts-red comparison: per sweep point, the lab's folder beside the testbed's.

    python3 validation/testbed/free_stunts_table.py LAB_DIR TESTBED_DIR [TESTBED_DIR...]

Each folder is what `qstp run` or `qstp testbed` wrote for validation/testbed/free-stunts-red.toml.
From summary.json, per point (the controller: `pi` with delegation, `none` without): the mean
over runs, after the warm-up, of the Free's throughput (group F), its Stunts' (S, all flows) and
the cross traffic's (X, all flows), as the router or the simulated bottleneck counted them at the
receiver; V- and V* of the Free against its target (Free & Stunts paper eqs. 17-18, computed by
the lab from the per-period samples, the same code for both folders); the loss events the Free
delegated, reacted to, and took from Stunts. Several testbed folders (runs of other seeds) get a
column each; the last column and the verdict pool their runs (the mean over every testbed run)
against the lab: the Free's mean and the cross traffic's mean within 10% of the lab's.
"""
import json
import sys

TOLERANCE = 0.10


def points(folder):
    summary = json.load(open(f"{folder}/summary.json"))
    out = {}
    for p in summary["points"]:
        label = ",".join(f"{k}={v}" for k, v in p["params"].items()) or "base"
        groups = {g["group"]: g for g in p["flows"]}
        free = groups["F"]
        out[label] = {
            "Free (kbit/s)": free["aggregate_bps"]["mean"] / 1e3,
            "Free, min..max over runs (kbit/s)": (
                free["aggregate_bps"]["min"] / 1e3,
                free["aggregate_bps"]["max"] / 1e3,
            ),
            "Stunts, all (kbit/s)": groups["S"]["aggregate_bps"]["mean"] / 1e3,
            # With `none` the Free and the Stunts are 5 identical plain flows: their mean per flow
            # has a fifth of the spread of the Free's alone.
            "Free and Stunts, per flow (kbit/s)": (
                free["aggregate_bps"]["mean"] + groups["S"]["aggregate_bps"]["mean"]
            )
            / (free["flows"] + groups["S"]["flows"])
            / 1e3,
            "Free, std over runs (kbit/s)": free["aggregate_bps"]["std"] / 1e3,
            "cross traffic, all (kbit/s)": groups["X"]["aggregate_bps"]["mean"] / 1e3,
            "cross traffic, min..max over runs (kbit/s)": (
                groups["X"]["aggregate_bps"]["min"] / 1e3,
                groups["X"]["aggregate_bps"]["max"] / 1e3,
            ),
            "V- (bit^2/s^2)": (free.get("matching") or {}).get("v_minus"),
            "V* (bit^2/s^2)": (free.get("matching") or {}).get("v_star"),
            "delegated / reacted / taken": tuple(
                (free.get("signals") or {}).get(k) for k in ("delegated", "reacted", "taken_by_free")
            ),
            "utilisation E": p["metrics"]["efficiency"]["mean"],
        }
    return out, summary


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, tuple):
        return " / ".join(fmt(x) for x in v) if len(v) != 2 else f"{fmt(v[0])}..{fmt(v[1])}"
    if abs(v) >= 1e6:
        return f"{v:.2e}"
    if abs(v) < 10:
        return f"{v:.3f}"
    return f"{v:.0f}"


def pooled(values, runs):
    """The mean over every run of folders whose own means are `values` over `runs` runs."""
    return sum(v * n for v, n in zip(values, runs)) / sum(runs)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    lab, lab_summary = points(sys.argv[1])
    testbeds = [points(folder) for folder in sys.argv[2:]]
    runs = [summary["runs"] for _, summary in testbeds]
    seeds = [f"seeds {s['seed']}-{s['seed'] + s['runs'] - 1}" for _, s in testbeds]
    verdicts = []
    for label in lab:
        if not all(label in t for t, _ in testbeds):
            continue
        print(f"\n{label}\n")
        head = " | ".join(f"testbed ({s})" for s in seeds)
        print(f"| | lab (mean of {lab_summary['runs']}) | {head} | testbed, all {sum(runs)} runs against lab |")
        print("|---|---|" + "---|" * len(testbeds) + "---|")
        for key, x in lab[label].items():
            ys = [t[label][key] for t, _ in testbeds]
            diff = ""
            numeric = all(isinstance(v, (int, float)) for v in [x] + ys)
            if numeric and x and "std" not in key:
                diff = f"{(pooled(ys, runs) - x) / x * 100:+.1f}%"
            cells = " | ".join(fmt(y) for y in ys)
            print(f"| {key} | {fmt(x)} | {cells} | {diff} |")
        for key in ("Free (kbit/s)", "cross traffic, all (kbit/s)"):
            x = lab[label][key]
            ys = [t[label][key] for t, _ in testbeds]
            verdicts.append((label, key, x, ys, pooled(ys, runs)))
    print("\nverdict (within 10% of the lab's mean):")
    for label, key, x, ys, y in verdicts:
        each = ", ".join(f"{s} {(v - x) / x * 100:+.1f}%" for s, v in zip(seeds, ys))
        ok = abs(y - x) <= TOLERANCE * x
        print(f"  {label}: {key.split(' (')[0]}: lab {x:.0f}, testbed {y:.0f} kbit/s over all "
              f"{sum(runs)} runs, {(y - x) / x * 100:+.1f}%: {'within' if ok else 'NOT within'} 10% "
              f"({each})")


if __name__ == "__main__":
    main()
