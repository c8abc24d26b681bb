#!/usr/bin/env python3
"""Where the lab's instructions go, against the budget of a speed-up over ns-2.35.

On speed.py's dumbbell: how many instructions per delivered segment the TCP agents take, how many
the network and the event loop take, and how many the whole run may take to be N times ns-2.

    python3 validation/ns2/budget.py                     # reno x 8 and cubic x 24, ten times ns-2
    python3 validation/ns2/budget.py --cell reno:8 --times 10 --rounds 5

Per cell: ns-2.35 runs the dumbbell (hstcp_dumbbell.tcl) `--rounds` times, the lab the same
scenario (compare.py's, with ns-2's start times) as many times simulating only (`qstp run
--jobs 1 --series none --no-plots`), alternating; their medians give the CPU seconds. Then the lab
runs once under callgrind, which counts the instructions it executes:

- total: every instruction of the process;
- TCP agents: what the TCP senders and sinks execute on their packets, timers and starts
  (`Agent::on_packet`, `Agent::on_timer`, `Agent::start`, inclusive), less the network's work
  their sends start (the network's code inlined into the agents, and `Network::forward`);
- network and event loop: the rest.

The lab's instructions per CPU second (callgrind's total over the median CPU seconds) turn the
budget, ns-2's CPU seconds over `--times`, into instructions. Every figure is per segment
delivered to a sink.

Instructions are not time: the network's code waits more per instruction than the TCP model's.
Where `perf` works, the lab runs once more under `perf record -e cpu-clock`, and the last column
gives the TCP agents' share of the samples, by the function each sample fell in (the TCP crate,
the simulator's agents and recorder, the delay histograms; the network code the compiler inlined
into the agents' send functions counts as theirs). A benchmark, not a test; it needs valgrind.
"""

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402
from speed import cell_arguments, cells_of, lab_command, lab_run, ns2_run  # noqa: E402

# A function's inclusive line in `callgrind_annotate --tree=calling --inclusive=yes`:
# "1,234 (5.6%)  *  FILE:FUNCTION [OBJECT]"; its callees follow as "... >   FILE:FUNCTION (Nx) ...".
FUNCTION = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+\*\s+(\S+?):(.+?)(?: \[[^\]]*\])?\s*$")
CALLEE = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+>\s+(\S+?):(.+?) \(([\d,]+)x\)")
TOTAL = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+PROGRAM TOTALS")
AGENT_ENTRIES = ("qstp_sim::agent::Agent::on_packet", "qstp_sim::agent::Agent::on_timer",
                 "qstp_sim::agent::Agent::start")


def number(text):
    return int(text.replace(",", ""))


def workspace_path(path):
    """A source path from the workspace's root ("crates/..."); others as they are."""
    at = path.find("crates/")
    return path[at:] if at >= 0 else path


def split(annotated):
    """(total, TCP agents, sink deliveries) from callgrind_annotate's calling tree."""
    total = None
    # A function is a (file, name) pair: code inlined from another file is its own entry. The
    # same entry may be listed twice, under an absolute and a relative path (callgrind_annotate
    # run inside the workspace), so paths are cut to the workspace's and entries kept once.
    inclusive = {}  # (file, function) -> inclusive instructions
    callees = {}  # (file, function) -> {(file, function): (instructions, calls)}
    current = None
    for line in annotated.splitlines():
        if m := TOTAL.match(line):
            total = number(m.group(1))
        elif m := FUNCTION.match(line):
            current = (workspace_path(m.group(2)), m.group(3).strip())
            inclusive[current] = number(m.group(1))
        elif (m := CALLEE.match(line)) and current:
            callee = (workspace_path(m.group(2)), m.group(3).strip())
            callees.setdefault(current, {})[callee] = (number(m.group(1)), number(m.group(4)))
    if total is None:
        sys.exit("callgrind_annotate printed no total")
    agents = sum(v for (_, f), v in inclusive.items() if f in AGENT_ENTRIES)
    if agents == 0:
        sys.exit("no agent entry point in the profile: were the simulator's functions renamed?")
    # The network's work the agents' sends start: its code inlined into an agent function
    # (attributed to the network's files), or a call to Network::send or Network::forward made
    # from agent code.
    network = 0
    for (path, f), v in inclusive.items():
        in_agent = f.startswith("qstp_sim::agent::")
        if in_agent and path.startswith("crates/sim/src/network/"):
            network += v
        elif in_agent:
            network += sum(cost for (_, g), (cost, _) in callees.get((path, f), {}).items()
                           if g in ("qstp_sim::network::Network::send",
                                    "qstp_sim::network::Network::forward"))
    sinks = sum(calls for cs in callees.values() for (_, g), (_, calls) in cs.items()
                if g == "qstp_sim::agent::tcp::TcpSink::on_packet")
    if sinks == 0:
        sys.exit("no TcpSink::on_packet call in the profile")
    return total, agents - network, sinks


def callgrind(qstp, text, work):
    profile = os.path.join(work, "callgrind.out")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={profile}"]
                   + lab_command(qstp, text, work, True, "out-cg"),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    annotated = subprocess.run(["callgrind_annotate", "--auto=no", "--tree=calling",
                                "--inclusive=yes", profile],
                               check=True, capture_output=True, text=True).stdout
    return split(annotated)


# Functions whose samples count as the TCP agents' in perf's self-time profile.
AGENT_SYMBOL = re.compile(r"<?(qstp_tcp::|qstp_sim::agent::|qstp_sim::record::|hdrhistogram::)")
SAMPLE = re.compile(r"^\s+([\d.]+)%\s+\[\.\]\s+(\S.*?)\s*(?:-\s+-\s*)?$")


def perf_share(qstp, text, work):
    """The TCP agents' share of a run's cpu-clock samples, or None where perf does not work."""
    if shutil.which("perf") is None:
        return None
    data = os.path.join(work, "perf.data")
    recorded = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "20000", "-o", data]
                              + lab_command(qstp, text, work, True, "out-perf"),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if recorded.returncode != 0:
        return None
    report = subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "symbol"],
                            capture_output=True, text=True).stdout
    agents = total = 0.0
    for line in report.splitlines():
        if m := SAMPLE.match(line):
            share = float(m.group(1))
            total += share
            if AGENT_SYMBOL.match(m.group(2)):
                agents += share
    return agents / total if total else None


def main():
    p = cell_arguments(__doc__.split("\n")[0], "reno:8 and cubic:24")
    p.add_argument("--times", type=float, default=10, help="the speed-up over ns-2 to budget for")
    args = p.parse_args()
    for tool in ("ns", "valgrind", "callgrind_annotate"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed (apt-get install ns2 valgrind)")
    if not os.access(args.qstp, os.X_OK):
        sys.exit(f"{args.qstp} is not built (cargo build --release -p qstp)")
    cells = cells_of(args, [("reno", 8), ("cubic", 24)])
    work = tempfile.mkdtemp(prefix="qstp-budget-")
    rows = []
    try:
        for cc, flows in cells:
            print(f"{cc} x {flows}: ns-2 and the lab, {args.rounds} rounds; then callgrind",
                  flush=True)
            ns2s, labs, text = [], [], None
            for _ in range(args.rounds):
                secs, result = ns2_run(cc, flows, args.duration, args.seed)
                ns2s.append(secs)
                text = compare.hstcp_scenario(cc, result["start_times_s"], args.duration,
                                              args.seed)
                labs.append(lab_run(args.qstp, text, work, True))
            total, agents, segments = callgrind(args.qstp, text, work)
            rows.append((cc, flows, statistics.median(ns2s), statistics.median(labs), total,
                         agents, segments, perf_share(args.qstp, text, work)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\ninstructions per segment delivered; budget: ns-2's CPU / {args.times:g}, at the "
          "lab's instructions per CPU second")
    print("| cell | ns-2 CPU s | lab CPU s | segments | lab, all | TCP agents | network and "
          "event loop | budget | TCP agents / budget | TCP agents' time (perf) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for cc, flows, ns2, lab, total, agents, segments, share in rows:
        rate = total / lab
        budget = ns2 / args.times * rate / segments
        timed = "-" if share is None else f"{share:.0%}, {share * lab:.3f} s"
        print(f"| {cc} x {flows} | {ns2:.2f} | {lab:.3f} | {segments} | {total / segments:.0f} | "
              f"{agents / segments:.0f} | {(total - agents) / segments:.0f} | {budget:.0f} | "
              f"{agents / segments / budget:.2f} | {timed} |")


if __name__ == "__main__":
    main()
