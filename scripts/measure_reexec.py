#!/usr/bin/env python3
"""The re-execution at start (`environ::hide`: a secret in the environment makes ikigai
execute itself again without it), measured without strace, on one `-p` turn with a tool
call against a loopback fake vendor:

  perf trace    the time from the binary's first execve to its second, from the kernel's
                execve tracepoints (`perf trace -e execve`; the process never stops),
                median of RUNS (skipped when perf is missing or not allowed)
  wall time     the same turn with a secret-looking variable in the environment (it
                re-executes) and without (it does not), alternating, medians of RUNS

usage: measure_reexec.py BIN BASE_URL RUNS"""
import os, re, shutil, statistics, subprocess, sys, tempfile, time


def env_for(home, secret):
    env = {"PATH": os.environ["PATH"], "HOME": home,
           "XDG_CONFIG_HOME": os.path.join(home, ".config"),
           "XDG_DATA_HOME": os.path.join(home, ".local/share")}
    if secret:
        env["BENCH_API_TOKEN"] = "not-a-real-token"
    return env


def turn(binary, url):
    # A loopback base_url needs no key: nothing secret unless the caller adds it.
    return [binary, "-p", "what files are here?", "--provider", "openai", "--base-url", url]


def wall(argv, env, cwd):
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"run failed ({p.returncode}): {argv}\n{p.stderr.decode(errors='replace')}")
    return took


def perf_gap(argv, env, cwd):
    """Milliseconds between the first execve's return and the second execve's start."""
    with tempfile.NamedTemporaryFile("r", suffix=".perf") as out:
        p = subprocess.run(["perf", "trace", "-e", "execve", "-o", out.name, "--", *argv],
                           env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if p.returncode != 0:
            return None
        # `     0.593 ( 0.232 ms): ikigai/123 execve(…) = 0`: times relative to the first
        # event, the first execve's return (`? (…): … [continued]: execve()`).
        times = [float(m.group(1)) for line in out.read().splitlines()
                 if (m := re.match(r"\s*([0-9.]+) \(.*\): ikigai/\d+ execve\(", line))]
        return times[0] if times else None


def main():
    binary, url, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with tempfile.TemporaryDirectory() as home:
        for f in ("main.rs", "lib.rs"):
            open(os.path.join(home, f), "w").write("fn x() {}\n")
        argv = turn(binary, url)
        gaps = []
        if shutil.which("perf"):
            for _ in range(runs):
                g = perf_gap(argv, env_for(home, True), home)
                if g is None:
                    gaps = []
                    break
                gaps.append(g)
        with_, without = [], []
        for _ in range(runs):
            with_.append(wall(argv, env_for(home, True), home))
            without.append(wall(argv, env_for(home, False), home))
    if gaps:
        print(f"re-execution, first execve to second (perf trace): median "
              f"{statistics.median(gaps):.2f} ms (min {min(gaps):.2f}, max {max(gaps):.2f})")
    else:
        print("re-execution (perf trace): perf missing or not allowed; skipped")
    a, b = statistics.median(with_) * 1000, statistics.median(without) * 1000
    print(f"-p turn with a secret in the environment (re-executes): median {a:.2f} ms; "
          f"without (does not): {b:.2f} ms; difference {a - b:.2f} ms")
    gap = statistics.median(gaps) if gaps else a - b
    print(f"target: <= 3 ms -> {'met' if gap <= 3 else 'NOT met'}")


if __name__ == "__main__":
    main()
