//! What a `bash` command line will run, as the permission rules need it: every simple
//! command in it (through `;`, `&&`, `||`, `|`, `$(…)`, backticks, `<(…)`, subshells,
//! groups, loops, conditionals), unquoted, and every redirection that writes a file.
//! Parsed with `brush-parser` (a POSIX/bash parser); never runs or expands anything.

use brush_parser::ast;
use brush_parser::word::{self, WordPiece, WordPieceWithSource};

/// A command line taken apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Every simple command, its words unquoted and joined by one space (`git status -s`).
    pub parts: Vec<Part>,
    /// Files a redirection writes (`> out.txt`, `>> log`, `&> f`); `/dev/null` is left out.
    pub writes: Vec<String>,
    /// Why the text cannot be judged from what it says: it did not parse, a command's name
    /// is computed when it runs (`$cmd`, `"$(…)"`), or a substitution hides inside an
    /// expansion. `None` when every part is known.
    pub opaque: Option<String>,
}

/// One simple command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The unquoted words joined by one space.
    pub text: String,
    /// The unquoted words.
    pub words: Vec<String>,
    /// It sets variables for itself (`PAGER=x git log`): such a prefix can change what a
    /// read-only command does.
    pub assigns: bool,
}

impl Analysis {
    /// Whether the line is more than one simple command with nothing else.
    pub fn is_compound(&self) -> bool {
        self.parts.len() != 1 || !self.writes.is_empty() || self.opaque.is_some()
    }
}

/// Commands that run the rest of their words as a command (`sudo rm x` runs `rm x`): the
/// inner command is a part too, so rules about it apply.
const WRAPPERS: [&str; 23] = [
    "command", "exec", "builtin", "nice", "nohup", "sudo", "doas", "time", "xargs", "env", "stdbuf",
    "setsid", "ionice", "chrt", "taskset", "unshare", "busybox", "fakeroot", "unbuffer", "watch", "run0",
    "pkexec", "parallel",
];

/// Programs whose `-c SCRIPT` is a shell script they run.
const SHELLS: [&str; 8] = ["bash", "sh", "zsh", "dash", "ksh", "su", "script", "flock"];

/// `find` actions that run the words after them, up to `;` or `+`, as a command.
const FIND_EXEC: [&str; 4] = ["-exec", "-execdir", "-ok", "-okdir"];

/// A wrapper's own argument before the command it runs: an option, an assignment, a
/// number, a CPU mask or list (`taskset 0x3`, `taskset -c 0-3`).
fn wrapper_argument(w: &str) -> bool {
    w.starts_with('-')
        || w.contains('=')
        || w.starts_with("0x")
        || (!w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '-')))
}

/// Takes `command` apart. Never fails: what cannot be parsed is `opaque`.
pub fn analyse(command: &str) -> Analysis {
    let mut a = Analysis::default();
    walk_source(command, &mut a, 0);
    a
}

/// Deepest nesting of `bash -c '…'` and substitutions followed.
const MAX_DEPTH: usize = 8;

fn walk_source(source: &str, a: &mut Analysis, depth: usize) {
    if depth > MAX_DEPTH {
        a.opaque = Some("nested too deeply to judge".into());
        return;
    }
    let mut parser = brush_parser::Parser::new(
        std::io::Cursor::new(source),
        &brush_parser::ParserOptions::default(),
    );
    match parser.parse_program() {
        Ok(program) => {
            for list in &program.complete_commands {
                walk_list(list, a, depth);
            }
        }
        Err(e) => a.opaque = Some(format!("the shell syntax did not parse ({e})")),
    }
}

fn walk_list(list: &ast::CompoundList, a: &mut Analysis, depth: usize) {
    for item in &list.0 {
        let and_or = &item.0;
        walk_pipeline(&and_or.first, a, depth);
        for next in &and_or.additional {
            match next {
                ast::AndOr::And(p) | ast::AndOr::Or(p) => walk_pipeline(p, a, depth),
            }
        }
    }
}

fn walk_pipeline(p: &ast::Pipeline, a: &mut Analysis, depth: usize) {
    for cmd in &p.seq {
        walk_command(cmd, a, depth);
    }
}

fn walk_command(cmd: &ast::Command, a: &mut Analysis, depth: usize) {
    match cmd {
        ast::Command::Simple(s) => walk_simple(s, a, depth),
        ast::Command::Compound(c, redirects) => {
            walk_compound(c, a, depth);
            if let Some(r) = redirects {
                for io in &r.0 {
                    redirect(io, a, depth);
                }
            }
        }
        ast::Command::Function(f) => {
            // Defining a function runs nothing now, but a later part may call it by a
            // harmless-looking name.
            a.opaque = Some(format!("it defines a function ({})", f.fname.value));
            walk_compound(&f.body.0, a, depth);
        }
        ast::Command::ExtendedTest(_, redirects) => {
            // `[[ … ]]` only tests; substitutions inside it are looked for in the text.
            if let Some(r) = redirects {
                for io in &r.0 {
                    redirect(io, a, depth);
                }
            }
            let text = cmd.to_string();
            if text.contains("$(") || text.contains('`') {
                a.opaque = Some("a substitution inside [[ … ]]".into());
            }
        }
    }
}

fn walk_compound(c: &ast::CompoundCommand, a: &mut Analysis, depth: usize) {
    use ast::CompoundCommand as C;
    match c {
        C::BraceGroup(g) => walk_list(&g.list, a, depth),
        C::Subshell(s) => walk_list(&s.list, a, depth),
        C::ForClause(f) => {
            for w in f.values.iter().flatten() {
                word_text(&w.value, a, depth);
            }
            walk_list(&f.body.list, a, depth);
        }
        C::ArithmeticForClause(f) => walk_list(&f.body.list, a, depth),
        C::CaseClause(cc) => {
            word_text(&cc.value.value, a, depth);
            for item in &cc.cases {
                if let Some(list) = &item.cmd {
                    walk_list(list, a, depth);
                }
            }
        }
        C::IfClause(i) => {
            walk_list(&i.condition, a, depth);
            walk_list(&i.then, a, depth);
            for e in i.elses.iter().flatten() {
                if let Some(cond) = &e.condition {
                    walk_list(cond, a, depth);
                }
                walk_list(&e.body, a, depth);
            }
        }
        C::WhileClause(w) | C::UntilClause(w) => {
            walk_list(&w.0, a, depth);
            walk_list(&w.1.list, a, depth);
        }
        C::Coprocess(c) => walk_command(&c.body, a, depth),
        C::Arithmetic(x) => {
            if x.expr.value.contains("$(") || x.expr.value.contains('`') {
                a.opaque = Some("a substitution inside (( … ))".into());
            }
        }
    }
}

fn walk_simple(s: &ast::SimpleCommand, a: &mut Analysis, depth: usize) {
    let mut words = Vec::new();
    let mut assigns = false;
    let mut name_dynamic = false;
    let items = s
        .prefix
        .iter()
        .flat_map(|p| p.0.iter())
        .map(|i| (i, true))
        .chain(s.suffix.iter().flat_map(|p| p.0.iter()).map(|i| (i, false)));
    let mut name_seen = false;
    for (item, in_prefix) in items {
        if !in_prefix && !name_seen {
            if let Some(name) = &s.word_or_name {
                name_dynamic = is_dynamic(&name.value);
                words.push(word_text(&name.value, a, depth));
            }
            name_seen = true;
        }
        use ast::CommandPrefixOrSuffixItem as I;
        match item {
            I::IoRedirect(io) => redirect(io, a, depth),
            I::Word(w) => words.push(word_text(&w.value, a, depth)),
            I::AssignmentWord(_, w) => {
                if in_prefix {
                    assigns = true;
                }
                let text = word_text(&w.value, a, depth);
                if !in_prefix {
                    words.push(text);
                }
            }
            I::ProcessSubstitution(_, sub) => {
                walk_list(&sub.list, a, depth + 1);
                words.push("<(…)".into());
            }
        }
    }
    if !name_seen && let Some(name) = &s.word_or_name {
        name_dynamic = is_dynamic(&name.value);
        words.push(word_text(&name.value, a, depth));
    }
    if words.is_empty() {
        // Only redirections (`> file`): nothing runs by name. Assignments alone
        // (`PATH=.evil`, `HOME=.`) change what every later command runs or reads: a part
        // that is never read-only.
        if assigns {
            let set: Vec<String> = s
                .prefix
                .iter()
                .flat_map(|p| p.0.iter())
                .filter_map(|i| match i {
                    ast::CommandPrefixOrSuffixItem::AssignmentWord(w, _) => Some(w.to_string()),
                    _ => None,
                })
                .collect();
            a.parts.push(Part {
                text: set.join(" "),
                words: set,
                assigns,
            });
        }
        return;
    }
    if name_dynamic {
        a.opaque = Some(format!(
            "the command's name `{}` is computed when it runs",
            words[0]
        ));
    }
    inner_commands(&words, a, depth);
    a.parts.push(Part {
        text: words.join(" "),
        words,
        assigns,
    });
}

/// git runs an alias that starts with `!` as a shell command: `git -c alias.x='!CMD' x`
/// runs CMD now, and `git config [--global] alias.x '!CMD'` defines one a later call runs
/// (where only `git x` shows). Both are judged as CMD here; an alias taken from the
/// environment (`--config-env=alias.x=VAR`) cannot be seen.
fn git_aliases(words: &[String], a: &mut Analysis, depth: usize) {
    let shell_alias = |setting: &str| -> Option<String> {
        let (key, value) = setting.split_once('=')?;
        let cmd = value.strip_prefix('!')?;
        key.to_ascii_lowercase()
            .starts_with("alias.")
            .then(|| cmd.to_string())
    };
    for (i, w) in words.iter().enumerate().skip(1) {
        let setting = match w.as_str() {
            "-c" => words.get(i + 1).map(String::as_str),
            _ => w.strip_prefix("-c").filter(|v| !v.is_empty()),
        };
        if let Some(cmd) = setting.and_then(shell_alias) {
            walk_source(&cmd, a, depth + 1);
        }
        if w.starts_with("--config-env") && w.to_ascii_lowercase().contains("alias.") {
            a.opaque = Some("a git alias taken from the environment".into());
        }
    }
    if let Some(at) = words.iter().position(|w| w == "config") {
        let rest = &words[at + 1..];
        for (j, w) in rest.iter().enumerate() {
            if w.to_ascii_lowercase().starts_with("alias.")
                && let Some(cmd) = rest.get(j + 1).and_then(|v| v.strip_prefix('!'))
            {
                walk_source(cmd, a, depth + 1);
            }
        }
    }
}

/// The commands a part runs through its words: `sudo X`, `bash -c 'X'`, `eval X`.
fn inner_commands(words: &[String], a: &mut Analysis, depth: usize) {
    let name = base_name(&words[0]);
    if SHELLS.contains(&name)
        && let Some(i) = words
            .iter()
            .position(|w| w == "-c" || (w.starts_with('-') && !w.starts_with("--") && w.ends_with('c')))
    {
        match words.get(i + 1) {
            Some(script) => walk_source(script, a, depth + 1),
            None => a.opaque = Some("`-c` without a script".into()),
        }
        return;
    }
    if name == "eval" {
        walk_source(&words[1..].join(" "), a, depth + 1);
        return;
    }
    if name == "git" {
        git_aliases(words, a, depth);
    }
    // `trap 'CMD' SIGNAL…` runs CMD later, in this shell.
    if name == "trap"
        && words.len() > 2
        && let Some(script) = words.get(1).filter(|w| !w.starts_with('-'))
    {
        walk_source(script, a, depth + 1);
        return;
    }
    if name == "find" {
        let mut rest = words[1..].iter();
        while rest.any(|w| FIND_EXEC.contains(&w.as_str())) {
            let inner: Vec<String> = rest
                .by_ref()
                .take_while(|w| *w != ";" && *w != "+")
                .cloned()
                .collect();
            if !inner.is_empty() {
                if depth < MAX_DEPTH {
                    inner_commands(&inner, a, depth + 1);
                }
                a.parts.push(Part {
                    text: inner.join(" "),
                    words: inner,
                    assigns: false,
                });
            }
        }
        return;
    }
    if WRAPPERS.contains(&name) {
        // The first word that is not an option, an assignment or a number (`timeout 5`).
        let rest: Vec<String> = words[1..]
            .iter()
            .skip_while(|w| wrapper_argument(w))
            .cloned()
            .collect();
        if !rest.is_empty() {
            let text = rest.join(" ");
            if depth < MAX_DEPTH {
                inner_commands(&rest, a, depth + 1);
            }
            a.parts.push(Part {
                text,
                words: rest,
                assigns: false,
            });
        }
    } else if name == "timeout" || name == "flock" {
        // `timeout 5 CMD`, `flock LOCKFILE CMD`: one argument, then the command.
        let rest: Vec<String> = words[1..]
            .iter()
            .skip_while(|w| w.starts_with('-'))
            .skip(1)
            .cloned()
            .collect();
        if !rest.is_empty() {
            a.parts.push(Part {
                text: rest.join(" "),
                words: rest,
                assigns: false,
            });
        }
    }
}

impl Part {
    /// The text with the program named by its last path component (`/bin/rm -rf x` →
    /// `rm -rf x`): what deny and ask rules also look at.
    pub fn by_name(&self) -> String {
        match self.words.split_first() {
            Some((first, rest)) if first.contains('/') => std::iter::once(base_name(first))
                .chain(rest.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            _ => self.text.clone(),
        }
    }
}

/// The last path component of a command name (`/bin/rm` → `rm`).
pub fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// A command name that is decided only when it runs.
fn is_dynamic(raw: &str) -> bool {
    raw.contains('$') || raw.contains('`')
}

/// The word unquoted; its command substitutions are walked as parts of their own.
fn word_text(raw: &str, a: &mut Analysis, depth: usize) -> String {
    if raw.contains('$') || raw.contains('`') {
        match word::parse(raw, &brush_parser::ParserOptions::default()) {
            Ok(pieces) => substitutions(raw, &pieces, a, depth),
            Err(e) => a.opaque = Some(format!("a word did not parse ({e})")),
        }
    }
    // As the shell reads it: inside single quotes everything is literal (`'sh -c "rm x"'`
    // keeps its double quotes, which brush's `unquote_str` drops).
    match shlex::split(raw) {
        Some(mut one) if one.len() == 1 => one.remove(0),
        _ => brush_parser::unquote_str(raw),
    }
}

fn substitutions(raw: &str, pieces: &[WordPieceWithSource], a: &mut Analysis, depth: usize) {
    for p in pieces {
        match &p.piece {
            WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                walk_source(s, a, depth + 1)
            }
            WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                substitutions(raw, inner, a, depth)
            }
            WordPiece::ParameterExpansion(_) | WordPiece::ArithmeticExpression(_) => {
                let text = raw.get(p.start_index..p.end_index).unwrap_or(raw);
                if text.contains("$(") || text.contains('`') {
                    a.opaque = Some("a command substitution inside an expansion".into());
                }
            }
            _ => {}
        }
    }
}

fn redirect(io: &ast::IoRedirect, a: &mut Analysis, depth: usize) {
    use ast::{IoFileRedirectKind as K, IoFileRedirectTarget as T, IoRedirect as R};
    match io {
        R::File(_, kind, target) => match target {
            T::Filename(w) => {
                let path = word_text(&w.value, a, depth);
                // bash opens a connection for `/dev/tcp/HOST/PORT` (and udp) in either
                // direction: judged like a write outside the project, never read-only.
                let network = path.starts_with("/dev/tcp/") || path.starts_with("/dev/udp/");
                if network
                    || (matches!(kind, K::Write | K::Append | K::Clobber | K::ReadAndWrite)
                        && path != "/dev/null")
                {
                    a.writes.push(path);
                }
            }
            T::ProcessSubstitution(_, sub) => walk_list(&sub.list, a, depth + 1),
            T::Fd(_) | T::Duplicate(_) => {}
        },
        R::OutputAndError(w, _) => {
            let path = word_text(&w.value, a, depth);
            if path != "/dev/null" {
                a.writes.push(path);
            }
        }
        R::HereString(_, w) => {
            word_text(&w.value, a, depth);
        }
        R::HereDocument(_, doc) => {
            let text = io.to_string();
            if doc.requires_expansion && (text.contains("$(") || text.contains('`')) {
                a.opaque = Some("a command substitution inside a here-document".into());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(cmd: &str) -> Vec<String> {
        analyse(cmd).parts.into_iter().map(|p| p.text).collect()
    }

    #[test]
    fn every_simple_command_is_a_part() {
        assert_eq!(parts("git status"), ["git status"]);
        assert_eq!(parts("ls && rm -rf build"), ["ls", "rm -rf build"]);
        assert_eq!(parts("a; b || c | d"), ["a", "b", "c", "d"]);
        assert_eq!(parts("echo $(rm -rf x)"), ["rm -rf x", "echo $(rm -rf x)"]);
        assert_eq!(parts("echo `touch y`"), ["touch y", "echo `touch y`"]);
        assert_eq!(parts("echo \"a $(id) b\""), ["id", "echo a $(id) b"]);
        assert_eq!(parts("(cd x; make) && { ls; }"), ["cd x", "make", "ls"]);
        assert_eq!(parts("if true; then rm a; fi"), ["true", "rm a"]);
        assert_eq!(parts("for f in *; do rm $f; done"), ["rm $f"]);
        assert_eq!(parts("diff <(ls a) b"), ["ls a", "diff <(…) b"]);
    }

    #[test]
    fn quoting_and_wrappers_do_not_hide_a_command() {
        assert_eq!(parts("'rm' -rf  \"build\""), ["rm -rf build"]);
        assert_eq!(parts("r\\m x"), ["rm x"]);
        assert_eq!(parts("sudo rm -rf /"), ["rm -rf /", "sudo rm -rf /"]);
        assert_eq!(parts("timeout 5 rm x"), ["rm x", "timeout 5 rm x"]);
        assert_eq!(
            parts("bash -c 'rm -rf x; ls'"),
            ["rm -rf x", "ls", "bash -c rm -rf x; ls"]
        );
        assert_eq!(parts("eval rm x"), ["rm x", "eval rm x"]);
        assert_eq!(parts("env A=1 rm x"), ["rm x", "env A=1 rm x"]);
    }

    #[test]
    fn quotes_inside_other_quotes_are_kept_as_the_shell_keeps_them() {
        // Seen: `bash -c 'sh -c "rm -rf victim"'` lost its inner quotes, so the inner
        // script was `rm` alone and a `bash(rm -rf*)` deny rule did not see it.
        assert_eq!(
            parts("bash -c 'sh -c \"rm -rf victim\"'"),
            [
                "rm -rf victim",
                "sh -c rm -rf victim",
                "bash -c sh -c \"rm -rf victim\""
            ]
        );
        assert_eq!(parts("echo \"it's\" 'a \"b\"' c\\ d"), ["echo it's a \"b\" c d"]);
    }

    #[test]
    fn a_git_shell_alias_is_the_command_it_runs() {
        assert_eq!(
            parts("git -c alias.x='!rm -rf build' x"),
            ["rm -rf build", "git -c alias.x=!rm -rf build x"]
        );
        assert_eq!(parts("git -calias.x=!rm\\ y x")[0], "rm y");
        assert_eq!(
            parts("git config --global alias.c '!rm -rf build'"),
            ["rm -rf build", "git config --global alias.c !rm -rf build"]
        );
        // Not a shell alias, or not an alias: nothing more.
        assert_eq!(parts("git -c alias.st=status st"), ["git -c alias.st=status st"]);
        assert_eq!(
            parts("git -c core.pager=less log"),
            ["git -c core.pager=less log"]
        );
        assert!(analyse("git --config-env=alias.x=EVIL x").opaque.is_some());
    }

    #[test]
    fn writes_assignments_and_opaque_lines_are_noticed() {
        let a = analyse("cargo test > out.txt 2>/dev/null");
        assert_eq!(a.writes, ["out.txt"]);
        assert!(a.is_compound());
        assert!(analyse("ls 2>/dev/null").writes.is_empty());
        assert_eq!(analyse("make &> log").writes, ["log"]);
        assert!(analyse("PAGER=x git log").parts[0].assigns);
        assert!(analyse("$cmd -rf x").opaque.is_some());
        assert!(analyse("echo ${x:-$(rm y)}").opaque.is_some());
        assert!(analyse("echo 'unterminated").opaque.is_some());
        assert!(analyse("f() { rm x; }; f").opaque.is_some());
        assert!(analyse("ls -la").opaque.is_none());
        assert!(!analyse("ls -la").is_compound());
    }
}
