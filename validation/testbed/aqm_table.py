#!/usr/bin/env python3
"""The AQM comparisons (the aqm-*-8flows files in this folder): per queue kind, the lab beside
the testbed, one row per metric.

    python3 validation/testbed/aqm_table.py LAB_DIR TESTBED_DIR

Each folder is what `qstp run` or `qstp testbed` wrote for one of the two files (a sweep over
`bottleneck.queue`); points are matched by their queue. From summary.json: E, F, and the queue's
drops (full and early) and CE marks after the warm-up, mean per run. From runs.csv: goodput of
all flows and the one-way delay (on the testbed through the router) mean, p50 and p99, averaged
over flows and runs, and the retransmission rate (packets sent again over packets sent). From
series.csv (the senders' cwnd and smoothed RTT every bin): the mean window, the reductions after the
warm-up (a bin whose cwnd is below 0.9 of the previous bin's) per run, the window's growth between
them in packets per second per flow, the senders' mean RTT, and the growth per RTT (their
product). Means over the runs of each folder.
"""
import collections
import csv
import json
import sys


def key(params):
    q = params["bottleneck.queue"]
    return q["kind"] + (" +ECN" if q.get("ecn") else "")


def windows(folder, warmup):
    """Per point, after the warm-up: reductions per run, growth (packets/s per flow), mean RTT (s),
    mean window (packets)."""
    cwnd = collections.defaultdict(list)
    rtt = collections.defaultdict(list)
    for r in csv.DictReader(open(f"{folder}/series.csv")):
        if r["metric"] == "cwnd_bytes":
            cwnd[(r["point"], r["run"], r["flow"])].append((float(r["time_s"]), float(r["value"])))
        elif r["metric"] == "rtt_ms" and float(r["time_s"]) > warmup and float(r["value"]) > 0:
            rtt[r["point"]].append(float(r["value"]) / 1000)
    out = {}
    for (point, run, _), v in cwnd.items():
        o = out.setdefault(
            point, {"cuts": 0, "up": 0.0, "time": 0.0, "runs": set(), "sum": 0.0, "n": 0}
        )
        o["runs"].add(run)
        v.sort()
        for (t0, a), (t1, b) in zip(v, v[1:]):
            if t1 <= warmup:
                continue
            o["time"] += t1 - t0
            o["sum"] += b / 1500
            o["n"] += 1
            if b < 0.9 * a:
                o["cuts"] += 1
            elif b > a:
                o["up"] += (b - a) / 1500
    return {
        p: (
            o["cuts"] / len(o["runs"]),
            o["up"] / o["time"] if o["time"] else float("nan"),
            sum(rtt[p]) / len(rtt[p]) if rtt[p] else float("nan"),
            o["sum"] / o["n"] if o["n"] else float("nan"),
        )
        for p, o in out.items()
    }


def metrics(folder):
    summary = json.load(open(f"{folder}/summary.json"))
    rows = list(csv.DictReader(open(f"{folder}/runs.csv")))
    win = windows(folder, summary["warmup_s"])
    out = {}
    for i, point in enumerate(summary["points"]):
        mine = [r for r in rows if r["point"] == str(i)]
        runs = len({r["run"] for r in mine})
        mean = lambda col: sum(float(r[col]) for r in mine) / len(mine)
        q = point["queues"][0]
        parts = [q[k] for k in ("in_profile", "out_profile", "yellow")]
        nan = float("nan")
        cuts, growth, rtt, window = win.get(str(i), (nan, nan, nan, nan))
        out[key(point["params"])] = {
            "utilisation E": point["metrics"]["efficiency"]["mean"],
            "Jain's index F": point["metrics"]["jain"]["mean"],
            "goodput, all flows (Mbit/s)": sum(float(r["goodput_bps"]) for r in mine) / runs / 1e6,
            "one-way delay mean (ms)": mean("delay_mean_ms"),
            "one-way delay p50 (ms)": mean("delay_p50_ms"),
            "one-way delay p99 (ms)": mean("delay_p99_ms"),
            "queue drops after warm-up": sum(c["ldrops"] + c["edrops"] for c in parts),
            "CE marks after warm-up": sum(c.get("marks", 0.0) for c in parts),
            "retransmission rate": sum(float(r["packets_retransmitted"]) for r in mine)
            / sum(float(r["packets_sent"]) for r in mine),
            "mean window (1500-byte packets)": window,
            "window reductions after warm-up": cuts,
            "window growth (packets/s per flow)": growth,
            "senders' mean RTT (ms)": rtt * 1000,
            "window growth per RTT (packets)": growth * rtt,
            "runs": runs,
        }
    return out


def fmt(name, x):
    if x != x:
        return "-"
    if name == "retransmission rate":
        return f"{x:.3%}"
    if name.startswith(("util", "Jain")):
        return f"{x:.3f}"
    if "drops" in name or "marks" in name or "reductions" in name:
        return f"{x:.0f}"
    return f"{x:.1f}" if "growth" not in name else f"{x:.2f}"


def main():
    lab, testbed = metrics(sys.argv[1]), metrics(sys.argv[2])
    queues = [q for q in lab if q in testbed]
    head = "| |" + "".join(
        f" {q}: lab ({lab[q]['runs']} runs) | testbed ({testbed[q]['runs']}) | difference |" for q in queues
    )
    print(head)
    print("|---|" + "---|---|---|" * len(queues))
    for name in lab[queues[0]]:
        if name == "runs":
            continue
        cells = []
        for q in queues:
            a, b = lab[q][name], testbed[q][name]
            if a == 0 and b == 0:
                diff = "0"
            elif a == 0 or a != a or b != b:
                diff = "-"
            else:
                diff = f"{(b - a) / a * 100:+.1f}%"
            cells.append(f" {fmt(name, a)} | {fmt(name, b)} | {diff} |")
        print(f"| {name} |" + "".join(cells))


if __name__ == "__main__":
    main()
