#!/usr/bin/env bash
# The re-execution at start (the environment scrub), without strace
# (scripts/measure_reexec.py), against the openai-chat loopback fake.
#   RUNS=20   BEFORE=/path/to/an/older/ikigai (measured too, in the same run)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-20}"
cargo build --release --quiet
cargo build --release --quiet --example fake_vendor
coproc VENDOR { exec target/release/examples/fake_vendor "$((8 * runs + 10))"; }
read -r base_url <&"${VENDOR[0]}"
python3 scripts/measure_reexec.py "$PWD/target/release/ikigai" "$base_url" "$runs"
if [ -n "${BEFORE:-}" ]; then
  echo "-- before: $BEFORE"
  python3 scripts/measure_reexec.py "$BEFORE" "$base_url" "$runs"
fi
vendor_pid=$VENDOR_PID
exec {VENDOR[1]}>&-
wait "$vendor_pid"
