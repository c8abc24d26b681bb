#!/usr/bin/env bash
# A faster `qstp` for long sweeps: the same code built with profile-guided optimisation.
#
#   scripts/build-fast.sh          builds target/pgo/release/qstp (about 6 minutes on 2 cores)
#
# Three steps: an instrumented build (target/pgo-gen), which runs the papers' scenarios for a
# few simulated seconds each, one thread each (the counters are not atomic), and writes where
# its time goes; llvm-profdata merges that (kept as target/pgo/qstp.profdata); a
# second build (target/pgo) lays out and inlines the code by it. The simulation is the same
# program: the refactor guard gives byte-identical outputs for the two builds
# (validation/speed.md, "A build for long sweeps", has the check and the figures). The
# training runs are the papers' scenarios, not the speed benchmark's cells.
#
# Needs the toolchain's llvm-tools (`rustup component add llvm-tools`; added here if missing).
# CARGO_TARGET_DIR moves the two build folders (default: target).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${CARGO_TARGET_DIR:-target}
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [[ ! -x "$profdata" ]]; then
    echo "build-fast: adding the toolchain's llvm-tools (for llvm-profdata)" >&2
    rustup component add llvm-tools >&2 || {
        echo "build-fast: llvm-profdata is missing and 'rustup component add llvm-tools' failed; a plain 'cargo build --release' gives the same results, only slower" >&2
        exit 1
    }
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "build-fast: 1/3 instrumented build ($base/pgo-gen)" >&2
RUSTFLAGS="-Cprofile-generate=$work/raw" CARGO_TARGET_DIR="$base/pgo-gen" \
    cargo build --release -q -p qstp
gen="$base/pgo-gen/release/qstp"

echo "build-fast: 2/3 training runs" >&2
# Every kind of network the papers' scenarios build, simulating only; one of them with its
# series, figures and report as well, so that the outputs' code is trained too.
for s in hstcp-qos qstp-fig4 qstp-fig7 gtfrc-fig4 gtfrc-fig10 fs-fig4 atm-fig2; do
    echo "  $s" >&2
    "$gen" run "scenarios/$s.toml" --runs 1 --duration 20s --jobs 1 --series none --no-plots \
        --out "$work/train-$s" >/dev/null 2>"$work/train.log" || {
        echo "build-fast: training run $s failed:" >&2; cat "$work/train.log" >&2; exit 1; }
done
echo "  qstp-fig5 (with its outputs)" >&2
"$gen" run scenarios/qstp-fig5.toml --runs 1 --duration 20s --jobs 1 --out "$work/train-outputs" \
    >/dev/null 2>"$work/train.log" || {
    echo "build-fast: training run qstp-fig5 failed:" >&2; cat "$work/train.log" >&2; exit 1; }
mkdir -p "$base/pgo"
"$profdata" merge -o "$base/pgo/qstp.profdata" "$work/raw"

echo "build-fast: 3/3 optimised build ($base/pgo)" >&2
RUSTFLAGS="-Cprofile-use=$(realpath "$base/pgo/qstp.profdata")" CARGO_TARGET_DIR="$base/pgo" \
    cargo build --release -q -p qstp
echo "$base/pgo/release/qstp"
