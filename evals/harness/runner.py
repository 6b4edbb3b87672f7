"""One run of one task in one mode: a fresh work folder, the agent (ikigai) or the model
alone, then the grade. Every failure of the run itself (a timeout, a crash, a server that
does not answer) becomes a result row, never an exception, so the suite goes on."""

import json
import traceback

from . import agent, alone, grade, workspace


def run_one(task, mode, spec, opts):
    """spec: {"kind": "ikigai", "binary", "extra"} or {"kind": "alone", "base_url"};
    opts: {"timeout", "keep", "config_text", "grade_timeout", "temperature"}. A row."""
    work, project, home = workspace.make(task, mode, opts.get("config_text", ""))
    try:
        return _run_one(task, mode, spec, opts, work, project, home)
    except BaseException:
        # Interrupted: nothing of this run stays running, and its folder goes unless kept.
        agent.kill_all()
        if not opts.get("keep"):
            workspace.remove(work)
        raise


def _run_one(task, mode, spec, opts, work, project, home):
    try:
        if spec["kind"] == "alone":
            r = alone.run(task, spec["base_url"], project, opts["timeout"], opts.get("temperature", 0.2))
        else:
            r = agent.run(spec["binary"], task["prompt"], project, home, spec["extra"], opts["timeout"])
        row = _grade(task, r, work, project, opts)
    except Exception:  # a bug in the harness or a broken task: reported, the suite goes on
        row = {
            "answer": "",
            "tool_calls": 0,
            "tools": [],
            "tokens_in": 0,
            "tokens_out": 0,
            "turn_ended": None,
            "seconds": 0.0,
            "outcome": "harness error",
            "passed": False,
            "failed_checks": [traceback.format_exc().strip().splitlines()[-1]],
            "stdout": "",
            "stderr": traceback.format_exc(),
        }
    row.update(task=task["name"], kind=task["kind"], mode=mode)
    if opts.get("keep"):
        _keep(work, row)
        row["folder"] = str(work)
    else:
        workspace.remove(work)
        row["folder"] = None
    for k in ("stdout", "stderr", "request", "reply"):
        row.pop(k, None)
    row["answer"] = row.get("answer", "")[-400:]
    return row


def _grade(task, r, work, project, opts):
    if task["kind"] == "coding":
        g = grade.grade_coding(task, project, work / "graded", opts.get("grade_timeout", 60))
        r.update(g)
        return r
    failed = grade.check_question(task, r["answer"], project)
    # A question's model must also finish by itself: a turn ended by a limit (the loop
    # guard, max_tool_turns) or an error did not get the job done, even when the model
    # echoed the tool's output into its text.
    if not failed and r["turn_ended"] != "done":
        failed = [f"checks held, but the turn ended: {r['turn_ended'] or 'never'}"]
    r.update(passed=not failed, failed_checks=failed)
    return r


def _keep(work, row):
    (work / "stdout.jsonl").write_text(row.get("stdout", ""))
    (work / "stderr.txt").write_text(row.get("stderr", ""))
    if "request" in row:
        (work / "request.json").write_text(json.dumps(row["request"], indent=1))
        (work / "reply.txt").write_text(row.get("reply", ""))
    if "tests_output" in row:
        (work / "tests.txt").write_text(row["tests_output"] + "\n")
