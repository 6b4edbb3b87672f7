#!/usr/bin/env bash
# A prompt through `ikigai acp` against the same prompt through `ikigai -p --json`, in the
# same run against one loopback fake vendor (scripts/measure_acp.py), and the time
# `initialize` takes to answer from the start of `ikigai acp`.
#   RUNS=40             runs of each
#   PROFILE=release     or `debug` to check the script quickly (numbers mean nothing then)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-40}"
profile="${PROFILE:-release}"
case "$profile" in
  release) flags=(--release); dir=target/release ;;
  debug) flags=(); dir=target/debug ;;
  *) echo "bench-acp: PROFILE is release or debug" >&2; exit 2 ;;
esac
cargo build "${flags[@]}" --quiet
cargo build "${flags[@]}" --quiet --example fake_vendor
coproc VENDOR { exec "$dir/examples/fake_vendor" "$((3 * runs + 10))"; }
read -r base_url <&"${VENDOR[0]}"
echo "== ikigai acp against -p --json ($profile build)"
python3 scripts/measure_acp.py "$PWD/$dir/ikigai" "$base_url" "$runs"
vendor_pid=$VENDOR_PID
exec {VENDOR[1]}>&-
wait "$vendor_pid"
