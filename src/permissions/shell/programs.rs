//! What a simple command runs, by its name: a builtin (builtins.rs), a wrapper on the
//! positive list (each with the options it accepts: `env` with `-i`/`-u` and `NAME=value`,
//! `nice`, `timeout`, `nohup`, `time`, `sudo -u`, `setsid`, `stdbuf`, `ionice`, `doas`,
//! `busybox`, `flock`, `xargs`, `find -exec`) whose inner command is a command too, a
//! shell (its `-c` script or the exact text fed to it walked as shell; anything else fed
//! to it is opaque), an interpreter (code given inline or on its input is opaque; a
//! script file is a program), `git` (shell aliases defined on the line are walked), or
//! any other program, whose arguments and input may hold a command (kept as *maybe*).

use std::collections::HashMap;

use brush_parser::ast;

use super::analysis::{Analysis, MAX_DEPTH, Part, Word, WordKind, base_name};
use super::{assign, builtins, walk};
use crate::permissions::getopt::Spec;

/// One simple command ready to be judged.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cmd {
    pub words: Vec<Word>,
    /// It sets variables for itself (`X=1 cmd`).
    pub assigns: bool,
    /// Assignment operands by word index (`declare x=(…)`), as parsed.
    pub assignments: HashMap<usize, ast::Assignment>,
    /// The exact text on its standard input, when the line shows it (`<<< 'text'`, a
    /// here-document without expansions, `echo text |`); `None` when unseen.
    pub input: Option<String>,
}

/// Shells whose `-c` script is bash syntax (walked); other shells' scripts are opaque.
const BASH_LIKE: [&str; 6] = ["bash", "sh", "dash", "ash", "rbash", "busybox"];
const OTHER_SHELLS: [&str; 11] = [
    "zsh", "ksh", "mksh", "pdksh", "yash", "posh", "fish", "tcsh", "csh", "elvish", "xonsh",
];

/// Programs that run code given on their command line or input.
const INTERPRETERS: [&str; 33] = [
    "python",
    "pypy",
    "perl",
    "ruby",
    "irb",
    "node",
    "nodejs",
    "deno",
    "bun",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "Rscript",
    "R",
    "julia",
    "osascript",
    "expect",
    "guile",
    "gdb",
    "at",
    "batch",
    "m4",
    "pwsh",
    "sed",
    "jshell",
    "groovy",
    "crontab",
];

/// The wrappers seen through, and the options each accepts (`getopt::Spec`).
fn wrapper_spec(name: &str) -> Option<&'static str> {
    Some(match name {
        "nice" => "arg=n num arg-long=adjustment stop",
        "nohup" => "stop",
        "setsid" => "flags=fwc long=fork,wait,ctty stop",
        "stdbuf" => "arg=ioe arg-long=input,output,error stop",
        "ionice" => "flags=t arg=cn long=ignore arg-long=class,classdata stop",
        "time" => "flags=pvq arg=f long=portability,verbose,quiet arg-long=format stop",
        "sudo" => {
            "flags=nEHkSbP arg=ugp long=non-interactive,preserve-env,set-home,reset-timestamp,stdin,background,preserve-groups arg-long=user,group,prompt stop"
        }
        "doas" => "flags=n arg=u stop",
        "busybox" => "stop",
        _ => return None,
    })
}

/// The family of a program name: `python3.12` → `python`, `perl5.36` → `perl`.
fn family(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
}

fn is_interpreter(name: &str) -> bool {
    INTERPRETERS.contains(&name) || INTERPRETERS.contains(&family(name))
}

/// Judges `cmd`: pushes its part(s) to `a`, walks what it runs.
pub(super) fn run(cmd: Cmd, a: &mut Analysis, depth: usize) {
    if depth > MAX_DEPTH {
        a.set_opaque("nested too deeply to judge");
        return;
    }
    let Some(first) = cmd.words.first() else {
        return;
    };
    if !first.is_literal() {
        a.set_opaque(format!(
            "the command's name `{}` is decided when it runs",
            first.text
        ));
        a.parts.push(Part::new(cmd.words.clone(), cmd.assigns, true));
        return;
    }
    let path = first.text.clone();
    let name = base_name(&path);
    if !path.contains('/') && builtins::run(name, &cmd, a, depth) {
        return;
    }
    if let Some(spec) = wrapper_spec(name) {
        return wrapper(&cmd, spec, a, depth);
    }
    match name {
        "env" => env(&cmd, a, depth),
        "timeout" => timeout(&cmd, a, depth),
        "xargs" => xargs(&cmd, a, depth),
        "flock" => flock(&cmd, a, depth),
        "find" => find(&cmd, a, depth),
        "git" => git(&cmd, a, depth),
        _ if BASH_LIKE.contains(&name) || OTHER_SHELLS.contains(&family(name)) => shell(&cmd, name, a, depth),
        _ if INTERPRETERS.contains(&name) => interpreter(&cmd, name, a),
        _ if is_interpreter(name) => interpreter(&cmd, family(name), a),
        _ => other(&cmd, a, depth),
    }
}

/// Scans the words after the name; an option off the spec makes the line opaque.
fn scan(cmd: &Cmd, spec: &'static str, a: &mut Analysis) -> Option<crate::permissions::getopt::Scanned> {
    let args = &cmd.words[1..];
    let texts: Vec<String> = args.iter().map(|w| w.text.clone()).collect();
    let dynamic: Vec<bool> = args.iter().map(|w| w.may_be_option).collect();
    match Spec::parse(spec).scan(&texts, &dynamic) {
        Ok(s) => Some(s),
        Err(e) => {
            a.set_opaque(format!(
                "`{} {}`: an option the engine does not know, so what it runs cannot be seen",
                cmd.words[0].text, e.0
            ));
            None
        }
    }
}

/// The command inside a wrapper, from argument `from` (an index into `cmd.words`).
fn inner(cmd: &Cmd, from: usize) -> Cmd {
    Cmd {
        words: cmd.words[from..].to_vec(),
        assigns: false,
        assignments: HashMap::new(),
        input: cmd.input.clone(),
    }
}

/// A wrapper that runs its first operand (and the rest) as a command.
pub(super) fn wrapper(cmd: &Cmd, spec: &'static str, a: &mut Analysis, depth: usize) {
    a.parts.push(Part::new(cmd.words.clone(), cmd.assigns, false));
    let Some(s) = scan(cmd, spec, a) else { return };
    if let Some(&at) = s.operands.first() {
        run(inner(cmd, at + 1), a, depth + 1);
    }
}

/// `env [-i] [-u NAME] [NAME=value…] [CMD…]`: the names it sets must be safe.
fn env(cmd: &Cmd, a: &mut Analysis, depth: usize) {
    a.parts.push(Part::new(cmd.words.clone(), cmd.assigns, false));
    let Some(s) = scan(
        cmd,
        "flags=iv0 arg=u long=ignore-environment,debug,null arg-long=unset stop",
        a,
    ) else {
        return;
    };
    let mut at = s.operands.first().map(|&i| i + 1);
    while let Some(i) = at.filter(|&i| i < cmd.words.len()) {
        let w = &cmd.words[i];
        if w.text == "-" && w.is_literal() {
            at = Some(i + 1);
            continue;
        }
        match w.text.split_once('=') {
            Some((n, _)) if w.is_literal() => {
                assign::name(n, a);
                at = Some(i + 1);
            }
            _ => break,
        }
    }
    if let Some(i) = at.filter(|&i| i < cmd.words.len()) {
        run(inner(cmd, i), a, depth + 1);
    }
}

/// `timeout [opts] DURATION CMD…`.
fn timeout(cmd: &Cmd, a: &mut Analysis, depth: usize) {
    a.parts.push(Part::new(cmd.words.clone(), cmd.assigns, false));
    let spec = "flags=v arg=sk long=preserve-status,foreground,verbose arg-long=signal,kill-after stop";
    let Some(s) = scan(cmd, spec, a) else { return };
    if let Some(&at) = s.operands.get(1) {
        run(inner(cmd, at + 1), a, depth + 1);
    }
}

/// `xargs [opts] CMD…` runs CMD with arguments it reads: the inner command gets them as
/// a word decided when it runs (with `-I R`, the words holding R are).
fn xargs(cmd: &Cmd, a: &mut Analysis, depth: usize) {
    a.parts.push(Part::new(cmd.words.clone(), cmd.assigns, false));
    let spec = "flags=0rtxp arg=nLPdaIsE long=null,no-run-if-empty,verbose,exit,interactive \
                arg-long=max-args,max-lines,max-procs,delimiter,arg-file,replace,max-chars,eof,process-slot-var stop";
    let Some(s) = scan(cmd, spec, a) else { return };
    if s.options.iter().any(|o| o.name == "--process-slot-var") {
        a.set_opaque("`xargs --process-slot-var` sets a variable for the command");
    }
    let replace = s
        .options
        .iter()
        .find(|o| o.name == "-I" || o.name == "--replace")
        .and_then(|o| o.value.clone());
    let read = Word {
        text: "{xargs input}".into(),
        kind: WordKind::Dynamic,
        may_be_option: true,
    };
    let mut inner_cmd = match s.operands.first() {
        Some(&at) => inner(cmd, at + 1),
        // No command: `echo`.
        None => Cmd {
            words: vec![Word::literal("echo")],
            ..Cmd::default()
        },
    };
    inner_cmd.input = None;
    match replace {
        Some(r) => {
            for w in inner_cmd
                .words
                .iter_mut()
                .skip(1)
                .filter(|w| w.text.contains(r.as_str()))
            {
                w.kind = WordKind::Dynamic;
                w.may_be_option = true;
            }
        }
        None => inner_cmd.words.push(read),
    }
    if inner_cmd.words.first().is_some_and(|w| !w.is_literal()) {
        a.set_opaque("`xargs` runs a command named by its input");
        return;
    }
    run(inner_cmd, a, depth + 1);
}

/// `flock [opts] FILE CMD…` or `flock [opts] FILE -c SCRIPT`.
fn flock(cmd: &Cmd, a: &mut Analysis, depth: usize) {
    a.parts.push(Part::new(cmd.words.clone(), cmd.assigns, false));
    let spec = "flags=sexnuoFv arg=wE long=shared,exclusive,nonblock,unlock,close,no-fork,verbose \
                arg-long=timeout,wait,conflict-exit-code stop";
    let Some(s) = scan(cmd, spec, a) else { return };
    let Some(&file) = s.operands.first() else { return };
    let at = file + 2;
    match cmd.words.get(at) {
        Some(w) if w.is_literal() && (w.text == "-c" || w.text == "--command") => match cmd.words.get(at + 1)
        {
            Some(script) if script.is_literal() => walk::source(&script.text, a, depth + 1),
            _ => a.set_opaque("`flock -c` runs a script decided when it runs"),
        },
        Some(_) => run(inner(cmd, at), a, depth + 1),
        None => {}
    }
}

/// `find … -exec CMD… ;` (and `-execdir`, `-ok`, `-okdir`): CMD is a command, `{}` a
/// word decided when it runs. `-fprint FILE` and friends write FILE.
fn find(cmd: &Cmd, a: &mut Analysis, depth: usize) {
    let known = super::data::is_data_command(&cmd.words);
    a.parts.push(Part::new(cmd.words.clone(), cmd.assigns, !known));
    let words = &cmd.words;
    let mut i = 1;
    while i < words.len() {
        let t = words[i].text.as_str();
        if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut end = start;
            while end < words.len() && !matches!(words[end].text.as_str(), ";" | "+") {
                end += 1;
            }
            let mut inner_words: Vec<Word> = words[start..end].to_vec();
            for w in inner_words.iter_mut().filter(|w| w.text.contains("{}")) {
                w.kind = WordKind::Dynamic;
                w.may_be_option = true;
            }
            if !inner_words.is_empty() {
                run(
                    Cmd {
                        words: inner_words,
                        ..Cmd::default()
                    },
                    a,
                    depth + 1,
                );
            }
            i = end + 1;
            continue;
        }
        if matches!(t, "-fprint" | "-fprint0" | "-fprintf" | "-fls")
            && let Some(file) = words.get(i + 1)
        {
            if file.is_literal() {
                a.writes.push(file.text.clone());
            } else {
                a.unseen_redirect = Some(format!("`find {t}` writes a file named when it runs"));
            }
        }
        i += 1;
    }
}

/// A shell: its `-c` script, or the text it reads as a script.
fn shell(cmd: &Cmd, name: &str, a: &mut Analysis, depth: usize) {
    a.parts.push(Part::new(cmd.words.clone(), cmd.assigns, false));
    let spec = "flags=ceuxvlfhBCPabrps arg=o long=login,noprofile,norc,restricted,verbose,noediting stop";
    let Some(s) = scan(cmd, spec, a) else { return };
    if let Some(o) = s.options.iter().find(|o| {
        o.name == "-o"
            && !o
                .value
                .as_deref()
                .is_some_and(|v| builtins::SET_NAMES.contains(&v))
    }) {
        a.set_opaque(format!(
            "`{name} -o {}` changes how the shell reads its script",
            o.value.as_deref().unwrap_or("")
        ));
        return;
    }
    let bash_like = BASH_LIKE.contains(&name);
    let script = |text: &str, a: &mut Analysis| {
        if bash_like {
            walk::source(text, a, depth + 1);
        } else {
            a.set_opaque(format!("`{name}` runs a script in a syntax other than bash's"));
        }
    };
    if s.options.iter().any(|o| o.name == "-c") {
        match s.operands.first().map(|&i| &cmd.words[i + 1]) {
            Some(w) if w.is_literal() => script(&w.text, a),
            Some(w) => a.set_opaque(format!(
                "`{name} -c {}` runs a script decided when it runs",
                w.text
            )),
            None => a.set_opaque(format!("`{name} -c` without a script")),
        }
        return;
    }
    let from_input = |a: &mut Analysis| match &cmd.input {
        Some(text) => script(text, a),
        None => a.set_opaque(format!(
            "`{name}` runs the text on its input, which the engine cannot see"
        )),
    };
    if s.options.iter().any(|o| o.name == "-s") {
        // `-s`: the script is the input; the operands are its arguments.
        return from_input(a);
    }
    match s.operands.first().map(|&i| &cmd.words[i + 1]) {
        Some(w) if !w.is_literal() => {
            a.set_opaque(format!("`{name} {}` runs a script named when it runs", w.text))
        }
        Some(w) if is_stdin(&w.text) => from_input(a),
        Some(w) if reads_input(&w.text) => a.set_opaque(format!(
            "`{name} {}` runs a script the engine cannot read",
            w.text
        )),
        // A script file: a program, judged by its name like any other.
        Some(_) => {}
        None => from_input(a),
    }
}

/// A path that names a stream rather than a file: standard input or a descriptor.
fn reads_input(path: &str) -> bool {
    is_stdin(path) || path.starts_with("/dev/fd/") || (path.starts_with("/proc/") && path.contains("/fd/"))
}

fn is_stdin(path: &str) -> bool {
    matches!(path, "-" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0")
}

/// An interpreter: seen only as `INTERP SCRIPT args…` (a script file, or `python -m
/// MODULE`); code on its command line or its input is opaque.
fn interpreter(cmd: &Cmd, name: &str, a: &mut Analysis) {
    a.parts.push(Part::new(cmd.words.clone(), cmd.assigns, true));
    let args = &cmd.words[1..];
    let first = args.first();
    let opaque = |a: &mut Analysis| {
        a.set_opaque(format!(
            "`{}` runs code given on its command line or input, which the engine does not read",
            cmd.words[0].text
        ))
    };
    match name {
        // The program text is the first operand unless `-f FILE` gives it.
        // awk's program is its first operand unless `-f FILE` names it (`-e` and
        // `--source` are programs too).
        "awk" | "gawk" | "mawk" | "nawk" => {
            let from_file = args
                .iter()
                .any(|w| w.text == "-f" || w.text.starts_with("--file"));
            let inline = args.iter().any(|w| {
                !w.is_literal()
                    || w.text == "-e"
                    || w.text.starts_with("--source")
                    || w.text.starts_with("--exec")
            });
            if !from_file || inline {
                opaque(a)
            }
        }
        "sed" => {
            if !super::sed::is_plain(args) {
                opaque(a)
            }
        }
        "m4" | "at" | "batch" | "crontab" | "expect" | "gdb" => opaque(a),
        "python" | "pypy" if first.is_some_and(|w| w.is_literal() && w.text == "-m") => {
            if args.get(1).is_none_or(|w| !w.is_literal()) {
                opaque(a)
            }
        }
        "deno" | "bun" => {
            let code = args.iter().any(|w| {
                !w.is_literal()
                    || matches!(
                        w.text.as_str(),
                        "eval" | "repl" | "-e" | "--eval" | "-p" | "--print"
                    )
            });
            if code || first.is_none() {
                opaque(a)
            }
        }
        _ => match first {
            Some(w) if w.is_literal() && !w.text.starts_with('-') && !reads_input(&w.text) => {}
            _ => opaque(a),
        },
    }
}

/// git: a shell alias defined on the line (`-c alias.x='!CMD'`, `git config alias.x
/// '!CMD'`) is walked as CMD; one taken from the environment cannot be seen.
fn git(cmd: &Cmd, a: &mut Analysis, depth: usize) {
    let known = super::data::is_data_command(&cmd.words);
    a.parts.push(Part::new(cmd.words.clone(), cmd.assigns, !known));
    if !known {
        hidden_commands(cmd, a, depth);
    }
    let words = &cmd.words;
    let shell_alias = |setting: &str| -> Option<String> {
        let (key, value) = setting.split_once('=')?;
        let c = value.strip_prefix('!')?;
        key.to_ascii_lowercase()
            .starts_with("alias.")
            .then(|| c.to_string())
    };
    let mut i = 1;
    while i < words.len() {
        let w = &words[i];
        if !w.is_literal() {
            a.set_opaque(format!(
                "`git {}`: a word decided when it runs may set what git runs",
                w.text
            ));
            return;
        }
        let setting = match w.text.as_str() {
            "-c" => {
                i += 1;
                if words.get(i).is_some_and(|v| !v.is_literal()) {
                    a.set_opaque("`git -c` with a setting decided when it runs");
                    return;
                }
                words.get(i).map(|v| v.text.as_str())
            }
            t => t.strip_prefix("-c").filter(|v| !v.is_empty()),
        };
        if let Some(c) = setting.and_then(shell_alias) {
            walk::source(&c, a, depth + 1);
        }
        if w.text.starts_with("--config-env") {
            a.set_opaque("`git --config-env` takes a setting from the environment");
        }
        if !w.text.starts_with('-') && setting.is_none() {
            break;
        }
        i += 1;
    }
    if let Some(at) = words.iter().position(|w| w.text == "config") {
        let rest = &words[at + 1..];
        for (j, w) in rest.iter().enumerate() {
            if w.text.to_ascii_lowercase().starts_with("alias.")
                && let Some(c) = rest.get(j + 1).and_then(|v| v.text.strip_prefix('!'))
            {
                walk::source(c, a, depth + 1);
            }
        }
    }
}

/// Any other program: its words and input may hold a command it runs.
fn other(cmd: &Cmd, a: &mut Analysis, depth: usize) {
    let known = super::data::is_data_command(&cmd.words);
    a.parts.push(Part::new(cmd.words.clone(), cmd.assigns, !known));
    if known {
        return;
    }
    hidden_commands(cmd, a, depth);
    // A file it reads from a stream (`make -f /dev/stdin`, `prog <(…)`) may be its code.
    let stream = cmd.words.iter().skip(1).find(|w| {
        (w.kind == WordKind::Dynamic && w.text == "<(…)")
            || (w.is_literal() && reads_input(&w.text) && w.text != "-" && cmd.input.is_none())
    });
    if let Some(w) = stream {
        a.set_opaque(format!(
            "`{}` reads `{}`, a stream the engine cannot see, and may run it",
            cmd.words[0].text, w.text
        ));
    }
}

/// A word with shell syntax in it (`'rm -rf x'`, the value of `core.pager=rm x` or
/// `--to-command='rm x'`) and the text on the input of a program that may run them are
/// read as command lines whose commands are *maybe*.
fn hidden_commands(cmd: &Cmd, a: &mut Analysis, depth: usize) {
    for w in cmd.words.iter().skip(1).filter(|w| w.is_literal()) {
        // `--opt=VALUE`, `key=VALUE`: the value is what may be run.
        let text = w.text.split_once('=').map_or(w.text.as_str(), |(_, v)| v);
        if text.contains(|c: char| c.is_whitespace() || ";|&<>()`$".contains(c)) {
            maybe(text, a, depth);
        }
    }
    if let Some(text) = &cmd.input {
        maybe(text, a, depth);
    }
}

/// Reads `text` as a command line whose commands may run; adds them to `a.maybe`.
pub(super) fn maybe(text: &str, a: &mut Analysis, depth: usize) {
    if depth >= MAX_DEPTH {
        return;
    }
    let mut scratch = Analysis::default();
    walk::source(text, &mut scratch, depth + 1);
    for mut p in scratch.parts.into_iter().chain(scratch.maybe) {
        p.unknown = true;
        a.maybe.push(p);
    }
}
