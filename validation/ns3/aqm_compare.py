#!/usr/bin/env python3
"""The lab's AQM queues against ns-3's queue discs on one dumbbell.

For each of codel, pie and fq-codel (and, with --ecn, ECN on in the queue and the TCP flows), runs
ns3_dumbbell.py --qdisc (ns-3 3.44's CoDelQueueDisc, PieQueueDisc, FqCoDelQueueDisc at their
defaults but the size) and the lab (`qstp run` on the same dumbbell with `kind = "codel"` etc. at
RFC defaults, and ns-3's TCP defaults as compare.py sets them), and prints per flow throughput
(payload, after the warm-up), utilisation, Jain's index and the mean queueing delay (the queue's
bytes, sampled every 10 ms after the warm-up in both, over the
bottleneck rate).

    python3 validation/ns3/aqm_compare.py --markdown > validation/ns3/aqm.md
    python3 validation/ns3/aqm_compare.py --markdown --seeds 5   # mean and range over seeds 1..5
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
QDISCS = ["codel", "pie", "fq-codel"]

SCENARIO = """name = "ns3-aqm-compare"
duration = "{duration}s"
warmup = "{warmup}s"
# Queue samples every 10 ms, as ns3_dumbbell.py's.
bin = "10ms"
runs = 1
seed = {seed}
packet_size = 1500
[bottleneck]
rate = "{rate_mbps}M"
delay = "{delay_ms}ms"
queue = {{ kind = "{qdisc}", limit = {limit}, ecn = {ecn} }}

[[group]]
name = "S"
protocol = "tcp"
congestion = "newreno"
flows = {flows}
rtt = "{rtt_ms}ms"
# ns3_dumbbell.py starts each flow at a uniform time in [0, 100 ms).
start_spread = "100ms"
access = {{ rate = "1G", delay = "1ms" }}
# ns-3 3.44's TCP defaults, as validation/ns3/compare.py sets them.
tcp = {{ initial_window = 10, delayed_ack = true, min_rto = "1s", sack = true, recovery = "prr-ns3", handshake = true, rtt_sample = "oldest", ecn = {ecn} }}
"""


def jain(xs):
    s, q = sum(xs), sum(x * x for x in xs)
    return s * s / (len(xs) * q) if q > 0 else float("nan")


def ns3_run(args, qdisc):
    cmd = [sys.executable, os.path.join(HERE, "ns3_dumbbell.py"), "--qdisc", qdisc,
           "--flows", str(args.flows), "--duration", str(args.duration),
           "--warmup", str(args.warmup), "--bottleneck-rate", f"{args.rate_mbps}Mbps",
           "--bottleneck-delay", f"{args.delay_ms}ms", "--queue", str(args.limit),
           "--seed", str(args.seed)]
    if args.ecn:
        cmd.append("--ecn")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    r = json.loads(out.stdout)
    return {"per_flow_bps": r["per_flow_bps"], "queue_delay_ms": r["queue_delay_ms"]}


def lab_run(args, qdisc):
    work = tempfile.mkdtemp(prefix="qstp-aqm-compare-")
    try:
        path = os.path.join(work, "s.toml")
        # The lab's rtt is the base round trip: 2 x (access + bottleneck + access) delays.
        rtt_ms = 2 * (1 + args.delay_ms + 1)
        with open(path, "w") as f:
            f.write(SCENARIO.format(duration=args.duration, warmup=args.warmup,
                                    rate_mbps=args.rate_mbps, delay_ms=args.delay_ms,
                                    qdisc=qdisc, limit=args.limit,
                                    ecn=str(args.ecn).lower(), flows=args.flows, rtt_ms=rtt_ms,
                                    seed=args.seed))
        out = os.path.join(work, "out")
        subprocess.run([args.qstp, "run", path, "--out", out, "--no-plots"], check=True,
                       capture_output=True)
        with open(os.path.join(out, "runs.csv")) as f:
            goodput = [float(r["goodput_bps"]) for r in csv.DictReader(f)]
        queue_bytes = []
        with open(os.path.join(out, "series.csv")) as f:
            for r in csv.DictReader(f):
                if (r["metric"] == "queue_bytes" and r["queue"] == "bottleneck"
                        and float(r["time_s"]) > args.warmup):
                    queue_bytes.append(float(r["value"]))
        mean = sum(queue_bytes) / len(queue_bytes) if queue_bytes else 0.0
        return {"per_flow_bps": goodput,
                "queue_delay_ms": mean * 8.0 / (args.rate_mbps * 1e6) * 1e3}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--qdisc", choices=QDISCS, action="append")
    p.add_argument("--flows", type=int, default=4)
    p.add_argument("--duration", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--rate-mbps", type=int, default=10)
    p.add_argument("--delay-ms", type=int, default=18)
    p.add_argument("--limit", type=int, default=1000)
    p.add_argument("--ecn", action="store_true")
    p.add_argument("--qstp", default=os.path.join(ROOT, "target", "release", "qstp"))
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--seeds", type=int, default=1,
                   help="run seeds 1..N on both sides and print the mean and range over them")
    args = p.parse_args()
    if args.seeds > 1:
        return over_seeds(args)
    args.seed = 1
    rows = []
    for qdisc in args.qdisc or QDISCS:
        for name, run in (("ns-3", ns3_run), ("lab", lab_run)):
            r = run(args, qdisc)
            flows = r["per_flow_bps"]
            rows.append((qdisc, name, [x / 1e6 for x in flows],
                         sum(flows) / (args.rate_mbps * 1e6), jain(flows), r["queue_delay_ms"]))
    if args.markdown:
        print("| queue | simulator | per flow (Mbit/s) | utilisation | Jain | mean queue delay (ms) |")
        print("|---|---|---|---|---|---|")
    for qdisc, name, flows, util, j, delay in rows:
        per = ", ".join(f"{x:.2f}" for x in flows)
        if args.markdown:
            print(f"| {qdisc} | {name} | {per} | {util:.3f} | {j:.3f} | {delay:.1f} |")
        else:
            print(f"{qdisc:9} {name:5} [{per}] util {util:.3f} jain {j:.3f} qdelay {delay:.1f} ms")


def over_seeds(args):
    """Seeds 1..N on both sides: per queue and simulator, the mean (min-max) of utilisation,
    Jain's index and the mean queueing delay."""
    results = {}
    for qdisc in args.qdisc or QDISCS:
        for name, run in (("ns-3", ns3_run), ("lab", lab_run)):
            for seed in range(1, args.seeds + 1):
                args.seed = seed
                r = run(args, qdisc)
                flows = r["per_flow_bps"]
                results.setdefault((qdisc, name), []).append(
                    (sum(flows) / (args.rate_mbps * 1e6), jain(flows), r["queue_delay_ms"]))
                print(f"{qdisc} {name} seed {seed}: utilisation {results[(qdisc, name)][-1][0]:.4f}",
                      file=sys.stderr)

    def cell(xs, fmt):
        return f"{fmt.format(sum(xs) / len(xs))} ({fmt.format(min(xs))}-{fmt.format(max(xs))})"

    print(f"| queue | simulator | utilisation, mean (min-max) of {args.seeds} seeds | Jain | "
          "mean queue delay (ms) |")
    print("|---|---|---|---|---|")
    for (qdisc, name), rs in results.items():
        util, j, delay = zip(*rs)
        print(f"| {qdisc} | {name} | {cell(util, '{:.3f}')} | {cell(j, '{:.3f}')} | "
              f"{cell(delay, '{:.1f}')} |")


if __name__ == "__main__":
    main()
