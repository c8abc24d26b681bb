#!/usr/bin/env python3
"""Regenerate the lab's numbers in docs/atm.md from runs of scenarios/atm-fig2.toml .. atm-fig5.

docs/atm.md is a hand-written page. Each number the lab produces sits between two HTML comments,
`<!--n:fig2.80.af-->4.45<!--/n-->`, which do not render; this script rewrites only what is between
them. Paper numbers and settings stay typed text.

    scripts/atm-doc.py                  # run everything at the files' 180 s, rewrite docs/atm.md
    scripts/atm-doc.py --check          # the same runs; exit 1 with a diff if the page differs
    scripts/atm-doc.py --check --short  # 20 s runs against scripts/atm-doc.short.txt (CI)
    scripts/atm-doc.py --bless-short    # 20 s runs, rewrite scripts/atm-doc.short.txt

The short runs give other numbers than the page's: their expectation is the key=value file, which
guards the code in CI; the full runs regenerate the page. Variants of a scenario (another `service`
of the ATM port) are temporary copies of its file with that key changed. Progress goes to stderr.
The lab binary is --qstp, else $QSTP_BIN, else target/release/qstp.

Exits 0 when nothing differs (or the file was written), 1 when --check finds a difference, 2 on
an error (a run failed, a marker's key unknown or missing).
"""

import argparse
import difflib
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "atm.md"
SHORT_FILE = ROOT / "scripts" / "atm-doc.short.txt"
SHORT_DURATION = "20s"

MARKER = re.compile(r"<!--n:([^>]*?)-->(.*?)<!--/n-->")

# The runs: (name, scenario file, service of the ATM port or None for the file's own).
RUNS = [
    ("fig2", "atm-fig2.toml", None),
    ("fig2-priority", "atm-fig2.toml", "priority"),
    ("fig2-fifo", "atm-fig2.toml", "fifo"),
    ("fig2-shared", "atm-fig2.toml", "shared"),
    ("fig3", "atm-fig3.toml", None),
    ("fig3-priority", "atm-fig3.toml", "priority"),
    ("fig3-shared", "atm-fig3.toml", "shared"),
    ("fig4", "atm-fig4.toml", None),
    ("fig5", "atm-fig5.toml", None),
]

# The sweeps' values as the page names them (atm-fig3/4: AF2's SCR0 in Mbit/s).
RTTS = ["20", "80", "160"]
SCRS = ["2", "4", "6", "8.5", "10", "12", "14", "16", "18.72"]

# AF-over-ATM paper §4.1 (c): a segment carries 40 bytes of TCP/IP headers (as
# qstp_dataplane::aal5::estimate is called); AAL5 adds LLC/SNAP and its trailer (RFC 2684 §5,
# ITU-T I.363.5), 8 bytes each, in 48-byte payloads of 53-byte cells.
TCP_IP_HEADER = 40
CELL, CELL_PAYLOAD, AAL5_OVERHEAD = 53, 48, 16

# The paper's mean DF queueing delay at RTT 80 ms (§4.1, Fig. 2), which the page compares with.
PAPER_DF_DELAY_MS = 8.0


def fail(msg):
    print(f"atm-doc: {msg}", file=sys.stderr)
    sys.exit(2)


def variant(text, service, where):
    """The scenario text with the ATM port's `service` set (and `weights` gone unless weighted)."""
    lines = text.splitlines(True)
    atm = [i for i, line in enumerate(lines) if line.startswith("atm = {")]
    if len(atm) != 1:
        fail(f"{where}: expected one `atm = {{ .. }}` line, found {len(atm)}")
    line, found = re.subn(r'service = "[a-z]+"', f'service = "{service}"', lines[atm[0]])
    if found != 1:
        fail(f"{where}: expected `service = ..` in its `atm` table")
    if service != "weighted":
        line = re.sub(r"weights = \[[^\]]*\],\s*", "", line)
    lines[atm[0]] = line
    return "".join(lines)


def run_all(qstp, out, duration, jobs):
    """Runs every scenario of RUNS into out/NAME; returns {name: (summary, scenario text)}."""
    for i, (name, file, service) in enumerate(RUNS, 1):
        text = (ROOT / "scenarios" / file).read_text()
        if service is not None:
            text = variant(text, service, file)
        scenario = out / f"{name}.toml"
        scenario.write_text(text)
        cmd = [str(qstp), "run", str(scenario), "--out", str(out / name)]
        if duration:
            cmd += ["--duration", duration]
        if jobs:
            cmd += ["--jobs", str(jobs)]
        what = file + (f', service = "{service}"' if service else "")
        print(f"atm-doc: run {i}/{len(RUNS)}: {what} ({duration or 'its duration'})",
              file=sys.stderr, flush=True)
        start = time.monotonic()
        log = out / f"{name}.log"
        with open(log, "w") as f:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
        if rc != 0:
            sys.stderr.write(log.read_text()[-4000:])
            fail(f"{' '.join(cmd)} failed ({rc})")
        print(f"atm-doc:   {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    return load_all(out)


def load_all(out):
    results = {}
    for name, file, _ in RUNS:
        path = out / name / "summary.json"
        if not path.exists():
            fail(f"{path}: missing")
        text = (out / f"{name}.toml").read_text() if (out / f"{name}.toml").exists() else \
            (ROOT / "scenarios" / file).read_text()
        results[name] = (json.loads(path.read_text()), text)
    return results


# --- what the page reads from a summary -------------------------------------------------------


def point(summary, value):
    """The sweep point whose (single) swept value is `value` (e.g. "80ms", "8.5M", 1032)."""
    for p in summary["points"]:
        if list(p["params"].values()) == [value]:
            return p
    fail(f"{summary['scenario']}: no point {value!r}")


def groups(p, phb=None):
    return [g for g in p["flows"] if phb is None or g.get("phb") == phb]


def group(p, name):
    for g in p["flows"]:
        if g["group"] == name:
            return g
    fail(f"no group {name}")


def per_connection(p, phb):
    """Mean goodput of the PHB's connections, Mbit/s (what ttcp measures per connection)."""
    gs = groups(p, phb)
    connections = sum(g["flows"] for g in gs)
    return sum(g["goodput_bps"]["mean"] * g["flows"] for g in gs) / connections / 1e6


def delay_mean(p, phb):
    """Mean over the PHB's VPs of their probes' mean queueing delay, ms."""
    ds = [g["atm"]["queueing_delay_ms"] for g in groups(p, phb)]
    if None in ds:
        fail("a VP's probes measured no delay")
    return sum(ds) / len(ds)


def delay_max(p, phb):
    return max(g["atm"]["queueing_delay_max_ms"] for g in groups(p, phb))


def total(p, name):
    """A VP's total goodput, Mbit/s."""
    g = group(p, name)
    return g["goodput_bps"]["mean"] * g["flows"] / 1e6


def frames_lost(p, phb=None):
    return sum(g["atm"]["frames_lost"] for g in groups(p, phb))


def frames_lost_share(p, phb):
    lost = frames_lost(p, phb)
    return lost / (lost + sum(g["atm"]["frames_delivered"] for g in groups(p, phb)))


def cell_rate(summary, p, phb):
    """The PHB's cells on their way to the trunk, Mbit/s (53-byte cells, over the measured time)."""
    seconds = summary["duration_s"] - summary["warmup_s"]
    return sum(g["atm"]["cells"] for g in groups(p, phb)) * CELL * 8 / seconds / 1e6


def f2(x):
    return f"{x:.2f}"


def f1(x):
    return f"{x:.1f}"


def f0(x):
    return f"{x:.0f}"


def span(values, fmt):
    """One number if the values round alike, else `low to high`."""
    low, high = fmt(min(values)), fmt(max(values))
    return low if low == high else f"{low} to {high}"


def times(ratio):
    words = {2: "twice", 3: "three times", 4: "four times", 5: "five times", 6: "six times"}
    return words.get(round(ratio), f"{ratio:.1f} times")


# --- the numbers -------------------------------------------------------------------------------


def numbers(results):
    """Every lab number of the page, by marker key, as the page prints it."""
    n = {}
    fig2, fig2_text = results["fig2"]
    packet = int(re.search(r"^packet_size = (\d+)", fig2_text, re.M).group(1))
    mss = packet - TCP_IP_HEADER
    train = math.ceil((packet + AAL5_OVERHEAD) / CELL_PAYLOAD) * CELL  # bytes per segment

    at80 = point(fig2, "80ms")
    n["est.af"] = f2(group(at80, "AF1")["estimate_bps"] / 1e6)
    n["est.df"] = f2(group(at80, "DF1")["estimate_bps"] / 1e6)
    fig3 = results["fig3"][0]
    af2 = group(point(fig3, "8.5M"), "AF2")
    n["est.af2@8.5.atm"] = f2(af2["estimate_bps"] * af2["flows"] * train / mss / 1e6)
    n["est.af2@8.5"] = f2(af2["estimate_bps"] * af2["flows"] / 1e6)

    for run, service in [("fig2", "weighted"), ("fig2-priority", "priority"),
                         ("fig2-fifo", "fifo"), ("fig2-shared", "shared")]:
        summary = results[run][0]
        prefix = "fig2" if service == "weighted" else f"svc.{service}"
        for rtt in RTTS if service == "weighted" else ["20", "80"]:
            p = point(summary, f"{rtt}ms")
            for phb in ["af", "df"]:
                n[f"{prefix}.{rtt}.{phb}"] = f2(per_connection(p, phb))
                if service == "weighted" or rtt == "80":
                    n[f"{prefix}.{rtt}.{phb}.delay"] = f1(delay_mean(p, phb))
                if service == "weighted":
                    n[f"{prefix}.{rtt}.{phb}.delay_max"] = f1(delay_max(p, phb))

    p80, p20 = point(fig2, "80ms"), point(fig2, "20ms")
    for phb in ["af", "df"]:
        estimate = group(p80, "AF1" if phb == "af" else "DF1")["estimate_bps"] / 1e6
        n[f"fig2.80.{phb}.pct"] = f0(100 * per_connection(p80, phb) / estimate)
    n["fig2.80.df.delay_vs_paper"] = times(delay_mean(p80, "df") / PAPER_DF_DELAY_MS)
    n["fig2.80.af.cells"] = f0(cell_rate(fig2, p80, "af"))
    for rtt, p in [("80", p80), ("20", p20)]:
        n[f"fig2.{rtt}.lost"] = f0(frames_lost(p))
        n[f"fig2.{rtt}.lost.af"] = f0(frames_lost(p, "af"))

    prio = results["fig2-priority"][0]
    p = point(prio, "20ms")
    n["svc.priority.20.af.cells"] = f0(cell_rate(prio, p, "af"))
    n["svc.priority.20.df.delay"] = f0(delay_mean(p, "df"))
    n["svc.priority.20.df.lost_pct"] = f0(100 * frames_lost_share(p, "df"))

    for scr in SCRS:
        af2 = group(point(fig3, f"{scr}M"), "AF2")
        n[f"fig3.est@{scr}"] = f2(af2["estimate_bps"] * af2["flows"] / 1e6)
        for run, key in [("fig3", "fig3.weighted"), ("fig3-shared", "fig3.shared"),
                         ("fig4", "fig4")]:
            n[f"{key}@{scr}"] = f2(total(point(results[run][0], f"{scr}M"), "AF2"))
    prio = results["fig3-priority"][0]
    n["fig3.priority.af2"] = span([total(p, "AF2") for p in prio["points"]], f2)
    fig4 = results["fig4"][0]
    n["fig4.vp"] = span([total(p, g["group"]) for p in fig4["points"] for g in p["flows"]], f1)
    fig5 = results["fig5"][0]
    n["fig5.af2"] = span([total(p, "AF2") for p in fig5["points"]], f2)
    return n


# --- the page and the short file -----------------------------------------------------------------


def render(page, n):
    """The page with every marker's number replaced; fails on an unknown or missing key."""
    if page.count("<!--n:") != len(MARKER.findall(page)) or page.count("<!--/n-->") != page.count(
            "<!--n:"):
        fail(f"{PAGE.relative_to(ROOT)}: a marker is not closed on its line")
    keys = [m.group(1) for m in MARKER.finditer(page)]
    unknown = sorted(set(keys) - set(n))
    if unknown:
        fail(f"{PAGE.relative_to(ROOT)}: unknown marker key(s): {', '.join(unknown)}")
    missing = [k for k in n if k not in keys]
    if missing:
        fail(f"{PAGE.relative_to(ROOT)}: key(s) missing from the page: {', '.join(missing)}")
    return MARKER.sub(lambda m: f"<!--n:{m.group(1)}-->{n[m.group(1)]}<!--/n-->", page)


def short_text(n):
    head = (f"# The page's numbers from {SHORT_DURATION} runs; CI checks them "
            "(scripts/atm-doc.py --check --short), --bless-short rewrites them.\n")
    return head + "".join(f"{k}={v}\n" for k, v in n.items())


def diff(old, new, path, other):
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), path, other))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--qstp", help="the lab binary (default: $QSTP_BIN, else target/release/qstp)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff if the "
                    "page (or, with --short, the short file) differs from the runs")
    ap.add_argument("--short", action="store_true",
                    help=f"runs of {SHORT_DURATION}, held against {SHORT_FILE.relative_to(ROOT)}")
    ap.add_argument("--bless-short", action="store_true",
                    help=f"runs of {SHORT_DURATION}; rewrite {SHORT_FILE.relative_to(ROOT)}")
    ap.add_argument("--jobs", type=int, help="worker threads of each qstp run (default: its own)")
    ap.add_argument("--keep", metavar="DIR", help="run into DIR and keep the outputs")
    ap.add_argument("--from", dest="source", metavar="DIR",
                    help="read the outputs a --keep DIR holds (of runs in the same mode) "
                    "instead of running")
    args = ap.parse_args()
    short = args.short or args.bless_short
    if args.bless_short and args.check:
        fail("--bless-short writes; --check does not")

    page = PAGE.read_text()
    if args.source:
        n = numbers(load_all(pathlib.Path(args.source)))
    else:
        qstp = pathlib.Path(args.qstp or os.environ.get("QSTP_BIN") or ROOT / "target/release/qstp")
        if not qstp.exists():
            fail(f"{qstp}: no lab binary (build it with `cargo build --release`)")
        duration = SHORT_DURATION if short else None
        start = time.monotonic()
        if args.keep:
            out = pathlib.Path(args.keep)
            out.mkdir(parents=True, exist_ok=True)
            n = numbers(run_all(qstp.resolve(), out, duration, args.jobs))
        else:
            with tempfile.TemporaryDirectory(prefix="atm-doc-") as tmp:
                n = numbers(run_all(qstp.resolve(), pathlib.Path(tmp), duration, args.jobs))
        print(f"atm-doc: runs done in {time.monotonic() - start:.0f} s", file=sys.stderr)

    if short:
        render(page, n)  # the page's keys are still the script's
        new, path = short_text(n), SHORT_FILE
        old = path.read_text() if path.exists() else ""
    else:
        new, path, old = render(page, n), PAGE, page
    rel = str(path.relative_to(ROOT))
    if new == old:
        print(f"atm-doc: {rel} is up to date", file=sys.stderr)
        return 0
    if args.check:
        sys.stdout.write(diff(old, new, rel, f"{rel} (from the runs)"))
        print(f"atm-doc: {rel} differs from the runs; `scripts/atm-doc.py"
              f"{' --bless-short' if short else ''}` rewrites it", file=sys.stderr)
        return 1
    path.write_text(new)
    print(f"atm-doc: wrote {rel}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
