#!/bin/sh
# The comparison table: ns-3 runs of the 8 controls at 1, 2 and 8 flows, 60 simulated seconds,
# seed 1 (results/<cc>-<flows>-60s.json, kept when present unless FRESH=1), then the lab against
# them (compare.py, needs target/release/qstp) into table.md, means over seeds 1..SEEDS (default 3)
# and, for 8 flows, seeds 1..SEEDS_8 (default 7: one 8-flow run's Jain index swings by 0.2 between
# seeds); compare.py runs and caches ns-3 for the other seeds, results/<cc>-<flows>-60s-seedN.json.
# BIC, CUBIC, H-TCP and YeAH get two lab rows,
# the published algorithm and ns3 = 1; VARIANTS=published or VARIANTS=ns3 keeps one.
set -e
cd "$(dirname "$0")"
mkdir -p results
for cc in newreno highspeed bic scalable cubic htcp illinois yeah; do
  for n in 1 2 8; do
    out="results/${cc}-${n}-60s.json"
    if [ -s "$out" ] && [ -z "$FRESH" ]; then
      continue
    fi
    nice -n 19 python3 ns3_dumbbell.py --cc "$cc" --flows "$n" --duration 60 \
      > "$out" 2> /dev/null
    echo "done $cc $n"
  done
done
nice -n 10 python3 compare.py --markdown --seeds "${SEEDS:-3}" --seeds-at "8=${SEEDS_8:-7}" --variants "${VARIANTS:-both}" > table.md
