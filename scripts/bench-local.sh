#!/usr/bin/env bash
# Side-by-side figures for the in-process engine (feature `local`) and llama.cpp's own
# server on the same model, prompt, thread count and context: load time, time to first
# token, prompt and generation tokens/s, one tool round trip (closing tag -> first token
# after the output: in-process injection vs a prefill request over HTTP), peak RSS.
# Needs the server from the shared dev setup (LLM_DIR/setup.sh builds it: llama.cpp from
# PyPI's llama-cpp-python sdist, GGML_NATIVE=OFF). Prints JSON and a short table.
# Prompt and generation tokens/s are medians of REPS runs per side, alternating between
# the two (each run a different prompt, so neither reuses a cache).
# Env: MODEL (default: the test model), THREADS=2 CTX=8192 GEN=128 PORT=18093 REPS=5
#      LLM_DIR (default /work/shared/local-llm or $IKIGAI_LOCAL_LLM)
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-${IKIGAI_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/ikigai/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}}
THREADS=${THREADS:-2}; CTX=${CTX:-8192}; GEN=${GEN:-128}; PORT=${PORT:-18093}; REPS=${REPS:-5}
LLM_DIR=${LLM_DIR:-${IKIGAI_LOCAL_LLM:-/work/shared/local-llm}}
ROOT=${ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/ikigai-dev/local-llm}
[ -f "$MODEL" ] || { echo "bench-local: model $MODEL missing: run make deps" >&2; exit 1; }

# The same CPU features on both sides: llama.cpp in ikigai is built for the portable AVX2
# baseline (.cargo/config.toml); the server's build chose its own. Unless SAME_FLAGS=0, the
# bench binary is built (in its own target folder) with the GGML_* variant the server's
# CMake log names, so the figures compare the engines, not the instruction sets.
FLAGS=""
if [ "${SAME_FLAGS:-1}" = 1 ] && [ -f "$ROOT/build-server.cmake.log" ]; then
  FLAGS=$(grep -o 'Adding CPU backend variant ggml-cpu: .*' "$ROOT/build-server.cmake.log" | head -1 \
          | grep -oE 'GGML_[A-Z0-9_]+' | sort -u | sed 's/$/=ON/' | tr '\n' ' ')
fi
if [ -n "$FLAGS" ]; then
  echo "bench-local: building with the server's CPU variant: $FLAGS" >&2
  # llama-cpp-sys-2 only notices GGML_* variables it saw on its last build: rebuild it
  # whenever the variant changes.
  if [ "$(cat target/bench-local/flags 2>/dev/null)" != "$FLAGS" ]; then
    CARGO_TARGET_DIR=target/bench-local cargo clean --release -p llama-cpp-sys-2 >&2 || true
  fi
  env $FLAGS CARGO_TARGET_DIR=target/bench-local cargo build --release --example bench_local >&2
  echo "$FLAGS" > target/bench-local/flags
  BIN=target/bench-local/release/examples/bench_local
else
  cargo build --release --example bench_local >&2
  BIN=target/release/examples/bench_local
fi

SERVER_JSON=""
if [ -x "$ROOT/bin/llama-server" ]; then
  t0=$(date +%s.%N)
  URL=$(PORT=$PORT CTX=$CTX THREADS=$THREADS TEMPLATE=builtin bash "$LLM_DIR/start.sh" "$MODEL")
  t1=$(date +%s.%N)
  PID=$(cat "$ROOT/run/llama-server-$PORT.pid")
  trap 'PORT=$PORT bash "$LLM_DIR/stop.sh" >/dev/null 2>&1 || true' EXIT
  OUT=$("$BIN" "$MODEL" --server "$URL" --threads "$THREADS" --ctx "$CTX" --gen "$GEN" --reps "$REPS")
  SRV_RSS=$(awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$PID/status")
  SRV_LOAD=$(echo "($t1 - $t0) * 1000" | bc)
  SERVER_JSON="{\"load_ms\": $SRV_LOAD, \"peak_rss_mib\": $SRV_RSS}"
else
  echo "bench-local: no llama-server at $ROOT/bin (run $LLM_DIR/setup.sh); in-process figures only" >&2
  OUT=$("$BIN" "$MODEL" --threads "$THREADS" --ctx "$CTX" --gen "$GEN")
fi
python3 - "$OUT" "$SERVER_JSON" <<'PY'
import json, sys
out = json.loads(sys.argv[1])
if sys.argv[2]:
    out["server"].update(json.loads(sys.argv[2]))
print(json.dumps(out, indent=2))
ip, sv = out["in_process"], out.get("server")
rows = [("load (ms)", "load_ms"), ("time to first token (ms)", "ttft_ms"), ("prompt tokens/s", "prompt_tps"),
        ("generation tokens/s", "gen_tps"), ("tool round trip (ms)", "round_trip_ms"),
        ("tool round trip, server cache lost (ms)", "round_trip_uncached_ms"), ("peak RSS (MiB)", "peak_rss_mib")]
print(f"\n{'threads=%d ctx=%d' % (out['threads'], out['ctx']):40} {'in-process':>12} {'llama-server':>13} {'ratio':>7}")
for name, key in rows:
    a = ip.get(key if key != "round_trip_uncached_ms" else "round_trip_ms"); b = sv.get(key) if sv else None
    r = f"{a / b:.2f}" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else ""
    fa = f"{a:.1f}" if isinstance(a, (int, float)) else "-"
    fb = f"{b:.1f}" if isinstance(b, (int, float)) else "-"
    print(f"{name:40} {fa:>12} {fb:>13} {r:>7}")
PY
