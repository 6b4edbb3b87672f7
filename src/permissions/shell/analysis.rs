//! What the analysis of a bash line finds, as data: the `Analysis` of a line, each simple
//! command in it (`Part`) and each word (`Word`, with what the engine knows of its value),
//! and the parser's settings. The walk (`walk.rs`, `words.rs`, `programs.rs`, …) fills
//! these in; the read-only list and the decision read them. Parses nothing.

/// What the engine knows of a word's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WordKind {
    /// Known: plain, quoted or escaped text.
    Literal,
    /// File names matched when it runs (`*`, `?`, `[…]`, extended globs).
    Glob,
    /// Decided when it runs: an expansion, a substitution, brace expansion, `$'…'`.
    Dynamic,
}

/// One word of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    /// The value when literal (unquoted); as written otherwise (`$X`, `*.rs`).
    pub text: String,
    pub kind: WordKind,
    /// It may turn into one or more words starting with `-` when it runs (an unquoted
    /// expansion, or a glob or expansion at its start).
    pub may_be_option: bool,
}

impl Word {
    pub fn literal(text: impl Into<String>) -> Word {
        Word {
            text: text.into(),
            kind: WordKind::Literal,
            may_be_option: false,
        }
    }

    pub fn is_literal(&self) -> bool {
        self.kind == WordKind::Literal
    }
}

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

/// The last path component of a command name (`/bin/rm` → `rm`).
pub fn base_name(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// Deepest nesting of `bash -c '…'`, wrappers and substitutions followed.
pub(super) const MAX_DEPTH: usize = 8;

/// The parser's options: bash as `bash -c` runs it.
pub(super) fn options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions::default()
}
