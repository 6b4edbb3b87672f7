#!/usr/bin/env python3
"""Writes a stored session of N turns (each: user, a bash tool call, its result, usage,
an answer, usage = 6 events) into an ikigai SQLite database, for measuring how resume
and tool calls scale with history. Usage: gen-long-session.py DB CWD TURNS"""
import json, sqlite3, sys, uuid, datetime

db, cwd, turns = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = sqlite3.connect(db)
# The database must exist already (run `ikigai sessions` once to create it).
sid = str(uuid.uuid4())
now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
con.execute("INSERT INTO sessions (id, created_at, updated_at, cwd, provider, model, title) VALUES (?,?,?,?,?,?,?)",
            (sid, now, now, cwd, "openai", "fake-model", "turn 0"))
seq = 0
rows = []
def ev(kind, content, data):
    global seq
    seq += 1
    rows.append((str(uuid.uuid4()), sid, seq, kind, content, None if data is None else json.dumps(data), now))
out = "x" * 400
for t in range(turns):
    cid = f"call_{t}"
    args = json.dumps({"command": f"echo turn {t}"})
    ev("user", f"turn {t}: please run echo", None)
    ev("tool_call", f'bash(command="echo turn {t}")', {"id": cid, "type": "function", "function": {"name": "bash", "arguments": args}})
    env = json.dumps({"tool_success": True, "result": {"output": f"turn {t}\n{out}\nexit code 0"}})
    ev("tool_result", "exit 0", {"tool_call_id": cid, "name": "bash", "output": env, "success": True})
    ev("usage", "", {"input": 100, "output": 10})
    ev("assistant", f"Done with turn {t}. The command printed its output.", None)
    ev("usage", "", {"input": 120, "output": 12})
con.executemany("INSERT INTO events (id, session_id, seq, kind, content, data, created_at) VALUES (?,?,?,?,?,?,?)", rows)
con.commit()
print(sid)
