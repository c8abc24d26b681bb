#!/usr/bin/env bash
# Moves SIZE_MIB (default 1024) MiB over loopback with `qstp send` / `qstp recv` (release build)
# and reports goodput and CPU seconds per GiB (sender + receiver, user + system), next to
# QUIC (quinn, its defaults, TLS 1.3 with a self-signed certificate: validation/quinn-bulk),
# `iperf3 -u -b 0 -l 1400` and kernel TCP (iperf3) measured the same way in the same run. qstp
# and quinn both store the data in a file; iperf3 does not.
# A benchmark, not a test: numbers depend on the machine and its load.
#
# Usage: scripts/bench-net.sh            (SIZE_MIB=256 scripts/bench-net.sh for a quick run)
#        RUNS=5 scripts/bench-net.sh     five rounds, then how often qstp's goodput was at or
#                                        above quinn's and its CPU per GiB at or below
#
# SKIP_BUILD=1 uses the release binary already built, so the script can run under the same lock
# as builds (`flock /tmp/qstp-cargo.lock env SKIP_BUILD=1 scripts/bench-net.sh`) with no build
# beside it.
set -euo pipefail

SIZE_MIB=${SIZE_MIB:-1024}
RUNS=${RUNS:-1}
PORT=${PORT:-47311}
BYTES=$((SIZE_MIB * 1024 * 1024))
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if ! command -v iperf3 >/dev/null; then
    echo "installing iperf3..." >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq iperf3 >/dev/null
fi
command -v jq >/dev/null || { echo "bench-net.sh needs jq" >&2; exit 1; }

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    (cd "$ROOT" && cargo build --release -q -p qstp)
    (cd "$ROOT/validation/quinn-bulk" && cargo build --release -q)
fi
QUINN="$ROOT/validation/quinn-bulk/target/release/quinn-bulk"
QSTP="${CARGO_TARGET_DIR:-$ROOT/target}/release/qstp"
WORK=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT

# CPU seconds (user + system) recorded by /usr/bin/time -f '%U %S' into file $1.
cpu_of() { awk '{ s += $1 + $2 } END { printf "%.3f", s }' "$1"; }
gib() { echo "$BYTES / 1073741824" | bc -l; }
row() { printf "%-22s %10.1f Mbit/s %8.2f CPU s/GiB   %s\n" "$1" "$2" "$3" "$4"; }

echo "moving $SIZE_MIB MiB over loopback on $(nproc) cores"

round() {
    # --- qstp: file from /dev/zero through stdin, received into a directory (hash checked) ---
    mkdir -p "$WORK/out"
    /usr/bin/time -f '%U %S' -o "$WORK/recv.cpu" "$QSTP" recv --listen "127.0.0.1:$PORT" --once --quiet --out "$WORK/out" &
    PIDS+=($!)
    RECV_PID=$!
    sleep 0.3
    START=$(date +%s.%N)
    head -c "$BYTES" /dev/zero | /usr/bin/time -f '%U %S' -o "$WORK/send.cpu" \
        "$QSTP" send - --to "127.0.0.1:$PORT" --quiet --stats-json "$WORK/qstp.json"
    wait "$RECV_PID"
    END=$(date +%s.%N)
    rm -rf "$WORK/out"
    QSTP_GOODPUT=$(jq '.goodput_bps / 1e6' "$WORK/qstp.json")
    QSTP_CPU=$(echo "($(cpu_of "$WORK/send.cpu") + $(cpu_of "$WORK/recv.cpu")) / $(gib)" | bc -l)
    QSTP_NOTE=$(jq -r '"\(.retransmissions) retransmissions, wall \((.duration_s*100|floor)/100) s"' "$WORK/qstp.json")

    # --- quinn: the same bytes through stdin, one unidirectional stream, stored in a file ---
    rm -f "$WORK/quinn.der"
    /usr/bin/time -f '%U %S' -o "$WORK/quinn-recv.cpu" "$QUINN" recv --listen "127.0.0.1:$PORT" \
        --cert "$WORK/quinn.der" --out "$WORK/quinn.bin" 2>/dev/null &
    PIDS+=($!)
    RECV_PID=$!
    for _ in $(seq 100); do [ -s "$WORK/quinn.der" ] && break; sleep 0.05; done
    head -c "$BYTES" /dev/zero | /usr/bin/time -f '%U %S' -o "$WORK/quinn-send.cpu" \
        "$QUINN" send --to "127.0.0.1:$PORT" --cert "$WORK/quinn.der" >"$WORK/quinn.json"
    wait "$RECV_PID"
    [ "$(stat -c %s "$WORK/quinn.bin")" = "$BYTES" ] || { echo "quinn stored the wrong size" >&2; exit 1; }
    rm -f "$WORK/quinn.bin"
    QUINN_GOODPUT=$(jq '.goodput_bps / 1e6' "$WORK/quinn.json")
    QUINN_CPU=$(echo "($(cpu_of "$WORK/quinn-send.cpu") + $(cpu_of "$WORK/quinn-recv.cpu")) / $(gib)" | bc -l)
    QUINN_NOTE=$(jq -r '"\(.lost_packets) packets lost, wall \((.duration_s*100|floor)/100) s"' "$WORK/quinn.json")

    # --- iperf3 UDP, unlimited rate, 1400-byte datagrams ---
    /usr/bin/time -f '%U %S' -o "$WORK/iperf-udp-s.cpu" iperf3 -s -1 -p "$PORT" >/dev/null &
    PIDS+=($!); SERVER_PID=$!
    sleep 0.3
    /usr/bin/time -f '%U %S' -o "$WORK/iperf-udp-c.cpu" iperf3 -c 127.0.0.1 -p "$PORT" -u -b 0 -l 1400 -n "$BYTES" --json >"$WORK/udp.json"
    wait "$SERVER_PID" || true
    UDP_RATE=$(jq '.end.sum.bits_per_second / 1e6' "$WORK/udp.json")
    UDP_LOST=$(jq '.end.sum.lost_percent // 0' "$WORK/udp.json")
    UDP_GOODPUT=$(echo "$UDP_RATE * (100 - $UDP_LOST) / 100" | bc -l)
    UDP_CPU=$(echo "($(cpu_of "$WORK/iperf-udp-s.cpu") + $(cpu_of "$WORK/iperf-udp-c.cpu")) / $(gib)" | bc -l)

    # --- iperf3 TCP (kernel TCP) ---
    /usr/bin/time -f '%U %S' -o "$WORK/iperf-tcp-s.cpu" iperf3 -s -1 -p "$PORT" >/dev/null &
    PIDS+=($!); SERVER_PID=$!
    sleep 0.3
    /usr/bin/time -f '%U %S' -o "$WORK/iperf-tcp-c.cpu" iperf3 -c 127.0.0.1 -p "$PORT" -n "$BYTES" --json >"$WORK/tcp.json"
    wait "$SERVER_PID" || true
    TCP_GOODPUT=$(jq '.end.sum_received.bits_per_second / 1e6' "$WORK/tcp.json")
    TCP_CPU=$(echo "($(cpu_of "$WORK/iperf-tcp-s.cpu") + $(cpu_of "$WORK/iperf-tcp-c.cpu")) / $(gib)" | bc -l)

    echo
    row "qstp send/recv" "$QSTP_GOODPUT" "$QSTP_CPU" "$QSTP_NOTE (verified, written to disk)"
    row "quinn (QUIC)" "$QUINN_GOODPUT" "$QUINN_CPU" "$QUINN_NOTE (written to disk)"
    row "iperf3 -u -b 0 -l 1400" "$UDP_GOODPUT" "$UDP_CPU" "$(printf '%.1f Mbit/s sent, %.1f%% lost' "$UDP_RATE" "$UDP_LOST")"
    row "iperf3 TCP" "$TCP_GOODPUT" "$TCP_CPU" "kernel TCP"
    echo
    echo "qstp goodput is $(echo "100 * $QSTP_GOODPUT / $QUINN_GOODPUT" | bc -l | xargs printf '%.0f')% of quinn's, its CPU per GiB $(echo "100 * $QSTP_CPU / $QUINN_CPU" | bc -l | xargs printf '%.0f')% of quinn's"
    echo "qstp goodput is $(echo "100 * $QSTP_GOODPUT / $UDP_RATE" | bc -l | xargs printf '%.0f')% of iperf3 UDP's sending rate and $(echo "100 * $QSTP_GOODPUT / $UDP_GOODPUT" | bc -l | xargs printf '%.0f')% of its goodput"
}

AHEAD=0; LEANER=0; TABLE=""
for run in $(seq "$RUNS"); do
    [ "$RUNS" -gt 1 ] && echo && echo "round $run of $RUNS"
    round
    AHEAD=$((AHEAD + $(echo "$QSTP_GOODPUT >= $QUINN_GOODPUT" | bc -l)))
    LEANER=$((LEANER + $(echo "$QSTP_CPU <= $QUINN_CPU" | bc -l)))
    TABLE+=$(printf '| %d | %.0f | %.0f | %.2f | %.2f |' "$run" "$QSTP_GOODPUT" "$QUINN_GOODPUT" "$QSTP_CPU" "$QUINN_CPU")$'\n'
done
if [ "$RUNS" -gt 1 ]; then
    echo
    echo "| round | qstp Mbit/s | quinn Mbit/s | qstp CPU s/GiB | quinn CPU s/GiB |"
    echo "|---|---|---|---|---|"
    printf '%s' "$TABLE"
    echo
    echo "qstp's goodput at or above quinn's in $AHEAD of $RUNS rounds; its CPU per GiB at or below quinn's in $LEANER of $RUNS"
fi
