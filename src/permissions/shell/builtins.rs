//! bash's builtins, every one of them (the set is closed): which only act on their
//! arguments as data (`cd`, `echo`, `test`…), which run text and make the line opaque
//! (`source`, `alias`, `enable`, `fc`, `hash -p`, `mapfile -C`, `set -k`, `shopt` beyond
//! the glob options…), which assign a variable (checked like any assignment), and which
//! run their arguments as a command (`exec`, `command`, `builtin`: unwrapped; `eval` and
//! `trap` with literal text: walked as shell). Decides from the words alone.

use super::analysis::{Analysis, Part, Word};
use super::assign;
use super::programs::{self, Cmd};
use super::walk;
use crate::permissions::getopt::Spec;

/// Builtins that take their arguments as data and run nothing.
const PLAIN: [&str; 27] = [
    ":", "true", "false", "break", "continue", "exit", "return", "shift", "times", "jobs", "bg", "fg",
    "disown", "suspend", "logout", "dirs", "echo", "pwd", "kill", "umask", "ulimit", "help", "type",
    "caller", "wait", "test", "[",
];

/// Builtins that run text or change how later text runs, whatever their arguments.
const OPAQUE: [&str; 13] = [
    "source", ".", "alias", "unalias", "enable", "fc", "history", "bind", "complete", "compgen", "compopt",
    "select", "function",
];

/// `set` option letters that only make the shell stricter or louder (`-euo pipefail`),
/// and the `-o` names among them.
const SET_LETTERS: &str = "abefhmnpuvxBCEP";
pub(super) const SET_NAMES: [&str; 16] = [
    "allexport",
    "braceexpand",
    "errexit",
    "errtrace",
    "hashall",
    "ignoreeof",
    "monitor",
    "noclobber",
    "noexec",
    "noglob",
    "notify",
    "nounset",
    "physical",
    "pipefail",
    "verbose",
    "xtrace",
];

/// `shopt` options that only change globbing and matching.
const SHOPT_NAMES: [&str; 11] = [
    "nullglob",
    "dotglob",
    "globstar",
    "failglob",
    "nocaseglob",
    "nocasematch",
    "extglob",
    "globasciiranges",
    "lastpipe",
    "inherit_errexit",
    "xpg_echo",
];

/// Handles `cmd` when its name is a builtin (`name`, not a path); `false` when it is not.
pub(super) fn run(name: &str, cmd: &Cmd, a: &mut Analysis, depth: usize) -> bool {
    let args = &cmd.words[1..];
    let part = |a: &mut Analysis| a.parts.push(Part::new(cmd.words.clone(), cmd.assigns, false));
    let literal_args = || args.iter().all(Word::is_literal);
    match name {
        _ if PLAIN.contains(&name) => {
            part(a);
            if matches!(name, "test" | "[") {
                test(args, a);
            }
            if name == "wait" && args.iter().any(|w| w.text.starts_with("-p") || w.may_be_option) {
                a.set_opaque("`wait -p` assigns a variable named by its argument");
            }
        }
        "cd" | "pushd" | "popd" => {
            part(a);
            a.moves = true;
        }
        _ if OPAQUE.contains(&name) => {
            part(a);
            a.set_opaque(format!("`{name}` runs text the engine cannot see"));
        }
        "eval" => {
            part(a);
            if literal_args() {
                let text: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
                walk::source(&text.join(" "), a, depth + 1);
            } else {
                a.set_opaque("`eval` runs text decided when it runs");
            }
        }
        "trap" => {
            part(a);
            trap(args, a, depth);
        }
        "exec" => programs::wrapper(cmd, "flags=cl arg=a stop", a, depth),
        "builtin" => programs::wrapper(cmd, "stop", a, depth),
        "command" => {
            let quiet = args
                .first()
                .is_some_and(|w| w.text.starts_with('-') && w.text.contains(['v', 'V']));
            if quiet {
                part(a);
                checked(args, "flags=pvV stop", "command", a);
            } else {
                programs::wrapper(cmd, "flags=p stop", a, depth);
            }
        }
        "printf" => {
            part(a);
            if let Some(s) = checked(args, "arg=v stop", "printf", a) {
                for o in &s.options {
                    assign::name(o.value.as_deref().unwrap_or(""), a);
                }
            }
        }
        "read" => {
            part(a);
            if let Some(s) = checked(args, "flags=ers arg=adinNptu", "read", a) {
                for o in s.options.iter().filter(|o| o.name == "-a") {
                    assign::name(o.value.as_deref().unwrap_or(""), a);
                }
                names(args, &s.operands, a);
            }
        }
        "mapfile" | "readarray" => {
            part(a);
            if let Some(s) = checked(args, "flags=t arg=dnOsu", name, a) {
                names(args, &s.operands, a);
            }
        }
        "getopts" => {
            part(a);
            match args.get(1) {
                Some(n) if n.is_literal() => assign::name(&n.text, a),
                _ => a.set_opaque("`getopts` assigns a variable named when it runs"),
            }
        }
        "unset" => {
            part(a);
            if let Some(s) = checked(args, "flags=fvn", "unset", a) {
                names(args, &s.operands, a);
            }
        }
        "let" => {
            part(a);
            for w in args {
                super::words::arithmetic(&w.text, a, depth);
            }
        }
        "hash" => {
            part(a);
            checked(args, "flags=rtld", "hash", a);
        }
        "declare" | "typeset" | "local" | "export" | "readonly" => {
            part(a);
            declaration(name, cmd, a);
        }
        "set" => {
            part(a);
            set(args, a);
        }
        "shopt" => {
            part(a);
            if let Some(s) = checked(args, "flags=suqpo", "shopt", a) {
                for &i in &s.operands {
                    if !SHOPT_NAMES.contains(&args[i].text.as_str()) {
                        a.set_opaque(format!("`shopt {}` changes how later text runs", args[i].text));
                    }
                }
            }
        }
        _ => return false,
    }
    true
}

/// Scans a builtin's options; an option off the spec makes the line opaque (`None`).
fn checked(
    args: &[Word],
    spec: &'static str,
    name: &str,
    a: &mut Analysis,
) -> Option<crate::permissions::getopt::Scanned> {
    let texts: Vec<String> = args.iter().map(|w| w.text.clone()).collect();
    let dynamic: Vec<bool> = args.iter().map(|w| w.may_be_option).collect();
    match Spec::parse(spec).scan(&texts, &dynamic) {
        Ok(s) => Some(s),
        Err(e) => {
            a.set_opaque(format!("`{name} {}`: an option the engine does not know", e.0));
            None
        }
    }
}

/// The operands at `at` are variable names the builtin assigns.
fn names(args: &[Word], at: &[usize], a: &mut Analysis) {
    for &i in at {
        if args[i].is_literal() {
            assign::name(&args[i].text, a);
        } else {
            a.set_opaque(format!("`{}` names a variable when it runs", args[i].text));
        }
    }
}

/// `test -v NAME` / `[ -v NAME ]` evaluates a subscript in NAME.
fn test(args: &[Word], a: &mut Analysis) {
    for pair in args.windows(2) {
        if pair[0].text == "-v" && (pair[1].text.contains('[') || !pair[1].is_literal()) {
            a.set_opaque(format!(
                "`-v {}` evaluates a subscript when it runs",
                pair[1].text
            ));
        }
    }
}

/// `trap 'CMD' SIG…` runs CMD later, in this shell: walked when literal.
fn trap(args: &[Word], a: &mut Analysis, depth: usize) {
    let mut rest = args;
    if rest.first().is_some_and(|w| w.text == "--") {
        rest = &rest[1..];
    }
    match rest.first() {
        None => {}
        Some(w) if w.is_literal() && matches!(w.text.as_str(), "-l" | "-p" | "-" | "") => {}
        Some(w) if rest.len() == 1 && w.is_literal() => {}
        Some(w) if w.is_literal() && !w.text.starts_with('-') => walk::source(&w.text, a, depth + 1),
        Some(w) => a.set_opaque(format!("`trap {}` runs text the engine cannot see", w.text)),
    }
}

/// `declare`, `typeset`, `local`, `export`, `readonly`: options that only set plain
/// attributes, and operands that are safe names with plain values.
fn declaration(name: &str, cmd: &Cmd, a: &mut Analysis) {
    let mut only_operands = false;
    for (i, w) in cmd.words.iter().enumerate().skip(1) {
        if !w.is_literal() && w.may_be_option {
            a.set_opaque(format!("`{name} {}`: an argument decided when it runs", w.text));
            continue;
        }
        let t = w.text.as_str();
        if !only_operands && t == "--" {
            only_operands = true;
            continue;
        }
        if !only_operands && (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            if !t[1..].chars().all(|c| "aAgrxplu".contains(c)) {
                a.set_opaque(format!(
                    "`{name} {t}` sets an attribute that runs or evaluates text"
                ));
            }
            continue;
        }
        match cmd.assignments.get(&i) {
            Some(asg) => assign::assignment(asg, a, 0, true),
            None => assign::declaration_word(t, a),
        }
    }
}

/// `set`: letters and `-o` names that only make the shell stricter or louder.
fn set(args: &[Word], a: &mut Analysis) {
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        if !w.is_literal() && w.may_be_option {
            a.set_opaque(format!("`set {}`: an argument decided when it runs", w.text));
            return;
        }
        let t = w.text.as_str();
        if t == "--" || t == "-" || !(t.starts_with('-') || t.starts_with('+')) {
            // Positional parameters: data.
            return;
        }
        let letters = &t[1..];
        for c in letters.chars() {
            if c == 'o' {
                i += 1;
                match args.get(i) {
                    Some(n) if SET_NAMES.contains(&n.text.as_str()) => {}
                    None => {}
                    Some(n) => {
                        a.set_opaque(format!("`set -o {}` changes how later text runs", n.text));
                    }
                }
            } else if !SET_LETTERS.contains(c) {
                a.set_opaque(format!("`set {t}` changes how later text runs"));
            }
        }
        i += 1;
    }
}
