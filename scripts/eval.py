#!/usr/bin/env python3
"""The small-model suite (`make eval`): question tasks (evals/questions/*.toml: a fact only
a tool can show, a file to create or change) and coding tasks (evals/coding/NN-name/: code
to write until the task's unittest tests pass), run against a local model in each way
ikigai can reach it, beside the model alone, with a table per mode: questions and coding
tasks passed, seconds, tokens in and out, tool calls.

Modes (default: all four, for the model size --size / EVAL_MODEL, 0.5b or 1.5b):
  native  llama-server's native tool calls   --provider llamacpp --base-url URL
  text    the same server, text protocol      ... --tool-protocol text
  engine  the in-process engine               --model GGUF (the same file as the server's)
  alone   the floor: the model alone, no ikigai: one chat request with the task, its stub
          and its tests; the files of its reply are written and tested (coding tasks only)
Without --base-url (EVAL_URL) the harness starts llama-server for the size itself, on a
free port, with the development kit (../shared/local-llm, or EVAL_LLM_DIR), and stops it.
Any other provider/model: --provider and/or --model (and --base-url, --tool-protocol); the
suite then runs as mode "custom" (add alone with --modes custom,alone and --base-url).

Each run uses the real binary in a fresh temporary folder (`-p … --json --approval auto
--sandbox workspace-write`), its own empty config, data and home folders, killed with its
process group after --timeout seconds. A question passes when its checks hold and the turn
ended by itself; a coding task when its tests pass, run afterwards on a clean copy of the
task with the agent's versions of the files it was asked to edit (edited or deleted tests
are the originals again; other files it left are not copied).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "evals"))

from harness import agent, report, runner, server, tasks  # noqa: E402

ALL_MODES = ("native", "text", "engine", "alone", "custom")
SERVER_MODES = ("native", "text", "alone")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self-test", action="store_true", help="check the harness itself (no model) and exit")
    ap.add_argument("--bin", default=str(ROOT / "target/release/ikigai"), help="the ikigai binary")
    ap.add_argument("--size", default=None, choices=sorted(server.SIZES), help="the local model (default EVAL_MODEL or 0.5b)")
    ap.add_argument("--modes", help="comma-separated: native,text,engine,alone (default all four)")
    ap.add_argument("--kinds", default="questions,coding", help="questions,coding (default both)")
    ap.add_argument("--base-url", help="a running llama-server serving --size (EVAL_URL); default: start one")
    ap.add_argument("--gguf", type=Path, help="the engine's model file (default: the size's file)")
    ap.add_argument("--provider", help="run as mode 'custom' against this provider")
    ap.add_argument("--model", help="run as mode 'custom' against this model")
    ap.add_argument("--tool-protocol", choices=["native", "text"], help="with --provider/--model")
    ap.add_argument("--timeout", type=float, help="seconds per task (default 150 for 0.5b, 360 for 1.5b)")
    ap.add_argument("--grade-timeout", type=float, default=60, help="seconds for a coding task's tests (60)")
    ap.add_argument("--temperature", type=float, default=0.2, help="the alone mode's (ikigai's own for local servers: 0.2)")
    ap.add_argument("--questions", default=str(ROOT / "evals/questions"), help="the question tasks' folder")
    ap.add_argument("--coding", default=str(ROOT / "evals/coding"), help="the coding tasks' folder")
    ap.add_argument("--only", action="append", default=[], help="run tasks whose name contains this")
    ap.add_argument("--json-out", help="also write every result and the summary to this JSON file (after each run)")
    ap.add_argument("--keep", action="store_true", help="keep each run's folder: project, events, reply, tests' output")
    ap.add_argument("--config", type=Path, help="a config.toml for every run (default: empty)")
    ap.add_argument(
        "--sandbox",
        default="workspace-write",
        choices=["workspace-write", "read-only", "off"],
        help="ikigai's sandbox for the model's tools (default workspace-write; 'off' where the kernel has no Landlock)",
    )
    return ap.parse_args(argv)


def plan_modes(args):
    custom = bool(args.provider or args.model)
    names = args.modes.split(",") if args.modes else (["custom"] if custom else ["native", "text", "engine", "alone"])
    for m in names:
        if m not in ALL_MODES:
            sys.exit(f"eval: unknown mode {m!r} (one of {', '.join(ALL_MODES)})")
        if m == "custom" and not custom:
            sys.exit("eval: mode custom needs --provider and/or --model")
        if m != "custom" and m != "alone" and custom:
            sys.exit(f"eval: mode {m} runs the local model; --provider/--model make mode custom")
    if custom and "alone" in names and not args.base_url:
        sys.exit("eval: mode alone with --provider/--model needs --base-url (an OpenAI-compatible server)")
    return names


def spec_for(mode, args, binary, url, gguf):
    sandbox = ["--sandbox", args.sandbox]
    if mode == "alone":
        return {"kind": "alone", "base_url": url}
    if mode == "custom":
        extra = []
        for flag, v in (("--provider", args.provider), ("--model", args.model), ("--base-url", args.base_url),
                        ("--tool-protocol", args.tool_protocol)):
            if v:
                extra += [flag, v]
        return {"kind": "ikigai", "binary": binary, "extra": extra + sandbox}
    if mode == "engine":
        return {"kind": "ikigai", "binary": binary, "extra": ["--model", str(gguf)] + sandbox}
    extra = ["--provider", "llamacpp", "--base-url", url]
    if mode == "text":
        extra += ["--tool-protocol", "text"]
    return {"kind": "ikigai", "binary": binary, "extra": extra + sandbox}


def commit():
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return head + ("+changes" if dirty else "") if head else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _term(_sig, _frame):
    raise KeyboardInterrupt


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.self_test:
        from harness import selftest

        sys.exit(selftest.main(ROOT))
    size = args.size or os.environ.get("EVAL_MODEL") or "0.5b"
    if size not in server.SIZES:
        sys.exit(f"eval: unknown model size {size!r} (one of {', '.join(server.SIZES)})")
    modes = plan_modes(args)
    kinds = set(args.kinds.split(","))
    try:
        questions = tasks.load_questions(args.questions, args.only) if "questions" in kinds else []
        coding = tasks.load_coding(args.coding, args.only) if "coding" in kinds else []
    except tasks.TaskError as e:
        sys.exit(f"eval: {e}")
    if not questions and not coding:
        sys.exit("eval: no tasks (see --questions, --coding, --kinds, --only)")
    binary = Path(args.bin).resolve()
    if any(m != "alone" for m in modes) and not binary.is_file():
        sys.exit(f"eval: no ikigai binary at {binary} (cargo build --release, or --bin PATH)")
    gguf = args.gguf or server.gguf(size)
    if "engine" in modes and not Path(gguf).is_file():
        sys.exit(f"eval: no model at {gguf} (bash scripts/fetch-test-model.sh, or the kit's setup.sh 1.5b, or --gguf FILE)")
    timeout = args.timeout or server.SIZES[size]["timeout"]
    opts = {
        "timeout": timeout,
        "keep": args.keep,
        "config_text": args.config.read_text() if args.config else "",
        "grade_timeout": args.grade_timeout,
        "temperature": args.temperature,
    }

    signal.signal(signal.SIGTERM, _term)
    url = args.base_url
    srv = None
    needs_server = any(m in SERVER_MODES for m in modes)
    last_server_mode = max((i for i, m in enumerate(modes) if m in SERVER_MODES), default=-1)
    header = {
        "model": size if not (args.provider or args.model) else f"{args.provider or ''} {args.model or ''}".strip(),
        "commit": commit(),
        "binary": str(binary),
        "timeout": f"{timeout:g} s",
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": " ".join([Path(sys.argv[0]).name] + (sys.argv[1:] if argv is None else argv)),
    }
    results = {}
    started = time.monotonic()
    try:
        if needs_server and not url:
            kit = server.find_kit(ROOT)
            if kit is None:
                sys.exit("eval: no llama-server URL (EVAL_URL / --base-url) and no development kit "
                         "(../shared/local-llm with start.sh; EVAL_LLM_DIR=...) to start one")
            srv = server.Server(kit, size)
            print(f"eval: starting llama-server for the {size} model on port {srv.port} …", flush=True)
            url = srv.start()
        header["base_url"] = url
        print("eval: " + ", ".join(f"{k} {v}" for k, v in header.items()), flush=True)
        for i, mode in enumerate(modes):
            spec = spec_for(mode, args, binary, url, gguf)
            rows = results.setdefault(mode, [])
            for task in (coding if mode == "alone" else questions + coding):
                row = runner.run_one(task, mode, spec, opts)
                rows.append(row)
                print(report.line(mode, row), flush=True)
                write_json(args.json_out, header, results)
            if srv is not None and i == last_server_mode:
                srv.stop()
                srv = None
    except KeyboardInterrupt:
        agent.kill_all()
        print("\neval: interrupted; the results so far:", flush=True)
    except server.ServerError as e:
        sys.exit(f"eval: {e}")
    finally:
        if srv is not None:
            srv.stop()
    header["seconds"] = round(time.monotonic() - started)
    text = report.render(results, f"model {header['model']}, commit {header['commit']}, timeout {timeout:g} s")
    print()
    print(text)
    write_json(args.json_out, header, results)
    return 0


def write_json(path, header, results):
    """The results so far (rewritten after every run, so an interrupted suite keeps them)."""
    if path:
        tmp = Path(str(path) + ".tmp")
        tmp.write_text(json.dumps({"header": header, "summary": report.summarize(results), "results": results}, indent=1))
        tmp.replace(path)


if __name__ == "__main__":
    sys.exit(main())
