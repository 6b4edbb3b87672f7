#!/usr/bin/env bash
# Whole-process benchmark: start, two requests, one tool, the answer, exit.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-40}"
cargo build --release --quiet
cargo build --release --quiet --example fake_vendor
coproc VENDOR { exec target/release/examples/fake_vendor "$((runs + 5))"; }
read -r base_url <&"${VENDOR[0]}"
python3 scripts/measure_process.py target/release/ikigai "$base_url" "$runs"
exec {VENDOR[1]}>&-
wait
