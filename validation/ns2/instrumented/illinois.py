#!/usr/bin/env python3
"""What ns-2.35's TCP/Linux Illinois computes, from the instrumented binary (build.sh).

Usage:
    python3 validation/ns2/instrumented/illinois.py [--flows 24] [--seed 1] [--duration 60]
                                                    [--after 20] [--ns PATH]

Runs `ns validation/ns2/hstcp_dumbbell.tcl illinois FLOWS DURATION SEED` with the
instrumented ns (default: the build.sh output in $QSTP_NS2_WORK or
/tmp/qstp-ns2-instrumented), reads its ACKED/UPD/SST/LOSS lines (format in instrument.py)
as they come, and prints:

  per flow: start time, ACKs seen by the module, ACKs without an RTT sample (invalid
            timestamp), the largest RTT sample, samples above 300 ms, base_rtt and max_rtt
            at AFTER seconds and at the end (us), update_params() calls, their median
            interval, window reductions after AFTER seconds;
  reductions (SST lines) after AFTER seconds: count, histogram of beta (1/64 units), and,
            from the same flow's preceding UPD line, the range of dm and deciles of da/dm;
  update_params() after AFTER seconds: mean cnt_rtt/cwnd (RTT samples per window).

Socket addresses are mapped to the script's flow numbers by pairing the order in which they
first appear with the order of the flows' start times (printed by the script as JSON); a
pairing whose first ACK is not about one base RTT after the start is reported.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "validation" / "ns2" / "hstcp_dumbbell.tcl"
DEFAULT_NS = Path(os.environ.get("QSTP_NS2_WORK", "/tmp/qstp-ns2-instrumented")) / "ns-2.35" / "ns"
BIG_US = 300_000          # "large" RTT sample
BASE_RTT_S = 0.2          # the dumbbell's propagation RTT: first ACK ~ start + 0.2 s


class Flow:
    def __init__(self, first_t):
        self.first_t = first_t
        self.acks = self.no_sample = self.big = 0
        self.max_sample = 0
        self.base = self.max = None          # latest printed base_rtt / max_rtt
        self.base_at = self.max_at = None    # ... at the AFTER time
        self.upd_t = []
        self.last_upd = None                 # the latest UPD line's fields
        self.sst_after = 0


def run(args):
    """Run ns, parse stderr as it streams; return (flows by sk, reductions, updates, json)."""
    flows, reductions, updates = {}, [], []
    counts = Counter()
    cmd = [str(args.ns), str(SCRIPT), "illinois", str(args.flows), str(args.duration),
           str(args.seed)]
    with tempfile.TemporaryDirectory(prefix="qstp-illinois-") as tmp:
        out_path = Path(tmp) / "stdout.txt"
        with open(out_path, "w") as out:
            proc = subprocess.Popen(cmd, cwd=tmp, stdout=out, stderr=subprocess.PIPE, text=True)
            for line in proc.stderr:
                f = line.split()
                if not f or f[0] not in ("ACKED", "UPD", "SST", "LOSS"):
                    continue
                kind, t, sk = f[0], float(f[1]), f[2]
                counts[kind] += 1
                fl = flows.get(sk)
                if fl is None:
                    fl = flows[sk] = Flow(t)
                if kind == "ACKED":
                    rtt, base, mx = int(f[4]), int(f[5]), int(f[6])
                    if t <= args.after:
                        fl.base_at, fl.max_at = base, mx
                    fl.base, fl.max = base, mx
                    fl.acks += 1
                    if rtt < 0:
                        fl.no_sample += 1
                    else:
                        fl.max_sample = max(fl.max_sample, rtt)
                        fl.big += rtt > BIG_US
                elif kind == "UPD":
                    cwnd, cnt, _sum, _base, _max, da, dm = map(int, f[3:10])
                    fl.upd_t.append(t)
                    fl.last_upd = (da, dm)
                    if t > args.after:
                        updates.append((cwnd, cnt))
                elif kind == "SST" and t > args.after:
                    fl.sst_after += 1
                    reductions.append((int(f[4]), fl.last_upd))
            err_rc = proc.wait()
        stdout = out_path.read_text()
    if err_rc != 0:
        sys.exit(f"illinois.py: {' '.join(cmd)} exited with {err_rc}")
    result = [l for l in stdout.splitlines() if l.startswith("{")]
    if not result:
        sys.exit("illinois.py: no JSON result on the script's stdout")
    return flows, reductions, updates, counts, json.loads(result[-1])


def label(flows, starts):
    """{sk: flow index}, first appearance order paired with start order."""
    if len(flows) != len(starts):
        sys.exit(f"illinois.py: {len(flows)} sockets printed, {len(starts)} flows started")
    by_first = sorted(flows, key=lambda sk: flows[sk].first_t)
    by_start = sorted(range(len(starts)), key=lambda i: starts[i])
    lab = dict(zip(by_first, by_start))
    for sk, i in lab.items():
        lag = flows[sk].first_t - starts[i]
        if not BASE_RTT_S <= lag < BASE_RTT_S + 0.05:
            print(f"warning: flow {i} (sk {sk}) first seen {lag:.3f} s after its start",
                  file=sys.stderr)
    return lab


def fmt(x, width=7):
    return f"{'-' if x is None else x:>{width}}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flows", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--after", type=float, default=20,
                    help="start of the steady state looked at (s, default 20)")
    ap.add_argument("--ns", type=Path, default=DEFAULT_NS,
                    help=f"instrumented ns binary (default {DEFAULT_NS})")
    args = ap.parse_args()
    if args.duration == int(args.duration):
        args.duration = int(args.duration)
    if not os.access(args.ns, os.X_OK):
        sys.exit(f"illinois.py: {args.ns} is not an executable; run "
                 "validation/ns2/instrumented/build.sh first or pass --ns")

    t0 = time.monotonic()
    flows, reductions, updates, counts, res = run(args)
    lab = label(flows, res["start_times_s"])
    A = f"{args.after:g}s"
    print(f"ns-2.35 TCP/Linux Illinois: {args.flows} flows, seed {args.seed}, "
          f"{args.duration} s ({time.monotonic() - t0:.0f} s wall); "
          f"lines: ACKED {counts['ACKED']} UPD {counts['UPD']} SST {counts['SST']} "
          f"LOSS {counts['LOSS']}; utilisation {res['utilisation']:.4f}")
    print(f"flow start_s   acks no_smp max_smp >300ms base@{A} max@{A} base@end max@end"
          f"  upd med_int_s red>{A}")
    ordered = sorted(flows, key=lab.get)
    for sk in ordered:
        fl = flows[sk]
        gaps = [b - a for a, b in zip(fl.upd_t, fl.upd_t[1:])]
        med = f"{statistics.median(gaps):.3f}" if gaps else "-"
        print(f"{lab[sk]:>4} {res['start_times_s'][lab[sk]]:7.4f} {fl.acks:6d} {fl.no_sample:6d}"
              f" {fl.max_sample:7d} {fl.big:6d} {fmt(fl.base_at, 8)} {fmt(fl.max_at, 7)}"
              f" {fmt(fl.base, 8)} {fmt(fl.max, 7)} {len(fl.upd_t):4d} {med:>9}"
              f" {fl.sst_after:6d}")

    fs = [flows[sk] for sk in ordered]
    print(f"all: ACKs without a sample {sum(f.no_sample for f in fs)}; samples > 300 ms "
          f"{sum(f.big for f in fs)}; largest sample {max(f.max_sample for f in fs)} us; "
          f"base_rtt at end {min(f.base for f in fs)}-{max(f.base for f in fs)} us; "
          f"max_rtt at end {min(f.max for f in fs)}-{max(f.max for f in fs)} us")
    gaps = [b - a for f in fs for a, b in zip(f.upd_t, f.upd_t[1:])]
    if gaps:
        print(f"update_params: {sum(len(f.upd_t) for f in fs)} calls, median interval "
              f"{statistics.median(gaps):.3f} s")

    print(f"reductions (SST) after {A}: {len(reductions)}")
    if reductions:
        hist = Counter(b for b, _ in reductions)
        print("  beta/64: " + " ".join(f"{b}:{n}" for b, n in sorted(hist.items())))
        pairs = [u for _, u in reductions if u is not None and u[1] > 0 and u[0] >= 0]
        print(f"  preceding UPD with da/dm computed: {len(pairs)} of {len(reductions)}")
        if pairs:
            dms = [dm for _, dm in pairs]
            ratios = sorted(da / dm for da, dm in pairs)
            print(f"  dm {min(dms)}-{max(dms)} us")
            dec = statistics.quantiles(ratios, n=10, method="inclusive") if len(ratios) > 1 \
                else ratios
            print(f"  da/dm min {ratios[0]:.2f}, deciles " + " ".join(f"{d:.2f}" for d in dec)
                  + f", max {ratios[-1]:.2f}")
    if updates:
        mean = statistics.fmean(cnt / cwnd for cwnd, cnt in updates)
        print(f"update_params after {A}: {len(updates)} calls, mean cnt_rtt/cwnd {mean:.3f}")


if __name__ == "__main__":
    main()
