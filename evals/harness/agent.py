"""One scripted ikigai run (`-p … --json`) in a task's project folder, killed with its
whole process group at the timeout, and what its events say: the answer, tool calls,
tokens, how the turn ended, and whether the process itself failed (timeout, crash)."""

import json
import os
import signal
import subprocess
import time


def environment(home):
    """The run's environment: the caller's, without ikigai or XDG settings, with HOME,
    the XDG folders and IKIGAI_CONFIG inside the run's own home folder."""
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
        XDG_STATE_HOME=str(home / ".local/state"),
        IKIGAI_CONFIG=str(home / "config.toml"),
    )
    env.setdefault("OPENAI_API_KEY", "none")
    return env


def run(binary, prompt, project, home, extra, timeout):
    """Runs ikigai on prompt; a dict of what happened (see `read_events` and `outcome`)."""
    cmd = [str(binary), "-p", prompt, "--json", "--approval", "auto"] + list(extra)
    start = time.monotonic()
    proc = spawn(cmd, cwd=project, env=environment(home), stderr=subprocess.PIPE)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc)
        out, err = proc.communicate()
    except BaseException:
        # Interrupted (Ctrl+C, SIGTERM): the run's whole group goes too, then the caller.
        kill_group(proc)
        proc.communicate()
        raise
    finally:
        RUNNING.discard(proc)
    secs = time.monotonic() - start
    out = out.decode(errors="replace")
    err = err.decode(errors="replace")
    ev = read_events(out)
    ev.update(
        seconds=round(secs, 1),
        outcome=outcome(proc.returncode, ev["turn_ended"], timed_out),
        stdout=out,
        stderr=err,
    )
    return ev


# Every process group a run started and that may still run: `kill_all` ends them when
# the suite is interrupted between two steps of a run.
RUNNING = set()
STOPS = {signal.SIGINT, signal.SIGTERM}


def spawn(cmd, stderr, **kw):
    """Popen in a session of its own (so that its whole group can be killed), recorded in
    RUNNING before an interrupt can land: SIGINT and SIGTERM wait while it starts, and the
    child gets the mask it would have had."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, old),
            **kw,
        )
        RUNNING.add(proc)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    return proc


def kill_all():
    for proc in list(RUNNING):
        kill_group(proc)
        RUNNING.discard(proc)


def kill_group(proc):
    """SIGKILL to the process group that `start_new_session` gave proc."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def read_events(stdout):
    """The answer (all text deltas), tool calls (count and names in order), tokens in and
    out (summed over every `usage` event, so a run cut off still counts what it used) and
    the `turn_ended` reason (None when the run never ended a turn)."""
    text, names = [], []
    tokens_in = tokens_out = 0
    ended = None
    for line in stdout.splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if not isinstance(e, dict):
            continue
        kind = e.get("type")
        if kind == "text_delta":
            text.append(str(e.get("text", "")))
        elif kind == "tool_call_started":
            names.append(str(e.get("name", "?")))
        elif kind == "usage":
            tokens_in += _int(e.get("input"))
            tokens_out += _int(e.get("output"))
        elif kind == "turn_ended":
            ended = e.get("reason")
    return {
        "answer": "".join(text),
        "tool_calls": len(names),
        "tools": names,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "turn_ended": ended,
    }


def _int(v):
    return v if isinstance(v, int) and v >= 0 else 0


def outcome(returncode, ended, timed_out):
    """"ok" when the process ended a turn and exited 0 or 1 (1: a turn ended by a limit or
    an error the model caused); else what went wrong with the process itself."""
    if timed_out:
        return "timeout"
    if returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return f"crash ({name})"
    if returncode not in (0, 1):
        return f"crash (exit {returncode})"
    if ended is None:
        return f"exit {returncode}, no turn_ended"
    return "ok"
