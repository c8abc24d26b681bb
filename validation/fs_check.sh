#!/bin/sh
# CI's guard of validation/fs.md. The page comes from full runs of the Free & Stunts scenarios
# (fs-fig4 to fs-fig7 and fs-fluid-fig3, with baselines: about 2 CPU minutes), more than CI
# spends on it; this runs the packet scenarios short (150 s, one run per point; the fluid
# figure's 30 s runs as they are) and holds their verdicts (fs_findings.py --run --short
# --verdicts) to validation/fs.short.txt. A difference means the lab moved: generate fs.md again
# from full runs (`python3 validation/fs_findings.py --run`), check the scenario comments still
# say what it shows, and bless the short verdicts with `validation/fs_check.sh --bless`.
# QSTP_BIN: the lab binary (default target/release/qstp).
set -eu
cd "$(dirname "$0")/.."
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
python3 validation/fs_findings.py --run --short --verdicts \
  --qstp "${QSTP_BIN:-target/release/qstp}" > "$out"
if [ "${1:-}" = "--bless" ]; then
  cp "$out" validation/fs.short.txt
  echo "validation/fs.short.txt written"
  exit 0
fi
if ! diff -u validation/fs.short.txt "$out"; then
  echo "fs_check: the short runs' verdicts moved (above); see validation/fs_check.sh" >&2
  exit 1
fi
echo "fs_check: $(wc -l < "$out") verdicts as validation/fs.short.txt"
