#!/bin/sh
# validation/ns2/table.md: every experiment in ns-2.35 (`ns`; apt-get install ns2), run only where
# its result is missing from results/ (FRESH=1 runs them all again), beside the lab (QSTP_BIN, default
# target/release/qstp) and the papers. SEEDS (default 3) runs per row.
set -e
cd "$(dirname "$0")"
command -v ns > /dev/null || { echo "ns not found: apt-get install ns2" >&2; exit 1; }
python3 compare.py --markdown --seeds "${SEEDS:-3}" --af-seeds "${AF_SEEDS:-10}" ${FRESH:+--fresh} > table.md.new
mv table.md.new table.md
tail -1 table.md
