#!/usr/bin/env python3
"""The small-model task suite (`make eval`): runs every task in evals/tasks/ against one or
more ways of reaching a model and prints one line per task and mode, then a success rate
per mode.

Modes (default: all three, with the 0.5B test model):
  native  llama-server's native tool calls   --provider llamacpp --base-url URL
  text    the same server, text protocol      ... --tool-protocol text
  engine  the in-process engine               --model GGUF
Any other provider/model: pass --provider and/or --model (and --base-url,
--tool-protocol); the suite then runs once, as mode "custom".

Each task runs the real binary in a fresh temporary folder (its files written there),
scripted (`-p … --json --approval auto --sandbox workspace-write`: the model's tools may
write only in the task's folder and the temporary folder), with its own empty config, data
and home folders, and is killed after --timeout seconds. A task passes when all its checks hold:
`answer` (a regex the model's text must match, case-insensitive), `file` with `equals`,
`contains` or `not_contains` (a regex on the file's content), or `absent` (a file that
must not exist), and the turn ended by itself (`turn_ended` "done", not a limit).
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_GGUF = Path(
    os.environ.get(
        "IKIGAI_TEST_MODEL",
        Path.home() / ".cache/ikigai/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    )
)
DEFAULT_URL = os.environ.get("IKIGAI_EVAL_URL", "http://127.0.0.1:8080/v1")


def load_tasks(folder, only):
    tasks = []
    for path in sorted(Path(folder).glob("*.toml")):
        if only and not any(o in path.stem for o in only):
            continue
        with open(path, "rb") as f:
            task = tomllib.load(f)
        task["name"] = path.stem
        tasks.append(task)
    return tasks


def modes_from(args):
    """[(mode name, extra ikigai arguments)]"""
    custom = args.provider or args.model
    if custom:
        extra = []
        if args.provider:
            extra += ["--provider", args.provider]
        if args.model:
            extra += ["--model", args.model]
        if args.base_url:
            extra += ["--base-url", args.base_url]
        if args.tool_protocol:
            extra += ["--tool-protocol", args.tool_protocol]
        return [("custom", extra)]
    server = ["--provider", "llamacpp", "--base-url", args.base_url or DEFAULT_URL]
    table = {
        "native": server,
        "text": server + ["--tool-protocol", "text"],
        "engine": ["--model", str(args.gguf)],
    }
    return [(m, table[m]) for m in args.modes.split(",")]


def run_task(binary, task, extra, timeout, keep, config_text=""):
    work = Path(tempfile.mkdtemp(prefix=f"ikigai-eval-{task['name']}-"))
    project = work / "project"
    home = work / "home"
    project.mkdir()
    home.mkdir()
    for rel, content in task.get("files", {}).items():
        p = project / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    for rel in task.get("executable", []):
        (project / rel).chmod(0o755)
    config = home / "config.toml"
    config.write_text(config_text)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("IKIGAI_", "XDG_")) or k == "IKIGAI_LLAMA_LOG"
    }
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        IKIGAI_CONFIG=str(config),
    )
    env.setdefault("OPENAI_API_KEY", "none")
    cmd = [str(binary), "-p", task["prompt"], "--json", "--approval", "auto"] + extra
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        text=True,
    )
    outcome = None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        outcome = "timeout"
    secs = time.monotonic() - start
    text, calls, ended = [], 0, None
    for line in out.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        kind = ev.get("type")
        if kind == "text_delta":
            text.append(ev.get("text", ""))
        elif kind == "tool_call_started":
            calls += 1
        elif kind == "turn_ended":
            ended = ev.get("reason")
    answer = "".join(text)
    failed = check(task, answer, project)
    # The model must also finish by itself: a turn ended by a limit (the loop guard,
    # max_tool_turns) or an error did not get the job done, even when the model echoed the
    # tool's output into its text.
    if not failed and ended != "done":
        failed = [f"checks held, but the turn ended: {ended or 'never'}"]
    # Exit 1 with a turn_ended event is a turn that ended by a limit or an error the model
    # caused; anything else (a crash, no turn_ended, a timeout) is a plumbing failure.
    if outcome is None and (proc.returncode not in (0, 1) or ended is None):
        outcome = f"exit {proc.returncode}" + ("" if ended else ", no turn_ended")
    if outcome is None:
        outcome = "pass" if not failed else "fail"
    elif not failed:
        outcome = "pass"  # the checks hold even though the run did not end cleanly
    if keep:
        (work / "stdout.jsonl").write_text(out)
        (work / "stderr.txt").write_text(err)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "task": task["name"],
        "outcome": outcome,
        "passed": not failed,
        "tool_calls": calls,
        "seconds": round(secs, 1),
        "turn_ended": ended,
        "failed_checks": failed,
        "answer": answer[-400:],
        "stderr": err.strip().splitlines()[-1:] if err.strip() else [],
        "folder": str(work) if keep else None,
    }


def check(task, answer, project):
    """The checks that do not hold, described."""
    failed = []
    for c in task.get("check", []):
        if "answer" in c:
            if not re.search(c["answer"], answer, re.IGNORECASE):
                failed.append(f"answer !~ /{c['answer']}/")
        elif "absent" in c:
            if (project / c["absent"]).exists():
                failed.append(f"{c['absent']} still exists")
        elif "file" in c:
            p = project / c["file"]
            if not p.is_file():
                failed.append(f"{c['file']} missing")
                continue
            body = p.read_text(errors="replace")
            if "equals" in c and body.strip() != c["equals"].strip():
                failed.append(f"{c['file']} != {c['equals']!r}")
            if "contains" in c and not re.search(c["contains"], body, re.MULTILINE):
                failed.append(f"{c['file']} !~ /{c['contains']}/")
            if "not_contains" in c and re.search(c["not_contains"], body):
                failed.append(f"{c['file']} ~ /{c['not_contains']}/")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("IKIGAI_BIN", str(ROOT / "target/release/ikigai")))
    ap.add_argument("--modes", default="native,text,engine", help="comma-separated: native,text,engine")
    ap.add_argument("--base-url", help=f"llama-server (native and text modes); default {DEFAULT_URL}")
    ap.add_argument("--gguf", default=DEFAULT_GGUF, type=Path, help="the engine's model file")
    ap.add_argument("--provider", help="run once against this provider (mode 'custom')")
    ap.add_argument("--model", help="run once against this model (mode 'custom')")
    ap.add_argument("--tool-protocol", choices=["native", "text"], help="with --provider/--model")
    ap.add_argument("--timeout", type=float, default=90, help="seconds per task (default 90)")
    ap.add_argument("--tasks", default=str(ROOT / "evals/tasks"), help="the task folder")
    ap.add_argument("--only", action="append", default=[], help="run tasks whose name contains this")
    ap.add_argument("--json-out", help="also write every result to this JSON file")
    ap.add_argument("--keep", action="store_true", help="keep each task's folder and output")
    ap.add_argument("--config", type=Path, help="a config.toml for every run (default: empty)")
    ap.add_argument(
        "--sandbox",
        default="workspace-write",
        choices=["workspace-write", "read-only", "off"],
        help="ikigai's sandbox for the model's tools (default workspace-write: a write outside "
        "the task's folder and the temporary folder is refused; 'off' where the kernel has no Landlock)",
    )
    args = ap.parse_args()

    binary = Path(args.bin).resolve()
    if not binary.is_file():
        sys.exit(f"eval: no ikigai binary at {binary} (cargo build --release, or --bin PATH)")
    tasks = load_tasks(args.tasks, args.only)
    if not tasks:
        sys.exit(f"eval: no tasks in {args.tasks}")
    modes = modes_from(args)
    if any(m == "engine" for m, _ in modes) and not Path(args.gguf).is_file():
        sys.exit(f"eval: no model at {args.gguf} (bash scripts/fetch-test-model.sh, or --gguf FILE)")

    config_text = args.config.read_text() if args.config else ""
    results = {}
    for mode, extra in modes:
        extra = extra + ["--sandbox", args.sandbox]
        rows = results.setdefault(mode, [])
        for task in tasks:
            r = run_task(binary, task, extra, args.timeout, args.keep, config_text)
            rows.append(r)
            note = "" if r["passed"] else "  " + "; ".join(r["failed_checks"])
            if r["outcome"] not in ("pass", "fail"):
                note += f"  [{r['outcome']}]"
            print(
                f"{mode:<7} {r['task']:<22} {'PASS' if r['passed'] else 'fail'}"
                f"  calls={r['tool_calls']:<2}  {r['seconds']:>5.1f}s{note}",
                flush=True,
            )
    print()
    for mode, rows in results.items():
        ok = sum(r["passed"] for r in rows)
        secs = sum(r["seconds"] for r in rows)
        plumbing = sum(r["outcome"] not in ("pass", "fail") for r in rows)
        print(
            f"{mode:<7} {ok}/{len(rows)} passed ({100 * ok // len(rows)} %), "
            f"{secs:.0f} s, {plumbing} not ended cleanly (timeout, crash, no turn_ended)"
        )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
