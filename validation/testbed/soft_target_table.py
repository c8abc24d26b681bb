#!/usr/bin/env python3
"""The shell's soft target on the testbed: `qstp send --soft-target` and the `soft_guarantee`
example beside kernel TCP, against plain `qstp send`.

    python3 validation/testbed/soft_target_table.py DIR [DIR...]

Each folder is what `qstp testbed` wrote for one of validation/testbed/soft-target*.toml. Per
folder, the mean over its runs (and each run's value in brackets) of:

- what the programs reported: a `qstp send`'s goodput over its whole transfer and whether the
  receiver verified it (`commands/run-N/<group>-<flow>/send.json`, the file of group F; the
  other command groups' senders summed), the soft target, the Stunts' goodput and the loss
  events the Free delegated, kept and took back (`soft_target` of send.json); the example's last
  line (`over N s: stream R (target T), bulk R; loss events delegated D, reacted R`);
- for a soft target, the mean of the file's once-a-second lines on the sender's stderr
  (`[  a-  b s] file R of target T, ...`, acknowledged bytes) whose second ends within WINDOW_S;
- what the router counted at the receiver (series.csv, `throughput_bps`), over the window
  WINDOW_S (from the warm-up's end to the senders' 45 s, so that every group is sending): each
  command group's flows together (a soft-target sender's Free and Stunts are one flow to the
  router: one address pair) and the cross traffic's (group X, all flows).

It fails (exit 1) if a run's program did not complete (summary.json `testbed_runs[].commands`).
"""
import csv
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

WINDOW_S = (10.0, 45.0)
RATE = re.compile(r"([0-9.]+)\s*([kMG]?)bit/s")
UNIT = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}


def rate(text):
    m = RATE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"not a rate: {text!r}")
    return float(m.group(1)) * UNIT[m.group(2)]


def example_line(path):
    """The example's closing line, as numbers."""
    last = [l for l in path.read_text().splitlines() if l.startswith("over ")]
    if not last:
        raise ValueError(f"{path}: no closing 'over N s:' line")
    m = re.fullmatch(
        r"over (\d+) s: stream (.+) \(target (.+)\), bulk (.+); loss events delegated (\d+), reacted (\d+)",
        last[-1].strip(),
    )
    if not m:
        raise ValueError(f"{path}: cannot read {last[-1]!r}")
    return {
        "stream goodput (kbit/s)": rate(m.group(2)) / 1e3,
        "target (kbit/s)": rate(m.group(3)) / 1e3,
        "bulk goodput, all (kbit/s)": rate(m.group(4)) / 1e3,
        "delegated": int(m.group(5)),
        "reacted": int(m.group(6)),
    }


SECOND = re.compile(r"\[\s*(\d+)-\s*(\d+) s\] file (\S+) of target")


def file_seconds(path):
    """The mean of the soft-target sender's per-second file rates within WINDOW_S, bit/s."""
    values = []
    for line in path.read_text().splitlines():
        m = SECOND.match(line.strip())
        if m and WINDOW_S[0] < float(m.group(2)) <= WINDOW_S[1]:
            values.append(rate(m.group(3)))
    return sum(values) / len(values) if values else None


def window_means(folder):
    """Per run, per group: the mean of its flows' summed throughput over WINDOW_S, bit/s."""
    sums = defaultdict(float)
    bins = defaultdict(set)
    with open(folder / "series.csv") as f:
        for row in csv.DictReader(f):
            if row["metric"] != "throughput_bps" or not row["group"]:
                continue
            t = float(row["time_s"])
            if not WINDOW_S[0] < t <= WINDOW_S[1]:
                continue
            key = (int(row["run"]), row["group"])
            sums[key] += float(row["value"])
            bins[key].add(t)
    return {k: sums[k] / len(bins[k]) for k in sums}


def folder_rows(folder):
    summary = json.loads((folder / "summary.json").read_text())
    runs = summary["testbed_runs"]
    windows = window_means(folder)
    rows = []
    for n, report in enumerate(runs):
        row = {}
        for c in report["commands"]:
            if not c["completed"]:
                sys.exit(
                    f"{folder}: run {n}: group {c['group']} flow {c['flow']} did not complete "
                    f"(sender: {c['sender']})"
                )
            out = Path(c["sender"]["stdout"]).parent
            send = out / "send.json"
            if send.exists():
                s = json.loads(send.read_text())
                if not s["verified"]:
                    sys.exit(f"{send}: not verified")
                if c["group"] == "F":
                    row["file goodput (kbit/s)"] = s["goodput_bps"] / 1e3
                    row["file seconds"] = s["duration_s"]
                    soft = s.get("soft_target")
                    if soft:
                        row["target (kbit/s)"] = soft["target_bps"] / 1e3
                        seconds = file_seconds(Path(c["sender"]["stderr"]))
                        if seconds is not None:
                            row["file, its 1 s lines in the window (kbit/s)"] = seconds / 1e3
                        row["Stunts' goodput, all (kbit/s)"] = soft["stunt_goodput_bps"] / 1e3
                        row["delegated"] = soft["delegated"]
                        row["kept"] = soft["reacted"]
                        row["taken back"] = soft["taken_by_free"]
                else:
                    key = f"{c['group']} goodput, all (kbit/s)"
                    row[key] = row.get(key, 0.0) + s["goodput_bps"] / 1e3
            else:
                row.update(example_line(Path(c["sender"]["stdout"])))
        for (run, group), v in sorted(windows.items()):
            if run == n:
                row[f"router: {group}, all flows (kbit/s)"] = v / 1e3
        rows.append(row)
    return summary["scenario"], rows


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print(f"window for the router's counts: {WINDOW_S[0]:.0f}-{WINDOW_S[1]:.0f} s")
    for arg in sys.argv[1:]:
        name, rows = folder_rows(Path(arg))
        print(f"\n{name} ({arg}, {len(rows)} run(s)):")
        keys = []
        for r in rows:
            keys += [k for k in r if k not in keys]
        for k in keys:
            values = [r[k] for r in rows if k in r]
            mean = sum(values) / len(values)
            each = ", ".join(f"{v:.0f}" if isinstance(v, float) else str(v) for v in values)
            print(f"  {k:<44} {mean:10.1f}   [{each}]")


if __name__ == "__main__":
    main()
