#!/usr/bin/env python3
"""Source edits that build.sh applies to an unpacked ns-2.35 tree.

Usage:
    instrument.py portability NS_DIR   # packmime_OL.h: an int64_t member becomes int
    instrument.py autoconf NS_DIR      # autoconf.h (after ./configure): HAVE_INT64 off
    instrument.py illinois NS_DIR      # tcp/linux/src/tcp_illinois.c: stderr prints

Debian's libtclcl has no bind(int64_t*), so the upstream tree does not link against it
unless ns-2 believes it has no 64-bit integers (autoconf.h) and PackMime's one int64_t
bound variable is an int (it counts packets; int is plenty).

The Illinois prints write one line to stderr per event, all times in simulated seconds and
`sk` the socket's address (the same for every event of one flow):

    ACKED t sk pkts_acked rtt_us base_rtt max_rtt   per ACK; rtt_us is -1 when the ACK
                                                    carries no timing (invalid timestamp),
                                                    base/max are the values after this ACK
    UPD t sk cwnd cnt_rtt sum_rtt base_rtt max_rtt da dm alpha beta
                                                    per update_params() call; cnt_rtt and
                                                    sum_rtt as found (before the reset),
                                                    da/dm -1 when not computed, alpha/beta
                                                    the values chosen
    SST t sk cwnd beta ssthresh                     per tcp_illinois_ssthresh() call
    LOSS t sk                                       entering TCP_CA_Loss

Each edit is placed at an anchor looked up in the pristine file (a *.orig copy kept beside
it); a missing or ambiguous anchor stops with an error naming it. The edited file is written
only when its content changes, so `make` rebuilds nothing on a re-run.
"""

import re
import shutil
import sys
from pathlib import Path

MARK = "qstp-instrumented"


class AnchorError(Exception):
    pass


def pristine(path):
    """Text of the unmodified file, keeping a path.orig copy on first use."""
    orig = path.with_name(path.name + ".orig")
    if not orig.exists():
        if MARK in path.read_text():
            raise AnchorError(f"{path} is already edited but {orig.name} is missing; "
                              "remove the work folder's ns-2.35 and re-run build.sh")
        shutil.copy2(path, orig)
    return orig.read_text()


def write_if_changed(path, text):
    if path.read_text() != text:
        path.write_text(text)
        print(f"instrument.py: wrote {path}", file=sys.stderr)


def find_line(lines, pattern, start=0, stop=None, what=None):
    """Index of the single line in lines[start:stop] whose stripped text matches pattern."""
    stop = len(lines) if stop is None else stop
    rx = re.compile(pattern)
    hits = [i for i in range(start, stop) if rx.fullmatch(lines[i].strip())]
    if len(hits) != 1:
        raise AnchorError(f"anchor {what or pattern!r}: {len(hits)} matches, expected 1")
    return hits[0]


def function_span(lines, name):
    """(first, last) line indices of a top-level C function definition `name`."""
    head = find_line(lines, r"static\s+\w+\s+" + re.escape(name) + r"\s*\(.*",
                     what=f"definition of {name}()")
    end = next((i for i in range(head + 1, len(lines)) if lines[i].rstrip() == "}"), None)
    if end is None:
        raise AnchorError(f"end of {name}() not found")
    return head, end


def indent_of(line):
    return line[: len(line) - len(line.lstrip())]


# --- portability ------------------------------------------------------------------------

def portability(ns):
    path = ns / "packmime" / "packmime_OL.h"
    lines = pristine(path).split("\n")
    i = find_line(lines, r"int64_t\s+maxpkts_\s*;.*", what="int64_t maxpkts_;")
    lines[i] = re.sub(r"int64_t(\s+maxpkts_)", r"int\1", lines[i]) + \
        f" /* {MARK}: int, as libtclcl has no bind(int64_t*) */"
    write_if_changed(path, "\n".join(lines))


def autoconf(ns):
    path = ns / "autoconf.h"
    if not path.exists():
        raise AnchorError(f"{path} missing: run ./configure first")
    text = path.read_text()
    new, n = re.subn(r"^#define\s+HAVE_INT64\b.*$",
                     f"/* {MARK}: HAVE_INT64 left undefined (libtclcl has no int64_t bind) */",
                     text, flags=re.M)
    if n == 0 and MARK not in text and not re.search(r"^#undef\s+HAVE_INT64\b", text, re.M):
        raise AnchorError("autoconf.h has no HAVE_INT64 line")
    write_if_changed(path, new)


# --- Illinois prints --------------------------------------------------------------------

T = "(double)ktime_get_real / 1e9"   # ns-linux-util.h: simulated time in nanoseconds
SK = "(void *)sk"


def illinois(ns):
    path = ns / "tcp" / "linux" / "src" / "tcp_illinois.c"
    lines = pristine(path).split("\n")
    edits = []   # (line index, "before"/"after", text lines); applied bottom-up

    def insert(where, pattern, span, what, text):
        """Put text(indent of the anchor line) before or after the single line matching pattern."""
        i = find_line(lines, pattern, *span, what=what)
        edits.append((i, where, text(indent_of(lines[i]))))
        return i

    # headers: after the last ns-linux include
    insert("after", r'#include\s+"\.\./ns-linux-util\.h"', (), "#include ns-linux-util.h",
           lambda ind: [f"/* {MARK}: prints to stderr, see "
                        "validation/ns2/instrumented/instrument.py */",
                        "#include <stdio.h>"])

    # tcp_illinois_acked: one line per ACK, with or without an RTT sample
    span = function_span(lines, "tcp_illinois_acked")
    insert("before", r"if\s*\(ktime_equal\(last,\s*net_invalid_timestamp\(\)\)\)", span,
           "invalid-timestamp test in tcp_illinois_acked",
           lambda ind: [f"{ind}if (ktime_equal(last, net_invalid_timestamp()))",
                        f'{ind}\tfprintf(stderr, "ACKED %.6f %p %u -1 %u %u\\n", {T}, {SK}, '
                        "(unsigned)pkts_acked, (unsigned)ca->base_rtt, (unsigned)ca->max_rtt);"])
    insert("after", r"ca->sum_rtt\s*\+=\s*rtt;", span, "sum_rtt += rtt",
           lambda ind: [f'{ind}fprintf(stderr, "ACKED %.6f %p %u %u %u %u\\n", {T}, {SK}, '
                        "(unsigned)pkts_acked, (unsigned)rtt, (unsigned)ca->base_rtt, "
                        "(unsigned)ca->max_rtt);"])

    # update_params: what it found and what it chose
    span = function_span(lines, "update_params")
    insert("after", r"struct\s+illinois\s*\*\s*ca\s*=\s*inet_csk_ca\(sk\);", span,
           "ca declaration in update_params",
           lambda ind: [f"{ind}long long qstp_da = -1, qstp_dm = -1;",
                        f"{ind}unsigned qstp_cnt = ca->cnt_rtt;",
                        f"{ind}unsigned long long qstp_sum = ca->sum_rtt;"])
    insert("after", r"ca->beta\s*=\s*beta\(da,\s*dm\);", span, "beta(da, dm) call",
           lambda ind: [f"{ind}qstp_da = da; qstp_dm = dm;"])
    insert("before", r"rtt_reset\(sk\);", span, "rtt_reset in update_params",
           lambda ind: [f'{ind}fprintf(stderr, "UPD %.6f %p %u %u %llu %u %u %lld %lld %u %u\\n", '
                        f"{T}, {SK}, (unsigned)tp->snd_cwnd, qstp_cnt, qstp_sum, "
                        "(unsigned)ca->base_rtt, (unsigned)ca->max_rtt, qstp_da, qstp_dm, "
                        "(unsigned)ca->alpha, (unsigned)ca->beta);"])

    # tcp_illinois_state: entering loss
    insert("after", r"if\s*\(new_state\s*==\s*TCP_CA_Loss\)\s*\{",
           function_span(lines, "tcp_illinois_state"), "TCP_CA_Loss test",
           lambda ind: [f'{ind}\tfprintf(stderr, "LOSS %.6f %p\\n", {T}, {SK});'])

    # tcp_illinois_ssthresh: the reduction; our own evaluation of the returned value
    i = insert("before", r"return\s+.*;", function_span(lines, "tcp_illinois_ssthresh"),
               "return in tcp_illinois_ssthresh",
               lambda ind: [f"{ind}{{",
                            f"{ind}\tunsigned qstp_ss = (tp->snd_cwnd * ca->beta) >> BETA_SHIFT;",
                            f'{ind}\tfprintf(stderr, "SST %.6f %p %u %u %u\\n", {T}, {SK}, '
                            "(unsigned)tp->snd_cwnd, (unsigned)ca->beta, "
                            "qstp_ss < 2 ? 2U : qstp_ss);",
                            f"{ind}}}"])
    if "beta" not in lines[i] or "BETA_SHIFT" not in lines[i]:
        raise AnchorError("tcp_illinois_ssthresh's return no longer uses beta >> BETA_SHIFT")

    for i, where, text in sorted(edits, key=lambda e: (e[0], e[1] == "after"), reverse=True):
        at = i if where == "before" else i + 1
        lines[at:at] = text
    write_if_changed(path, "\n".join(lines))


def main():
    steps = {"portability": portability, "autoconf": autoconf, "illinois": illinois}
    if len(sys.argv) != 3 or sys.argv[1] not in steps:
        sys.exit(__doc__.split("\n\n")[1])
    ns = Path(sys.argv[2])
    if not (ns / "tcp" / "linux" / "src").is_dir():
        sys.exit(f"instrument.py: {ns} does not look like an ns-2.35 source tree")
    try:
        steps[sys.argv[1]](ns)
    except AnchorError as e:
        sys.exit(f"instrument.py {sys.argv[1]}: {e}")


if __name__ == "__main__":
    main()
