"""The floor: the model alone, without ikigai. One request to the server's chat endpoint
with the task's instructions and every file of its project; the files in the reply are
written into the project, then graded like an agent's run. The reply format asked for is
"the file's name on a line of its own, then the whole file in a fenced block"; the parser
takes what small models actually write (see `parse_reply`)."""

import json
import re
import time
import urllib.error
import urllib.request
from pathlib import PurePosixPath

SYSTEM = (
    "You are an expert programmer. You get a task and every file of a small project. "
    "Reply with the complete new content of each file you create or change: the file's "
    "name on a line of its own, then the whole file in one fenced code block. "
    "Do not change the test files."
)

# Fence languages (and first words) of blocks that are commands to run, not files.
SHELL_LANGS = {"sh", "bash", "shell", "console", "zsh", "shell-session", "cmd", "powershell"}
COMMAND_START = re.compile(r"^\s*(\$ |python3? -m |python3? \S+\.py\s*$|pytest\b|pip )")
# A path-like token: no spaces, a name with an extension.
PATHLIKE = re.compile(r"[\w./-]*\w\.[A-Za-z0-9]+")
# A line that is only a path, optionally as a comment or in markdown dress.
NAME_LINE = re.compile(
    r"^\s*(?:#+|//|--|[-*>])?\s*(?:\*\*|__|`)*\s*"
    r"(?:(?:file(?:name)?|path)\s*:\s*)?(?:\*\*|__|`)*\s*"
    r"(?P<path>[\w./-]*\w\.[A-Za-z0-9]+)\s*(?:\*\*|__|`)*\s*:?\s*(?:\*\*|__|`)*\s*$",
    re.IGNORECASE,
)


class AloneError(Exception):
    """The server gave no usable answer (timeout, refused connection, HTTP error)."""


def build_messages(task):
    """[system, user]: the task's prompt, then each project file in a fenced block."""
    parts = [task["prompt"], "", "The project's files:"]
    for rel, data in sorted(task["files"].items()):
        lang = "python" if rel.endswith(".py") else ""
        body = data.decode(errors="replace")
        if not body.endswith("\n"):
            body += "\n"
        parts += ["", rel, f"```{lang}", body + "```"]
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(parts)}]


def fenced_blocks(text):
    """[(info string, body, text before the block)]: ``` or ~~~ fences of 3 or more, closed
    by the same character at least as long; an unclosed last block runs to the end (a
    reply cut by its length limit)."""
    blocks = []
    lines = text.splitlines(keepends=True)
    i, before_start = 0, 0
    while i < len(lines):
        m = re.match(r"^\s*(`{3,}|~{3,})(.*)$", lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(1), m.group(2).strip()
        before = "".join(lines[before_start:i])
        j = i + 1
        body = []
        while j < len(lines):
            c = re.match(r"^\s*(`{3,}|~{3,})\s*$", lines[j])
            if c and c.group(1)[0] == fence[0] and len(c.group(1)) >= len(fence):
                break
            body.append(lines[j])
            j += 1
        blocks.append((info, "".join(body), before))
        i = j + 1
        before_start = i
    return blocks


def _name_in_info(info):
    """A file name written in the fence's info string (```python mathutil.py, ```x.py)."""
    for tok in re.split(r"[\s:]+", info):
        if PATHLIKE.fullmatch(tok):
            return tok
    return None


def _name_before(before, known, edit):
    """The file named by the last non-empty line before a block: a line that is only a
    path (in any markdown dress), or a sentence naming one of the task's files."""
    lines = [ln for ln in before.splitlines() if ln.strip()]
    if not lines:
        return None
    last = lines[-1]
    m = NAME_LINE.match(last)
    if m:
        return m.group("path")
    named = [tok for tok in PATHLIKE.findall(last) if _resolve(tok, known)]
    # "the fixed stats.py, which makes test_stats.py pass:" names stats.py.
    editable = [tok for tok in named if _resolve(tok, known) in edit]
    return (editable or named)[-1] if named else None


def _resolve(name, known):
    """A task file for a name the model wrote: the exact path, else the one file with that
    base name (`path/to/mathutil.py`, `./mathutil.py`); None when there is none or several."""
    name = name.strip()
    if name.startswith("./"):
        name = name[2:]
    if name in known:
        return name
    base = PurePosixPath(name).name
    hits = [k for k in known if PurePosixPath(k).name == base]
    return hits[0] if len(hits) == 1 else None


def _is_command(info, body):
    lang = info.split()[0].lower() if info.split() else ""
    if lang in SHELL_LANGS:
        return True
    first = next((ln for ln in body.splitlines() if ln.strip()), "")
    return bool(COMMAND_START.match(first))


def parse_reply(text, task):
    """The files a reply writes, {task path: text}, and notes on what was skipped.
    A block's name comes from its fence's info string, the line before it, or a first line
    inside it that is only a path (`mathutil.py`, `# path/to/mathutil.py`; a bare path line
    is dropped, it is not code). Blocks that are commands (```sh, `python3 -m unittest …`)
    are skipped, and so are blocks naming a test file or a file the task does not have.
    Unnamed blocks go to the one edit file no named block wrote, when there is exactly
    one: the last such block that defines something (def/class/import), else the last.
    A reply without fences is taken whole for a single edit file when it is Python that
    compiles and defines something."""
    edit = list(task["edit"])
    tests = set(task["tests"])
    known = edit + sorted(tests)
    files, notes, unnamed = {}, [], []
    blocks = fenced_blocks(text)
    for info, body, before in blocks:
        if _is_command(info, body):
            notes.append("skipped a command block")
            continue
        name = _name_in_info(info) or _name_before(before, known, edit)
        body_lines = body.splitlines(keepends=True)
        first = body_lines[0] if body_lines else ""
        fm = NAME_LINE.match(first)
        if fm and PATHLIKE.fullmatch(first.strip()):
            # A bare path as the first line: a name (or a placeholder), never code.
            name = name or fm.group("path")
            body = "".join(body_lines[1:])
        elif fm and name is None:
            name = fm.group("path")  # a comment naming the file: kept in the code
        if name is None:
            unnamed.append(body)
            continue
        target = _resolve(name, known)
        if target is None:
            notes.append(f"skipped {name}: not a file of the task")
        elif target in tests:
            notes.append(f"skipped {target}: a test file")
        else:
            files[target] = body
    left = [e for e in edit if e not in files]
    if unnamed and len(left) == 1:
        defining = [b for b in unnamed if re.search(r"^\s*(def|class|import|from)\s", b, re.M)]
        files[left[0]] = (defining or unnamed)[-1]
    elif unnamed:
        notes.append(f"skipped {len(unnamed)} unnamed block(s)")
    if not blocks and len(edit) == 1 and _is_python_module(text):
        files[edit[0]] = text.strip() + "\n"
    return files, notes


def _is_python_module(text):
    try:
        compile(text, "<reply>", "exec")
    except (SyntaxError, ValueError):
        return False
    return bool(re.search(r"^\s*(def|class)\s", text, re.M))


def chat(base_url, messages, timeout, temperature=0.2, max_tokens=2048):
    """One non-streamed chat completion; (the reply's text, tokens in, tokens out)."""
    body = json.dumps(
        {
            "model": "local",
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stream": False,
        }
    ).encode()
    req = urllib.request.Request(
        base_url.rstrip("/") + "/chat/completions",
        data=body,
        headers={"content-type": "application/json", "authorization": "Bearer none"},
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            answer = json.loads(r.read())
    except urllib.error.HTTPError as e:
        raise AloneError(f"HTTP {e.code}: {e.read()[:200].decode(errors='replace')}") from e
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        reason = getattr(e, "reason", e)
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            raise AloneError("timeout") from e
        raise AloneError(f"no answer: {reason}") from e
    except ValueError as e:
        raise AloneError("the answer is not JSON") from e
    try:
        text = answer["choices"][0]["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError) as e:
        raise AloneError("no choices[0].message in the answer") from e
    usage = answer.get("usage") or {}
    return text, usage.get("prompt_tokens", 0) or 0, usage.get("completion_tokens", 0) or 0


def run(task, base_url, project, timeout, temperature=0.2):
    """Asks the model alone and writes the files of its reply into project; a dict shaped
    like `agent.run`'s (tool calls are always 0; `reply` holds the raw answer)."""
    messages = build_messages(task)
    start = time.monotonic()
    text, tin, tout, outcome = "", 0, 0, "ok"
    try:
        text, tin, tout = chat(base_url, messages, timeout, temperature)
    except AloneError as e:
        outcome = "timeout" if str(e) == "timeout" else f"error ({e})"
    secs = time.monotonic() - start
    files, notes = parse_reply(text, task)
    for rel, body in files.items():
        p = project / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    return {
        "answer": text,
        "reply": text,
        "request": messages,
        "written": sorted(files),
        "notes": notes,
        "tool_calls": 0,
        "tools": [],
        "tokens_in": tin,
        "tokens_out": tout,
        "turn_ended": "done" if outcome == "ok" else None,
        "seconds": round(secs, 1),
        "outcome": outcome,
        "stdout": "",
        "stderr": "",
    }
