"""A task's folders: project/ (the files the model works on, its cwd) and home/ (its own
empty config, data and home), under one temporary folder per run. Writes files; runs
nothing."""

import shutil
import tempfile
from pathlib import Path


def make(task, mode, config_text=""):
    """A fresh work folder for one run of task in mode; (work, project, home)."""
    work = Path(tempfile.mkdtemp(prefix=f"ikigai-eval-{mode}-{task['name']}-"))
    project = work / "project"
    home = work / "home"
    project.mkdir()
    home.mkdir()
    write_tree(project, task["files"])
    for rel in task.get("executable", []):
        (project / rel).chmod(0o755)
    (home / "config.toml").write_text(config_text)
    return work, project, home


def write_tree(root, files):
    """Writes {relative path: bytes} under root."""
    for rel, data in files.items():
        p = Path(root) / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def remove(work):
    shutil.rmtree(work, ignore_errors=True)
