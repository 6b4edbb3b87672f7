//! The approval question the agent has open, as data: which call, what it would do (built
//! once, every line of it, with every character a reader could miss shown), why it is
//! asked, what an "always" answer would keep, and where the reader has scrolled to.
//! `approval.rs` shows it and takes the answer; this file renders nothing.

use std::cell::Cell;

/// How a line of what the call does is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    Plain,
    Added,
    Removed,
    Dim,
}

/// A run of spaces or tabs longer than this is shown as its count (`⟨120 spaces⟩`): it
/// could push what follows out of sight.
const SPACE_RUN: usize = 32;
/// Blank lines in a row beyond this are shown as their count (`⟨60 blank lines⟩`).
const BLANK_RUN: usize = 2;

/// The open question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    pub id: String,
    pub name: String,
    pub arguments: String,
    pub reason: String,
    pub always: Vec<String>,
    /// The sandbox stopped the call: the question is whether to run it again outside.
    pub outside_sandbox: bool,
    /// After `n`: the reason being typed (sent with Enter; Esc sends none).
    pub typing: Option<String>,
    /// What the call will do, line by line, every hidden character shown.
    pub body: Vec<(String, Look)>,
    /// How long it is (`command: 63 lines, 1.2 KB`), when it is more than a short line.
    pub size: Option<String>,
    /// The first row of the body shown (the question scrolls when it does not fit).
    pub scroll: usize,
    /// The last row `scroll` can be, and the rows shown at once, as last drawn.
    pub limits: Cell<(usize, usize)>,
}

impl Pending {
    /// The question about call `id`: `name` with `arguments`, asked because of `reason`.
    pub fn new(
        id: String,
        name: String,
        arguments: String,
        reason: String,
        always: Vec<String>,
        outside_sandbox: bool,
    ) -> Self {
        let (body, size) = what(&name, &arguments);
        Pending {
            id,
            name,
            arguments,
            reason,
            always,
            outside_sandbox,
            typing: None,
            body,
            size,
            scroll: 0,
            limits: Cell::new((0, 1)),
        }
    }

    /// Scrolls the body by `rows` (negative: up), within what there is.
    pub fn scroll_by(&mut self, rows: isize) {
        let (max, _) = self.limits.get();
        self.scroll = self.scroll.saturating_add_signed(rows).min(max);
    }

    /// Scrolls to the top (`false`) or the bottom (`true`).
    pub fn scroll_to_end(&mut self, end: bool) {
        self.scroll = if end { self.limits.get().0 } else { 0 };
    }

    /// Rows shown at once, as last drawn.
    pub fn page(&self) -> usize {
        self.limits.get().1.max(1)
    }
}

/// What the call will do, line by line, and how long it is: a command whole (every line,
/// `\r` and invisible characters shown, long runs of spaces and blank lines counted), an
/// edit as its whole diff, a write as its path, size and every line, any other tool as its
/// name and arguments.
fn what(name: &str, arguments: &str) -> (Vec<(String, Look)>, Option<String>) {
    if let Some(lines) = crate::ui::diff::preview_whole(name, arguments) {
        use crate::ui::diff::Line as D;
        let body = lines
            .iter()
            .map(|l| {
                let look = match l {
                    D::Header(_) | D::Content(_) => Look::Plain,
                    D::Added(_) => Look::Added,
                    D::Removed(_) => Look::Removed,
                    D::Context(_) | D::Gap | D::More(_) => Look::Dim,
                };
                (shown(&l.text()), look)
            })
            .collect();
        return (body, None);
    }
    let args: serde_json::Value = serde_json::from_str(arguments).unwrap_or(serde_json::Value::Null);
    // A tool that runs a command line shows it as one.
    if let Some(arg) = crate::tool_vocab::meta::of(name).and_then(|m| m.command)
        && let Some(cmd) = args.get(arg).and_then(|c| c.as_str())
    {
        return (lines_of(cmd, "$ "), size("command", cmd));
    }
    let mut body = vec![(shown(name), Look::Plain)];
    let text = match &args {
        serde_json::Value::Null => arguments.to_string(),
        v => serde_json::to_string_pretty(v).unwrap_or_else(|_| arguments.to_string()),
    };
    body.extend(lines_of(&text, "").into_iter().map(|(t, _)| (t, Look::Dim)));
    (body, size("arguments", arguments))
}

/// `text` split at `\n` only (a `\r` stays where it is, shown), each line shown with
/// `prefix`; runs of blank lines longer than `BLANK_RUN` become one counted line.
fn lines_of(text: &str, prefix: &str) -> Vec<(String, Look)> {
    let mut out = Vec::new();
    let mut blank = 0usize;
    let flush = |out: &mut Vec<(String, Look)>, blank: &mut usize| {
        if *blank > BLANK_RUN {
            out.push((format!("⟨{} blank lines⟩", *blank), Look::Dim));
        } else {
            out.extend((0..*blank).map(|_| (prefix.trim_end().to_string(), Look::Plain)));
        }
        *blank = 0;
    };
    let mut lines: Vec<&str> = text.split('\n').collect();
    // One newline at the very end ends the last line; it is not a line of its own.
    if lines.len() > 1 && lines.last() == Some(&"") {
        lines.pop();
    }
    for line in lines {
        if line.chars().all(|c| c == ' ' || c == '\t') {
            blank += 1;
            continue;
        }
        flush(&mut out, &mut blank);
        out.push((format!("{prefix}{}", shown(line)), Look::Plain));
    }
    flush(&mut out, &mut blank);
    out
}

/// One line as the question shows it: every character a reader could miss made visible
/// (`crate::text::exact`), runs of more than `SPACE_RUN` spaces or tabs counted.
fn shown(line: &str) -> String {
    let exact = crate::text::exact(line);
    let mut out = String::with_capacity(exact.len());
    let mut run = String::new();
    let end_run = |out: &mut String, run: &mut String| {
        if run.chars().count() > SPACE_RUN {
            out.push_str(&format!("⟨{} spaces⟩", run.chars().count()));
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in exact.chars() {
        if c == ' ' || c == '\t' {
            run.push(c);
        } else {
            end_run(&mut out, &mut run);
            out.push(c);
        }
    }
    end_run(&mut out, &mut run);
    out
}

/// `what: N lines, size` when `text` is more than one line or longer than a short line.
fn size(what: &str, text: &str) -> Option<String> {
    let lines = text.split('\n').count();
    (lines > 1 || text.chars().count() > 200).then(|| {
        format!(
            "{what}: {lines} line{}, {}",
            if lines == 1 { "" } else { "s" },
            crate::message::human_size(text.len())
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(name: &str, args: &serde_json::Value) -> Vec<String> {
        what(name, &args.to_string())
            .0
            .into_iter()
            .map(|(t, _)| t)
            .collect()
    }

    #[test]
    fn a_command_hides_nothing_of_what_runs() {
        // (command, the lines shown)
        let table: Vec<(String, Vec<String>)> = vec![
            // The reported form: the head, 60 blank lines, a harmless tail.
            (
                format!("python3 -c 'open(\"PWNED\",\"w\")'{}ls -la", "\n".repeat(61)),
                vec![
                    "$ python3 -c 'open(\"PWNED\",\"w\")'".into(),
                    "⟨60 blank lines⟩".into(),
                    "$ ls -la".into(),
                ],
            ),
            ("ls\rrm -rf x".into(), vec!["$ ls␍rm -rf x".into()]),
            ("ls\r\n".into(), vec!["$ ls␍".into()]),
            (
                "echo \u{202E}txt.exe\u{2066}".into(),
                vec!["$ echo <U+202E>txt.exe<U+2066>".into()],
            ),
            (
                format!("ls{}; rm -rf ~", " ".repeat(400)),
                vec!["$ ls⟨400 spaces⟩; rm -rf ~".into()],
            ),
            ("a\u{0}b\u{1b}[2Jc".into(), vec!["$ a␀b␛[2Jc".into()]),
            (
                "rm\u{00A0}-rf\u{200B} x".into(),
                vec!["$ rm<U+00A0>-rf<U+200B> x".into()],
            ),
            (
                "ls\n   \n\t\n".into(),
                vec!["$ ls".into(), "$".into(), "$".into()],
            ),
            (
                "ls\n\n\n\n\n".into(),
                vec!["$ ls".into(), "⟨4 blank lines⟩".into()],
            ),
            ("x".repeat(5000), vec![format!("$ {}", "x".repeat(5000))]),
        ];
        for (cmd, want) in table {
            let got = texts("bash", &serde_json::json!({ "command": cmd }));
            assert_eq!(got, want, "{cmd:?}");
        }
        let (_, size) = what("bash", &serde_json::json!({"command": "a\nb\nc"}).to_string());
        assert_eq!(size.as_deref(), Some("command: 3 lines, 5 B"));
        let (_, size) = what("bash", &serde_json::json!({"command": "ls"}).to_string());
        assert_eq!(size, None);
    }

    #[test]
    fn other_calls_show_their_name_and_arguments_exactly() {
        let got = texts("srv__t\u{202E}", &serde_json::json!({"k\u{200B}": "v\u{2066}"}));
        assert_eq!(
            got,
            ["srv__t<U+202E>", "{", "  \"k<U+200B>\": \"v<U+2066>\"", "}"]
        );
        let (body, _) = what("x", "not json\u{1b}]0;t\u{7}");
        assert_eq!(body[1].0, "not json␛]0;t␇");
        let got = texts(
            "file_write",
            &serde_json::json!({"path": "a\u{202E}b", "content": "1\n\u{200B}2\n"}),
        );
        assert_eq!(got, ["a<U+202E>b (2 lines, 7 B)", "1", "<U+200B>2"]);
        // Every line of a long file is there (the question scrolls).
        let content: String = (0..300).map(|i| format!("line {i}\n")).collect();
        let got = texts(
            "file_write",
            &serde_json::json!({"path": "p", "content": content}),
        );
        assert_eq!(got.len(), 301);
    }
}
