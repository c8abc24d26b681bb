#!/usr/bin/env python3
"""One flow of the high-speed dumbbell, packet by packet, in ns-2.35 and in the lab.

Runs ns-2 (hstcp_dumbbell.tcl with its cwnd and bottleneck-queue traces) and the lab (the same
scenario as compare.py, with pcap captures of the sender's access link and of the bottleneck) for
the first seconds of one run, and prints for each: the bottleneck's drops by time, the
retransmissions and how many of them resent a segment that had already crossed the bottleneck,
timeouts, and the window after the first loss.

    python3 validation/ns2/trace_flow.py --cc highspeed --seed 1 --duration 4
"""

import argparse
import csv
import itertools
import json
import os
import struct
import subprocess
import sys
import tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

MSS = 1460


def pcap_segments(path):
    """(time, segment number, payload bytes) of every TCP data packet in a pcap (raw IPv4)."""
    out = []
    with open(path, "rb") as f:
        header = f.read(24)
        big = header[:4] in (b"\xa1\xb2\x3c\x4d", b"\xa1\xb2\xc3\xd4")
        nano = header[:4] in (b"\xa1\xb2\x3c\x4d", b"\x4d\x3c\xb2\xa1")
        fmt = ">IIII" if big else "<IIII"
        while True:
            h = f.read(16)
            if len(h) < 16:
                break
            sec, frac, incl, orig = struct.unpack(fmt, h)
            data = f.read(incl)
            ihl = (data[0] & 15) * 4
            if data[9] != 6:
                continue
            tcp = data[ihl:]
            seq = struct.unpack(">I", tcp[4:8])[0]
            payload = orig - ihl - (tcp[12] >> 4) * 4
            if payload > 0:
                out.append((sec + frac * (1e-9 if nano else 1e-6), seq // MSS, payload))
    return out


def summarise(name, sends, crossed, timeouts, first_cut, drops=None):
    """sends: (time, segment) of every data packet the sender sent; crossed: segment ->
    sorted times it left the bottleneck queue onto the link; drops: the times of the packets the
    bottleneck dropped, if known (else: the sends that never crossed it)."""
    crossed = {k: sorted(v) for k, v in crossed.items()}
    seen = defaultdict(int)
    known_drops = drops
    drops, resends, resent_delivered = [], 0, 0
    resend_log = []
    used = defaultdict(int)
    for t, seg in sends:
        seen[seg] += 1
        times = crossed.get(seg, [])
        delivered_before = any(x < t for x in times[:used[seg]])
        if seen[seg] > 1:
            resends += 1
            resend_log.append((t, delivered_before))
            if delivered_before:
                resent_delivered += 1
        # A send crossed the bottleneck if a copy left its queue within 50 ms (the 100-packet
        # queue drains in 6 ms, the access link takes 1 ms).
        if used[seg] < len(times) and t - 1e-9 <= times[used[seg]] < t + 0.05:
            used[seg] += 1
        else:
            drops.append(t)
    if known_drops is not None:
        drops = known_drops
    print(f"{name}: {len(sends)} data packets sent, {len(drops)} dropped at the bottleneck, "
          f"{resends} retransmissions ({resent_delivered} of segments that had already crossed "
          f"the bottleneck), {timeouts} timeouts;\n  {first_cut}")
    for t, group in itertools.groupby(drops, key=lambda x: round(x, 1)):
        print(f"  drops sent at t = {t:.1f} s: {len(list(group))}")
    for t, group in itertools.groupby(resend_log, key=lambda x: round(x[0], 2)):
        group = list(group)
        print(f"  retransmissions sent at t = {t:.2f} s: {len(group)} "
              f"({sum(1 for _, d in group if d)} of segments that had crossed)")


def ns2(args, work):
    trace, qtrace = os.path.join(work, "cwnd.tr"), os.path.join(work, "queue.tr")
    out = subprocess.run(["nice", "-n", "10", "ns", os.path.join(HERE, "hstcp_dumbbell.tcl"),
                          args.cc, "1", str(args.duration), str(args.seed), "0", trace, qtrace],
                         check=True, capture_output=True, text=True).stdout
    result = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    sends, crossed, drops = [], defaultdict(list), []
    with open(qtrace) as f:
        for line in f:
            ev, t, _, _, kind, size, _, _, src, _, seq = line.split()[:11]
            if kind != "tcp" or int(size) <= 40:
                continue
            if ev == "+":
                sends.append((float(t), int(seq)))
            elif ev == "-":
                crossed[int(seq)].append(float(t))
            elif ev == "d":
                drops.append(float(t))
    # ns-2's trace-queue logs arrivals at the bottleneck ("+"), which are the sender's sends (the
    # access link never drops); "-" is a packet leaving the queue onto the link.
    cuts = []
    args.ns2_cwnd = []
    with open(trace) as f:
        for line in f:
            fields = line.split()
            if fields[5] == "ssthresh_" and float(fields[0]) > 0:
                cuts.append(f"{fields[6]} at {float(fields[0]):.2f} s")
            elif fields[5] == "cwnd_":
                args.ns2_cwnd.append((float(fields[0]), float(fields[6])))
    cut = "ssthresh (segments) " + ", ".join(cuts)
    summarise("ns-2.35", sends, crossed, result["timeouts"][0], cut, drops)
    return result


def lab(args, work, starts):
    text = compare.hstcp_scenario(args.cc, starts, args.duration, args.seed, args.lab_tcp,
                                  args.lab_congestion)
    text = text.replace('packet_size = 1500\n', 'packet_size = 1500\nbin = "10ms"\n', 1)
    path = os.path.join(work, "s.toml")
    with open(path, "w") as f:
        f.write(text)
    caps = {}
    for link in ("access/S0/0", "bottleneck"):
        out = os.path.join(work, link.replace("/", "_"))
        subprocess.run(["nice", "-n", "10", args.qstp, "run", path, "--out", out, "--jobs", "1",
                        "--pcap", link, "--pcap-limit", "100000000"], check=True,
                       capture_output=True)
        caps[link] = pcap_segments(os.path.join(out, "pcap", "p00.pcap"))
    with open(os.path.join(out, "runs.csv")) as f:
        run = list(csv.DictReader(f))[0]
    cwnd = []
    with open(os.path.join(out, "series.csv")) as f:
        for r in csv.DictReader(f):
            if r["metric"] == "cwnd_bytes" and r["value"] and r["flow"] == "0":
                cwnd.append((float(r["time_s"]), float(r["value"]) / MSS))
    # The first reduction: the first bin whose window is below the bin before it.
    cut = "cwnd (segments, 10 ms bins with ACKs) " + ", ".join(
        f"{w:.0f} at {t:.2f} s" for t, w in cwnd if 1.4 <= t <= 2.6)
    sends = [(t, seg) for t, seg, _ in caps["access/S0/0"]]
    crossed = defaultdict(list)
    for t, seg, _ in caps["bottleneck"]:
        crossed[seg].append(t)
    summarise("lab", sends, crossed, run["timeouts"] or 0, cut)
    if args.cwnd_at:
        def at(series, t):
            before = [w for x, w in series if x <= t]
            return before[-1] if before else 0
        times = [float(x) for x in args.cwnd_at.split(",")]
        print("window (segments) at " + ", ".join(f"{t:g} s" for t in times) + ":")
        print("  ns-2.35: " + ", ".join(f"{at(args.ns2_cwnd, t):.0f}" for t in times))
        print("  lab:     " + ", ".join(f"{at(cwnd, t):.0f}" for t in times))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cc", default="highspeed", choices=compare.HSTCP_CONTROLS)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--duration", type=int, default=4)
    p.add_argument("--cwnd-at", default="", metavar="T1,T2,..",
                   help="also print each simulator's window (segments) at these times (s)")
    p.add_argument("--lab-tcp", default="", metavar="KEYS",
                   help="more keys of the lab's tcp table, for diagnosis (e.g. 'rto = \"linux\"')")
    p.add_argument("--lab-congestion", default=None, metavar="VALUE",
                   help="the lab's congestion key instead of compare.py's, for diagnosis")
    p.add_argument("--qstp", default=os.environ.get(
        "QSTP_BIN", os.path.join(compare.ROOT, "target", "release", "qstp")))
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="qstp-ns2-trace-") as work:
        result = ns2(args, work)
        lab(args, work, result["start_times_s"])


if __name__ == "__main__":
    main()
