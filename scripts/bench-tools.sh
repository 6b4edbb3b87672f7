#!/usr/bin/env bash
# External tools, whole process: `ikigai tool --list` (which waits for discovery) with no
# external tools, with one tool taking 0.9 s to answer --schema, and with 20 tools of which
# that one is the slowest. Discovery should cost about the slowest tool, not the sum.
# The in-process numbers (prompt start, call overhead) are `cargo bench --bench external_tools`.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${RUNS:-5}"
cargo build --release --quiet
bin="$PWD/target/release/ikigai"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

make_tool() { # dir name delay
    cat >"$1/$2" <<TOOL
#!/bin/sh
if [ "\$1" = --schema ]; then $3
echo '{"name":"$2","description":"Echo.","parameters":{"text":{"type":"string","required":true}}}'
exit 0; fi
exec cat
TOOL
    chmod 755 "$1/$2"
}

setup() { # name count-of-quick-tools with-slow
    local d="$work/$1"
    mkdir -p "$d/.ikigai/tools" "$d/home"
    for i in $(seq 1 "$2"); do make_tool "$d/.ikigai/tools" "echo_$i" ""; done
    [ "$3" = yes ] && make_tool "$d/.ikigai/tools" slow "sleep 0.9"
    return 0
}

measure() { # name
    local d="$work/$1" best=999999 t0 t1 ms
    for _ in $(seq 1 "$runs"); do
        t0=$(date +%s%N)
        (cd "$d" && HOME="$d/home" XDG_CONFIG_HOME="$d/home/.config" IKIGAI_CONFIG= \
            "$bin" tool --list >/dev/null)
        t1=$(date +%s%N)
        ms=$(( (t1 - t0) / 1000000 ))
        [ "$ms" -lt "$best" ] && best=$ms
    done
    printf '%-28s %6d ms (best of %d)\n' "$1" "$best" "$runs"
}

setup none 0 no
setup one_slow 0 yes
setup twenty_one_slow 19 yes
echo "ikigai tool --list, discovery included:"
measure none
measure one_slow
measure twenty_one_slow
