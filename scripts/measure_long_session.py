#!/usr/bin/env python3
"""How ikigai scales with a long stored session: for each history size, a fresh SQLite
database holding one session of N turns (scripts/gen-long-session.py), then
`ikigai --continue --json` with one stdin line ("run echo", one turn) against the loopback
fake vendor whose model calls `bash echo`. Prints, per size: the content's bytes (event
text and data), time to `session_started`, the tool call's tool_call_started →
tool_call_finished time, the whole run, and peak RSS (VmHWM, read after the turn); for
every size after the first (smallest), also (peak RSS − the first size's peak RSS) /
content: what the history costs in memory per byte of it (issue 14 asks ≤ 2×).
Usage: measure_long_session.py IKIGAI[,IKIGAI_BEFORE] BASE_URL TURNS[,TURNS…] [RUNS]
(with two binaries, each size is measured with both, in the same run)."""
import os, statistics, subprocess, sys, tempfile, time, json

here = os.path.dirname(os.path.abspath(__file__))

def one(binary, base_url, env, cwd):
    # The prompt goes in as a stdin line (one line, one turn) so the process is still alive
    # after the turn: its peak RSS is read from /proc (VmHWM) then. The rusage of a child
    # would count the RSS of this Python process too, which it shares until `exec`.
    t0 = time.perf_counter()
    p = subprocess.Popen([binary, "--continue", "--json", "--base-url", base_url],
                         env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdin.write(b"run echo\n")
    p.stdin.flush()
    marks, peak = {}, None
    for line in p.stdout:
        t = time.perf_counter() - t0
        kind = json.loads(line).get("type")
        marks.setdefault(kind, t)
        if kind == "tool_call_finished":
            marks["tool_call_finished"] = t
        if kind == "turn_ended":
            status = open(f"/proc/{p.pid}/status").read()
            peak = int(next(l for l in status.splitlines() if l.startswith("VmHWM:")).split()[1]) / 1024
            p.stdin.close()
    status = p.wait()
    err = p.stderr.read().decode(errors="replace")
    if status != 0 or peak is None:
        sys.exit(f"ikigai failed ({status}): {err}")
    return marks, time.perf_counter() - t0, peak

def main():
    binaries, base_url, sizes = sys.argv[1].split(","), sys.argv[2], [int(s) for s in sys.argv[3].split(",")]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    baseline = {}  # binary -> peak RSS (MiB) of the first size
    for turns in sizes:
        with tempfile.TemporaryDirectory() as home:
            cwd = os.path.join(home, "proj")
            os.mkdir(cwd)
            # A window large enough that the whole history goes out (no compaction): the
            # worst case for encoding, and the case the numbers in issue 14 describe.
            cfg = os.path.join(home, "config.toml")
            open(cfg, "w").write("[providers.openai]\ncontext_window = 100000000\n")
            env = {"PATH": os.environ["PATH"], "HOME": home, "OPENAI_API_KEY": "bench",
                   "IKIGAI_CONFIG": cfg,
                   "XDG_CONFIG_HOME": os.path.join(home, ".config"),
                   "XDG_DATA_HOME": os.path.join(home, ".local/share")}
            # Let ikigai create and migrate the database, then fill it.
            subprocess.run([binaries[0], "sessions"], env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
            db = os.path.join(home, ".local/share/ikigai/ikigai.db")
            subprocess.run([sys.executable, os.path.join(here, "gen-long-session.py"), db, cwd, str(turns)],
                           check=True, stdout=subprocess.DEVNULL)
            size = os.path.getsize(db)
            import sqlite3
            con = sqlite3.connect(db)
            content = con.execute("SELECT COALESCE(SUM(LENGTH(content) + LENGTH(COALESCE(data, ''))), 0) "
                                  "FROM events").fetchone()[0]
            con.close()
            for binary in binaries:
                started, tool, total, rss = [], [], [], []
                for _ in range(runs):
                    marks, t, r = one(binary, base_url, env, cwd)
                    started.append(marks["session_started"] * 1000)
                    tool.append((marks["tool_call_finished"] - marks["tool_call_started"]) * 1000)
                    total.append(t * 1000)
                    rss.append(r)
                med = statistics.median
                peak = max(rss)
                ratio = ""
                if binary in baseline:
                    ratio = f", {(peak - baseline[binary]) / (content / 2**20):.2f}x content over {sizes[0]} turns"
                else:
                    baseline[binary] = peak
                print(f"{binary}: {turns * 6:>6} events ({size / 1e6:.1f} MB db, {content / 2**20:.2f} MiB "
                      f"content): session_started "
                      f"{med(started):6.1f} ms, tool call {med(tool):6.2f} ms, whole run {med(total):7.1f} ms, "
                      f"peak RSS {peak:5.1f} MiB{ratio}")

main()
