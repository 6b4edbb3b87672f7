#!/usr/bin/env bash
# Whole-process benchmark: start, two requests, one tool, the answer, exit.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-40}"
[ -x /usr/bin/time ] || { echo "bench-process: /usr/bin/time is needed (apt-get install time)" >&2; exit 1; }
cargo build --release --quiet
cargo build --release --quiet --example fake_vendor
coproc VENDOR { exec target/release/examples/fake_vendor "$((2 * runs + 5))"; }
read -r base_url <&"${VENDOR[0]}"
python3 scripts/measure_process.py "$PWD/target/release/ikigai" "$base_url" "$runs"
exec {VENDOR[1]}>&-
wait
