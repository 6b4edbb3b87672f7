#!/usr/bin/env bash
# What checkpoints cost a turn in a 100,000-file repository (issue 39 §2), whole process:
# generates the repository once (scripts/gen-big-repo.sh; kept in BIG_REPO when given,
# else in a temporary folder removed at the end), then scripts/bench_checkpoints.py.
#   RUNS=3 TURNS=6         runs per measurement, turns of the measured session
#   FILES=100000           files of a generated repository
#   BIG_REPO=/tmp/big      reuse (or keep) the repository there
#   BEFORE=/path/ikigai    an older build, measured in the same run ("before")
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
cargo build --release --quiet --example fake_vendor
repo="${BIG_REPO:-}"
if [ -z "$repo" ]; then
  work="$(mktemp -d "${TMPDIR:-/tmp}/ikigai-bench-cp.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  repo="$work/repo"
fi
if [ ! -d "$repo/.git" ]; then
  echo "bench-checkpoints: generating ${FILES:-100000} files in $repo" >&2
  bash scripts/gen-big-repo.sh "$repo"
fi
python3 scripts/bench_checkpoints.py "$repo" "$PWD/target/release/examples/fake_vendor" \
  "${RUNS:-3}" "${TURNS:-6}" "$PWD/target/release/ikigai" ${BEFORE:+"$BEFORE"}
