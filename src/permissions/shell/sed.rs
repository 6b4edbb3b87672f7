//! `sed` is an interpreter (GNU sed's `e` command and `s///e` run a shell command, `w`
//! writes a file); a script is seen only when it is made of commands that print, delete
//! and substitute (`-n '1,20p'`, `s/a/b/g`), or when `--sandbox` turns those off.
//! Conservative by construction: anything it does not recognise is not plain.

use super::analysis::Word;
use crate::permissions::getopt::Spec;

/// Whether `sed` with these arguments runs no command and writes no file of its script.
pub(crate) fn is_plain(args: &[Word]) -> bool {
    if args.iter().any(|w| !w.is_literal()) {
        return false;
    }
    if args.iter().any(|w| w.text == "--sandbox") {
        return true;
    }
    // `-i[SUFFIX]` takes an optional attached suffix, which getopt specs do not model.
    let words: Vec<String> = args
        .iter()
        .filter(|w| !w.text.starts_with("--in-place"))
        .filter_map(|w| {
            let t = &w.text;
            if t.starts_with('-') && !t.starts_with("--") && t.contains('i') {
                let cut = &t[..t.find('i').unwrap_or(t.len())];
                (cut != "-").then(|| cut.to_string())
            } else {
                Some(t.clone())
            }
        })
        .collect();
    let spec = Spec::parse(
        "flags=nErsuz arg=el long=quiet,silent,regexp-extended,separate,null-data,unbuffered,posix,debug arg-long=expression,line-length",
    );
    let Ok(s) = spec.scan(&words, &vec![false; words.len()]) else {
        return false;
    };
    let scripts: Vec<&str> = s
        .options
        .iter()
        .filter(|o| o.name == "-e" || o.name == "--expression")
        .filter_map(|o| o.value.as_deref())
        .collect();
    if scripts.is_empty() {
        return s.operands.first().is_some_and(|&i| script(&words[i]));
    }
    scripts.iter().all(|t| script(t))
}

/// A script of print, delete, quit, substitute (without `e` and `w`), transliterate,
/// branch and text commands.
fn script(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    loop {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b';') {
            i += 1;
        }
        if i >= b.len() {
            return true;
        }
        if !address(b, &mut i) {
            return false;
        }
        if b.get(i) == Some(&b',') {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'~')) {
                i += 1;
            }
            if !address(b, &mut i) {
                return false;
            }
        }
        while b.get(i).is_some_and(|c| *c == b' ' || *c == b'!') {
            i += 1;
        }
        let Some(&c) = b.get(i) else { return false };
        i += 1;
        match c {
            b'p' | b'P' | b'd' | b'D' | b'q' | b'Q' | b'=' | b'l' | b'n' | b'N' | b'g' | b'G' | b'h'
            | b'H' | b'x' | b'z' | b'{' | b'}' => {
                while b.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
            }
            b'#' | b'b' | b't' | b'T' | b':' | b'a' | b'i' | b'c' => {
                while i < b.len()
                    && b[i] != b'\n'
                    && (c == b'#' || matches!(c, b'a' | b'i' | b'c') || b[i] != b';')
                {
                    i += 1;
                }
            }
            b's' | b'y' => {
                let Some(&delim) = b.get(i) else { return false };
                if delim == b'\n' || delim == b'\\' {
                    return false;
                }
                i += 1;
                for _ in 0..2 {
                    if !delimited(b, &mut i, delim) {
                        return false;
                    }
                }
                if c == b's' {
                    while b.get(i).is_some_and(|f| b"gpiImM0123456789".contains(f)) {
                        i += 1;
                    }
                }
                if !matches!(b.get(i), None | Some(b';' | b'\n' | b'}' | b' ')) {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

/// A line number, `$`, `first~step` or `/regex/`; nothing is fine too.
fn address(b: &[u8], i: &mut usize) -> bool {
    match b.get(*i) {
        Some(b'$') => *i += 1,
        Some(b'/') => {
            *i += 1;
            if !delimited(b, i, b'/') {
                return false;
            }
            while b.get(*i).is_some_and(|c| *c == b'I' || *c == b'M') {
                *i += 1;
            }
        }
        Some(c) if c.is_ascii_digit() => {
            while b.get(*i).is_some_and(|c| c.is_ascii_digit() || *c == b'~') {
                *i += 1;
            }
        }
        _ => {}
    }
    true
}

/// Text up to an unescaped `delim` (consumed); no bracket expressions, whose delimiter
/// rules differ between seds.
fn delimited(b: &[u8], i: &mut usize, delim: u8) -> bool {
    while let Some(&c) = b.get(*i) {
        *i += 1;
        match c {
            b'\\' => *i += 1,
            b'[' | b'\n' => return false,
            c if c == delim => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(line: &str) -> bool {
        let words: Vec<Word> = line.split_whitespace().map(Word::literal).collect();
        is_plain(&words)
    }

    #[test]
    fn printing_and_substituting_scripts_are_plain_and_exec_or_write_are_not() {
        for ok in [
            "-n 1,20p f",
            "-n 5p",
            "s/a/b/g f",
            "-E -e s/x+/y/2 -e 10q",
            "-n /start/,/end/p",
            "$d",
            "-i.bak s/a/b/ f",
            "--sandbox 1e",
        ] {
            assert!(plain(ok), "{ok}");
        }
        for bad in [
            "1e",
            "s/a/b/e",
            "s/a/b/w out",
            "w out",
            "-f script.sed",
            "s/[/]/x/e",
            "1r /etc/passwd",
            "s|a|b|;e",
            "-e p -e 1e",
            "W x",
        ] {
            assert!(!plain(bad), "{bad}");
        }
    }
}
