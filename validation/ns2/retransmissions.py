#!/usr/bin/env python3
"""Retransmissions in one high-speed cell, ns-2.35 beside the lab, and how ns-2's came about.

Runs one cell of the high-speed dumbbell (hstcp_dumbbell.tcl, seed S) for each run length given
(seconds from the start, so the early ones show the slow-start overshoot) in ns-2 and in the lab
(compare.py's scenario, the same start times, its TCP settings with --lab-tcp's changes), and
prints per length: the retransmitted segments, summed over the flows, of each; the lab's fast
recoveries and timeouts; and the utilisation and Jain's index of each.

With --ns2-queue, ns-2's first run length runs once more with the bottleneck queue traced, and
the trace gives, per flow and in all: segments sent (first copies), copies sent again, copies
dropped at the bottleneck, copies sent again after an earlier copy had already passed the
bottleneck (spurious: the receiver had it), and the most copies of one segment.

    python3 validation/ns2/retransmissions.py --cc cubic --flows 24
    python3 validation/ns2/retransmissions.py --cc cubic --flows 24 --lengths 5 --ns2-queue
    python3 validation/ns2/retransmissions.py --cc cubic --flows 24 --lab-tcp 'ns2_clear_scoreboard = false'

A diagnosis tool (validation/ns2/README.md, "ns-2's scoreboard forgets"); nothing in CI runs it.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402


def ns2(cc, flows, seconds, seed, queue_trace=None):
    """One hstcp_dumbbell.tcl run: its JSON result."""
    args = [cc, flows, seconds, seed, 0]
    if queue_trace:
        args += ["", queue_trace]
    out = subprocess.run(["ns", os.path.join(HERE, "hstcp_dumbbell.tcl")] + [str(a) for a in args],
                         check=True, capture_output=True, text=True).stdout
    return json.loads([line for line in out.splitlines() if line.startswith("{")][-1])


def queue_copies(trace):
    """Per flow (the sender's address in ns-2's trace-queue lines), from the bottleneck queue's
    trace: [first copies, copies sent again, drops, spurious copies, most copies of a segment]."""
    passed, copies = set(), collections.Counter()
    per = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    with open(trace) as f:
        for line in f:
            # "+ time from to tcp size flags fid src dst seqno uid"; 40-byte packets are the
            # header-only first segment (seqno 0 of each flow) and carry no data.
            x = line.split()
            if len(x) < 11 or x[4] != "tcp" or x[5] == "40":
                continue
            event, src, seq = x[0], x[8], int(x[10])
            key = (src, seq)
            if event == "+":
                copies[key] += 1
                row = per[src]
                if copies[key] == 1:
                    row[0] += 1
                else:
                    row[1] += 1
                    row[3] += key in passed
                row[4] = max(row[4], copies[key])
            elif event == "-":
                passed.add(key)
            elif event == "d":
                per[src][2] += 1
    return per


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cc", required=True, choices=compare.HSTCP_CONTROLS)
    p.add_argument("--flows", type=int, default=24)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lengths", default="5,20,60", help="run lengths, seconds, comma-separated")
    p.add_argument("--lab-tcp", default="", help="more keys of the lab's tcp table")
    p.add_argument("--ns2-queue", action="store_true",
                   help="trace ns-2's bottleneck queue on the first length and count copies")
    p.add_argument("--qstp", default=os.environ.get("QSTP_BIN", os.path.join(
        HERE, "..", "..", "target", "release", "qstp")))
    args = p.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    print(f"{args.cc}, {args.flows} flows, seed {args.seed}"
          + (f", lab tcp + {{ {args.lab_tcp} }}" if args.lab_tcp else ""))
    print("| s | ns-2 retransmitted | lab retransmitted | lab fast recoveries | lab timeouts | "
          "ns-2 utilisation | lab utilisation | ns-2 Jain | lab Jain |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="qstp-retx-") as work:
        for seconds in lengths:
            r = ns2(args.cc, args.flows, seconds, args.seed)
            text = compare.hstcp_scenario(args.cc, r["start_times_s"], seconds, args.seed,
                                          args.lab_tcp)
            rows = compare.run_lab(args.qstp, text)
            goodput = [float(x["goodput_bps"]) for x in rows]
            print(f"| {seconds} | {sum(r['retransmitted_packets'])} | "
                  f"{sum(int(x['packets_retransmitted']) for x in rows)} | "
                  f"{sum(int(x['fast_recoveries']) for x in rows)} | "
                  f"{sum(int(x['timeouts']) for x in rows)} | {r['utilisation']:.3f} | "
                  f"{sum(goodput) / 200e6:.3f} | {r['jain']:.3f} | {compare.jain(goodput):.3f} |",
                  flush=True)
        if args.ns2_queue:
            trace = os.path.join(work, "queue.tr")
            ns2(args.cc, args.flows, lengths[0], args.seed, trace)
            per = queue_copies(trace)
            total = [sum(v[i] for v in per.values()) for i in range(4)]
            most = max(v[4] for v in per.values())
            print(f"\nns-2's bottleneck queue, first {lengths[0]} s: {total[0]} segments, "
                  f"{total[1]} copies sent again, {total[2]} drops, {total[3]} copies sent again "
                  f"after an earlier one had passed the bottleneck; at most {most} copies of one "
                  "segment")
            print("| flow (ns-2 address) | segments | sent again | dropped | spurious | most copies |")
            print("|---|---|---|---|---|---|")
            for src in sorted(per, key=float):
                v = per[src]
                print(f"| {src} | {v[0]} | {v[1]} | {v[2]} | {v[3]} | {v[4]} |")


if __name__ == "__main__":
    main()
