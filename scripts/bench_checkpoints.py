#!/usr/bin/env python3
"""What checkpoints cost a turn in a large repository (issue 39 §2), whole process, against
a loopback fake vendor whose every turn is one `bash` call that changes a file, then an
answer. Each binary runs with checkpoints on and with `checkpoint_limit_mb = 0` (off); the
difference is what checkpoints add:

  first turn ever   a fresh data folder: the project's first snapshot
  -p turn           one turn per process, the project seen before (median of RUNS)
  session           a session of TURNS turns (prompts piped in): the first turn's cost, and
                    each later turn's ((cost of TURNS turns - cost of 1) / (TURNS - 1))

usage: bench_checkpoints.py REPO FAKE_VENDOR RUNS TURNS BIN [BIN…]   (the first BIN is
"after", a second one "before", measured alternately in the same run)."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

CALL = 'bash=' + json.dumps({"command": "date +%s%N >> pkg00/mod00/f00.rs"})


class Vendor:
    """The fake vendor, serving `turns` turns (a bash call, then an answer, each)."""

    def __init__(self, fake, turns):
        self.p = subprocess.Popen([fake, str(turns), CALL], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.url = self.p.stdout.readline().strip()

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def env_for(home, off):
    config = os.path.join(home, "config.toml")
    with open(config, "w") as f:
        f.write("checkpoint_limit_mb = 0\n" if off else "")
    return {"PATH": os.environ["PATH"], "HOME": home, "OPENAI_API_KEY": "bench",
            "IKIGAI_CONFIG": config, "XDG_CONFIG_HOME": os.path.join(home, ".config"),
            "XDG_DATA_HOME": os.path.join(home, ".local/share")}


def run(binary, repo, env, url, prompts, piped=True):
    """Seconds one process took: the prompts piped in (one turn each), or `-p PROMPT`."""
    args = [binary, "--provider", "openai", "--base-url", url]
    if not piped:
        args += ["-p", prompts[0]]
    stdin = "".join(p + "\n" for p in prompts) if piped else None
    t0 = time.perf_counter()
    p = subprocess.run(args, cwd=repo, env=env, input=stdin, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"run failed ({p.returncode}): {args}\n{p.stderr}")
    return took


def quiet(repo, limit=300):
    """Waits (uncounted) until no git runs in `repo` any more: work a run left in the
    background (a repack after the first snapshot) is not the next run's cost."""
    real = os.path.realpath(repo)
    for _ in range(limit * 10):
        busy = False
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if (os.path.realpath(f"/proc/{pid}/cwd") == real
                        and open(f"/proc/{pid}/comm").read().strip() == "git"):
                    busy = True
                    break
            except OSError:
                pass
        if not busy:
            return
        time.sleep(0.1)


def reset(repo):
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=repo, check=True,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"})


def measure(binary, repo, fake, runs, turns):
    """The costs above for one binary, in seconds."""
    out = {}
    for off in (False, True):
        home = tempfile.mkdtemp(prefix="ikigai-bench-cp.")
        try:
            env = env_for(home, off)
            v = Vendor(fake, 1 + runs * (2 + turns))
            first = run(binary, repo, env, v.url, ["change it"], piped=False)
            per_p, one, many = [], [], []
            for _ in range(runs):
                quiet(repo)
                per_p.append(run(binary, repo, env, v.url, ["change it"], piped=False))
                quiet(repo)
                one.append(run(binary, repo, env, v.url, ["change it"]))
                quiet(repo)
                many.append(run(binary, repo, env, v.url, ["change it"] * turns))
            v.close()
            out[off] = {"first": first, "p": statistics.median(per_p),
                        "one": statistics.median(one), "many": statistics.median(many)}
        finally:
            shutil.rmtree(home, ignore_errors=True)
            reset(repo)
    on, off = out[False], out[True]
    first_of_session = on["one"] - off["one"]
    return {
        "first turn ever": on["first"] - off["first"],
        "-p turn (project seen before)": on["p"] - off["p"],
        "session: first turn": first_of_session,
        "session: each later turn": ((on["many"] - off["many"]) - first_of_session) / (turns - 1),
    }


def main():
    repo, fake, runs, turns = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    bins = sys.argv[5:]
    names = ["after", "before"][: len(bins)]
    results = {n: measure(b, repo, fake, runs, turns) for n, b in zip(names, bins)}
    files = int(subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True,
                               text=True).stdout.count("\n"))
    print(f"checkpoint cost per turn, {files} files, RUNS={runs}, TURNS={turns} "
          f"(checkpoints on minus checkpoint_limit_mb = 0, medians):")
    for what in next(iter(results.values())):
        row = "  ".join(f"{n} {results[n][what] * 1000:8.1f} ms" for n in names)
        print(f"  {what:32} {row}")
    later = results["after"]["session: each later turn"] * 1000
    print(f"target: a later turn <= 50 ms -> {'met' if later <= 50 else 'NOT met'}")


if __name__ == "__main__":
    main()
