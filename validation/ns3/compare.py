#!/usr/bin/env python3
"""The lab against ns-3 on the high-speed TCP paper's dumbbell, control by control.

For each congestion control and flow count, runs the same dumbbell in ns-3 (ns3_dumbbell.py,
needs `pip install ns3==3.44.post0`) and in the lab (`qstp run` on a generated scenario with the
same settings), and prints utilisation (in-order payload over the bottleneck rate) and Jain's index
side by side, with a verdict: within 0.05 of ns-3 on both.

    python3 validation/ns3/compare.py                       # 8 controls x {1, 2, 8} flows, 60 s
    python3 validation/ns3/compare.py --cc cubic --flows 2  # one row
    python3 validation/ns3/compare.py --markdown > validation/ns3/table.md

Both simulators use ns-3's TCP defaults, which the lab can take through scenario keys: initial
window 10, delayed ACKs (every second segment, 200 ms), minimum RTO 1 s, SACK, ns-3's PRR
recovery (RFC 6937 as tcp-prr-recovery.cc computes it, `recovery = "prr-ns3"`), a SYN / SYN-ACK
handshake whose round trip is the first RTT sample, RTT samples from the first segment an ACK
covers; no timestamps, so data packets are 1500 bytes in both. ns-3 results are cached in
validation/ns3/results/ by settings; `--fresh` runs them again. Not part of CI: a full table
takes tens of minutes.
"""

import argparse
import csv
import difflib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CONTROLS = ["newreno", "highspeed", "bic", "scalable", "cubic", "htcp", "illinois", "yeah"]
TOLERANCE = 0.05
# ns-3 3.44 defaults that differ from the lab's (the Linux constants): the lab takes ns-3's for the
# comparison. TcpScalable::AIFactor is 50 (Linux before 2016); the lab's default is 100.
# TcpBic::SmoothPart is 5 and Beta 0.8 (tcp-bic.cc); Linux tcp_bic.c and the lab's defaults are 20 and
# 819/1024.
NS3_PARAMS = {
    "scalable": "{ name = \"scalable\", ai_cnt = 50 }",
    "bic": "{ name = \"bic\", smooth_part = 5, beta = 0.8 }",
    # TcpCubic's slow start counts bytes (tcp-cubic.cc IncreaseWindow: cwnd += segmentsAcked, as
    # Linux), 2 segments per delayed ACK; the lab's default is RFC 5681's 1 per ACK.
    "cubic": "{ name = \"cubic\", abc_limit = 1e9 }",
    # TcpIllinois truncates its delays to whole milliseconds (tcp-illinois.cc RecalcParam), and
    # ns-3 hands every control the smoothed RTT rather than the sample (tcp-socket-base.cc).
    "illinois": "{ name = \"illinois\", delay_granularity = 0.001, smoothed_rtt = 1 }",
}
# Controls whose ns-3 implementation departs from the published algorithm in ways the lab can
# reproduce on request (`ns3 = 1`; see crates/tcp/src/{bic,cubic,htcp,yeah}/ns3.rs): these
# get two rows,
# the published algorithm and the ns-3-compatible variant, both against the same ns-3 run.
NS3_COMPAT = {
    "bic": "{ name = \"bic\", smooth_part = 5, beta = 0.8, ns3 = 1 }",
    "cubic": "{ name = \"cubic\", ns3 = 1 }",
    "htcp": "{ name = \"htcp\", ns3 = 1 }",
    "yeah": "{ name = \"yeah\", ns3 = 1 }",
}


def jain(xs):
    s, q = sum(xs), sum(x * x for x in xs)
    return s * s / (len(xs) * q) if q > 0 else float("nan")


def ns3_run(cc, flows, duration, fresh, seed=1):
    suffix = "" if seed == 1 else f"-seed{seed}"
    cache = os.path.join(HERE, "results", f"{cc}-{flows}-{int(duration)}s{suffix}.json")
    if os.path.exists(cache) and not fresh:
        with open(cache) as f:
            return json.load(f)
    try:
        import ns  # noqa: F401  (pip install ns3==3.44.post0)
    except ImportError:
        sys.exit(f"ns-3's result {os.path.basename(cache)} is not cached in validation/ns3/results "
                 "and ns-3 is not installed (pip install ns3==3.44.post0)")
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "ns3_dumbbell.py"), "--cc", cc, "--flows",
         str(flows), "--duration", str(duration), "--seed", str(seed)],
        check=True, capture_output=True, text=True)
    result = json.loads(out.stdout)
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    with open(cache, "w") as f:
        json.dump(result, f)
    return result


HEADER = """name = "ns3-compare"
duration = "{duration}s"
runs = 1
seed = {seed}
packet_size = 1500
[bottleneck]
rate = "200M"
delay = "98ms"
queue = {{ kind = "droptail", limit = 100 }}
"""

GROUP = """[[group]]
name = "{name}"
protocol = "tcp"
congestion = {cc}
flows = {flows}
rtt = "200ms"
{start}
access = {{ rate = "1G", delay = "1ms" }}
# ns-3 3.44 defaults: InitialCwnd 10, DelAckCount 2 (200 ms timer), MinRto 1 s, Sack on,
# RecoveryType TcpPrrRecovery (recovery = "prr-ns3": its 32-bit arithmetic); BulkSend connects
# with a SYN / SYN-ACK exchange whose round trip is the first RTT sample (tcp-socket-base.cc
# ProcessSynSent -> EstimateRtt); EstimateRtt samples the first segment an ACK covers
# (m_history.front()).
tcp = {{ initial_window = 10, delayed_ack = true, min_rto = "1s", sack = true, recovery = "{recovery}", handshake = {handshake}, rtt_sample = "{rtt_sample}" }}
"""


def scenario(cc, flows, duration, recovery, seed=1, starts=None, congestion=None,
             handshake=True, rtt_sample="oldest"):
    """The lab's scenario (`congestion`: the group's congestion key; by default the control with
    the settings of NS3_PARAMS). With `starts` (seconds, one per flow: ns-3's own draws), one group per
    flow starts exactly then; without, one group whose flows start at the lab's own seeded offsets
    in [0, 100 ms), the same distribution as ns3_dumbbell.py's but other draws."""
    if congestion is None:
        congestion = NS3_PARAMS.get(cc, f'"{cc}"')
    text = HEADER.format(duration=int(duration), seed=seed)
    common = dict(cc=congestion, recovery=recovery, handshake=str(handshake).lower(),
                  rtt_sample=rtt_sample)
    if starts is None:
        start = '# ns3_dumbbell.py starts each flow at a uniform time in [0, 100 ms).\n' \
                'start_spread = "100ms"'
        return text + GROUP.format(name="S", flows=flows, start=start, **common)
    assert len(starts) == flows
    for i, t in enumerate(starts):
        start = f'# ns-3 started this flow at {t!r} s.\nstart = "{round(t * 1e9)}ns"\n' \
                'start_spread = "0s"'
        text += GROUP.format(name=f"S{i}", flows=1, start=start, **common)
    return text


def lab_run(qstp, cc, flows, duration, recovery, seed=1, starts=None, congestion=None,
            handshake=True, rtt_sample="oldest"):
    work = tempfile.mkdtemp(prefix="qstp-ns3-compare-")
    try:
        path = os.path.join(work, "s.toml")
        with open(path, "w") as f:
            f.write(scenario(cc, flows, duration, recovery, seed, starts, congestion,
                             handshake, rtt_sample))
        out = os.path.join(work, "out")
        subprocess.run([qstp, "run", path, "--out", out], check=True, capture_output=True)
        with open(os.path.join(out, "runs.csv")) as f:
            rows = list(csv.DictReader(f))
        goodput = [float(r["goodput_bps"]) for r in rows]
        return {"per_flow_bps": goodput, "utilisation": sum(goodput) / 200e6, "jain": jain(goodput)}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def sem2(runs, key):
    """The squared standard error of the mean of `key` over `runs` (0 for a single run)."""
    n = len(runs)
    if n < 2:
        return 0.0
    mean = sum(r[key] for r in runs) / n
    return sum((r[key] - mean) ** 2 for r in runs) / (n - 1) / n


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cc", action="append", choices=CONTROLS, help="control (repeatable)")
    p.add_argument("--flows", action="append", type=int, help="flow count (repeatable)")
    p.add_argument("--duration", type=float, default=60.0, help="simulated seconds")
    p.add_argument("--qstp", default=os.path.join(ROOT, "target", "release", "qstp"),
                   help="the qstp binary (cargo build --release -p qstp)")
    p.add_argument("--fresh", action="store_true", help="run ns-3 again despite the cache")
    p.add_argument("--recovery", default="prr-ns3", choices=["prr-ns3", "prr", "rfc6675"],
                   help="the lab's fast-recovery sending: ns-3 3.44's PRR with its arithmetic "
                        "(the default), RFC 6937's, or RFC 6675's")
    p.add_argument("--lab-starts", action="store_true",
                   help="start the lab's flows at its own seeded offsets in [0, 100 ms) instead "
                        "of at the start times ns-3 drew for the same run (the default)")
    p.add_argument("--no-handshake", action="store_true",
                   help="the lab's flows send data from their start, without ns-3's SYN / SYN-ACK "
                        "exchange (one RTT earlier, and no first RTT sample from it)")
    p.add_argument("--rtt-sample", default="oldest", choices=["oldest", "newest"],
                   help="the segment of a cumulative ACK the lab's RTT estimator samples: the "
                        "first it covers, as ns-3 (the default), or the last")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--check", metavar="TABLE",
                   help="CI: make the Markdown table from the cached ns-3 results and the lab and "
                        "exit 1 with a diff if it differs from TABLE (give the same --seeds and "
                        "--seeds-at as run_table.sh)")
    p.add_argument("--variants", default="both", choices=["published", "ns3", "both"],
                   help="for controls with an ns-3-compatible variant (%s): the lab row with the "
                        "published algorithm, with `ns3 = 1`, or both (the default)"
                        % ", ".join(NS3_COMPAT))
    p.add_argument("--seeds", type=int, default=1,
                   help="runs per row on each side (seeds 1..N), compared by their means: with "
                        "few flows one run is one draw of a bimodal outcome (do two flows leave "
                        "slow start in the same loss episode?)")
    p.add_argument("--seeds-at", action="append", default=[], metavar="FLOWS=N",
                   help="runs per row for one flow count, instead of --seeds (repeatable), e.g. "
                        "8=7: with 8 flows the Jain index of one run swings by 0.2 between seeds "
                        "(which flows time out in the slow-start overshoot), so 3 seeds leave a "
                        "standard error of about 0.1, twice the tolerance")
    args = p.parse_args()
    if args.check:
        args.markdown = True
    seeds_at = {}
    for item in args.seeds_at:
        flows, _, n = item.partition("=")
        try:
            seeds_at[int(flows)] = int(n)
        except ValueError:
            sys.exit(f"--seeds-at {item}: expected FLOWS=N, e.g. 8=7")
    if not os.path.exists(args.qstp):
        sys.exit(f"{args.qstp} not found: build it with `cargo build --release -p qstp`")
    rows = []
    for cc in args.cc or CONTROLS:
        # (label, congestion key) of each lab row: the published algorithm (with NS3_PARAMS),
        # and for NS3_COMPAT controls the ns-3-compatible variant.
        variants = [(cc, None)]
        if cc in NS3_COMPAT:
            compat = [(f"{cc} (ns3 = 1)", NS3_COMPAT[cc])]
            variants = {"published": variants, "ns3": compat, "both": variants + compat}[
                args.variants]
        for n in args.flows or [1, 2, 8]:
            seeds = range(1, seeds_at.get(n, args.seeds) + 1)
            ns3s = [ns3_run(cc, n, args.duration, args.fresh, seed) for seed in seeds]
            mean = lambda runs, key: sum(r[key] for r in runs) / len(runs)
            ns3 = {"utilisation": mean(ns3s, "utilisation"), "jain": mean(ns3s, "jain")}
            for label, congestion in variants:
                labs = [lab_run(args.qstp, cc, n, args.duration, args.recovery, seed,
                                None if args.lab_starts else r["settings"]["start_times_s"],
                                congestion, not args.no_handshake, args.rtt_sample)
                        for seed, r in zip(seeds, ns3s)]
                lab = {"utilisation": mean(labs, "utilisation"), "jain": mean(labs, "jain")}
                du = lab["utilisation"] - ns3["utilisation"]
                dj = lab["jain"] - ns3["jain"]
                ok = abs(du) <= TOLERANCE and abs(dj) <= TOLERANCE
                se_j = math.sqrt(sem2(labs, "jain") + sem2(ns3s, "jain"))
                rows.append((label, n, len(seeds), ns3["utilisation"], lab["utilisation"], du,
                             ns3["jain"], lab["jain"], dj, se_j, "agrees" if ok else "DIFFERS"))
                if not args.markdown:
                    print("%-16s %2d flows %d seeds  utilisation ns-3 %.3f lab %.3f (%+.3f)  "
                          "Jain ns-3 %.3f lab %.3f (%+.3f, SE %.3f)  %s" % rows[-1], flush=True)
    agree = sum(1 for r in rows if r[-1] == "agrees")
    count = f"{agree} of {len(rows)} within {TOLERANCE} of ns-3 on both"
    if args.markdown:
        lines = ["| control | flows | seeds | utilisation ns-3 | lab | diff | Jain ns-3 | lab | "
                 "diff | SE of Jain diff | verdict |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        lines += ["| %s | %d | %d | %.3f | %.3f | %+.3f | %.3f | %.3f | %+.3f | %.3f | %s |" % r
                  for r in rows]
        text = "\n".join(lines) + "\n"
        if args.check:
            with open(args.check) as f:
                committed = f.read()
            if committed != text:
                sys.stdout.writelines(difflib.unified_diff(
                    committed.splitlines(True), text.splitlines(True), args.check,
                    "the lab today"))
                sys.exit(f"{args.check} is not what the lab gives today (diff above): run "
                         "validation/ns3/run_table.sh and commit the table with the reason")
            print(f"{args.check}: as the lab gives it ({count})")
            return
        sys.stdout.write(text)
    print(f"\n{count}", file=sys.stderr)


if __name__ == "__main__":
    main()
