#!/usr/bin/env bash
# Makes sure the programs the test suite runs for real are installed:
# PostgreSQL's initdb/pg_ctl/postgres (ephemeral test clusters) and tmux (end-to-end TUI tests).
set -euo pipefail

have_pg() {
  command -v initdb >/dev/null 2>&1 && return 0
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}

missing=()
have_pg || missing+=(postgresql)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
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
  esac
done
