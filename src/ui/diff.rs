//! File changes as a person reads them, shared by both front ends: a `file_edit` call as
//! a unified diff of the text it replaces (computed with `similar`), a `file_write` call as
//! its path, size and first lines. Pure: tool arguments in, typed lines out; each front end
//! picks its own colours (`plain_lines` is the ANSI form for the plain front end).

use crate::tool_vocab::meta::Change;
use similar::{ChangeTag, TextDiff};

/// Lines of context around each change.
pub(crate) const CONTEXT: usize = 3;
/// Lines shown at most (diff or written content); the rest is counted.
pub(crate) const MAX_LINES: usize = 40;
/// First lines of a written file shown.
pub(crate) const WRITE_LINES: usize = 8;

/// One line of a change preview.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// What the change is: `path (12 lines, 340 B)`, `path: +3 -1`.
    Header(String),
    /// Between two hunks that are far apart.
    Gap,
    Context(String),
    Removed(String),
    Added(String),
    /// A written file's line.
    Content(String),
    /// `… 12 more lines`.
    More(usize),
}

impl Line {
    /// The line as plain text, with its `+`/`-`/space column for diff lines.
    pub fn text(&self) -> String {
        match self {
            Line::Header(h) => h.clone(),
            Line::Gap => "⋯".to_string(),
            Line::Context(t) => format!(" {t}"),
            Line::Removed(t) => format!("-{t}"),
            Line::Added(t) => format!("+{t}"),
            Line::Content(t) => t.clone(),
            Line::More(n) => format!("… {n} more line{}", if *n == 1 { "" } else { "s" }),
        }
    }
}

/// The preview of a tool call that changes a file, or `None` for any other call (or
/// arguments that are not what the tool expects).
pub(crate) fn preview(name: &str, arguments: &str) -> Option<Vec<Line>> {
    preview_capped(name, arguments, MAX_LINES, WRITE_LINES)
}

/// `preview` with every line (an approval question shows all of it, scrolling).
pub(crate) fn preview_whole(name: &str, arguments: &str) -> Option<Vec<Line>> {
    preview_capped(name, arguments, usize::MAX, usize::MAX)
}

fn preview_capped(name: &str, arguments: &str, diff_lines: usize, write_lines: usize) -> Option<Vec<Line>> {
    // The tool declares how its change reads (which arguments carry the old and new text).
    let declared = crate::tool_vocab::meta::of(name)?;
    let (path, change) = (declared.path?, declared.change?);
    let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let s = |k: &str| args.get(k).and_then(serde_json::Value::as_str);
    match change {
        Change::Replace { old, new } => Some(edit_capped(s(path)?, s(old)?, s(new)?, diff_lines)),
        Change::Whole { content } => Some(write_capped(s(path)?, s(content)?, write_lines)),
    }
}

/// `path: +a -r`, then the unified diff of `old` → `new` (hunks with `CONTEXT` lines), at
/// most `max` lines of it.
fn edit_capped(path: &str, old: &str, new: &str, max: usize) -> Vec<Line> {
    let diff = TextDiff::from_lines(old, new);
    let (mut added, mut removed) = (0, 0);
    let mut body = Vec::new();
    for (i, group) in diff.grouped_ops(CONTEXT).iter().enumerate() {
        if i > 0 {
            body.push(Line::Gap);
        }
        for op in group {
            for change in diff.iter_changes(op) {
                let text = change.value().trim_end_matches(['\n', '\r']).to_string();
                body.push(match change.tag() {
                    ChangeTag::Equal => Line::Context(text),
                    ChangeTag::Delete => {
                        removed += 1;
                        Line::Removed(text)
                    }
                    ChangeTag::Insert => {
                        added += 1;
                        Line::Added(text)
                    }
                });
            }
        }
    }
    let mut out = vec![Line::Header(format!("{path}: +{added} -{removed}"))];
    out.extend(capped(body, max));
    out
}

/// `path (N lines, size)`, then the first `max` lines.
fn write_capped(path: &str, content: &str, max: usize) -> Vec<Line> {
    let lines: Vec<&str> = content.lines().collect();
    let n = lines.len();
    let mut out = vec![Line::Header(format!(
        "{path} ({n} line{}, {})",
        if n == 1 { "" } else { "s" },
        crate::message::human_size(content.len())
    ))];
    let body = lines.iter().map(|l| Line::Content(l.to_string())).collect();
    out.extend(capped(body, max));
    out
}

fn capped(mut body: Vec<Line>, max: usize) -> Vec<Line> {
    if body.len() > max {
        let more = body.len() - max;
        body.truncate(max);
        body.push(Line::More(more));
    }
    body
}

/// The preview as lines for a terminal: removed red, added green, the rest dim; no escape
/// codes when `color` is false. Control, bidirectional and other hidden characters in the
/// text are shown visibly (`crate::text::visible`).
pub(crate) fn plain_lines(name: &str, arguments: &str, color: bool) -> Vec<String> {
    let Some(lines) = preview(name, arguments) else {
        return Vec::new();
    };
    lines
        .iter()
        .map(|l| {
            let text = l.text();
            let text = crate::text::visible(&text);
            let code = match l {
                Line::Removed(_) => "\x1b[31m",
                Line::Added(_) => "\x1b[32m",
                Line::Header(_) => "\x1b[1m",
                _ => "\x1b[2m",
            };
            if color {
                format!("    {code}{text}\x1b[0m")
            } else {
                format!("    {text}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(Line::text).collect()
    }

    #[test]
    fn an_edit_is_a_unified_diff() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n";
        let new = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n";
        let args = serde_json::json!({"path": "src/x.rs", "old_string": old, "new_string": new});
        let p = preview("file_edit", &args.to_string()).unwrap();
        assert_eq!(
            texts(&p),
            [
                "src/x.rs: +2 -1",
                " a",
                "-b",
                "+B",
                " c",
                " d",
                " e",
                "⋯",
                " i",
                " j",
                " k",
                "+l"
            ]
        );
    }

    #[test]
    fn a_write_shows_path_size_and_first_lines() {
        let content: String = (1..=300).map(|i| format!("line {i}\n")).collect();
        let args = serde_json::json!({"path": "big.txt", "content": content});
        let p = preview("file_write", &args.to_string()).unwrap();
        let t = texts(&p);
        assert_eq!(t[0], "big.txt (300 lines, 2.5 KB)");
        assert_eq!(&t[1..3], ["line 1", "line 2"]);
        assert_eq!(t.len(), 1 + WRITE_LINES + 1);
        assert_eq!(t.last().unwrap(), "… 292 more lines");
    }

    #[test]
    fn other_calls_and_bad_arguments_have_no_preview() {
        assert_eq!(preview("bash", r#"{"command":"ls"}"#), None);
        assert_eq!(preview("file_edit", "{oops"), None);
        assert_eq!(preview("file_write", r#"{"path":"x"}"#), None);
        assert!(plain_lines("glob", "{}", true).is_empty());
    }

    #[test]
    fn plain_lines_are_coloured_only_when_asked() {
        let args = serde_json::json!({"path": "p\u{202E}", "old_string": "x\n", "new_string": "y\u{1b}[31m\u{2066}\n"});
        let colored = plain_lines("file_edit", &args.to_string(), true);
        assert_eq!(colored[1], "    \x1b[31m-x\x1b[0m");
        assert_eq!(colored[2], "    \x1b[32m+y␛[31m<U+2066>\x1b[0m");
        let plain = plain_lines("file_edit", &args.to_string(), false);
        assert_eq!(plain, ["    p<U+202E>: +1 -1", "    -x", "    +y␛[31m<U+2066>"]);
    }
}
