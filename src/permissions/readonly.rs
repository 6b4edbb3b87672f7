//! The built-in list of read-only tools and `bash` commands: what `ask` and `read-only`
//! modes run without asking. A command is read-only only when nothing in its words can
//! make it write a file or run another program (`find -exec`, `git diff --output`,
//! `sort -o`, `rg --pre`). The README lists the same commands; keep them in step.

use super::shell::{Part, base_name};

/// Built-in tools that only read (`update_plan` changes nothing: it shows the model's plan).
pub const TOOLS: [&str; 5] = ["file_read", "glob", "grep", "list_dir", "update_plan"];

/// Commands that only read, whatever their arguments, save the options in `FORBIDDEN`.
pub const COMMANDS: [&str; 36] = [
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "find",
    "pwd",
    "echo",
    "printf",
    "which",
    "type",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "stat",
    "file",
    "du",
    "df",
    "tree",
    "cut",
    "sort",
    "uniq",
    "nl",
    "diff",
    "cmp",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "true",
    "false",
    "test",
];

/// `git` subcommands that only read (with no option before the subcommand).
pub const GIT: [&str; 6] = ["status", "diff", "log", "show", "blame", "ls-files"];

/// Options that make an otherwise read-only command write or run something.
fn forbidden(name: &str, word: &str) -> bool {
    let has = |opts: &[&str]| {
        opts.iter()
            .any(|o| word == *o || word.starts_with(&format!("{o}=")))
    };
    // A group of short options holding this letter (`-uo out`, `-xo out`).
    let short = |letter: char| word.starts_with('-') && !word.starts_with("--") && word.contains(letter);
    match name {
        "find" => has(&[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
        ]),
        "rg" => has(&["--pre"]),
        // sort and tree have no other short option with an `o`.
        "sort" => has(&["--output"]) || short('o'),
        "tree" => has(&["--output"]) || short('o'),
        // `-v VAR` assigns a variable (`PATH`), and an array subscript in it runs
        // command substitutions (`printf -v 'a[$(cmd)]' x`, `test -v 'a[$(cmd)]'`).
        "printf" | "test" => short('v'),
        "file" => has(&["-C", "--compile"]),
        "git" => has(&["--output", "--ext-diff", "-c", "--exec-path"]) || word.starts_with("--output"),
        // `uniq IN OUT` writes OUT: only one file argument is read-only.
        _ => false,
    }
}

/// Whether a tool only reads (`file_read`, `glob`, `grep`, `list_dir`, `update_plan`).
pub fn is_read_only_tool(name: &str) -> bool {
    TOOLS.contains(&name)
}

/// Whether one simple command only reads.
pub fn is_read_only_part(part: &Part) -> bool {
    if part.assigns {
        // `GIT_EXTERNAL_DIFF=… git diff`, `PAGER=… git log`: the variable decides.
        return false;
    }
    let Some(first) = part.words.first() else {
        return false;
    };
    // A path to a program is not the program of that name (`./ls` could be anything).
    if first.contains('/') {
        return false;
    }
    let name = base_name(first);
    let args = &part.words[1..];
    if args.iter().any(|w| forbidden(name, w)) {
        return false;
    }
    match name {
        "git" => args.first().is_some_and(|sub| GIT.contains(&sub.as_str())),
        "uniq" => args.iter().filter(|w| !w.starts_with('-')).count() <= 1,
        _ => COMMANDS.contains(&name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permissions::shell::analyse;

    fn ro(cmd: &str) -> bool {
        let a = analyse(cmd);
        a.opaque.is_none() && a.writes.is_empty() && a.parts.iter().all(is_read_only_part)
    }

    #[test]
    fn the_list_reads_and_its_escapes_do_not_count() {
        for yes in [
            "ls -la",
            "cat README.md | head -n 5",
            "grep -rn foo src | wc -l",
            "rg TODO",
            "find . -name '*.rs'",
            "git status",
            "git diff HEAD~1",
            "git log --oneline | head",
            "sort a.txt",
        ] {
            assert!(ro(yes), "{yes}");
        }
        for no in [
            "rm -rf build",
            "find . -delete",
            "find . -exec rm {} ;",
            "git push",
            "git -c core.pager=x log",
            "git diff --output=x",
            "sort -o out a",
            "rg --pre ./x foo",
            "ls > listing.txt",
            "ls $(touch x)",
            "PAGER=x git log",
            "./ls",
            "uniq in out",
            "cat x | sh",
        ] {
            assert!(!ro(no), "{no}");
        }
    }
}
