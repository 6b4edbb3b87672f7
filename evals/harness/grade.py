"""Deciding whether a run passed. Questions: checks on the answer and the project's files.
Coding: the task's tests, run after the agent finished in a clean copy of the task (its
original files, tests included, plus the agent's versions of the files it was asked to
edit), so that edited or deleted tests, junk left in the folder (a `unittest.py`, a
`sitecustomize.py`, a passing test of its own, stale caches) and links out of the folder
change nothing. Runs the tests; never the model."""

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from . import agent
from . import tasks as task_mod
from . import workspace

# An agent's file bigger than this is not copied (it is not a small function's module).
MAX_EDIT_BYTES = 1 << 20


def check_question(task, answer, project):
    """The checks of a question task that do not hold, described."""
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


def read_edit(project, rel):
    """The agent's version of an edit file: its bytes, or None with the reason when it is
    missing, not a regular file (a link is not followed), or too big."""
    p = Path(project) / rel
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return None, "missing"
    except OSError as e:
        return None, f"unreadable ({e.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return None, "not a regular file"
    if st.st_size > MAX_EDIT_BYTES:
        return None, f"{st.st_size} bytes, too big"
    # Nothing in the project is followed: a parent folder that is a link is refused too.
    real = os.path.realpath(p)
    if os.path.commonpath([real, os.path.realpath(project)]) != os.path.realpath(project):
        return None, "outside the project"
    return p.read_bytes(), None


def changes(task, project):
    """What the agent did to the task's tree beyond its edit files: tests changed or
    removed, and files it added (caches left out); for the transcript reader."""
    tests_changed = []
    for rel in task["tests"]:
        p = Path(project) / rel
        if p.is_symlink() or not p.is_file() or p.read_bytes() != task["files"][rel]:
            tests_changed.append(rel)
    known = set(task["files"]) | set(task["edit"])
    added = []
    for p in sorted(Path(project).rglob("*")):
        rel = p.relative_to(project).as_posix()
        if "__pycache__" in p.parts or p.is_dir() and not p.is_symlink():
            continue
        if rel not in known:
            added.append(rel)
    return tests_changed, added


def run_tests(task, folder, timeout):
    """Runs the task's tests in folder; (passed, the output's last lines)."""
    cmd = [shutil.which("python3") or sys.executable, "-B", "-m", "unittest"]
    cmd += task_mod.test_modules(task)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(folder),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
    }
    proc = agent.spawn(cmd, cwd=folder, env=env, stderr=subprocess.STDOUT)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        agent.kill_group(proc)
        out, _ = proc.communicate()
        return False, f"tests timed out after {timeout} s"
    except BaseException:
        agent.kill_group(proc)
        proc.communicate()
        raise
    finally:
        agent.RUNNING.discard(proc)
    lines = out.decode(errors="replace").strip().splitlines()
    return proc.returncode == 0, "\n".join(lines[-12:])


def grade_coding(task, project, grade_dir, timeout=60):
    """Grades a coding run: a dict with `passed`, `failed_checks` (why not), `tests_output`
    (its last lines), `tests_changed` and `added` (see `changes`)."""
    tests_changed, added = changes(task, project)
    grade_dir = Path(grade_dir)
    shutil.rmtree(grade_dir, ignore_errors=True)
    grade_dir.mkdir(parents=True)
    workspace.write_tree(grade_dir, task["files"])
    failed = []
    for rel in task["edit"]:
        data, why = read_edit(project, rel)
        if data is None:
            # Tested as the agent left it: without that file.
            (grade_dir / rel).unlink(missing_ok=True)
            failed.append(f"{rel} {why}")
            continue
        workspace.write_tree(grade_dir, {rel: data})
    passed, output = run_tests(task, grade_dir, timeout)
    if not passed:
        failed.append("tests fail")
    return {
        "passed": passed,
        "failed_checks": [] if passed else failed,
        "tests_output": output,
        "tests_changed": tests_changed,
        "added": added,
    }
