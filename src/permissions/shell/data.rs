//! Programs whose arguments are only data — no option of theirs names a program or code
//! they run — so their words are not searched for commands: the read-only list (with the
//! options it accepts) and programs that change files but run nothing (`rm`, `cp`,
//! `mkdir`…). A program given by a path outside the system's folders (`./rm`) is not
//! the program of that name.

use super::analysis::{Word, base_name};

/// Programs that run no other program whatever their options and arguments.
const DATA_ANY: [&str; 57] = [
    "mkdir",
    "rmdir",
    "touch",
    "rm",
    "cp",
    "mv",
    "ln",
    "chmod",
    "chown",
    "chgrp",
    "tee",
    "truncate",
    "mktemp",
    "sleep",
    "dd",
    "cat",
    "ls",
    "wc",
    "head",
    "tail",
    "grep",
    "egrep",
    "fgrep",
    "cut",
    "tr",
    "uniq",
    "nl",
    "cmp",
    "diff",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "stat",
    "du",
    "df",
    "pwd",
    "true",
    "false",
    "tac",
    "rev",
    "paste",
    "comm",
    "fold",
    "seq",
    "uname",
    "whoami",
    "tree",
    "date",
];

/// Folders whose programs are the system's own.
const SYSTEM: [&str; 6] = [
    "/bin/",
    "/usr/bin/",
    "/usr/local/bin/",
    "/sbin/",
    "/usr/sbin/",
    "/usr/local/sbin/",
];

/// Whether `words` (a command with its arguments) runs only what it names.
pub(crate) fn is_data_command(words: &[Word]) -> bool {
    let Some(first) = words.first().filter(|w| w.is_literal()) else {
        return false;
    };
    let path = first.text.as_str();
    let name = base_name(path);
    if path.contains('/') && !SYSTEM.iter().any(|d| path.strip_prefix(d) == Some(name)) {
        return false;
    }
    DATA_ANY.contains(&name) || crate::permissions::readonly::options_listed(name, &words[1..])
}
