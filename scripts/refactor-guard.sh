#!/usr/bin/env bash
# The refactor guard (docs/ARCHITECTURE.md, "Checks that keep the layout honest"): run every
# scenario of scenarios/, scenarios/examples/ and scripts/guard-scenarios/ (the TCP model's
# recoveries and ns-3 variants, which no paper's scenario uses) with --runs 2 --duration 30s and
# keep its summary.json, runs.csv and series.csv; compare two such folders byte for byte.
#
#   scripts/refactor-guard.sh save DIR          outputs of the current build into DIR
#   scripts/refactor-guard.sh compare OLD NEW   exit 1 and show every difference (beside the
#                                               commit each summary.json names)
#
# QSTP_BIN picks the binary (default target/release/qstp, built first).
set -euo pipefail
cd "$(dirname "$0")/.."
cmd=${1:-}
case "$cmd" in
save)
    out=${2:?usage: scripts/refactor-guard.sh save DIR}
    if [[ -e "$out" ]]; then echo "refactor-guard: $out exists; pick a new folder" >&2; exit 2; fi
    bin=${QSTP_BIN:-}
    if [[ -z "$bin" ]]; then cargo build --release -q -p qstp; bin=target/release/qstp; fi
    mkdir -p "$out"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    n=0
    for f in scenarios/*.toml scenarios/examples/*.toml scripts/guard-scenarios/*.toml; do
        name=$(basename "$f" .toml)
        [[ "$f" == scenarios/examples/* ]] && name="examples-$name"
        [[ "$f" == scripts/guard-scenarios/* ]] && name="guard-$name"
        n=$((n + 1))
        printf '%3d %s\n' "$n" "$f" >&2
        "$bin" run "$f" --runs 2 --duration 30s --out "$tmp/$name" >/dev/null 2>"$tmp/$name.log" || {
            echo "refactor-guard: $f failed:" >&2; cat "$tmp/$name.log" >&2; exit 1; }
        mkdir -p "$out/$name"
        for k in summary.json runs.csv series.csv; do
            [[ -f "$tmp/$name/$k" ]] && cp "$tmp/$name/$k" "$out/$name/$k"
        done
    done
    echo "refactor-guard: $n scenarios saved in $out" >&2
    ;;
compare)
    old=${2:?usage: scripts/refactor-guard.sh compare OLD NEW}
    new=${3:?usage: scripts/refactor-guard.sh compare OLD NEW}
    # summary.json names the commit that produced it: the one line allowed to differ.
    if diff -r -I '^  "git_commit": ' "$old" "$new"; then
        echo "refactor-guard: every output identical, byte for byte but for the commit each summary names ($(find "$old" -type f | wc -l) files)" >&2
    else
        echo "refactor-guard: the files above differ" >&2; exit 1
    fi
    ;;
*)
    echo "usage: scripts/refactor-guard.sh save DIR | compare OLD NEW" >&2; exit 2 ;;
esac
