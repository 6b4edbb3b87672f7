#!/usr/bin/env bash
# Compares `ikigai tool grep` / `ikigai tool glob` with ripgrep on the same generated tree
# (~50k files) in the same run, and prints our time / rg's time (target: <= 1.2x).
# Uses hyperfine when installed, else a simple timing loop (median of RUNS runs).
# Needs target/release/ikigai (`make bench` builds it). Installs ripgrep with apt-get when
# missing; skips (exit 0) with a message when it cannot.
set -euo pipefail

cd "$(dirname "$0")/.."
BIN="$PWD/target/release/ikigai"
RUNS="${RUNS:-10}"
DIRS="${DIRS:-500}"
FILES="${FILES:-100}"

if [ ! -x "$BIN" ]; then
  echo "bench-compare: building the release binary" >&2
  cargo build --release
fi

if ! command -v rg >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  if command -v apt-get >/dev/null 2>&1; then
    echo "bench-compare: installing ripgrep" >&2
    $SUDO apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq ripgrep >/dev/null || true
  fi
  if ! command -v rg >/dev/null 2>&1; then
    echo "bench-compare: ripgrep (rg) is not installed and could not be installed; skipping"
    exit 0
  fi
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/ikigai-bench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
TREE="$WORK/tree"
mkdir -p "$TREE"

# Deterministic tree: DIRS x FILES files of 20 short lines; every 97th line has a marker.
echo "bench-compare: generating $((DIRS * FILES)) files in $TREE" >&2
awk -v root="$TREE" -v dirs="$DIRS" -v files="$FILES" 'BEGIN {
  exts[0] = "rs"; exts[1] = "txt"; exts[2] = "md";
  for (d = 0; d < dirs; d++) {
    dir = sprintf("%s/d%03d", root, d);
    system("mkdir -p " dir);
    for (f = 0; f < files; f++) {
      file = sprintf("%s/f%03d.%s", dir, f, exts[f % 3]);
      for (l = 0; l < 20; l++) {
        n = d * 1000000 + f * 100 + l;
        if (n % 97 == 0) printf "// needle_marker %d\n", n > file;
        else printf "fn item_%d_%d_%d() { let value = %d; }\n", d, f, l, (n * 7919) % 10007 > file;
      }
      close(file);
    }
  }
}'

# An isolated config: the defaults (1 MiB output cap, 30 s timeout).
export IKIGAI_CONFIG="$WORK/config.toml"
: > "$IKIGAI_CONFIG"

GREP_ARGS="{\"pattern\":\"needle_marker \\\\d+\",\"path\":\"$TREE\"}"
GLOB_ARGS="{\"pattern\":\"**/*.rs\",\"path\":\"$TREE\"}"
echo "$GREP_ARGS" > "$WORK/grep.json"
echo "$GLOB_ARGS" > "$WORK/glob.json"

OUR_GREP="$BIN tool grep < $WORK/grep.json > /dev/null"
RG_GREP="rg -n --no-heading 'needle_marker \\d+' $TREE > /dev/null"
OUR_GLOB="$BIN tool glob < $WORK/glob.json > /dev/null"
RG_GLOB="rg --files -g '*.rs' $TREE > /dev/null"

# Same answers first: the comparison means nothing otherwise.
ours_count=$("$BIN" tool grep < "$WORK/grep.json" | grep -o '"count":[0-9]*' | cut -d: -f2)
rg_count=$(rg -n --no-heading 'needle_marker \d+' "$TREE" | wc -l)
ours_files=$("$BIN" tool glob < "$WORK/glob.json" | grep -o '"count":[0-9]*' | cut -d: -f2)
rg_files=$(rg --files -g '*.rs' "$TREE" | wc -l)
echo "matches: ikigai $ours_count, rg $rg_count; .rs files: ikigai $ours_files, rg $rg_files"
if [ "$ours_count" != "$rg_count" ] || [ "$ours_files" != "$rg_files" ]; then
  echo "bench-compare: ikigai and rg disagree; not comparing" >&2
  exit 1
fi

# Median wall time of one shell command in milliseconds.
median_ms() {
  local cmd="$1" i t0 t1
  bash -c "$cmd" # warm-up
  for ((i = 0; i < RUNS; i++)); do
    t0=$(date +%s%N)
    bash -c "$cmd"
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000))
  done | sort -n | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.1f\n", m / 1000 }'
}

compare() {
  local name="$1" ours="$2" theirs="$3" ours_ms rg_ms
  if command -v hyperfine >/dev/null 2>&1; then
    hyperfine --warmup 2 --runs "$RUNS" --export-json "$WORK/$name.json" -n "ikigai $name" "$ours" -n "rg $name" "$theirs" >&2
    read -r ours_ms rg_ms < <(grep -o '"median": *[0-9.e+-]*' "$WORK/$name.json" | awk -F: '{ printf "%.1f ", $2 * 1000 }')
  else
    ours_ms=$(median_ms "$ours")
    rg_ms=$(median_ms "$theirs")
  fi
  awk -v n="$name" -v o="$ours_ms" -v r="$rg_ms" 'BEGIN {
    ratio = o / r;
    printf "%-5s ikigai %8.1f ms   rg %8.1f ms   ratio %.2fx  (target <= 1.20x) %s\n", n, o, r, ratio, (ratio <= 1.2 ? "ok" : "SLOWER")
  }'
}

echo "tree: $((DIRS * FILES)) files; $(nproc) cores; rg $(rg --version | head -1 | cut -d' ' -f2); median of $RUNS runs"
compare grep "$OUR_GREP" "$RG_GREP"
compare glob "$OUR_GLOB" "$RG_GLOB"
