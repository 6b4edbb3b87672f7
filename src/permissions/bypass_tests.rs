//! The bypass classes of issue 34 §2, as classes: with `deny = ["bash(rm *)"]` (and
//! `bash(rm -rf*)`) in force, every form below — the 33 seen in the attack and forms of
//! our own in each class — is asked or refused, never allowed, in `auto` and in `ask`.
//! (`tests/it/permissions_bypass.rs` runs a subset against the real binary.)

use super::decide::{Policy, Rules, Verdict};
use super::mode::Mode;
use super::rule::{Rule, Source};

/// `(class, line)`; each line would delete `victim` (or run something that could).
pub(crate) const FORMS: &[(&str, &str)] = &[
    // A command name made by expansion, globbing or quoting.
    ("name", "{rm,-rf,victim}"),
    ("name", "/bin/r? -rf victim"),
    ("name", "/???/rm -rf victim"),
    ("name", "\"r\"\"m\" -rf victim"),
    ("name", "r\\m -rf victim"),
    ("name", "\\rm -rf victim"),
    ("name", "r''m -rf victim"),
    ("name", "$'\\x72m' -rf victim"),
    ("name", "$\"rm\" -rf victim"),
    ("name", "${X:-rm} -rf victim"),
    ("name", "${X/x/rm} -rf victim"),
    ("name", "$(echo rm) -rf victim"),
    ("name", "`echo rm` -rf victim"),
    ("name", "\"$(printf rm)\" -rf victim"),
    ("name", "x=rm; $x -rf victim"),
    ("name", "set -- rm -rf victim; \"$@\""),
    ("name", "${!X} -rf victim"),
    ("name", "$0 -c 'rm -rf victim'"),
    ("name", "rm{,} -rf victim"),
    ("name", "@(rm) -rf victim"),
    ("name", "/usr/bin/rm -rf victim"),
    ("name", "r\\\nm -rf victim"),
    // Text that reaches a shell.
    ("shell text", "echo \"rm -rf victim\" | bash"),
    ("shell text", "bash <<< \"rm -rf victim\""),
    ("shell text", "bash <<EOF\nrm -rf victim\nEOF"),
    ("shell text", "cat <<EOF | bash\nrm -rf victim\nEOF"),
    ("shell text", "source <(echo rm -rf victim)"),
    ("shell text", ". <(echo rm -rf victim)"),
    ("shell text", "bash <(echo rm -rf victim)"),
    ("shell text", "printf 'rm -rf victim' | sh"),
    ("shell text", "echo cm0gLXJmIHZpY3RpbQ== | base64 -d | bash"),
    ("shell text", "sh -c \"$(echo rm -rf victim)\""),
    ("shell text", "bash -c 'rm -rf victim'"),
    ("shell text", "bash -s <<< 'rm -rf victim'"),
    ("shell text", "bash /dev/stdin <<< 'rm -rf victim'"),
    ("shell text", "zsh -c 'rm -rf victim'"),
    ("shell text", "busybox sh -c 'rm -rf victim'"),
    ("shell text", "eval \"rm -rf victim\""),
    ("shell text", "eval $(echo rm -rf victim)"),
    ("shell text", "exec bash -c 'rm -rf victim'"),
    // Wrappers: on the list (seen through) or not (their arguments may be a command).
    ("wrapper", "env -u X rm -rf victim"),
    ("wrapper", "env --split-string='rm -rf victim'"),
    ("wrapper", "env -S 'rm -rf victim'"),
    ("wrapper", "env -C / rm -rf victim"),
    ("wrapper", "exec -a foo rm -rf victim"),
    ("wrapper", "xargs -a list rm"),
    ("wrapper", "echo victim | xargs rm -rf"),
    ("wrapper", "echo victim | xargs -I{} sh -c 'rm -rf {}'"),
    ("wrapper", "xargs sh -c 'rm -rf \"$@\"' _ < list"),
    ("wrapper", "sudo -u root rm -rf victim"),
    ("wrapper", "sudo -E rm -rf victim"),
    ("wrapper", "strace -f rm -rf victim"),
    ("wrapper", "ltrace rm -rf victim"),
    ("wrapper", "prlimit --nofile=10 rm -rf victim"),
    ("wrapper", "setpriv --reuid=0 rm -rf victim"),
    ("wrapper", "runuser -u root -- rm -rf victim"),
    ("wrapper", "nsenter -t 1 -m rm -rf victim"),
    ("wrapper", "chroot / rm -rf victim"),
    ("wrapper", "command -p rm -rf victim"),
    ("wrapper", "builtin command rm -rf victim"),
    ("wrapper", "nice -n 5 rm -rf victim"),
    ("wrapper", "timeout -k 1 5 rm -rf victim"),
    ("wrapper", "nohup rm -rf victim"),
    ("wrapper", "time -p rm -rf victim"),
    ("wrapper", "stdbuf -o0 rm -rf victim"),
    ("wrapper", "setsid -w rm -rf victim"),
    ("wrapper", "flock /tmp/l -c 'rm -rf victim'"),
    ("wrapper", "script -qc 'rm -rf victim' /dev/null"),
    ("wrapper", "watch -n1 rm -rf victim"),
    ("wrapper", "parallel rm -rf ::: victim"),
    ("wrapper", "find . -name victim -exec rm -rf {} +"),
    ("wrapper", "taskset 1 rm -rf victim"),
    ("wrapper", "unshare -r rm -rf victim"),
    ("wrapper", "valgrind rm -rf victim"),
    ("wrapper", "doas rm -rf victim"),
    ("wrapper", "su -c 'rm -rf victim'"),
    ("wrapper", "systemd-run --user rm -rf victim"),
    ("wrapper", "at now <<< 'rm -rf victim'"),
    ("wrapper", "ssh localhost 'rm -rf victim'"),
    ("wrapper", "tar -cf /dev/null --to-command='rm -rf victim' f"),
    ("wrapper", "coproc rm -rf victim"),
    // Builtins that run text.
    ("builtin", "hash -p /bin/rm ls; ls -rf victim"),
    ("builtin", "mapfile -C 'rm -rf victim #' -c 1 < /etc/hostname"),
    ("builtin", "readarray -C 'rm -rf victim #' -c 1 < /etc/hostname"),
    ("builtin", "declare -a 'x=([0]=$(rm -rf victim))'"),
    ("builtin", "declare -a x='($(rm -rf victim))'"),
    ("builtin", "shopt -s expand_aliases; alias ls='rm -rf victim'\nls"),
    ("builtin", "trap 'rm -rf victim' EXIT"),
    ("builtin", "trap \"$(echo rm -rf victim)\" EXIT"),
    ("builtin", "enable -f ./x.so x"),
    ("builtin", "source ./script.sh"),
    ("builtin", "f() { rm -rf victim; }; f"),
    ("builtin", "function ls { rm -rf victim; }; ls"),
    ("builtin", "printf -v 'a[$(rm -rf victim)]' x"),
    ("builtin", "read 'a[$(rm -rf victim)]' <<< x"),
    ("builtin", "a=(1); unset 'a[$(rm -rf victim)]'"),
    ("builtin", "[[ -v 'a[$(rm -rf victim)]' ]]"),
    ("builtin", "x='a[$(rm -rf victim)]'; echo $((x))"),
    ("builtin", "x='a[$(rm -rf victim)]'; [[ $x -eq 0 ]]"),
    ("builtin", "x='a[$(rm -rf victim)]'; let x"),
    ("builtin", "x='a[$(rm -rf victim)]'; (( x ))"),
    ("builtin", "x='$(rm -rf victim)'; echo ${x@P}"),
    ("builtin", "x='a[$(rm -rf victim)]'; echo ${!x}"),
    ("builtin", "x='a[$(rm -rf victim)]'; echo ${a[$x]}"),
    ("builtin", "x='a[$(rm -rf victim)]'; s=abc; echo ${s:x}"),
    ("builtin", "declare -n r='a[$(rm -rf victim)]'; echo $r"),
    ("builtin", "x='a[$(rm -rf victim)]'; declare -i y; y=$x"),
    ("builtin", "exec {PATH}>/dev/null; ls"),
    ("builtin", "set -k; true"),
    // Variables a program runs.
    ("variable", "PROMPT_COMMAND='rm -rf victim' bash -i"),
    ("variable", "BASH_ENV=<(echo rm -rf victim) bash -c true"),
    ("variable", "ENV=x sh -i"),
    ("variable", "PS4='$(rm -rf victim)' bash -xc true"),
    (
        "variable",
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!rm -rf victim' git x",
    ),
    (
        "variable",
        "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x; git x",
    ),
    (
        "variable",
        "env GIT_CONFIG_PARAMETERS=\"'alias.x=!rm -rf victim'\" git x",
    ),
    ("variable", "GIT_EXTERNAL_DIFF=rm git diff"),
    ("variable", "LD_PRELOAD=./x.so ls"),
    ("variable", "PATH=.:$PATH ls"),
    ("variable", "export PROMPT_COMMAND='rm -rf victim'; bash -i"),
    ("variable", "git -c alias.x='!rm -rf victim' x"),
    ("variable", "git -c core.pager='rm -rf victim' -p log"),
    ("variable", "git difftool -x 'rm -rf victim'"),
    ("variable", "git -c core.sshCommand='rm -rf victim' fetch"),
    ("variable", "git submodule foreach 'rm -rf victim'"),
    ("variable", "git bisect run rm -rf victim"),
    ("variable", "git config alias.x '!rm -rf victim'"),
    ("variable", "git --config-env=alias.x=V x"),
    // Interpreters: code on the command line or the input.
    (
        "interpreter",
        "python3 -c \"import shutil; shutil.rmtree('victim')\"",
    ),
    ("interpreter", "perl -e 'system(\"rm -rf victim\")'"),
    ("interpreter", "awk 'BEGIN{system(\"rm -rf victim\")}'"),
    (
        "interpreter",
        "node -e 'require(\"fs\").rmSync(\"victim\",{recursive:true})'",
    ),
    ("interpreter", "ruby -e 'system(\"rm -rf victim\")'"),
    ("interpreter", "sed -n '1e rm -rf victim' /etc/hostname"),
    ("interpreter", "make -f /dev/stdin <<< $'x:\\n\\trm -rf victim'"),
    ("interpreter", "find . -exec sh -c 'rm -rf victim' \\;"),
    ("interpreter", "echo 'system(\"rm -rf victim\")' | perl"),
    (
        "interpreter",
        "python3 <<EOF\nimport shutil\nshutil.rmtree('victim')\nEOF",
    ),
    ("interpreter", "php -r 'system(\"rm -rf victim\");'"),
    ("interpreter", "m4 <<< 'syscmd(rm -rf victim)'"),
    ("interpreter", "vim -es -c '!rm -rf victim' -c q"),
    ("interpreter", "gdb -batch -ex '!rm -rf victim'"),
    // bash ≥ 5.3.
    ("bash 5.3", "echo ${ rm -rf victim; }"),
    ("bash 5.3", "echo ${| rm -rf victim; }"),
];

fn policy(deny: &str) -> (tempfile::TempDir, Policy) {
    let dir = tempfile::tempdir().unwrap();
    let p = Policy::new(
        Rules {
            deny: vec![Rule::parse(deny, Source::User, None).unwrap()],
            ..Rules::default()
        },
        dir.path(),
    );
    (dir, p)
}

#[test]
fn every_bypass_form_is_asked_or_refused_never_allowed() {
    for deny in ["bash(rm *)", "bash(rm -rf*)"] {
        let (_dir, p) = policy(deny);
        let mut refused = 0;
        for (class, line) in FORMS {
            for mode in [Mode::Auto, Mode::Ask] {
                let args = serde_json::json!({ "command": line }).to_string();
                let d = p.decide(mode, "bash", &args);
                assert_ne!(d.verdict, Verdict::Allow, "{deny} {mode} [{class}] `{line}`");
                refused += usize::from(d.verdict == Verdict::Deny);
            }
        }
        assert!(refused > 0);
    }
}

/// Lines that do not run `rm` still run with the rule in force (the rule is not a
/// blanket refusal of everything it cannot parse).
#[test]
fn harmless_lines_still_run_with_the_rule() {
    let (_dir, p) = policy("bash(rm *)");
    for line in [
        "cargo test 2>&1 | tail -n 20",
        "ls -la && git status",
        "for f in src/*.rs; do wc -l \"$f\"; done",
        "echo rm -rf victim",
        "grep -rn 'rm -rf' src",
        "git commit -m 'remove the old files'",
        "mkdir -p build && cp a.txt build/",
        "python3 script.py",
        "set -euo pipefail; make test",
        "LANG=C sort f",
        "echo \"$HOME\"",
    ] {
        let args = serde_json::json!({ "command": line }).to_string();
        assert_eq!(
            p.decide(Mode::Auto, "bash", &args).verdict,
            Verdict::Allow,
            "`{line}`"
        );
    }
}
