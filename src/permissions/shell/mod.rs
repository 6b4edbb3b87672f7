//! What a `bash` command line will run, judged from what the parser can **prove**: every
//! simple command in it (through `;`, `&&`, `||`, `|`, `$(…)`, backticks, `<(…)`,
//! subshells, groups, loops, conditionals, the wrappers on a positive list, `bash -c`
//! with a literal script, literal text fed to a shell), each word literal or not, the
//! files its redirections read and write, and whether anything in it cannot be seen
//! (*opaque*: a name decided when it runs, text that reaches an interpreter, a builtin
//! that runs text, a variable a program may run, an option of a wrapper not on its
//! list…). Commands an unknown program may run from its arguments or input are kept
//! apart (*maybe*). Parsed with `brush-parser`; never runs or expands anything.

mod assign;
mod builtins;
mod data;
mod programs;
mod sed;
mod walk;
mod words;

pub use words::{Word, WordKind};

/// A command line taken apart.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Every simple command that runs, in order of appearance.
    pub parts: Vec<Part>,
    /// Commands an unknown program may run: its arguments or input read as a command
    /// line (`strace rm x`, `ssh host 'rm x'`, `echo 'rm x' | at now`). Rules that match
    /// them ask; they never allow anything.
    pub maybe: Vec<Part>,
    /// Files a redirection writes (`> out.txt`, `>> log`, `&> f`, `/dev/tcp/…`);
    /// `/dev/null` is left out. Only literal targets.
    pub writes: Vec<String>,
    /// Files a redirection reads (`< in.txt`). Only literal sources.
    pub reads: Vec<String>,
    /// A redirection's file is decided when it runs (`> $F`, `< ${PATH/…}/tcp/…`).
    pub unseen_redirect: Option<String>,
    /// It changes the working directory (`cd`, `pushd`, `popd`): later relative paths
    /// are not relative to the project.
    pub moves: bool,
    /// Why the line cannot all be seen, or `None` when every command in it is known.
    pub opaque: Option<String>,
}

/// One simple command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The words joined by one space (literal words unquoted, others as written).
    pub text: String,
    pub words: Vec<Word>,
    /// It sets variables for itself (`LANG=C ls`): never read-only.
    pub assigns: bool,
    /// A program the engine does not know: any of its arguments may be a command it
    /// runs (`strace rm x`, `git -c core.pager=… log`).
    pub unknown: bool,
}

impl Analysis {
    /// Whether the line is more than one simple command with nothing else.
    pub fn is_compound(&self) -> bool {
        self.parts.len() != 1 || !self.writes.is_empty() || self.opaque.is_some()
    }

    /// Keeps the first reason the line cannot all be seen.
    pub(crate) fn set_opaque(&mut self, why: impl Into<String>) {
        if self.opaque.is_none() {
            self.opaque = Some(why.into());
        }
    }
}

impl Part {
    pub(crate) fn new(words: Vec<Word>, assigns: bool, unknown: bool) -> Part {
        Part {
            text: join(&words),
            words,
            assigns,
            unknown,
        }
    }

    /// The words' texts.
    pub fn texts(&self) -> impl Iterator<Item = &str> {
        self.words.iter().map(|w| w.text.as_str())
    }

    /// Whether every word is literal.
    pub fn is_literal(&self) -> bool {
        self.words.iter().all(Word::is_literal)
    }

    /// The text with the program named by its last path component (`/bin/rm -rf x` →
    /// `rm -rf x`): what deny and ask rules also look at.
    pub fn by_name(&self) -> String {
        match self.words.split_first() {
            Some((first, rest)) if first.text.contains('/') => std::iter::once(base_name(&first.text))
                .chain(rest.iter().map(|w| w.text.as_str()))
                .collect::<Vec<_>>()
                .join(" "),
            _ => self.text.clone(),
        }
    }
}

fn join(words: &[Word]) -> String {
    let mut s = String::with_capacity(words.iter().map(|w| w.text.len() + 1).sum());
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&w.text);
    }
    s
}

/// Takes `command` apart. Never fails: what cannot be parsed is `opaque`.
pub fn analyse(command: &str) -> Analysis {
    let mut a = Analysis::default();
    walk::source(command, &mut a, 0);
    a
}

/// Whether `sed` with these arguments runs no command and writes no file of its script.
pub(crate) fn sed_is_plain(args: &[Word]) -> bool {
    sed::is_plain(args)
}

/// The last path component of a command name (`/bin/rm` → `rm`).
pub fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// Deepest nesting of `bash -c '…'`, wrappers and substitutions followed.
const MAX_DEPTH: usize = 8;

/// The parser's options: bash as `bash -c` runs it.
fn options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions::default()
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
