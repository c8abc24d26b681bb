#!/bin/sh
# CI's guard of validation/hstcp.md. The page comes from the 600 s sweep of
# scenarios/hstcp-qos.toml (about 40 CPU minutes), too long for CI; this runs the same sweep short
# (60 s, one run, the warm-up scaled alike) and holds its verdicts and picks
# (hstcp_findings.py --verdicts) to validation/hstcp.short.txt. A difference means the lab's TCP
# moved: run the full sweep, generate hstcp.md again (hstcp_findings.py's docstring), and bless
# the short verdicts with `validation/hstcp_check.sh --bless`.
# QSTP_BIN: the lab binary (default target/release/qstp).
set -eu
cd "$(dirname "$0")/.."
qstp="${QSTP_BIN:-target/release/qstp}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$qstp" run scenarios/hstcp-qos.toml --duration 60s --runs 1 --out "$out/run" > "$out/log" 2>&1 \
  || { cat "$out/log" >&2; exit 1; }
python3 validation/hstcp_findings.py --verdicts "$out/run" > "$out/verdicts"
if [ "${1:-}" = "--bless" ]; then
  cp "$out/verdicts" validation/hstcp.short.txt
  echo "validation/hstcp.short.txt written"
  exit 0
fi
if ! diff -u validation/hstcp.short.txt "$out/verdicts"; then
  echo "hstcp_check: the short sweep's verdicts moved (above); see validation/hstcp_check.sh" >&2
  exit 1
fi
echo "hstcp_check: $(wc -l < "$out/verdicts") verdicts as validation/hstcp.short.txt"
