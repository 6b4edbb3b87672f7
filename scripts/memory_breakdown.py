#!/usr/bin/env python3
"""Where the memory of one `ikigai -p` turn with one tool call goes: runs it RUNS times
against a loopback fake vendor (as scripts/measure_process.py does), samples
/proc/PID/smaps while it runs and prints, for the sample with the most resident memory,
the resident KiB per mapping (the binary's code, its read-only data, heap, stacks, each
shared library). /usr/bin/time's peak may be a little higher (a sample can miss the peak).

usage: memory_breakdown.py BIN BASE_URL [RUNS] [PROVIDER]   (or BIN - RUNS -- ARGS… to
sample any other command, e.g. `BIN - 10 -- sessions`)"""
import collections, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure_process import bench_home, evict  # noqa: E402


def mappings(pid):
    try:
        text = open(f"/proc/{pid}/smaps").read()
    except OSError:
        return None
    out, cur = [], None
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if "-" in parts[0] and len(parts) >= 5 and not parts[0].endswith(":"):
            cur = {"perms": parts[1], "name": parts[5] if len(parts) > 5 else "", "rss": 0, "dirty": 0}
            out.append(cur)
        elif cur is not None and parts[0] == "Rss:":
            cur["rss"] = int(parts[1])
        elif cur is not None and parts[0] == "Private_Dirty:":
            cur["dirty"] = int(parts[1])
    return out


def label(m, exe):
    name = m["name"]
    if os.path.basename(name) == os.path.basename(exe):
        return f"binary {m['perms']}"
    if name.startswith("["):
        return name
    return f"{os.path.basename(name) or 'anonymous'} {m['perms']}"


def main():
    exe, url = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    if url == "-":
        argv = sys.argv[sys.argv.index("--") + 1:]
    else:
        provider = sys.argv[4] if len(sys.argv) > 4 else "openai"
        argv = ["-p", "what files are here?", "--provider", provider, "--base-url", url]
    best = None
    evict(exe)
    with tempfile.TemporaryDirectory() as home:
        env = bench_home(home)
        for _ in range(runs):
            p = subprocess.Popen([exe, *argv], env=env, cwd=home, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while p.poll() is None:
                maps = mappings(p.pid)
                if maps:
                    total = sum(m["rss"] for m in maps)
                    if best is None or total > best[0]:
                        best = (total, maps)
            p.wait()
    if best is None:
        sys.exit("no sample taken")
    total, maps = best
    rss, dirty = collections.Counter(), collections.Counter()
    for m in maps:
        rss[label(m, exe)] += m["rss"]
        dirty[label(m, exe)] += m["dirty"]
    print(f"largest sample: {total / 1024:.2f} MiB resident")
    for key, kib in rss.most_common():
        if kib:
            print(f"  {kib:7d} KiB (private dirty {dirty[key]:6d})  {key}")


main()
