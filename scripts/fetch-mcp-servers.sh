#!/usr/bin/env bash
# Installs the real MCP reference server the MCP tests run,
# @modelcontextprotocol/server-everything, and the official ACP SDK whose client side the
# `ikigai acp` tests drive, @agentclientprotocol/sdk (both pinned below), from the npm
# registry into a cache
# folder outside the repository (never node_modules in the tree); and the Python MCP SDK
# (`mcp` from PyPI, pinned below), whose stdio client the `ikigai mcp serve` tests drive,
# into a virtual environment in the same folder (py/). Idempotent: an install of
# the pinned versions is left alone. Needs node and npm (installed from Debian when
# missing) and python3 with venv.
# Where: $IKIGAI_MCP_SERVERS if set, else ${XDG_CACHE_HOME:-~/.cache}/ikigai/mcp/.
set -euo pipefail
VERSION=2026.8.31
ACP_VERSION=2.4.0
PY_MCP_VERSION=2.3.0
DIR=${IKIGAI_MCP_SERVERS:-${XDG_CACHE_HOME:-$HOME/.cache}/ikigai/mcp}
PKG="$DIR/node_modules/@modelcontextprotocol/server-everything/package.json"
ACP_PKG="$DIR/node_modules/@agentclientprotocol/sdk/package.json"
log() { echo "fetch-mcp-servers: $*" >&2; }

# The Python reference client.
PY="$DIR/py/bin/python"
if ! { [ -x "$PY" ] && [ "$("$PY" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" = "$PY_MCP_VERSION" ]; }; then
  mkdir -p "$DIR"
  log "installing mcp==$PY_MCP_VERSION (PyPI) into $DIR/py"
  python3 -m venv "$DIR/py" || { log "python3 -m venv failed (on Debian: apt-get install python3-venv)"; exit 1; }
  "$DIR/py/bin/pip" install --quiet --disable-pip-version-check "mcp==$PY_MCP_VERSION"
fi

if [ -f "$PKG" ] && grep -q "\"version\": \"$VERSION\"" "$PKG" \
  && [ -f "$ACP_PKG" ] && grep -q "\"version\": \"$ACP_VERSION\"" "$ACP_PKG"; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    log "node and npm are needed for the MCP tests; install them by hand"
    exit 1
  fi
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  log "installing nodejs and npm"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{"private": true}' > "$DIR/package.json"
log "installing @modelcontextprotocol/server-everything@$VERSION and @agentclientprotocol/sdk@$ACP_VERSION into $DIR"
(cd "$DIR" && npm install --no-audit --no-fund --silent \
  "@modelcontextprotocol/server-everything@$VERSION" "@agentclientprotocol/sdk@$ACP_VERSION")
[ -f "$PKG" ] || { log "the install did not produce $PKG"; exit 1; }
[ -f "$ACP_PKG" ] || { log "the install did not produce $ACP_PKG"; exit 1; }
