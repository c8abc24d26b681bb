#!/usr/bin/env bash
# Run every fuzz target in turn, one at a time at the lowest priority, and print a table of what
# each did: executions, seconds, executions per second, crashes.
#
#   fuzz/run-all.sh SECONDS                     each target for SECONDS
#   fuzz/run-all.sh --runs N [--max-time S]     each target for N executions (at most S seconds)
#   TARGETS="connection open_protected" fuzz/run-all.sh 60     only these
#   FUZZ_BUILD_LOCK=/tmp/cargo.lock fuzz/run-all.sh 60         build under `flock -o` that file
#
# Every target is built first, in one cargo call, without a sanitizer (-s none): qstp-proto
# forbids unsafe code, and AddressSanitizer only slowed the targets threefold. Then each binary
# runs on its own (no cargo while fuzzing), with a scratch corpus first (scratch/TARGET, ignored
# by git: what it finds goes there) and the committed seeds second (corpus/TARGET). A crash is
# saved under artifacts/TARGET/; each run's log is kept as scratch/logs/TARGET.log. Exit status
# 1 if any target crashed.
set -euo pipefail
cd "$(dirname "$0")"
usage() { echo "usage: $0 SECONDS | --runs N [--max-time S]" >&2; exit 2; }
runs=""; max_time=""
case "${1:-}" in
--runs)
    runs=${2:-}; [[ "$runs" =~ ^[0-9]+$ ]] || usage
    if [[ $# -gt 2 ]]; then
        [[ "${3:-}" == --max-time && "${4:-}" =~ ^[0-9]+$ && $# -eq 4 ]] || usage
        max_time=$4
    fi ;;
*) [[ $# -eq 1 && "${1:-}" =~ ^[0-9]+$ ]] || usage; max_time=$1 ;;
esac
lock=()
[[ -n "${FUZZ_BUILD_LOCK:-}" ]] && lock=(flock -o "$FUZZ_BUILD_LOCK")
targets=${TARGETS:-$(cargo +nightly fuzz list)}
mkdir -p scratch/logs
"${lock[@]}" cargo +nightly fuzz build -O -s none >scratch/logs/build.log 2>&1 \
    || { cat scratch/logs/build.log >&2; exit 1; }
bin=target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release
echo "qstp $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- ../crates/proto . || echo ' (modified)')," \
    "$(date -u '+%Y-%m-%d %H:%M UTC'), $0 $*"
crashed=0
printf '%-16s %14s %9s %10s %8s\n' target executions seconds 'execs/s' crashes
for t in $targets; do
    mkdir -p "scratch/$t" "corpus/$t" "artifacts/$t"
    args=(-print_final_stats=1 "-artifact_prefix=artifacts/$t/")
    [[ -n "$runs" ]] && args+=("-runs=$runs")
    [[ -n "$max_time" ]] && args+=("-max_total_time=$max_time")
    log=scratch/logs/$t.log
    start=$(date +%s)
    status=0
    nice -n 19 "$bin/$t" "${args[@]}" "scratch/$t" "corpus/$t" >"$log" 2>&1 || status=$?
    secs=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    execs=${execs:-0}
    crash=0
    if [[ $status -ne 0 ]] || grep -q 'ERROR: libFuzzer\|panicked at' "$log"; then
        crash=1; crashed=1
        grep -m3 'panicked at\|ERROR: libFuzzer\|Test unit written' "$log" >&2 || true
    fi
    rate=$(( execs / (secs > 0 ? secs : 1) ))
    printf '%-16s %14s %9s %10s %8s\n' "$t" "$execs" "$secs" "$rate" "$crash"
done
exit $crashed
