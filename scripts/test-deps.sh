#!/usr/bin/env bash
# Makes sure the programs the test suite runs for real are installed:
# PostgreSQL's initdb/pg_ctl/postgres (ephemeral test clusters) and tmux (end-to-end TUI tests),
# plus what the in-process engine (cargo feature `local`) needs: cmake and clang/libclang to
# build llama.cpp, and the real test model, fetched once (scripts/fetch-test-model.sh).
# The MCP tests' reference server and clients come from the npm registry and PyPI
# (scripts/fetch-mcp-servers.sh).
# `--build`: only what building needs (cmake, clang/libclang); `make build`/`make run` use it.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD_ONLY=0
[ "${1:-}" = "--build" ] && BUILD_ONLY=1
finish() {
  [ "$BUILD_ONLY" = 1 ] && exit 0
  bash "$HERE/fetch-mcp-servers.sh"
  exec bash "$HERE/fetch-test-model.sh"
}

have_pg() {
  command -v initdb >/dev/null 2>&1 && return 0
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}

missing=()
if [ "$BUILD_ONLY" = 0 ]; then
  have_pg || missing+=(postgresql)
  command -v tmux >/dev/null 2>&1 || missing+=(tmux)
  # The Python MCP reference client goes into a virtual environment (fetch-mcp-servers.sh);
  # Debian's python3 makes one only with python3-venv (ensurepip).
  python3 -c 'import ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
fi
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v clang >/dev/null 2>&1 || missing+=(clang)
have_libclang() { ls /usr/lib/llvm-*/lib/libclang*.so* /usr/lib/*/libclang*.so* >/dev/null 2>&1; }
have_libclang || missing+=(libclang-dev)

if [ ${#missing[@]} -eq 0 ]; then
  finish
fi

echo "test-deps: installing ${missing[*]}" >&2
if ! command -v apt-get >/dev/null 2>&1; then
  echo "test-deps: cannot install ${missing[*]}: no apt-get here; install them by hand" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
for m in "${missing[@]}"; do
  case "$m" in
    postgresql) have_pg || { echo "test-deps: postgresql installed but initdb not found" >&2; exit 1; } ;;
    tmux) command -v tmux >/dev/null || { echo "test-deps: tmux not found after install" >&2; exit 1; } ;;
    cmake|clang) command -v "$m" >/dev/null || { echo "test-deps: $m not found after install" >&2; exit 1; } ;;
    libclang-dev) have_libclang || { echo "test-deps: libclang not found after install" >&2; exit 1; } ;;
  esac
done
finish
