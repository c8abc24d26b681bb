#!/usr/bin/env python3
"""validation/fs.md: the Free & Stunts paper's findings beside the lab's.

    python3 validation/fs_findings.py --run [--qstp PATH] [--out DIR]  # every run, then the page
    python3 validation/fs_findings.py DIR             # the page again from a --run --out DIR
    python3 validation/fs_findings.py --run --short --verdicts         # CI: verdicts, one a line

`--run` runs scenarios/fs-fig4.toml to fs-fig7.toml and fs-fluid-fig3.toml with `qstp run`, the
last also with `qstp fluid` (at its step and at half of it, `--compare-with` the packet run), and
fs-fig4 and fs-fluid-fig3 once more without delegation (a copy whose controller is "none", the
baseline), each into its own folder of DIR (default: a temporary folder). `--qstp` names the
binary (default $QSTP_BIN, else target/release/qstp). Progress goes to stderr.

The page, validation/fs.md (`--page PATH` writes it elsewhere), is generated whole: the paper's
result per figure in words, the lab's numbers as tables (read from summary.json, series.csv and
what `qstp fluid --compare-with` prints), and a verdict per statement of the paper, computed
from those numbers with the rules stated on the page. Nothing on it is typed in.

`--verdicts` prints only the verdicts, one a line. The full runs take about 2 CPU minutes, more
than CI spends on them, so `--short` runs the packet scenarios for SHORT_DURATION with one run per
point (the fluid figure's runs are short already and keep their length); validation/fs_check.sh
holds those verdicts to validation/fs.short.txt. A flip there means the lab moved: generate the
page again from full runs.
"""

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(REPO, "validation", "fs.md")
SHORT_DURATION = "150s"

# The rules of the verdicts (choices: the paper states trends, not numbers).
FOLLOW_CORR = 0.5  # the Free follows its trace: correlation of their 5 s means at least this
WINDOW_S = 5.0  # the means the correlations compare
FLAT = 0.01  # a trace is flat when its 5 s means vary by less than this fraction of their mean
TREND_TAU = 1 / 3  # a quantity rises (falls) with a count: Kendall's tau at least (at most -) this
NEAR_OPTIMUM = 1.25  # Fig. 5: the counts whose V* is within this factor of the lowest
WORSE = 1.5  # "degrades": a V* at least this factor of the best one
BARELY = 0.10  # "barely affected": a mean within this fraction of the baseline's
PAPER_OPTIMUM = (5, 6)  # Fig. 5's optimum, non-random cross traffic (§IV-B)

# The paper's results, as the scenario comments transcribe them (Free & Stunts paper §III-B, §IV).
PAPER = {
    "fig4": "A Free TCP connection follows three target traces with a PI controller and 10 "
            "Stunts; left 40 Mbit/s with 10 cross flows (8 switched on and off at random), middle "
            "and right 80 Mbit/s with 20. The Free \"does a fairly good job in matching the "
            "target throughput while the throughput achieved by the Stunts changes in tandem\", "
            "with larger oscillations at 80 Mbit/s; where the target falls below the fair share, "
            "reverse delegation lets the Stunts rise above theirs.",
    "fig5": "V* (eq. 18) of the Free against the number of Stunts, 1 to 20, at 80 Mbit/s. With "
            "non-random cross traffic V* has an optimum near 5-6 Stunts: too few cannot absorb "
            "the Free's reductions, too many congest the bottleneck into timeouts. With 19 of the "
            "20 cross flows switched on and off at random, more Stunts degrade the matching. Each "
            "point is one run.",
    "fig6": "The Free, the mean Stunt and the target over time with 2, 10 and 20 Stunts at "
            "80 Mbit/s: 2 Stunts visibly degrade the matching (they cannot take the Free's "
            "reductions), 10 do well, 20 start to degrade it again.",
    "fig7": "V+, V- and V* of the Free against the number of randomised cross flows (of 20), 10 "
            "Stunts, 80 Mbit/s: the more cross flows switch on and off, the harder the matching. "
            "V+ grows while V- shrinks (the Free runs above its target, since the lower "
            "utilisation lowers the loss rate), and V* rises with delta.",
    "fig3": "The fluid model of §III with 1 Free, 4 Stunts and 15 cross TCP flows through one RED "
            "bottleneck of 2000 packets/s; the Free asks for 200 packets/s, then a wave. After a "
            "3 s start-up the Free follows its target while the Stunts make room and the cross "
            "traffic is barely affected; around t = 6 s, with the target below the fair share, "
            "reverse delegation lets the Stunts rise a bit above it.",
}

# Folder name -> how --run makes it: (command, scenario, derived without delegation, extra args).
RUNS = [
    ("fs-fig4", "run", "fs-fig4", False, []),
    ("fs-fig4-none", "run", "fs-fig4", True, []),
    ("fs-fig5", "run", "fs-fig5", False, []),
    ("fs-fig6", "run", "fs-fig6", False, []),
    ("fs-fig7", "run", "fs-fig7", False, []),
    ("fs-fluid-fig3", "run", "fs-fluid-fig3", False, []),
    ("fs-fluid-fig3-none", "run", "fs-fluid-fig3", True, []),
    ("fs-fluid-fig3-fluid", "fluid", "fs-fluid-fig3", False, ["--compare-with", "fs-fluid-fig3"]),
    ("fs-fluid-fig3-fluid-none", "fluid", "fs-fluid-fig3", True,
     ["--compare-with", "fs-fluid-fig3-none"]),
    ("fs-fluid-fig3-fluid-500us", "fluid", "fs-fluid-fig3", False, ["--step", "500us"]),
]


# ---------------------------------------------------------------- running


def derive_none(name, folder):
    """A copy of scenarios/NAME.toml without delegation (controller "none", the same period),
    its trace paths made absolute; returns its path."""
    with open(os.path.join(REPO, "scenarios", name + ".toml")) as f:
        text = f.read()
    controller = re.search(r'^controller = \{[^}]*\}', text, re.M)
    period = re.search(r'period = "([^"]+)"', controller.group(0)) if controller else None
    if not period or '"traces/' not in text:
        sys.exit(f"fs_findings: cannot derive the baseline of scenarios/{name}.toml")
    text = text.replace(controller.group(0),
                        'controller = { kind = "none", period = "%s" }' % period.group(1))
    text = text.replace('"traces/', '"%s/' % os.path.join(REPO, "scenarios", "traces"))
    text = re.sub(r'^name = "%s"' % re.escape(name), 'name = "%s-none"' % name, text, flags=re.M)
    path = os.path.join(folder, name + "-none.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def run_all(qstp, out, short):
    derived = os.path.join(out, "derived")
    os.makedirs(derived, exist_ok=True)
    start = time.monotonic()
    for folder, command, name, none, extra in RUNS:
        scenario = (derive_none(name, derived) if none
                    else os.path.join(REPO, "scenarios", name + ".toml"))
        args = [qstp, command, scenario, "--out", os.path.join(out, folder)]
        args += [os.path.join(out, a) if i > 0 and extra[i - 1] == "--compare-with" else a
                 for i, a in enumerate(extra)]
        if short and command == "run" and not name.startswith("fs-fluid"):
            args += ["--duration", SHORT_DURATION, "--runs", "1"]
        shown = " ".join(os.path.relpath(a, REPO) if a.startswith(REPO + os.sep) else a
                         for a in args[1:])
        print(f"fs_findings: qstp {shown}", file=sys.stderr, flush=True)
        t = time.monotonic()
        with open(os.path.join(out, folder + ".log"), "w") as log:
            done = subprocess.run(args, stdout=log, stderr=subprocess.STDOUT)
        if done.returncode != 0:
            with open(os.path.join(out, folder + ".log")) as log:
                sys.stderr.write(log.read())
            sys.exit(f"fs_findings: qstp failed ({done.returncode}) on {folder}")
        print(f"fs_findings:   {time.monotonic() - t:.1f} s", file=sys.stderr, flush=True)
    print(f"fs_findings: every run in {time.monotonic() - start:.1f} s", file=sys.stderr)


# ---------------------------------------------------------------- reading


class Results:
    """One results folder of `qstp run` or `qstp fluid`."""

    def __init__(self, root, folder):
        self.dir = os.path.join(root, folder)
        with open(os.path.join(self.dir, "summary.json")) as f:
            self.summary = json.load(f)
        with open(os.path.join(self.dir, "scenario.toml")) as f:
            toml = f.read()
        self.stunts = re.search(r'^stunts = "([^"]+)"', toml, re.M).group(1)
        size = re.search(r'^packet_size = (\d+)', toml, re.M)
        self.packet_size = int(size.group(1)) if size else 1500
        log = os.path.join(root, folder + ".log")
        self.log = open(log).read() if os.path.exists(log) else ""

    @property
    def points(self):
        return self.summary["points"]

    def free(self, p):
        return next(g for g in self.points[p]["flows"] if g.get("matching"))

    def group(self, p, name):
        return next(g for g in self.points[p]["flows"] if g["group"] == name)

    def rate(self, p):
        """The bottleneck rate of point p in bit/s."""
        params = self.points[p]["params"]
        text = next((v[0] if isinstance(v, list) else v for k, v in params.items()
                     if k.split(",")[0] == "bottleneck.rate"), None)
        if text is None:
            with open(os.path.join(self.dir, "scenario.toml")) as f:
                text = re.search(r'^rate = "([^"]+)"', f.read(), re.M).group(1)
        unit = {"k": 1e3, "M": 1e6, "G": 1e9}.get(text[-1], 1)
        return float(text.rstrip("kMG")) * unit

    def flows(self, p):
        return sum(g["flows"] for g in self.points[p]["flows"])

    def curves(self, metric, bin_s):
        """Per point: role ("F", "S", "X") -> {bin: mean over flows and runs}, and "T" -> the
        target (the first run's delegation series), in bit/s; bin k holds times in
        (k bin_s, (k + 1) bin_s]."""
        free = {p: self.free(p)["group"] for p in range(len(self.points))}
        acc = collections.defaultdict(float)
        count = collections.defaultdict(int)
        key = "," + metric + ","
        with open(os.path.join(self.dir, "series.csv")) as f:
            next(f)
            for line in f:
                if key not in line:
                    continue
                t, p, _run, g, _flow, _m, v, _q = line.rstrip("\n").split(",")
                p = int(p)
                role = "F" if g == free[p] else "S" if g == self.stunts else "X"
                k = (p, role, bin_of(float(t), bin_s))
                acc[k] += float(v)
                count[k] += 1
        out = [collections.defaultdict(dict) for _ in self.points]
        for (p, role, b), v in acc.items():
            out[p][role][b] = v / count[(p, role, b)]
        series = os.path.join(self.dir, "series")
        for p in range(len(self.points)):
            name = next(n for n in sorted(os.listdir(series))
                        if n.startswith("delegation-p%02d" % p))
            sums = collections.defaultdict(float)
            n = collections.defaultdict(int)
            with open(os.path.join(series, name)) as f:
                next(f)
                for line in f:
                    t, target = line.split(",")[:2]
                    b = bin_of(float(t), bin_s)
                    sums[b] += float(target)
                    n[b] += 1
            out[p]["T"] = {b: sums[b] / n[b] for b in sums}
        return out

    def compare_means(self):
        """`qstp fluid --compare-with`'s printed means: name -> (fluid, packet), packets/s."""
        means = {}
        lines = self.log.splitlines()
        try:
            at = next(i for i, l in enumerate(lines) if l.startswith("means after the warm-up"))
        except StopIteration:
            sys.exit(f"fs_findings: no compare table in {self.dir}.log")
        for line in lines[at + 1:]:
            m = re.match(r"\s+(\S.*?)\s+([-\d.]+)\s+([-\d.]+)$", line)
            if not m:
                break
            means[m.group(1)] = (float(m.group(2)), float(m.group(3)))
        return means

    def queue_shares(self, limit, after):
        """Shares of the 100 ms queue samples after `after` s that are empty (below one
        packet) and full or nearly (at least 90% of `limit`)."""
        q = []
        with open(os.path.join(self.dir, "series.csv")) as f:
            for line in f:
                if ",queue_packets," in line:
                    parts = line.split(",")
                    if float(parts[0]) > after:
                        q.append(float(parts[6]))
        return (sum(x < 1 for x in q) / len(q), sum(x >= 0.9 * limit for x in q) / len(q))


def bin_of(t, bin_s):
    return int((t - 1e-9) // bin_s)


def windows(c, width):
    """Curves of 1 s bins as means over windows of `width` seconds (every bin holds as many
    samples, so the mean of bins is the mean of samples)."""
    out = {}
    for role, bins in c.items():
        acc = collections.defaultdict(list)
        for b, v in bins.items():
            acc[int(b // width)].append(v)
        out[role] = {k: mean(vs) for k, vs in acc.items()}
    return out


# ---------------------------------------------------------------- arithmetic


def mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def corr(a, b):
    """Pearson's correlation of b with a; None when a is flat (its standard deviation below
    FLAT of its mean: a trace that does not change within the run) or b constant."""
    ma, mb = mean(a), mean(b)
    sa = sum((x - ma) ** 2 for x in a) ** 0.5
    sb = sum((y - mb) ** 2 for y in b) ** 0.5
    if sa < FLAT * abs(ma) * len(a) ** 0.5 or sb == 0:
        return None
    return sum((x - ma) * (y - mb) for x, y in zip(a, b)) / (sa * sb)


def kendall(xs, ys):
    """Kendall's tau-a of ys against xs."""
    pairs = [(i, j) for i in range(len(xs)) for j in range(i + 1, len(xs))]
    s = sum(((xs[j] - xs[i]) * (ys[j] - ys[i]) > 0) - ((xs[j] - xs[i]) * (ys[j] - ys[i]) < 0)
            for i, j in pairs)
    return s / len(pairs) if pairs else 0.0


def trend(tau):
    return "rises" if tau >= TREND_TAU else "falls" if tau <= -TREND_TAU else "no trend"


def mb(bps):
    return bps / 1e6


def sq(v, unit=1e6):
    """A variance in (unit)^2, as num writes it."""
    return num(v / unit ** 2)


def num(x):
    """Three figures or so: 0.00 below 10, 0.0 below 100, whole above."""
    if x is None:
        return "-"
    a = abs(x)
    return "%.0f" % x if a >= 100 else "%.1f" % x if a >= 10 else "%.2f" % x


def verdict(ok):
    return "n/a" if ok is None else "agrees" if ok else "differs"


# ---------------------------------------------------------------- the figures
# Each returns (tables: list of Markdown lines, verdicts: list of (id, claim, lab, verdict)).


def trace_of(params):
    f = params.get("delegation.trace.file")
    return os.path.basename(f).removeprefix("fs-").removesuffix(".csv") if f else ""


def fig4(root):
    r, none = Results(root, "fs-fig4"), Results(root, "fs-fig4-none")
    s = r.summary
    warm, dur = s["warmup_s"], s["duration_s"]
    sec = r.curves("throughput_bps", 1.0)
    win = [windows(c, WINDOW_S) for c in sec]
    base = {(none.rate(p), trace_of(q["params"])): none.free(p)["matching"]["v_star"]
            for p, q in enumerate(none.points)}
    lines, verdicts = [], []
    w = lines.append
    w("Means of %d run(s) of %.0f s per point, the first %.0f s left out. Throughputs in Mbit/s "
      "at the receiver; V+, V-, V* (eqs. 16-18) in (Mbit/s)^2; delta = max(V+, V-) / "
      "min(V+, V-) (eq. 19). \"V* without\" is the same connections with controller \"none\" "
      "(no delegation). Signals: the Free's losses its Stunts took, and Stunt losses the Free "
      "took (reverse delegation), per run.\n" % (s["runs"], dur, warm))
    w("| rate | trace | target | Free | V+ | V- | V* | delta | V* without | delegated | "
      "taken by the Free |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for p, point in enumerate(r.points):
        f, rate, tr = r.free(p), r.rate(p), trace_of(point["params"])
        m = f["matching"]
        w("| %.0f Mbit/s | %s | %.2f | %.2f | %s | %s | %s | %s | %s | %.0f | %.0f |"
          % (mb(rate), tr, mb(m["target_mean_bps"]), mb(f["throughput_bps"]["mean"]),
             sq(m["v_plus"]), sq(m["v_minus"]), sq(m["v_star"]), num(m["delta"]),
             sq(base[(rate, tr)]), f["signals"]["delegated"], f["signals"]["taken_by_free"]))
    edges = sorted({warm, dur} | {50.0 * k for k in range(1, int(dur // 50) + 1) if 50 * k < dur
                                  and 50 * k > warm})
    spans = list(zip(edges, edges[1:]))
    w("\nThe trace (T), the Free (F), the mean Stunt (S) and the mean cross flow (X) over parts "
      "of the run, Mbit/s (the 1 s series, means of runs):\n")
    w("| rate | trace | " + " | ".join("%.0f-%.0f s: T / F / S / X" % s_ for s_ in spans) + " |")
    w("|---|---|" + "---|" * len(spans))
    for p, point in enumerate(r.points):
        c = sec[p]

        def part(role, a, b):
            return mean(v for k, v in c[role].items() if a <= k < b)
        cells = [" / ".join("%.1f" % mb(part(role, a, b)) if role in "TF" else
                            "%.2f" % mb(part(role, a, b)) for role in "TFSX") for a, b in spans]
        w("| %.0f Mbit/s | %s | " % (mb(r.rate(p)), trace_of(point["params"]))
          + " | ".join(cells) + " |")
    w("\nWhere the trace falls below the fair share (the bottleneck rate over all flows), 1 s "
      "bins after the warm-up:\n")
    w("| rate | trace | fair share | seconds below it | T | F | S there | S elsewhere | X there |")
    w("|---|---|---|---|---|---|---|---|---|")
    for p, point in enumerate(r.points):
        rate, tr, c = r.rate(p), trace_of(point["params"]), sec[p]
        key = "%.0fM %s" % (mb(rate), tr)
        fair = rate / r.flows(p)
        after = [k for k in sorted(c["T"]) if k >= warm and k in c["S"]]
        wk = [k for k in sorted(win[p]["T"]) if k * WINDOW_S >= warm and k in win[p]["F"]]
        target = [win[p]["T"][k] for k in wk]
        cf = corr(target, [win[p]["F"][k] for k in wk])
        cs = corr(target, [win[p]["S"][k] for k in wk])
        verdicts.append((f"fig4_{key.replace(' ', '_')}_free_follows_trace",
                         f"{key}: the Free follows the trace",
                         "correlation of 5 s means %s" % ("%.2f" % cf if cf is not None
                                                          else "- (the trace is flat)"),
                         verdict(None if cf is None else cf >= FOLLOW_CORR)))
        verdicts.append((f"fig4_{key.replace(' ', '_')}_stunts_move_opposite",
                         f"{key}: the mean Stunt changes in tandem (opposite to the trace)",
                         "correlation of 5 s means %s" % ("%.2f" % cs if cs is not None
                                                          else "- (the trace is flat)"),
                         verdict(None if cs is None else cs < 0)))
        vs, vn = r.free(p)["matching"]["v_star"], base[(rate, tr)]
        verdicts.append((f"fig4_{key.replace(' ', '_')}_delegation_lowers_vstar",
                         f"{key}: the Free matches the target better than without delegation",
                         "V* %s against %s (Mbit/s)^2" % (sq(vs), sq(vn)), verdict(vs < vn)))
        low = [k for k in after if c["T"][k] < fair]
        if tr != "sine":
            continue
        if low:
            rest = [k for k in after if k not in low]
            s_low, s_rest = mean(c["S"][k] for k in low), mean(c["S"][k] for k in rest)
            w("| %.0f Mbit/s | %s | %.2f | %d (%d-%d s) | %.2f | %.2f | %.2f | %.2f | %.2f |"
              % (mb(rate), tr, mb(fair), len(low), low[0], low[-1] + 1,
                 mb(mean(c["T"][k] for k in low)), mb(mean(c["F"][k] for k in low)), mb(s_low),
                 mb(s_rest), mb(mean(c["X"][k] for k in low))))
            ok = s_low > fair and s_low > s_rest
            lab = ("the mean Stunt %.2f Mbit/s there, %.2f elsewhere; fair share %.2f"
                   % (mb(s_low), mb(s_rest), mb(fair)))
        else:
            w("| %.0f Mbit/s | %s | %.2f | 0 | - | - | - | - | - |" % (mb(rate), tr, mb(fair)))
            ok, lab = None, "the trace stays above the fair share in this run"
        verdicts.append((f"fig4_{key.replace(' ', '_')}_stunts_rise_below_fair_share",
                         f"{key}: where the trace is below the fair share, the Stunts rise "
                         "above theirs", lab, verdict(ok)))
    return lines, verdicts


def fig5(root):
    r = Results(root, "fs-fig5")
    s = r.summary
    table = collections.defaultdict(dict)  # switched cross flows -> stunts -> (free, matching)
    for p, point in enumerate(r.points):
        f = r.free(p)
        table[point["params"]["group.X.onoff.flows"]][point["params"]["group.S.flows"]] = f
    lines, verdicts = [], []
    w = lines.append
    w("One run of %.0f s per point, the first %.0f s left out. V* in (Mbit/s)^2; the target "
      "and the Free's mean in Mbit/s. The preprocessor (eq. 2) lowers the trace to what few "
      "Stunts can give, so a point whose target mean is below the others' is measured against "
      "a lower target; the verdicts use only the points with the full target.\n"
      % (s["duration_s"], s["warmup_s"]))
    kinds = sorted(table)
    w("| Stunts | " + " | ".join("%d switched: target / Free / V*" % k for k in kinds) + " |")
    w("|---|" + "---|" * len(kinds))
    for n in sorted(table[kinds[0]]):
        w("| %d | " % n + " | ".join(
            "%.2f / %.2f / %s" % (mb(table[k][n]["matching"]["target_mean_bps"]),
                                  mb(table[k][n]["throughput_bps"]["mean"]),
                                  sq(table[k][n]["matching"]["v_star"])) for k in kinds) + " |")
    for k in kinds:
        full = max(f["matching"]["target_mean_bps"] for f in table[k].values())
        counts = [n for n in sorted(table[k])
                  if table[k][n]["matching"]["target_mean_bps"] >= 0.999 * full]
        v = {n: table[k][n]["matching"]["v_star"] for n in counts}
        best = min(counts, key=v.get)
        near = [n for n in counts if v[n] <= NEAR_OPTIMUM * v[best]]
        lowered = [n for n in sorted(table[k]) if n not in counts]
        note = ("; lowered target at %s Stunts" % ", ".join(map(str, lowered))) if lowered else ""
        if k == 0:
            verdicts.append((
                "fig5_nonrandom_optimum_near_5-6",
                "non-random cross traffic: V* has an optimum near %d-%d Stunts" % PAPER_OPTIMUM,
                "lowest V* %s at %d Stunts; within %.0f%% of it at %s%s"
                % (sq(v[best]), best, 100 * (NEAR_OPTIMUM - 1), ", ".join(map(str, near)), note),
                verdict(any(n in near for n in range(PAPER_OPTIMUM[0], PAPER_OPTIMUM[1] + 1)))))
            few, many = counts[0], counts[-1]
            verdicts.append((
                "fig5_nonrandom_too_few_stunts_worse",
                "non-random: too few Stunts cannot absorb the Free's reductions",
                "V* %s at %d Stunts against the lowest %s" % (sq(v[few]), few, sq(v[best])),
                verdict(v[few] >= WORSE * v[best])))
            verdicts.append((
                "fig5_nonrandom_too_many_stunts_worse",
                "non-random: too many Stunts degrade the matching",
                "V* %s at %d Stunts against the lowest %s" % (sq(v[many]), many, sq(v[best])),
                verdict(v[many] >= WORSE * v[best])))
        else:
            tau = kendall(counts, [v[n] for n in counts])
            verdicts.append((
                "fig5_random_more_stunts_worse",
                "%d of 20 cross flows switched: more Stunts degrade the matching" % k,
                "V* against the Stunts: Kendall's tau %.2f (%s), %d-%d Stunts%s"
                % (tau, trend(tau), counts[0], counts[-1], note),
                verdict(trend(tau) == "rises")))
    return lines, verdicts


def fig6(root):
    r = Results(root, "fs-fig6")
    s = r.summary
    lines, verdicts = [], []
    w = lines.append
    w("One run of %.0f s per point, the first %.0f s left out; Mbit/s and (Mbit/s)^2.\n"
      % (s["duration_s"], s["warmup_s"]))
    w("| Stunts | target | Free | mean Stunt | mean cross | V+ | V- | V* | delta |")
    w("|---|---|---|---|---|---|---|---|---|")
    vs = {}
    for p, point in enumerate(r.points):
        n, f = point["params"]["group.S.flows"], r.free(p)
        m = f["matching"]
        vs[n] = m["v_star"]
        cross = [g for g in point["flows"] if g["group"] not in (f["group"], r.stunts)]
        w("| %d | %.2f | %.2f | %.2f | %.2f | %s | %s | %s | %s |"
          % (n, mb(m["target_mean_bps"]), mb(f["throughput_bps"]["mean"]),
             mb(r.group(p, r.stunts)["throughput_bps"]["mean"]),
             mb(sum(g["aggregate_bps"]["mean"] for g in cross) / sum(g["flows"] for g in cross)),
             sq(m["v_plus"]), sq(m["v_minus"]), sq(m["v_star"]), num(m["delta"])))
    few, mid, many = sorted(vs)
    verdicts.append(("fig6_few_stunts_worse",
                     "%d Stunts visibly degrade the matching against %d" % (few, mid),
                     "V* %s against %s" % (sq(vs[few]), sq(vs[mid])),
                     verdict(vs[few] >= WORSE * vs[mid])))
    verdicts.append(("fig6_many_stunts_worse",
                     "%d Stunts degrade it again against %d" % (many, mid),
                     "V* %s against %s" % (sq(vs[many]), sq(vs[mid])),
                     verdict(vs[many] >= WORSE * vs[mid])))
    return lines, verdicts


def fig7(root):
    r = Results(root, "fs-fig7")
    s = r.summary
    lines, verdicts = [], []
    w = lines.append
    w("One run of %.0f s per point, the first %.0f s left out; Mbit/s and (Mbit/s)^2.\n"
      % (s["duration_s"], s["warmup_s"]))
    w("| switched cross flows | target | Free | V+ | V- | V* | delta |")
    w("|---|---|---|---|---|---|---|")
    xs, cols = [], collections.defaultdict(list)
    for p, point in enumerate(r.points):
        f = r.free(p)
        m = f["matching"]
        xs.append(point["params"]["group.X.onoff.flows"])
        cols["V+"].append(m["v_plus"])
        cols["V-"].append(m["v_minus"])
        cols["V*"].append(m["v_star"])
        cols["delta"].append(m["delta"] or 0.0)
        cols["the Free's mean"].append(f["throughput_bps"]["mean"])
        w("| %d | %.2f | %.2f | %s | %s | %s | %s |"
          % (xs[-1], mb(m["target_mean_bps"]), mb(f["throughput_bps"]["mean"]),
             sq(m["v_plus"]), sq(m["v_minus"]), sq(m["v_star"]), num(m["delta"])))
    for name, ident, paper in [("V+", "vplus", "rises"), ("V-", "vminus", "falls"),
                               ("V*", "vstar", "rises"), ("delta", "delta", "rises"),
                               ("the Free's mean", "free_mean", "rises")]:
        tau = kendall(xs, cols[name])
        verdicts.append((f"fig7_{ident}_{'grows' if paper == 'rises' else 'shrinks'}",
                         "more switched cross flows: %s %s" % (
                             name, "grows" if paper == "rises" else "shrinks"),
                         "Kendall's tau %.2f (%s)" % (tau, trend(tau)),
                         verdict(trend(tau) == paper)))
    return lines, verdicts


def fig3(root):
    packet, packet_none = Results(root, "fs-fluid-fig3"), Results(root, "fs-fluid-fig3-none")
    fluid, fluid_none = Results(root, "fs-fluid-fig3-fluid"), Results(root,
                                                                       "fs-fluid-fig3-fluid-none")
    half = Results(root, "fs-fluid-fig3-fluid-500us")
    pi, base = fluid.compare_means(), fluid_none.compare_means()
    s = packet.summary
    warm = s["warmup_s"]
    bits = (packet.packet_size - 40) * 8  # packets/s of payload, the trace's unit

    def vstar(r):
        return r.free(0)["matching"]["v_star"] / bits ** 2
    fair = packet.rate(0) / (packet.packet_size * 8) / packet.flows(0)
    lines, verdicts = [], []
    w = lines.append
    w("One run of %.0f s per model, the first %.0f s left out. Packets/s of payload, the "
      "trace's unit; the means are what `qstp fluid scenarios/fs-fluid-fig3.toml "
      "--compare-with DIR` prints (the 1 s goodput curves of plots/fluid-vs-packet.svg); V+, "
      "V-, V* (eqs. 16-18) in (packets/s)^2 from summary.json; \"none\": the same file with "
      "controller \"none\" (no delegation). The fluid model is solved at a %s step; the "
      "packet run uses seed %d.\n"
      % (s["duration_s"], warm, fluid.summary["fluid"]["step"], s["seed"]))
    w("| | fluid | packet |")
    w("|---|---|---|")
    for name in ["Free", "Free's target", "mean Stunt", "mean cross"]:
        w("| %s, PI | %.1f | %.1f |" % (name, *pi[name]))
    w("| Free, none | %.1f | %.1f |" % base["Free"])
    w("| mean Stunt / mean cross, none | %.1f / %.1f | %.1f / %.1f |"
      % (base["mean Stunt"][0], base["mean cross"][0], base["mean Stunt"][1],
         base["mean cross"][1]))
    for name, key in [("V+", "v_plus"), ("V-", "v_minus")]:
        w("| %s with PI | %.0f | %.0f |" % (name, fluid.free(0)["matching"][key] / bits ** 2,
                                            packet.free(0)["matching"][key] / bits ** 2))
    w("| V* with PI | %.0f | %.0f |" % (vstar(fluid), vstar(packet)))
    w("| V* with none | %.0f | %.0f |" % (vstar(fluid_none), vstar(packet_none)))
    w("| bottleneck utilisation (E) | %.2f | %.2f |"
      % (fluid.points[0]["metrics"]["efficiency"]["mean"],
         packet.points[0]["metrics"]["efficiency"]["mean"]))
    with open(os.path.join(packet.dir, "scenario.toml")) as f:
        limit = int(re.search(r'kind = "red", limit = (\d+)', f.read()).group(1))
    qf, qp = fluid.queue_shares(limit, warm), packet.queue_shares(limit, warm)
    w("| queue empty (below 1 packet), share of 100 ms samples | %.0f%% | %.0f%% |"
      % (100 * qf[0], 100 * qp[0]))
    w("| queue full or nearly (%.0f of %d packets or more) | %.0f%% | %.0f%% |"
      % (0.9 * limit, limit, 100 * qf[1], 100 * qp[1]))
    waves = {}
    for label, r in [("fluid", fluid), ("packet", packet)]:
        c = r.curves("goodput_bps", 0.1)[0]
        waves[label] = wave(c, warm, bits)
    for what, i in [("Free's peaks (target's)", 0), ("Free's troughs (target's)", 1),
                    ("Free's lag behind the target's extremes, s", 2)]:
        w("| %s | %s | %s |" % (what, waves["fluid"][i], waves["packet"][i]))
    mh = half.free(0)["throughput_bps"]["mean"]
    m1 = fluid.free(0)["throughput_bps"]["mean"]
    w("\nHalving the fluid step (`--step 500us`) moves the fluid Free's mean by %.1f%% and its V* "
      "by %.1f%% (%.0f).\n" % (100 * (mh - m1) / m1, 100 * (vstar(half) - vstar(fluid))
                               / vstar(fluid), vstar(half)))
    w("The peaks, troughs and lags are per wave of the target after the warm-up, on the same 1 s "
      "curves: the Free's highest (lowest) value in the half wave from the target's peak "
      "(trough), and how long after the target's it came.")
    for label, r, rn, col in [("fluid", fluid, fluid_none, 0), ("packet", packet, packet_none, 1)]:
        verdicts.append((f"fig3_{label}_free_follows_target",
                         f"{label}: the Free follows its target (V* below the baseline's)",
                         "V* %.0f against %.0f (packets/s)^2" % (vstar(r), vstar(rn)),
                         verdict(vstar(r) < vstar(rn))))
        verdicts.append((f"fig3_{label}_stunts_make_room",
                         f"{label}: the Stunts make room",
                         "mean Stunt %.1f against %.1f without delegation"
                         % (pi["mean Stunt"][col], base["mean Stunt"][col]),
                         verdict(pi["mean Stunt"][col] < base["mean Stunt"][col])))
        change = pi["mean cross"][col] / base["mean cross"][col] - 1
        verdicts.append((f"fig3_{label}_cross_barely_affected",
                         f"{label}: the cross traffic is barely affected",
                         "mean cross %.1f against %.1f without delegation (%+.1f%%)"
                         % (pi["mean cross"][col], base["mean cross"][col], 100 * change),
                         verdict(abs(change) <= BARELY)))
        c = r.curves("goodput_bps", 0.1)[0]
        low = [k for k in sorted(c["T"]) if k * 0.1 >= warm and c["T"][k] / bits < fair
               and k in c["S"]]
        gap = max(c["S"][k] - c["X"][k] for k in low) / bits if low else None
        verdicts.append((f"fig3_{label}_stunts_rise_when_target_low",
                         f"{label}: with the target below the fair share ({fair:.0f}), the "
                         "Stunts rise above the cross flows",
                         "the mean Stunt minus the mean cross flow there: at most %s packets/s"
                         % ("%.1f" % gap if gap is not None else "-"),
                         verdict(None if gap is None else gap > 0)))
    return lines, verdicts


def wave(c, warm, bits):
    """(peaks, troughs, lags) of the Free against the target's extremes after the warm-up."""
    ks = sorted(k for k in c["T"] if k in c["F"])
    t = {k: c["T"][k] / bits for k in ks}
    ext = []
    for a, b, d in zip(ks, ks[1:], ks[2:]):
        if b * 0.1 > warm and ((t[b] > t[a] and t[b] >= t[d]) or (t[b] < t[a] and t[b] <= t[d])):
            ext.append((b, "peak" if t[b] > t[a] else "trough"))
    peaks, troughs, lags = [], [], []
    for i, (k, kind) in enumerate(ext):
        end = ext[i + 1][0] if i + 1 < len(ext) else None
        if end is None:
            break
        span = [j for j in ks if k <= j < end]
        pick = (max if kind == "peak" else min)(span, key=lambda j: c["F"][j])
        (peaks if kind == "peak" else troughs).append((c["F"][pick] / bits, t[k]))
        lags.append((pick - k) * 0.1)

    def spread(xs):
        lo, hi = ("%.0f" % min(xs), "%.0f" % max(xs)) if xs else ("-", "-")
        return lo if lo == hi else lo + "-" + hi
    return ("%s (%s)" % (spread([p for p, _ in peaks]), spread([q for _, q in peaks])),
            "%s (%s)" % (spread([p for p, _ in troughs]), spread([q for _, q in troughs])),
            "%.1f-%.1f" % (min(lags), max(lags)) if lags else "-")


FIGURES = [("fig4", "Fig. 4: following three traces", fig4, "fs-fig4.toml"),
           ("fig5", "Fig. 5: V* against the number of Stunts", fig5, "fs-fig5.toml"),
           ("fig6", "Fig. 6: 2, 10 and 20 Stunts over time", fig6, "fs-fig6.toml"),
           ("fig7", "Fig. 7: V+, V-, V* against randomised cross flows", fig7, "fs-fig7.toml"),
           ("fig3", "Fig. 3: the fluid model against the packet simulator", fig3,
            "fs-fluid-fig3.toml")]


def all_findings(root):
    return [(key, title, scenario) + fn(root) for key, title, fn, scenario in FIGURES]


def verdict_lines(found):
    return "\n".join(f"{ident} {v}" for *_, verdicts in found for ident, _, _, v in verdicts)


def page(found):
    out = []
    w = out.append
    w("# Free & Stunts paper against the lab\n")
    w("What `scenarios/fs-fig4.toml` to `fs-fig7.toml` and `fs-fluid-fig3.toml` give next to "
      "what the Free & Stunts paper (Valdez and Guirguis) shows. The scenario comments say how "
      "each follows the paper's setup and what they choose where the paper is silent.\n")
    w("Generated by `python3 validation/fs_findings.py --run` (every run, then this page; "
      "`--out DIR` keeps the results, and `python3 validation/fs_findings.py DIR` generates the "
      "page again from them); do not edit. CI runs the packet scenarios short (`--duration %s "
      "--runs 1`) and holds their verdicts to `validation/fs.short.txt` "
      "(`validation/fs_check.sh`).\n" % SHORT_DURATION)
    w("The verdicts follow rules, not judgement: the Free follows a trace when the correlation "
      "of their %.0f s means is at least %.1f; the Stunts change in tandem when theirs is "
      "negative; a quantity rises (falls) with a count when Kendall's tau is at least %.2f "
      "(at most -%.2f); a V* \"degrades\" when it is at least %.1f times the best one; an "
      "optimum is the set of counts within %.0f%% of the lowest V*; \"barely affected\" is "
      "within %.0f%%. \"n/a\": the run does not have what the statement needs.\n"
      % (WINDOW_S, FOLLOW_CORR, TREND_TAU, TREND_TAU, WORSE, 100 * (NEAR_OPTIMUM - 1),
         100 * BARELY))
    w("## Summary\n")
    for key, title, scenario, _, verdicts in found:
        counts = collections.Counter(v for *_, v in verdicts)
        w("- %s (`scenarios/%s`): %s." % (title, scenario, ", ".join(
            "%d %s" % (counts[k], k if counts[k] == 1 else word) for k, word in
            (("agrees", "agree"), ("differs", "differ"), ("n/a", "n/a")) if counts[k])))
        differ = [claim for _, claim, _, v in verdicts if v == "differs"]
        if differ:
            w("  Differs: " + "; ".join(differ) + ".")
    for key, title, scenario, lines, verdicts in found:
        w("\n## %s\n" % title)
        w("Run by `scenarios/%s`. In the paper: %s\n" % (scenario, PAPER[key]))
        out.extend(lines)
        w("\n| the paper's statement | lab | verdict |")
        w("|---|---|---|")
        for _, claim, lab, v in verdicts:
            w("| %s | %s | %s |" % (claim, lab, v))
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    flags, opts, rest = set(), {}, []
    while args:
        a = args.pop(0)
        if a in ("--run", "--short", "--verdicts"):
            flags.add(a)
        elif a in ("--qstp", "--out", "--page") and args:
            opts[a] = args.pop(0)
        elif a.startswith("-"):
            sys.exit(__doc__)
        else:
            rest.append(a)
    if ("--run" in flags) == bool(rest) or len(rest) > 1 or (
            "--short" in flags and "--verdicts" not in flags):
        sys.exit(__doc__)
    if "--run" in flags:
        qstp = opts.get("--qstp") or os.environ.get("QSTP_BIN") or os.path.join(
            REPO, "target", "release", "qstp")
        qstp = shutil.which(qstp) or os.path.abspath(qstp)
        root = opts.get("--out") or tempfile.mkdtemp(prefix="fs-findings-")
        root = os.path.abspath(root)
        try:
            run_all(qstp, root, "--short" in flags)
            found = all_findings(root)
        finally:
            if "--out" not in opts:
                shutil.rmtree(root, ignore_errors=True)
    else:
        found = all_findings(rest[0])
    if "--verdicts" in flags:
        print(verdict_lines(found))
        return
    path = opts.get("--page", PAGE)
    with open(path, "w") as f:
        f.write(page(found))
    print(f"fs_findings: {path} written", file=sys.stderr)


if __name__ == "__main__":
    main()
