#!/usr/bin/env bash
# Generates the large repository of the checkpoint bench: FILES small source files
# (default 100,000, ~1.3 KB each, ~130 MB) in folders of 100, committed to a git
# repository of its own, the way a monorepo's checkout looks.
#   scripts/gen-big-repo.sh DIR            creates DIR (must not exist)
#   FILES=10000 scripts/gen-big-repo.sh DIR   a smaller one
# Deterministic: the same FILES gives the same bytes. Not committed anywhere; takes
# about a minute on 2 cores.
set -euo pipefail
dir="${1:?usage: gen-big-repo.sh DIR}"
files="${FILES:-100000}"
if [ -e "$dir" ]; then
  echo "gen-big-repo: $dir exists" >&2
  exit 2
fi
mkdir -p "$dir"
python3 - "$dir" "$files" <<'PY'
import os, sys
root, total = sys.argv[1], int(sys.argv[2])
per_dir = 100
exts = ("rs", "py", "ts", "go", "md")
for i in range(total):
    d = os.path.join(root, f"pkg{i // (per_dir * 100):02d}", f"mod{(i // per_dir) % 100:02d}")
    if i % per_dir == 0:
        os.makedirs(d, exist_ok=True)
    lines = [f"// file {i}: generated for the checkpoint bench"]
    # ~1.3 KB: 34 lines of ~38 bytes.
    for l in range(34):
        lines.append(f"fn item_{i}_{l}() -> u64 {{ {(i * 7919 + l * 104729) % 1000003} }}")
    with open(os.path.join(d, f"f{i % per_dir:02d}.{exts[i % len(exts)]}"), "w") as f:
        f.write("\n".join(lines) + "\n")
with open(os.path.join(root, ".gitignore"), "w") as f:
    f.write("target/\n*.log\n")
PY
cd "$dir"
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
git init -q
git add -A
git -c user.name=bench -c user.email=bench@example.invalid commit -qm "generated tree"
echo "gen-big-repo: $(git ls-files | wc -l) files, $(du -sh --apparent-size --exclude=.git . | cut -f1) in $dir" >&2
