#!/usr/bin/env python3
"""Writes link/startup-text.ld: the functions a short run executes (`ikigai --version`,
`ikigai sessions`, and one `-p` turn with one tool call per provider kind against the
loopback fake vendor), placed together at the start of the binary's code by the linker
(build.rs passes the script to release links). A run then maps a few MiB of the binary's
code instead of most of it: the kernel maps code in whole page-cache folios (up to
several MiB with a large read-ahead), so hot functions spread over 19 MiB pull in most
of them.

usage: startup_order.py UNSTRIPPED_RELEASE_BIN FAKE_VENDOR_BIN OUT.ld (scripts/gen-startup-order.sh)
Needs valgrind (callgrind). The patterns leave out Rust's symbol hashes where they can and
LLVM's local suffixes, so most keep matching when the code changes; a function that no
longer exists matches nothing (no error). Generic instances are named with their hashes,
which change with the dependencies and the compiler: the list records the Cargo.lock and
rustc it was made for, and a test (tests/it/release_build.rs) fails when either changed.
It also reports how many of the executed functions lay outside the ordered code of the
binary it ran (how stale the list that binary was linked with had become). Patterns of the
list it replaces that still name a function of the binary are kept."""
import bisect, hashlib, os, re, subprocess, sys, tempfile

REPEAT = 2
KINDS = [("openai-chat", "openai", "OPENAI_API_KEY"),
         ("openai-responses", "openai-responses", "OPENAI_API_KEY"),
         ("anthropic", "anthropic", "ANTHROPIC_API_KEY"),
         ("google", "google", "GEMINI_API_KEY")]


def executed(cg_file, binary):
    """Symbol names of the functions callgrind saw run inside `binary`. Valgrind (3.19)
    names the object of code in an output section other than `.text` `???`: once the
    binary is linked with this list, the listed functions are there, so they count too
    (the caller keeps only names the binary defines)."""
    names, ob, obs, fns = set(), None, {}, {}
    for line in open(cg_file, errors="replace"):
        line = line.rstrip("\n")
        m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(3):
                obs[m.group(2)] = m.group(3)
            if m.group(1) == "ob":
                ob = obs.get(m.group(2))
            continue
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(3):
                fns[m.group(2)] = m.group(3)
            if m.group(1) == "fn" and ob in (binary, "???"):
                names.add(re.sub(r"'\d+$", "", fns[m.group(2)]))
    return names


def run(binary, argv, home, key_var, out):
    """One run under callgrind. A key in the environment would make ikigai re-execute
    itself (secrets leave its environment block), which valgrind cannot follow: the key
    is handed over as the re-executed image receives it (src/environ.rs)."""
    env = {"PATH": os.environ["PATH"], "HOME": home,
           "XDG_CONFIG_HOME": os.path.join(home, ".config"),
           "XDG_DATA_HOME": os.path.join(home, ".local/share")}
    fds = ()
    if key_var:
        fd = os.memfd_create("ikigai-handover", 0)
        os.write(fd, f"{key_var}\0bench\0".encode())
        env["IKIGAI_HANDOVER_FD"] = str(fd)
        fds = (fd,)
    subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}",
                    binary, *argv], env=env, cwd=home, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=fds, check=True)
    for fd in fds:
        os.close(fd)


def rust_path(name):
    """A Rust symbol without its hash and LLVM's local suffix, or None."""
    m = re.match(r"^(_ZN.*17h)[0-9a-f]{16}E(\.llvm\.\d+)?$", name)
    return m.group(1) if m else None


def pattern(name, paths):
    """The input-section pattern for function `name` (-ffunction-sections: `.text.NAME`).
    A Rust function whose path only it has in the binary is matched without its hash (it
    stays matched when the hash changes); the instances of a generic one by their full
    names (a pattern without the hash would take every instance)."""
    if re.search(r"[\s*?\[\]\\\"();{}]", name):
        return None
    path = rust_path(name)
    if path is None:
        # LTO renames colliding local copies of a v0-mangled (std) function `NAME.N`, the
        # numbers changing with any code change: every copy (a few small ones).
        local = re.match(r"^(_R.*)\.\d+$", name)
        return f".text.{local.group(1)}.*" if local else f".text.{name}"
    if paths[path] == 1:
        return f".text.{path}*"
    return f".text.{re.sub(r'[.]llvm[.][0-9]+$', '', name)}*"


def previous(path):
    """The first pattern of each line of the list at `path` (none when there is none)."""
    try:
        text = open(path).read()
    except OSError:
        return set()
    return {m.group(1) for m in re.finditer(r"^\s+\*\((\.text\.\S+) ", text, re.M)
            if m.group(1) != ".text.startup"}


def still_defined(patterns, symbols):
    """The patterns that match a function of the binary: exact names, or a prefix
    followed by `*`, as `pattern` writes them."""
    names = sorted(f".text.{s}" for s in symbols)
    exact = set(names)
    kept = set()
    for p in patterns:
        if not p.endswith("*"):
            if p in exact:
                kept.add(p)
            continue
        i = bisect.bisect_left(names, p[:-1])
        if i < len(names) and names[i].startswith(p[:-1]):
            kept.add(p)
    return kept


def made_for():
    """What the list was made for: the dependencies (Cargo.lock) and the compiler, whose
    changes rename generic instances (tests/it/release_build.rs reads this line)."""
    lock = hashlib.sha256(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Cargo.lock"), "rb").read()).hexdigest()
    rustc = subprocess.run(["rustc", "-V"], capture_output=True, text=True, check=True).stdout.strip()
    return f"Made for Cargo.lock sha256 {lock} and {rustc}."


def ordered(binary, address, bounds={}):
    """Whether `address` lies in the binary's `.text.startup_order` section."""
    if binary not in bounds:
        bounds[binary] = (0, 0)
        for line in subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True,
                                   check=True).stdout.splitlines():
            p = line.replace("[ ", "[").split()
            if len(p) > 5 and p[1] == ".text.startup_order":
                start = int(p[3], 16)
                bounds[binary] = (start, start + int(p[5], 16))
    start, end = bounds[binary]
    return address is not None and start <= address < end


def main():
    binary, vendor, out_path = (os.path.abspath(a) for a in sys.argv[1:4])
    names = set()
    with tempfile.TemporaryDirectory() as home:
        for f in ("main.rs", "lib.rs"):
            open(os.path.join(home, f), "w").write("fn x() {}\n")
        cg = os.path.join(home, "cg.out")
        # Twice each: some functions run only when threads meet (a contended lock, the
        # last reference dropped on the other thread) or a row is rewritten in place.
        for _ in range(REPEAT):
            for kind, provider, key in KINDS:
                v = subprocess.Popen([vendor, "3", "--kind", kind], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
                url = v.stdout.readline().strip()
                run(binary, ["-p", "what files are here?", "--provider", provider, "--base-url", url],
                    home, key, cg)
                names |= executed(cg, binary)
                v.stdin.close()
                v.wait()
            for argv in (["--version"], ["sessions"]):
                run(binary, argv, home, None, cg)
                names |= executed(cg, binary)
    symbols, paths, addresses = set(), {}, {}
    for line in subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "tTwW":
            symbols.add(p[2])
            addresses[p[2]] = int(p[0], 16)
            path = rust_path(p[2])
            if path:
                paths[path] = paths.get(path, 0) + 1
    # A C++ complete-object constructor or destructor (C1/D1) is an alias of the base-object
    # one (C2/D2) and lives in that one's section: every name at a run function's address.
    at = {}
    for n, a in addresses.items():
        at.setdefault(a, []).append(n)
    names = {alias for n in names & symbols for alias in at[addresses[n]]} | (names & symbols)
    patterns = {p for p in (pattern(n, paths) for n in names & symbols) if p}
    # What the list held and the binary still defines stays: a function that runs only now
    # and then (threads meeting, a row rewritten in place) is not lost to one unlucky run.
    kept = still_defined(previous(out_path), symbols) - patterns
    patterns = sorted(patterns | kept)
    outside = len([n for n in names & symbols if not ordered(binary, addresses.get(n))])
    with open(out_path, "w") as f:
        f.write("/* Generated by scripts/gen-startup-order.sh (scripts/startup_order.py): the functions\n"
                "   a short ikigai run executes, placed first in the code so a run maps few pages of\n"
                "   it. Passed by build.rs to release links with lld. Do not edit by hand.\n"
                f"   {made_for()} */\n")
        f.write("SECTIONS {\n  .text.startup_order : {\n    *(.text.startup .text.startup.*)\n")
        for p in patterns:
            # LLVM puts a function it takes for cold in `.text.unlikely.NAME`.
            f.write(f"    *({p} {p.replace('.text.', '.text.unlikely.', 1)})\n")
        f.write("  }\n} INSERT BEFORE .text;\n")
    print(f"{len(patterns)} patterns ({len(names & symbols)} functions run, "
          f"{len(kept)} patterns kept from the list before) -> {out_path}")
    print(f"{outside} of those functions lay outside the ordered code of {binary} "
          "(its list was stale by that much)")


main()
