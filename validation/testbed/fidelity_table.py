#!/usr/bin/env python3
"""Markdown rows, lab against testbed, from the summary.json of `qstp run` and of `qstp testbed`
on the same scenario: per sweep point and group, the aggregate throughput (lab mean [min, max]
over its runs; testbed mean), the testbed's difference from the lab's mean, and each side's
throughput over the group's target and goodput.

    python3 fidelity_table.py LAB/summary.json TESTBED/summary.json
"""

import json
import sys


def points(path):
    with open(path) as f:
        s = json.load(f)
    out = {}
    for p in s["points"]:
        key = ", ".join(f"{k.replace('group.', '')}={v}" for k, v in p["params"].items())
        for g in p["flows"]:
            out[(key, g["group"])] = g
    return out


def kbps(x):
    return f"{x / 1e3:.0f}"


def main(lab_path, tb_path):
    lab, tb = points(lab_path), points(tb_path)
    print("| point | group | target | lab thr [min, max] | testbed thr | testbed / lab | "
          "lab thr/target | testbed thr/target | lab goodput | testbed goodput |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key, g in lab.items():
        t = tb.get(key)
        if t is None:
            continue
        la, ta = g["aggregate_bps"], t["aggregate_bps"]
        # A group's goodput is per flow in the summary: times its flows for the group's.
        lg = g["goodput_bps"]["mean"] * g["flows"]
        tg = t["goodput_bps"]["mean"] * t["flows"]
        target = g["target_bps"] or 0
        diff = (ta["mean"] / la["mean"] - 1) * 100 if la["mean"] else float("nan")
        ratio = (lambda x: f"{x / target * 100:.0f}%") if target else (lambda x: "")
        print(f"| {key[0]} | {key[1]} ({g['protocol']}) | {kbps(target)} | "
              f"{kbps(la['mean'])} [{kbps(la['min'])}, {kbps(la['max'])}] | {kbps(ta['mean'])} | "
              f"{diff:+.1f}% | {ratio(la['mean'])} | {ratio(ta['mean'])} | {kbps(lg)} | {kbps(tg)} |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
