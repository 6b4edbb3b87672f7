use super::*;

fn parts(cmd: &str) -> Vec<String> {
    analyse(cmd).parts.into_iter().map(|p| p.text).collect()
}

fn maybe(cmd: &str) -> Vec<String> {
    analyse(cmd).maybe.into_iter().map(|p| p.text).collect()
}

fn opaque(cmd: &str) -> bool {
    analyse(cmd).opaque.is_some()
}

#[test]
fn every_simple_command_is_a_part() {
    assert_eq!(parts("git status"), ["git status"]);
    assert_eq!(parts("ls && rm -rf build"), ["ls", "rm -rf build"]);
    assert_eq!(parts("a; b || c | d"), ["a", "b", "c", "d"]);
    assert_eq!(parts("echo $(rm -rf x)"), ["rm -rf x", "echo $(rm -rf x)"]);
    assert_eq!(parts("echo `touch y`"), ["touch y", "echo `touch y`"]);
    assert_eq!(parts("echo \"a $(id) b\""), ["id", "echo \"a $(id) b\""]);
    assert_eq!(parts("(cd x; make) && { ls; }"), ["cd x", "make", "ls"]);
    assert_eq!(parts("if true; then rm a; fi"), ["true", "rm a"]);
    assert_eq!(parts("for f in *; do rm $f; done"), ["rm $f"]);
    assert_eq!(parts("diff <(ls a) b"), ["ls a", "diff <(…) b"]);
    assert_eq!(parts("coproc rm x"), ["rm x"]);
}

#[test]
fn quoting_and_wrappers_do_not_hide_a_command() {
    assert_eq!(parts("'rm' -rf  \"build\""), ["rm -rf build"]);
    assert_eq!(parts("r\\m x"), ["rm x"]);
    assert_eq!(parts("sudo rm -rf /"), ["sudo rm -rf /", "rm -rf /"]);
    assert_eq!(
        parts("sudo -u root rm -rf /"),
        ["sudo -u root rm -rf /", "rm -rf /"]
    );
    assert_eq!(parts("timeout 5 rm x"), ["timeout 5 rm x", "rm x"]);
    assert_eq!(
        parts("timeout -s KILL 5 rm x"),
        ["timeout -s KILL 5 rm x", "rm x"]
    );
    assert_eq!(parts("nice -n 5 rm x"), ["nice -n 5 rm x", "rm x"]);
    assert_eq!(parts("env A=1 rm x")[1], "rm x");
    assert_eq!(parts("env -u X rm x")[1], "rm x");
    assert_eq!(parts("env -i rm x")[1], "rm x");
    assert_eq!(parts("exec -a name rm x")[1], "rm x");
    assert_eq!(parts("command -p rm x")[1], "rm x");
    assert_eq!(
        parts("builtin eval 'rm x'"),
        ["builtin eval rm x", "eval rm x", "rm x"]
    );
    assert_eq!(parts("nohup rm x")[1], "rm x");
    assert_eq!(
        parts("bash -c 'rm -rf x; ls'"),
        ["bash -c rm -rf x; ls", "rm -rf x", "ls"]
    );
    assert_eq!(parts("bash -ec 'rm x'")[1], "rm x");
    assert_eq!(parts("eval rm x"), ["eval rm x", "rm x"]);
    assert_eq!(parts("xargs -a list rm")[1], "rm {xargs input}");
    assert_eq!(parts("find . -exec rm {} ;")[1], "rm {}");
    assert_eq!(parts("trap 'rm x' EXIT")[1], "rm x");
    assert_eq!(parts("flock /tmp/l -c 'rm x'")[1], "rm x");
    assert_eq!(parts("flock /tmp/l rm x")[1], "rm x");
}

#[test]
fn exact_text_fed_to_a_shell_is_walked_as_shell() {
    assert_eq!(parts("echo 'rm -rf x' | bash")[2], "rm -rf x");
    assert_eq!(parts("bash <<< 'rm -rf x'")[1], "rm -rf x");
    assert_eq!(parts("bash <<'EOF'\nrm -rf x\nEOF")[1], "rm -rf x");
    assert_eq!(parts("sh -s <<EOF\nrm -rf x\nEOF")[1], "rm -rf x");
    // What is fed unseen cannot be judged.
    for line in [
        "cat script | bash",
        "bash < script.sh",
        "printf 'rm x' | bash",
        "echo -e 'rm x' | bash",
        "bash <<< \"$cmd\"",
        "bash <<EOF\n$cmd\nEOF",
        "bash",
        "bash -s",
        "bash /dev/stdin",
        "bash <(echo rm x)",
        "source <(echo rm x)",
        "zsh -c 'rm x'",
        "bash -c \"$X\"",
        "bash -i",
        "bash --rcfile x",
        "bash -o posix -c 'rm x'",
    ] {
        assert!(opaque(line), "{line}");
    }
}

#[test]
fn quotes_inside_other_quotes_are_kept_as_the_shell_keeps_them() {
    // Seen: `bash -c 'sh -c "rm -rf victim"'` lost its inner quotes.
    assert_eq!(
        parts("bash -c 'sh -c \"rm -rf victim\"'"),
        [
            "bash -c sh -c \"rm -rf victim\"",
            "sh -c rm -rf victim",
            "rm -rf victim",
        ]
    );
    assert_eq!(parts("echo \"it's\" 'a \"b\"' c\\ d"), ["echo it's a \"b\" c d"]);
}

#[test]
fn a_git_shell_alias_is_the_command_it_runs() {
    assert_eq!(
        parts("git -c alias.x='!rm -rf build' x"),
        ["git -c alias.x=!rm -rf build x", "rm -rf build"]
    );
    assert_eq!(parts("git -calias.x=!rm\\ y x")[1], "rm y");
    assert_eq!(
        parts("git config --global alias.c '!rm -rf build'")[1],
        "rm -rf build"
    );
    assert_eq!(parts("git -c alias.st=status st"), ["git -c alias.st=status st"]);
    assert!(opaque("git --config-env=alias.x=EVIL x"));
    assert!(opaque("git -c \"$X\" x"));
    for env in [
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!rm -rf v' git x",
        "export GIT_CONFIG_COUNT=1; git x",
        "env GIT_CONFIG_PARAMETERS=x git x",
    ] {
        assert!(opaque(env), "{env}");
    }
}

#[test]
fn an_unknown_programs_arguments_and_input_may_hold_a_command() {
    assert_eq!(maybe("ssh host 'rm -rf x'"), ["rm -rf x"]);
    assert_eq!(maybe("su -c 'rm -rf x'"), ["rm -rf x"]);
    assert_eq!(maybe("foo --exec='rm -rf x'"), ["rm -rf x"]);
    assert_eq!(maybe("echo 'rm -rf x' | at-like now"), ["rm -rf x"]);
    assert_eq!(maybe("sqlite3 db <<< '.shell rm -rf x'"), [".shell rm -rf x"]);
    assert!(
        maybe("strace rm -rf x").is_empty(),
        "found by a rule's name, in decide"
    );
    assert!(analyse("strace rm -rf x").parts[0].unknown);
    // Programs whose arguments are data are not searched.
    assert!(maybe("grep -rn 'rm -rf x' src").is_empty());
    assert!(!analyse("rm -rf 'a b'").parts[0].unknown);
}

#[test]
fn the_line_is_opaque_when_something_in_it_cannot_be_seen() {
    for line in [
        "$cmd -rf x",
        "\"$(echo rm)\" x",
        "{rm,-rf,x}",
        "/bin/r? -rf x",
        "$'\\x72m' x",
        "${X:-rm} x",
        "echo ${x:-$((y))}",
        "echo 'unterminated",
        "f() { rm x; }; f",
        "eval \"$x\"",
        "source x.sh",
        ". x.sh",
        "alias ls=rm",
        "shopt -s expand_aliases",
        "enable -f x.so x",
        "hash -p /bin/rm ls",
        "mapfile -C 'rm x' -c 1 a < f",
        "readarray -C cb a < f",
        "declare -a 'x=([0]=$(rm x))'",
        "declare -a x='($(rm x))'",
        "declare -n r=x",
        "declare -i n=x",
        "typeset -f",
        "PROMPT_COMMAND='rm x' bash -i",
        "BASH_ENV=x bash script",
        "PATH=.evil:$PATH; ls",
        "export PATH=.evil",
        "set -k",
        "set -o emacs",
        "printf -v 'a[$(rm x)]' x",
        "read 'a[$(rm x)]'",
        "unset 'a[$(rm x)]'",
        "[[ -v 'a[$(rm x)]' ]]",
        "[[ $x -eq 1 ]]",
        "(( a[$(rm x)] ))",
        "let 'x=a[1]'",
        "echo ${!x}",
        "echo ${x@P}",
        "echo ${a[$i]}",
        "echo ${ rm x; }",
        "echo ${| rm x; }",
        "exec {PATH}>/dev/null",
        "env -S 'rm x'",
        "env --split-string='rm x'",
        "env -C /tmp rm x",
        "sudo -s rm x",
        "sudo -i",
        "nice --foo rm x",
        "python3 -c 'import os'",
        "perl -e 'unlink q(x)'",
        "node -e 'x'",
        "awk 'BEGIN{system(\"rm x\")}'",
        "sed 1e f",
        "echo 'import os' | python3",
        "python3 - <<EOF\nx\nEOF",
        "xargs -I{} sh -c {} < list",
        "fc -s",
        "trap \"$x\" EXIT",
        "for PATH in /tmp; do ls; done",
        "r\\\nm x",
    ] {
        assert!(opaque(line), "{line}");
    }
    for line in [
        "ls -la",
        "rm $f",
        "cargo test 2>&1 | tail -n 20",
        "x=1; echo $x",
        "for f in *.rs; do wc -l \"$f\"; done",
        "set -euo pipefail; ls",
        "shopt -s globstar",
        "declare -a arr=(1 2 3)",
        "export RUST_LOG=debug",
        "LANG=C sort f",
        "read -r line < f",
        "echo $((1+2))",
        "[[ -f x && $a == b ]]",
        "command -v git",
        "python3 script.py --flag",
        "python3 -m pytest -q",
        "bash scripts/build.sh",
        "sed -n 1,5p f",
        "awk -f prog.awk f",
        "cd src && ls",
        "exec 3>&1",
        "trap - EXIT",
    ] {
        assert!(!opaque(line), "{line}: {:?}", analyse(line).opaque);
    }
}

#[test]
fn redirections_are_reads_writes_or_unseen() {
    let a = analyse("cargo test > out.txt 2>/dev/null");
    assert_eq!(a.writes, ["out.txt"]);
    assert!(a.is_compound());
    assert!(analyse("ls 2>/dev/null").writes.is_empty());
    assert_eq!(analyse("make &> log").writes, ["log"]);
    assert_eq!(analyse("echo x >& out").writes, ["out"]);
    assert!(analyse("echo x >&2").writes.is_empty());
    assert_eq!(analyse("cat < in.txt").reads, ["in.txt"]);
    assert_eq!(analyse("cat < /dev/tcp/h/1").writes, ["/dev/tcp/h/1"]);
    assert!(analyse("echo x > $F").unseen_redirect.is_some());
    assert!(
        analyse("cat < ${PATH/*//dev}/tcp/127.0.0.1/9")
            .unseen_redirect
            .is_some()
    );
    assert!(analyse("PAGER=x git log").parts[0].assigns);
    assert!(analyse("cd x").moves);
}
