//! `find`'s own grammar: options (`-H -L -P`), start paths, then an expression of tests
//! and actions. Read-only when every token of the expression is on the lists below with
//! its arguments; `-exec`, `-execdir`, `-ok`, `-okdir`, `-delete`, `-fprint*` and
//! `-fls` are not (nor any token not listed).

use super::super::shell::analysis::Word;

/// Expression tokens without an argument.
const NULLARY: [&str; 30] = [
    "-print",
    "-print0",
    "-ls",
    "-prune",
    "-quit",
    "-true",
    "-false",
    "-not",
    "!",
    "-a",
    "-and",
    "-o",
    "-or",
    "(",
    ")",
    ",",
    "-depth",
    "-follow",
    "-xdev",
    "-mount",
    "-noleaf",
    "-daystart",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-empty",
    "-readable",
    "-writable",
    "-executable",
    "-nouser",
    "-nogroup",
];

/// Expression tokens that take one argument.
const UNARY: [&str; 34] = [
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-regextype",
    "-type",
    "-xtype",
    "-size",
    "-newer",
    "-anewer",
    "-cnewer",
    "-mtime",
    "-atime",
    "-ctime",
    "-mmin",
    "-amin",
    "-cmin",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-links",
    "-inum",
    "-samefile",
    "-maxdepth",
    "-mindepth",
    "-printf",
    "-lname",
    "-ilname",
];

/// `-newerXY` (`-newermt`, `-newerat`…).
fn newer_xy(t: &str) -> bool {
    t.strip_prefix("-newer")
        .is_some_and(|xy| xy.len() == 2 && xy.chars().all(|c| "aBcmt".contains(c)))
}

/// Whether `find` with `args` only reads.
pub(super) fn read_only(args: &[Word]) -> bool {
    if args.iter().any(|w| w.may_be_option) {
        return false;
    }
    let mut i = 0;
    // Options before the paths.
    while let Some(w) = args.get(i) {
        match w.text.as_str() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" | "-O" => i += 2,
            t if t.starts_with("-O") && t.len() > 2 => i += 1,
            _ => break,
        }
    }
    // Start paths: up to the first word that begins an expression.
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t.starts_with('-') || matches!(t, "(" | "!" | ")" | ",") {
            break;
        }
        i += 1;
    }
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if NULLARY.contains(&t) {
            i += 1;
        } else if UNARY.contains(&t) || newer_xy(t) || matches!(t, "-fstype" | "-used" | "-context") {
            if args.get(i + 1).is_none() {
                return false;
            }
            i += 2;
        } else {
            return false;
        }
    }
    true
}
