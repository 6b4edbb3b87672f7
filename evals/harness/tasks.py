"""Loading the suite: question tasks (evals/questions/*.toml) and coding tasks
(evals/coding/NN-name/ with task.toml, files/ and reference/). Validates what a task
declares; never runs anything."""

import tomllib
from pathlib import Path


class TaskError(Exception):
    """A task that cannot be run as written."""


def _matches(name, only):
    return not only or any(o in name for o in only)


def _safe_relative(rel, where):
    p = Path(rel)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise TaskError(f"{where}: {rel!r} is not a relative path inside the task")
    return p.as_posix()


def load_questions(folder, only=()):
    """Question tasks: one TOML each (prompt, files, executable, checks)."""
    tasks = []
    for path in sorted(Path(folder).glob("*.toml")):
        if not _matches(path.stem, only):
            continue
        with open(path, "rb") as f:
            t = tomllib.load(f)
        if "prompt" not in t or not t.get("check"):
            raise TaskError(f"{path}: a question needs a prompt and at least one [[check]]")
        files = {}
        for rel, text in t.get("files", {}).items():
            files[_safe_relative(rel, path)] = text.encode()
        tasks.append(
            {
                "kind": "question",
                "name": path.stem,
                "prompt": t["prompt"],
                "files": files,
                "executable": [_safe_relative(r, path) for r in t.get("executable", [])],
                "check": t["check"],
            }
        )
    return tasks


def _tree(folder):
    """{relative path: bytes} of every file under folder (caches left out)."""
    out = {}
    for p in sorted(Path(folder).rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            out[p.relative_to(folder).as_posix()] = p.read_bytes()
    return out


def load_coding(folder, only=()):
    """Coding tasks: task.toml (description, prompt, tests, edit), files/ (the project the
    agent starts from, tests included) and reference/ (a known-good version of the `edit`
    files, never shown to the model; the self-test proves the tests fail without it and
    pass with it)."""
    tasks = []
    folders = sorted(p for p in Path(folder).iterdir() if p.is_dir()) if Path(folder).is_dir() else []
    for d in folders:
        if not _matches(d.name, only) or not (d / "task.toml").is_file():
            continue
        with open(d / "task.toml", "rb") as f:
            t = tomllib.load(f)
        where = d / "task.toml"
        for key in ("description", "prompt", "tests", "edit"):
            if not t.get(key):
                raise TaskError(f"{where}: missing {key}")
        files = _tree(d / "files")
        tests = [_safe_relative(r, where) for r in t["tests"]]
        edit = [_safe_relative(r, where) for r in t["edit"]]
        for rel in tests:
            if rel not in files:
                raise TaskError(f"{where}: test file {rel} is not in files/")
            if not rel.endswith(".py"):
                raise TaskError(f"{where}: test file {rel} is not a Python module")
        if set(tests) & set(edit):
            raise TaskError(f"{where}: a test file cannot also be a file to edit")
        tasks.append(
            {
                "kind": "coding",
                "name": d.name,
                "description": t["description"],
                "prompt": t["prompt"],
                "tests": tests,
                "edit": edit,
                "files": files,
                "reference": _tree(d / "reference"),
                "executable": [],
            }
        )
    return tasks


def test_modules(task):
    """The unittest module names of a coding task's test files."""
    return [rel[: -len(".py")].replace("/", ".") for rel in task["tests"]]
