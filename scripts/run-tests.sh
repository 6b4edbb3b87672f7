#!/usr/bin/env bash
# Runs every test target and ends with one total line, "tests: N passed, M failed",
# so the closing line of a run speaks for the whole suite.
set -uo pipefail
cd "$(dirname "$0")/.."
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
cargo test --all-targets --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
awk '/^test result:/ {
       for (i = 1; i <= NF; i++) {
         if ($(i+1) ~ /^passed;?$/) p += $i
         if ($(i+1) ~ /^failed;?$/) f += $i
       }
     }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
