#!/bin/sh
# Runs the README results table: newreno, cubic, highspeed at 1, 2 and 8 flows,
# 60 simulated seconds each, default path, seed 1.  One JSON per run in
# results/<cc>-<flows>-60s.json (the names compare.py uses as its cache).
set -e
cd "$(dirname "$0")"
mkdir -p results
for cc in newreno cubic highspeed; do
  for n in 1 2 8; do
    nice -n 19 python3 ns3_dumbbell.py --cc "$cc" --flows "$n" --duration 60 \
      > "results/${cc}-${n}-60s.json" 2> /dev/null
    echo "done $cc $n"
  done
done
