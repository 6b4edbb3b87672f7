#!/usr/bin/env bash
# Whole-process benchmark: start, two requests, one tool, the answer, exit; once per
# provider kind, each against its loopback fake vendor (scripts/measure_process.py).
#   RUNS=40                          runs per measurement
#   KINDS="openai-chat openai-responses anthropic google"   the kinds to measure
#   PROFILE=release                  or `debug` to check the script quickly (numbers mean
#                                    nothing then)
#   BEFORE=/path/to/an/older/ikigai  measured too, right after ours, against the same fake
# No `context_window` is set: with openai-chat (a loopback base_url) the server is asked
# for its window, as a local server is.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-40}"
kinds="${KINDS:-openai-chat openai-responses anthropic google}"
profile="${PROFILE:-release}"
[ -x /usr/bin/time ] || { echo "bench-process: /usr/bin/time is needed (apt-get install time)" >&2; exit 1; }
case "$profile" in
  release) flags=(--release); dir=target/release ;;
  debug) flags=(); dir=target/debug ;;
  *) echo "bench-process: PROFILE is release or debug" >&2; exit 2 ;;
esac
cargo build "${flags[@]}" --quiet
cargo build "${flags[@]}" --quiet --example fake_vendor
for kind in $kinds; do
  # The provider preset that speaks this kind.
  case "$kind" in
    openai-chat) provider=openai ;;
    openai-responses|anthropic|google) provider="$kind" ;;
    *) echo "bench-process: unknown kind $kind" >&2; exit 2 ;;
  esac
  coproc VENDOR { exec "$dir/examples/fake_vendor" "$((4 * runs + 10))" --kind "$kind"; }
  read -r base_url <&"${VENDOR[0]}"
  echo "== $kind (--provider $provider, $profile build)"
  python3 scripts/measure_process.py "$PWD/$dir/ikigai" "$base_url" "$runs" "$provider"
  if [ -n "${BEFORE:-}" ]; then
    echo "-- before: $BEFORE"
    python3 scripts/measure_process.py "$BEFORE" "$base_url" "$runs" "$provider"
  fi
  vendor_pid=$VENDOR_PID
  exec {VENDOR[1]}>&-
  wait "$vendor_pid"
done
