#!/usr/bin/env python3
"""An external tool for ikigai in Python: the most frequent words of a text file.

Declares its parameters as a full JSON Schema (kept intact for the model). Reads its
arguments as JSON on stdin, prints its result as JSON on stdout, exits 0 when it ran
(an operation error is a result: {"error": ...}). Diagnostics go to stderr, which the
model never sees.
"""
import collections
import json
import re
import sys

SCHEMA = {
    "name": "word_stats",
    "description": "Count the words of a text file and list the most frequent ones.",
    "parameters": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File, relative to the working directory"},
            "top": {"type": "integer", "minimum": 1, "maximum": 100,
                    "description": "How many of the most frequent words to list (default 10)"},
            "options": {
                "type": "object",
                "properties": {
                    "case_sensitive": {"type": "boolean"},
                    "min_length": {"type": "integer", "minimum": 1},
                },
            },
        },
        "required": ["path"],
    },
}


def main() -> int:
    if sys.argv[1:] == ["--schema"]:
        json.dump(SCHEMA, sys.stdout)
        return 0
    args = json.load(sys.stdin)
    path = args.get("path")
    top = int(args.get("top", 10))
    opts = args.get("options") or {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        json.dump({"error": f"cannot read {path}: {e.strerror}"}, sys.stdout)
        return 0
    if not opts.get("case_sensitive"):
        text = text.lower()
    words = [w for w in re.findall(r"[\w']+", text) if len(w) >= int(opts.get("min_length", 1))]
    print(f"word_stats: {len(words)} words in {path}", file=sys.stderr)
    common = collections.Counter(words).most_common(top)
    json.dump({"words": len(words), "top": [{"word": w, "count": n} for w, n in common]}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
