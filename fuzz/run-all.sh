#!/usr/bin/env bash
# Run every fuzz target in turn, one at a time at the lowest priority, and print a table of what
# each did: executions, seconds, executions per second, crashes.
#
#   fuzz/run-all.sh SECONDS                     each target for SECONDS
#   fuzz/run-all.sh --runs N [--max-time S]     each target for N executions (at most S seconds)
#   TARGETS="connection open_protected" fuzz/run-all.sh 60     only these
#
# Each target starts from its committed seeds (corpus/TARGET) and writes what it finds to
# scratch/TARGET (ignored by git). The targets are built without a sanitizer (-s none):
# qstp-proto forbids unsafe code, and AddressSanitizer would only slow them threefold. A crash
# is saved under artifacts/TARGET/; the script exits 1 if any target crashed.
set -euo pipefail
cd "$(dirname "$0")"
runs=""; max_time=""
case "${1:-}" in
--runs) runs=${2:?--runs N}; max_time=${4:-0}
    [[ "${3:-}" == "" || "${3:-}" == "--max-time" ]] || { echo "usage: $0 SECONDS | --runs N [--max-time S]" >&2; exit 2; } ;;
[0-9]*) max_time=$1 ;;
*) echo "usage: $0 SECONDS | --runs N [--max-time S]" >&2; exit 2 ;;
esac
targets=${TARGETS:-$(cargo +nightly fuzz list)}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
crashed=0
printf '%-16s %14s %9s %10s %8s\n' target executions seconds 'execs/s' crashes
for t in $targets; do
    cargo +nightly fuzz build -O -s none "$t" >/dev/null 2>"$log/build"  || { cat "$log/build" >&2; exit 1; }
    mkdir -p "scratch/$t" "corpus/$t"
    args=(-print_final_stats=1)
    [[ -n "$runs" ]] && args+=("-runs=$runs")
    [[ -n "$max_time" && "$max_time" != 0 ]] && args+=("-max_total_time=$max_time")
    start=$(date +%s)
    status=0
    nice -n 19 cargo +nightly fuzz run -O -s none "$t" "scratch/$t" "corpus/$t" -- "${args[@]}" \
        >"$log/$t" 2>&1 || status=$?
    secs=$(( $(date +%s) - start ))
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log/$t" | grep -o '[0-9]*$' || echo 0)
    crash=0
    if [[ $status -ne 0 ]] || grep -q 'ERROR: libFuzzer\|panicked at' "$log/$t"; then
        crash=1; crashed=1
        grep -m3 'panicked at\|ERROR: libFuzzer\|Test unit written' "$log/$t" >&2 || true
    fi
    rate=$(( execs / (secs > 0 ? secs : 1) ))
    printf '%-16s %14s %9s %10s %8s\n' "$t" "$execs" "$secs" "$rate" "$crash"
done
exit $crashed
