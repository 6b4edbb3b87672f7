#!/usr/bin/env python3
"""A prompt through `ikigai acp` against the same prompt through `ikigai -p --json`, in one
run, against one loopback fake vendor (one glob tool call, then the answer): the whole
process each time (start, the prompt, exit), interleaved so both see the same machine, and
how long `initialize` takes to answer from the start of `ikigai acp`. The editor's side
is written here as plain JSON-RPC lines (what any ACP client sends).

  measure_acp.py BINARY BASE_URL RUNS"""
import json, os, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_process import bench_home, evict  # noqa: E402

PROMPT = "what files are here?"

def rpc(proc, id_, method, params):
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n")
    proc.stdin.flush()
    for line in proc.stdout:
        msg = json.loads(line)
        if msg.get("id") == id_ and "method" not in msg:
            if "error" in msg:
                sys.exit(f"{method} failed: {msg['error']}")
            return msg["result"]
    sys.exit(f"no answer to {method}")

def acp_run(binary, base_url, env, cwd):
    """One editor session: start, initialize, session/new, one prompt, close. Returns the
    whole wall time and the time `initialize` took to answer from the start."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([binary, "--base-url", base_url, "--approval", "auto", "acp"], env=env,
                            cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, bufsize=1)
    rpc(proc, 1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    init = time.perf_counter() - t0
    sid = rpc(proc, 2, "session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
    stop = rpc(proc, 3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": PROMPT}]})
    if stop.get("stopReason") != "end_turn":
        sys.exit(f"the prompt ended {stop}")
    proc.stdin.close()
    if proc.wait() != 0:
        sys.exit(f"ikigai acp exited {proc.returncode}")
    return time.perf_counter() - t0, init

def p_run(binary, base_url, env, cwd, piped=False):
    """`-p PROMPT --json`, or (`piped`) the prompt as a line on stdin: a run that may have
    more prompts, which follows the working tree between them as an editor's session does."""
    t0 = time.perf_counter()
    args = ["--json"] if piped else ["-p", PROMPT, "--json"]
    p = subprocess.run([binary, "--base-url", base_url, "--approval", "auto", *args],
                       env=env, cwd=cwd, input=(PROMPT + "\n").encode() if piped else None,
                       stdin=None if piped else subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit(f"-p failed ({p.returncode}): {p.stderr.decode(errors='replace')}")
    return time.perf_counter() - t0

def main():
    binary, base_url, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    evict(binary)
    with tempfile.TemporaryDirectory() as home:
        env = bench_home(home)
        acp, inits, plain, piped = [], [], [], []
        # One of each first, unmeasured: the binary read back into the page cache.
        p_run(binary, base_url, env, home)
        acp_run(binary, base_url, env, home)
        for _ in range(runs):
            plain.append(p_run(binary, base_url, env, home))
            piped.append(p_run(binary, base_url, env, home, piped=True))
            wall, init = acp_run(binary, base_url, env, home)
            acp.append(wall)
            inits.append(init)
    ms = lambda xs: statistics.median(xs) * 1000
    print(f"-p --json, one prompt with one tool call: median {ms(plain):.2f} ms")
    print(f"--json with the prompt piped on stdin (follows the tree, as acp): median {ms(piped):.2f} ms")
    print(f"acp (initialize, session/new, the same prompt, close): median {ms(acp):.2f} ms")
    print(f"acp - (piped --json): {ms(acp) - ms(piped):+.2f} ms; ratio {ms(acp)/ms(piped):.3f}x")
    print(f"acp - (-p --json): {ms(acp) - ms(plain):+.2f} ms; ratio acp/-p {ms(acp)/ms(plain):.3f}x")
    print(f"acp initialize answered after: median {ms(inits):.2f} ms (p90 {sorted(inits)[int(0.9*len(inits))]*1000:.2f} ms)")
    print(f"targets: within 2 ms of -p -> {'met' if ms(acp) - ms(plain) <= 2 else 'NOT met'}; "
          f"initialize <= 50 ms -> {'met' if ms(inits) <= 50 else 'NOT met'}")

if __name__ == "__main__":
    main()
