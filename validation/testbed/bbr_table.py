#!/usr/bin/env python3
"""The bbr-8flows comparison: one row per metric, the lab's folder beside the testbed's.

    python3 validation/testbed/bbr_table.py LAB_DIR TESTBED_DIR

Each folder is what `qstp run` or `qstp testbed` wrote: E and F from summary.json, the
retransmission rate (packets sent again over packets sent, whole run) and goodput from runs.csv,
the queue's drops after the warm-up from summary.json, the one-way delay (on the testbed
through the router) from runs.csv; means over the runs of each folder.
"""
import csv
import json
import sys


def metrics(folder):
    summary = json.load(open(f"{folder}/summary.json"))
    point = summary["points"][0]
    rows = list(csv.DictReader(open(f"{folder}/runs.csv")))
    runs = sorted({r["run"] for r in rows})
    sent = sum(float(r["packets_sent"]) for r in rows)
    resent = sum(float(r["packets_retransmitted"]) for r in rows)
    goodput = sum(float(r["goodput_bps"]) for r in rows) / len(runs)
    delay = [float(r["delay_mean_ms"]) for r in rows if r.get("delay_mean_ms")]
    q = point["queues"][0]
    drops = sum(q[k]["ldrops"] + q[k]["edrops"] for k in ("in_profile", "out_profile", "yellow"))
    return {
        "utilisation E": point["metrics"]["efficiency"]["mean"],
        "Jain's index F": point["metrics"]["jain"]["mean"],
        "retransmission rate": resent / sent,
        "queue drops after warm-up": drops,
        "goodput, all flows (Mbit/s)": goodput / 1e6,
        "one-way delay, mean over flows (ms)": sum(delay) / len(delay),
        "runs": len(runs),
    }


def main():
    lab, testbed = metrics(sys.argv[1]), metrics(sys.argv[2])
    print(f"| | lab (bbr, mean of {lab['runs']}) | testbed (kernel bbr, {testbed['runs']} run) | difference |")
    print("|---|---|---|---|")
    for key in lab:
        if key == "runs":
            continue
        a, b = lab[key], testbed[key]
        diff = (b - a) / a * 100 if a else float("nan")
        fmt = "{:.2%}" if key == "retransmission rate" else "{:.3f}" if key.startswith(("util", "Jain")) else "{:.1f}"
        print(f"| {key} | {fmt.format(a)} | {fmt.format(b)} | {diff:+.1f}% |")


if __name__ == "__main__":
    main()
