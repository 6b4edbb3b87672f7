#!/usr/bin/env bash
# Long stored sessions, whole process: `--continue` on sessions of 60 to 15,000 events,
# one bash tool call. BEFORE=path/to/other/ikigai measures that binary in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
cargo build --release --quiet --example fake_vendor
bins="$PWD/target/release/ikigai${BEFORE:+,$BEFORE}"
coproc VENDOR { exec target/release/examples/fake_vendor 2000 'bash={"command":"echo hi"}'; }
read -r base_url <&"${VENDOR[0]}"
python3 scripts/measure_long_session.py "$bins" "$base_url" "${SIZES:-10,170,1700,2500}" "${RUNS:-5}"
exec {VENDOR[1]}>&-
wait
