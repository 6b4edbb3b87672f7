//! What a `bash` command line will run, judged from what the parser can **prove**: every
//! simple command in it (through `;`, `&&`, `||`, `|`, `$(…)`, backticks, `<(…)`,
//! subshells, groups, loops, conditionals, the wrappers on a positive list, `bash -c`
//! with a literal script, literal text fed to a shell), each word literal or not, the
//! files its redirections read and write, and whether anything in it cannot be seen
//! (*opaque*: a name decided when it runs, text that reaches an interpreter, a builtin
//! that runs text, a variable a program may run, an option of a wrapper not on its
//! list…). Commands an unknown program may run from its arguments or input are kept
//! apart (*maybe*). Parsed with `brush-parser`; never runs or expands anything.

pub(crate) mod analysis;
mod assign;
mod builtins;
mod data;
mod programs;
pub(crate) mod sed;
mod walk;
mod words;

pub use analysis::{Analysis, Part, Word, WordKind, base_name};

/// Takes `command` apart. Never fails: what cannot be parsed is `opaque`.
pub fn analyse(command: &str) -> Analysis {
    let mut a = Analysis::default();
    walk::source(command, &mut a, 0);
    a
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
