#!/usr/bin/env bash
# Regenerates link/startup-text.ld, the list of functions a short run executes that
# release links place first in the code (see build.rs). Run it after a Rust toolchain or
# dependency upgrade, or when startup code moved; commit the result. Needs valgrind.
#   TARGET_DIR=target   where to build (an unstripped release binary is built there; the
#                       next plain `cargo build --release` relinks it)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "gen-startup-order: valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
dir="${TARGET_DIR:-target}"
CARGO_TARGET_DIR="$dir" cargo build --release --quiet --example fake_vendor
# The names are the same with or without symbols; only the unstripped binary shows them.
CARGO_TARGET_DIR="$dir" cargo rustc --release --quiet --bin ikigai -- -C strip=none
python3 scripts/startup_order.py "$dir/release/ikigai" "$dir/release/examples/fake_vendor" link/startup-text.ld
