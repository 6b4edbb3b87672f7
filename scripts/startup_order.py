#!/usr/bin/env python3
"""Writes link/startup-text.ld: the functions a short run executes (`ikigai --version`,
`ikigai sessions`, and one `-p` turn with one tool call per provider kind against the
loopback fake vendor), placed together at the start of the binary's code by the linker
(build.rs passes the script to release links). A run then maps a few MiB of the binary's
code instead of most of it: the kernel maps code in whole page-cache folios (up to
several MiB with a large read-ahead), so hot functions spread over 19 MiB pull in most
of them.

usage: startup_order.py UNSTRIPPED_RELEASE_BIN FAKE_VENDOR_BIN OUT.ld (scripts/gen-startup-order.sh)
Needs valgrind (callgrind). The patterns leave out Rust's symbol hashes and LLVM's
local suffixes, so they keep matching when the code or the compiler changes; a function
that no longer exists matches nothing (no error)."""
import os, re, subprocess, sys, tempfile

KINDS = [("openai-chat", "openai", "OPENAI_API_KEY"),
         ("openai-responses", "openai-responses", "OPENAI_API_KEY"),
         ("anthropic", "anthropic", "ANTHROPIC_API_KEY"),
         ("google", "google", "GEMINI_API_KEY")]


def executed(cg_file, binary):
    """Symbol names of the functions callgrind saw run inside `binary`."""
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
            if m.group(1) == "fn" and ob == binary:
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
        return f".text.{name}"
    if paths[path] == 1:
        return f".text.{path}*"
    return f".text.{re.sub(r'[.]llvm[.][0-9]+$', '', name)}*"


def main():
    binary, vendor, out_path = (os.path.abspath(a) for a in sys.argv[1:4])
    names = set()
    with tempfile.TemporaryDirectory() as home:
        for f in ("main.rs", "lib.rs"):
            open(os.path.join(home, f), "w").write("fn x() {}\n")
        cg = os.path.join(home, "cg.out")
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
    symbols, paths = set(), {}
    for line in subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "tTwW":
            symbols.add(p[2])
            path = rust_path(p[2])
            if path:
                paths[path] = paths.get(path, 0) + 1
    patterns = sorted({p for p in (pattern(n, paths) for n in names & symbols) if p})
    with open(out_path, "w") as f:
        f.write("/* Generated by scripts/gen-startup-order.sh (scripts/startup_order.py): the functions\n"
                "   a short ikigai run executes, placed first in the code so a run maps few pages of\n"
                "   it. Passed by build.rs to release links with lld. Do not edit by hand. */\n")
        f.write("SECTIONS {\n  .text.startup_order : {\n    *(.text.startup .text.startup.*)\n")
        for p in patterns:
            # LLVM puts a function it takes for cold in `.text.unlikely.NAME`.
            f.write(f"    *({p} {p.replace('.text.', '.text.unlikely.', 1)})\n")
        f.write("  }\n} INSERT BEFORE .text;\n")
    print(f"{len(patterns)} patterns ({len(names & symbols)} functions) -> {out_path}")


main()
