"""The QSTP paper's Fig. 7 (§5.4): a 300 kbit/s CBQ pipe in borrow mode against a UDP flow of
300k, 1000k from 60 s to 120 s, then 300k, in ns-2.35 (qstp_cbq.tcl) and the lab
(scenarios/qstp-fig7.toml). compare.py adds these rows to its "qstp" section.

Each row is one flow's throughput over the measured run (from the 5 s warm-up) or over one phase
of the UDP flow's schedule: ns-2's at the bottleneck's output, the lab's at the receiver (its
runs.csv for the whole run; its series.csv, per 0.1 s bin, for the phases).
"""

import csv
import os

from labrun import lab_output

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SCENARIO = "qstp-fig7.toml"
DURATION, WARMUP = 180, 5   # qstp-fig7.toml's duration and warm-up
# The measured run, then the three phases of the UDP flow's schedule (§5.4: 300k, 1000k within
# [60, 120] s, 300k), each from its start to its end in seconds.
SPANS = [(WARMUP, DURATION), (WARMUP, 60), (60, 120), (120, DURATION)]
SPAN_LABELS = ["over the run (from 5 s)", "5-60 s (UDP at 300k)", "60-120 s (UDP at 1000k)",
               "120-180 s (UDP at 300k)"]
# (name, the lab's point (its `AB.protocol`), ns-2's PROTO for qstp_cbq.tcl, the studied flow's
# label).
EXPERIMENTS = [
    ("Fig. 7(a) TCP", "tcp", "tcp", "TCP"),
    # ns-2.35 has no gTFRC: its TFRC stands in for QSTP, as in the Figs. 4 and 5 rows.
    ("Fig. 7(b) QSTP (ns-2: TFRC)", "qstp", "tfrc", "QSTP; ns-2: TFRC"),
]
# §5.4: "both flows obtain their guarantee": the TCP flow (Fig. 7(a)) and the QSTP flow
# (Fig. 7(b)) keep their 300 kbit/s while the UDP flow sends 1000 kbit/s. The paper states no
# other value for these figures.
PAPER = {(name, "AB", 2): 300e3 for name, _, _, _ in EXPERIMENTS}
# Named causes of lab-vs-ns-2 differences beyond tolerance: (experiment, flow, span index). The
# numbers behind them: `python3 cbq_rows.py` (diagnose, below).
QSTP_RECOVERY = ("modelling difference, QSTP against ns-2's TFRC: ns-2's agent has ca_ on "
                 "(ns-default.tcl:1174; RFC 5348 §4.5, off in the lab's QSTP), which multiplies its "
                 "sending rate by sqrt(mean RTT sample) / sqrt(last sample), about 6 when the "
                 "first 30 ms samples follow the pipe's queue draining at 122 s: it sends 700k "
                 "from then on (623k over 120-180 s with TFRC_CA=0). The lab's QSTP holds its "
                 "300k target through 60-120 s and so keeps its class's queue near its 50 "
                 "packets (seed 1 at 120 s: RTT estimate 1.95 s, p 0.014; the lab's TFRC 0.73 s, "
                 "0.0024); RFC 5348's RTT average then falls by a tenth per feedback, one "
                 "feedback per estimated RTT, and the equation rate stays under the target until "
                 "about 136 s. Without gTFRC the lab's TFRC gets 661k and TFRC/SACK 675k "
                 "(cbq_rows.py prints these)")
CAUSES = {("Fig. 7(b) QSTP (ns-2: TFRC)", "AB", 0): QSTP_RECOVERY,
          ("Fig. 7(b) QSTP (ns-2: TFRC)", "AB", 3): QSTP_RECOVERY}

# The lab's series.csv: throughput_bps is the receiver's rate through a 1 s time-sliding window
# (RFC 2859 §2.1, crates/lab/src/metrics.rs `tsw`) sampled every bin; a phase's own rate is
# recovered exactly from it (below).
BIN, TSW_WINDOW = 0.1, 1.0


def mean(xs):
    return sum(xs) / len(xs)


def span_rate(tsw, a, b):
    """The mean rate over (a, b] s of a flow whose time-sliding-window series (one value per bin,
    at the bin's end) is `tsw`. Each bin's bits are v_k (BIN + W) - v_(k-1) W (the window's
    update inverted), so a span's bits telescope to BIN x the sum of its values + W x (its last
    value - the value before it)."""
    i, j = round(a / BIN), round(b / BIN)
    before = tsw[i - 1] if i > 0 else 0.0
    return (BIN * sum(tsw[i:j]) + TSW_WINDOW * (tsw[j - 1] - before)) / (b - a)


_LAB = {}


def cbq_lab(qstp, seeds, protocols=None):
    """qstp-fig7.toml (with `protocols`, its sweep over those of the studied flow instead), seeds
    1..N: per point (`AB.protocol`), per group, per span, the mean over runs of the group's
    throughput."""
    key = (seeds, protocols)
    if key in _LAB:
        return _LAB[key]
    with open(os.path.join(ROOT, "scenarios", SCENARIO)) as f:
        text = f.read()
    if protocols:
        text = text[:text.index("[sweep]")] + '[sweep]\n"group.AB.protocol" = [%s]\n' % \
            ", ".join(f'"{p}"' for p in protocols)
    with lab_output(qstp, text, seeds) as out:
        with open(os.path.join(out, "runs.csv")) as f:
            runs = list(csv.DictReader(f))
        series = {}
        with open(os.path.join(out, "series.csv")) as f:
            for r in csv.DictReader(f):
                if r["metric"] == "throughput_bps" and r["flow"] != "":
                    series.setdefault((r["point"], r["run"], r["group"]), []).append(
                        (float(r["time_s"]), float(r["value"])))
    result = {}
    for point in sorted({r["point"] for r in runs}):
        mine = [r for r in runs if r["point"] == point]
        proto = mine[0]["params"].split("=", 1)[1]
        m = result.setdefault(proto, {})
        for group in ("AB", "UDP"):
            per_run = []
            for run in sorted({r["run"] for r in mine}, key=int):
                whole = sum(float(r["throughput_bps"]) for r in mine
                            if r["run"] == run and r["group"] == group)
                tsw = [v for _, v in sorted(series[(point, run, group)])]
                per_run.append([whole] + [span_rate(tsw, a, b) for a, b in SPANS[1:]])
            m[group] = [mean([x[k] for x in per_run]) for k in range(len(SPANS))]
    _LAB[key] = result
    return result


def cbq_ns2(run_ns2, proto, seed, fresh):
    """One ns-2 run: per group, per span, its throughput."""
    alg = os.environ.get("CBQ_ALGORITHM")
    ca0 = proto == "tfrc" and os.environ.get("TFRC_CA") == "0"
    tail = (f"-{alg}" if alg else "") + ("-ca0" if ca0 else "")
    r = run_ns2("qstp_cbq.tcl", [DURATION, WARMUP, seed, proto],
                f"cbq-{proto}-{DURATION}s{tail}-seed{seed}.json", fresh)
    return {f["name"]: [f["throughput_bps"]] + f["phase_throughput_bps"] for f in r["flows"]}


def cbq_rows(args, run_ns2, row):
    """The rows, made by compare.py's `row` (paper "qstp"); `run_ns2` runs and caches ns-2."""
    lab = cbq_lab(args.qstp, args.af_seeds)
    rows = []
    for name, point, proto, who in EXPERIMENTS:
        ns2 = [cbq_ns2(run_ns2, proto, seed, args.fresh) for seed in range(1, args.af_seeds + 1)]
        for group, label in (("AB", f"A ({who}, 300k pipe)"), ("UDP", "UDP (CBR, 700k class)")):
            for k, span in enumerate(SPAN_LABELS):
                r = row("qstp", f"QSTP {name}", "throughput", PAPER.get((name, group, k)),
                        mean([m[group][k] for m in ns2]), lab[point][group][k],
                        CAUSES.get((name, group, k)), args.af_seeds)
                r["label"] = f"{label} throughput, {span}"
                rows.append(r)
    return rows


def diagnose(qstp, seeds, fresh):
    """The numbers behind CAUSES and README.md's Fig. 7 section: the studied flow per span in
    ns-2 (TFRC with and without its ca_; TCP under each link-sharing rule) and in the lab (QSTP,
    and TFRC and TFRC/SACK without gTFRC)."""
    import compare

    def show(label, values):
        print("%-46s %s" % (label, "  ".join("%5.0fk" % (v / 1e3) for v in values)), flush=True)

    print("%-46s %s" % ("throughput (s), mean of seeds 1-%d" % seeds,
                        "  ".join("%6s" % f"{a}-{b}" for a, b in SPANS)))
    for proto, env in (("tcp", {}), ("tcp", {"CBQ_ALGORITHM": "ancestor-only"}),
                       ("tfrc", {}), ("tfrc", {"TFRC_CA": "0"})):
        os.environ.update(env)
        try:
            ns2 = [cbq_ns2(compare.run_ns2, proto, seed, fresh) for seed in range(1, seeds + 1)]
        finally:
            for k in env:
                del os.environ[k]
        label = "ns-2 %s%s" % (proto.upper(), "".join(f", {k}={v}" for k, v in env.items()))
        for group in ("AB", "UDP") if "CBQ_ALGORITHM" in env else ("AB",):
            show(label + ("" if group == "AB" else ", UDP"),
                 [mean([m[group][k] for m in ns2]) for k in range(len(SPANS))])
    protocols = ("tcp", "qstp", "tfrc", "tfrc-sack")
    lab = cbq_lab(qstp, seeds, protocols)
    for p in protocols:
        show(f"lab {p}", lab[p]["AB"])


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser(description="The numbers behind the Fig. 7 rows' causes.")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--qstp", default=os.environ.get(
        "QSTP_BIN", os.path.join(ROOT, "target", "release", "qstp")))
    p.add_argument("--fresh", action="store_true", help="run ns-2 again despite the cache")
    a = p.parse_args()
    diagnose(a.qstp, a.seeds, a.fresh)
