#!/usr/bin/env bash
# Write the seeds of open_protected from the decoders' seeds (corpus/decode_data, _feedback,
# _close): each packet behind a mode byte (see fuzz_targets/open_protected.rs), sealed by the
# client, sealed by the server and opened in place, or sent as it is (the rejection path).
# Run it again after `QSTP_WRITE_CORPUS=1 cargo test -p qstp-proto --test it fuzz_corpus`.
set -euo pipefail
cd "$(dirname "$0")/corpus"
mkdir -p open_protected
for kind in data feedback close; do
    for seed in "decode_$kind"/*; do
        name=$(basename "$seed")
        { printf '\x01'; cat "$seed"; } >"open_protected/seal_$name"
        { printf '\x13'; cat "$seed"; } >"open_protected/seal_back_$name"
        { printf '\x00'; cat "$seed"; } >"open_protected/raw_$name"
    done
done
