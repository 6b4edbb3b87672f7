//! Transcript cells: the items of a conversation as the TUI shows them (user input,
//! assistant markdown, tool calls with results, notices) and their lines at a width.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::protocol::NoticeLevel;

use super::answer::{self, Answer, Piece};
use super::markdown;
use super::theme::Theme;
use super::wrap::{self, Mode};

/// A tool call and, once finished, its result.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCell {
    pub id: String,
    pub name: String,
    /// `name(arg="value", …)`.
    pub call: String,
    pub result: Option<ToolResult>,
    pub interrupted: bool,
    /// A file change the call makes (a diff, or the start of a written file).
    pub preview: Vec<crate::ui::diff::Line>,
    /// The last progress the running call reported (`3/5 (60%)`), shown on its line.
    pub progress: Option<String>,
    /// The last lines the running call printed, shown under it until it finishes.
    pub live: super::live::Tail,
}

impl ToolCell {
    /// A call as it starts: its summary line and, for a file change, its preview.
    pub fn started(id: String, name: String, arguments: &str) -> Self {
        let preview = crate::ui::diff::preview(&name, arguments).unwrap_or_default();
        // The preview shows the texts, so the call line names only the rest.
        let call = match serde_json::from_str::<indexmap::IndexMap<String, serde_json::Value>>(arguments) {
            Ok(mut map) if !preview.is_empty() => {
                for k in ["old_string", "new_string", "content"] {
                    map.shift_remove(k);
                }
                let rest = serde_json::to_string(&map).unwrap_or_default();
                crate::message::call_summary(&name, &rest)
            }
            _ => crate::ui::plan::call_line(&name, arguments)
                .unwrap_or_else(|| crate::message::call_summary(&name, arguments)),
        };
        // The name, the argument keys and arguments that are not JSON are the model's
        // text: shown visibly, on one line.
        let call = wrap::sanitize(&call).replace('\n', "⏎");
        ToolCell {
            call,
            preview,
            id,
            name,
            result: None,
            interrupted: false,
            progress: None,
            live: Default::default(),
        }
    }
}

impl ToolCell {
    /// Attaches the result. The result of an interrupted call marks the call interrupted
    /// and is kept only for the partial output it carries (else `⎿ interrupted` says it).
    pub fn set_result(&mut self, r: ToolResult) {
        self.live = Default::default();
        match r
            .body
            .strip_prefix(crate::tool_vocab::envelope::INTERRUPTED_TOOL_ERROR)
        {
            Some(rest) => {
                self.interrupted = true;
                let partial = rest.trim_start_matches('\n');
                if !partial.trim().is_empty() {
                    self.result = Some(ToolResult {
                        summary: "interrupted".into(),
                        body: partial.to_string(),
                        success: false,
                    });
                }
            }
            None => self.result = Some(r),
        }
    }
}

/// A finished tool call as shown: the human summary and the decoded output text.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    pub summary: String,
    pub body: String,
    pub success: bool,
}

impl ToolResult {
    /// Decodes the envelope JSON (`{"tool_success":…, "result":{"output"|"error":…}}`) into
    /// the text a person wants to read; anything else is shown as it is.
    pub fn from_envelope(summary: &str, output: &str, success: bool) -> Self {
        ToolResult {
            summary: summary.to_string(),
            body: decode_envelope(output),
            success,
        }
    }
}

fn decode_envelope(output: &str) -> String {
    use crate::ui::result;
    let mut parts = vec![result::text(output), result::partial_output(output)];
    parts.extend(result::limit_message(output));
    parts.retain(|p| !p.is_empty());
    parts.join("\n")
}

/// One item of the transcript.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Cell {
    User(String),
    Assistant(String),
    Reasoning(String),
    Tool(ToolCell),
    Notice(NoticeLevel, String),
    /// A note from the TUI itself (e.g. "queued", "interrupted").
    Marker(String),
    /// The model's plan as it changed (`update_plan`).
    Plan(Vec<crate::protocol::PlanStep>),
    /// A file attached to the user message above it: `src/main.rs, 120 lines`.
    Attached(String),
    /// Pre-styled lines (welcome, tools, a schema), word-wrapped when shown.
    Lines(Vec<Line<'static>>),
    /// A titled two-column list (keys, commands, settings): side by side when wide enough,
    /// else each description under its key.
    Columns {
        title: String,
        rows: Vec<(String, String)>,
        notes: Vec<String>,
    },
    /// Rows of the answer still streaming, finished and rendered at the width: they continue
    /// the cell above (no blank line between).
    Streamed {
        rows: Vec<Line<'static>>,
        /// Not the answer's first rows: no blank line before them.
        continued: bool,
    },
    /// The last part of an answer whose first rows were `Streamed`: rendered when shown,
    /// continuing them.
    AnswerRest(Box<Answer>),
}

impl From<Piece> for Cell {
    fn from(piece: Piece) -> Self {
        match piece {
            Piece::Rows { rows, continued } => Cell::Streamed { rows, continued },
            Piece::Reasoning(text) => Cell::Reasoning(text),
            Piece::Assistant(text) => Cell::Assistant(text),
            Piece::Rest(answer) => Cell::AnswerRest(answer),
        }
    }
}

/// How cells are drawn besides the width.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Look<'a> {
    pub theme: &'a Theme,
    /// Tool result lines shown; 0 = all.
    pub result_lines: usize,
    /// Shown instead of `●` for a tool that is still running.
    pub spinner: &'a str,
}

impl Cell {
    /// Shown right under the cell above, with no blank line between: an attachment under
    /// its message, the later parts of an answer under its first.
    pub(crate) fn continues(&self) -> bool {
        matches!(
            self,
            Cell::Attached(_) | Cell::Streamed { continued: true, .. } | Cell::AnswerRest(_)
        )
    }

    pub(crate) fn lines(&self, width: usize, look: &Look<'_>) -> Vec<Line<'static>> {
        let t = look.theme;
        match self {
            Cell::User(text) => wrap::wrap_text(
                text,
                t.bold,
                width,
                &[Span::styled("› ", t.user)],
                &[Span::raw("  ")],
                Mode::Words,
            ),
            Cell::Assistant(text) => markdown::render(text, width, t),
            Cell::Reasoning(text) => answer::reasoning_lines(text, width, t, true),
            Cell::Tool(tool) => tool_lines(tool, width, look),
            Cell::Plan(steps) => super::live::plan_lines(steps, width, t, None),
            Cell::Notice(level, text) => {
                let (mark, style) = match level {
                    NoticeLevel::Info => ("ℹ ", t.info),
                    NoticeLevel::Warning => ("⚠ ", t.warning),
                    NoticeLevel::Error => ("✗ ", t.error),
                };
                wrap::wrap_text(
                    text,
                    style,
                    width,
                    &[Span::styled(mark, style)],
                    &[Span::raw("  ")],
                    Mode::Words,
                )
            }
            Cell::Marker(text) => wrap::wrap_text(text, t.warning, width, &[], &[], Mode::Words),
            Cell::Attached(text) => wrap::wrap_text(
                text,
                t.dim,
                width,
                &[Span::styled("  📎 ", t.dim)],
                &[Span::raw("     ")],
                Mode::Chars,
            ),
            Cell::Columns { title, rows, notes } => columns(title, rows, notes, width, t),
            Cell::Streamed { rows, .. } => rows.clone(),
            Cell::AnswerRest(answer) => answer.rest(width, t),
            Cell::Lines(lines) => lines
                .iter()
                .flat_map(|l| {
                    let spans: Vec<Span<'static>> = l
                        .spans
                        .iter()
                        .map(|s| {
                            Span::styled(wrap::sanitize(&s.content).into_owned(), l.style.patch(s.style))
                        })
                        .collect();
                    wrap::wrap(&spans, width, &[], &[Span::raw("  ")], Mode::Words)
                })
                .collect(),
        }
    }
}

fn columns(
    title: &str,
    rows: &[(String, String)],
    notes: &[String],
    width: usize,
    t: &Theme,
) -> Vec<Line<'static>> {
    let mut out = vec![Line::styled(wrap::sanitize(title).into_owned(), t.heading)];
    let kw = rows.iter().map(|(k, _)| wrap::str_width(k)).max().unwrap_or(0) + 2;
    let side_by_side = width >= kw + 2 + 24;
    for (k, v) in rows {
        if side_by_side {
            let pad = kw - wrap::str_width(k);
            let first = [Span::styled(format!("  {k}{}", " ".repeat(pad)), t.accent)];
            let rest = [Span::raw(" ".repeat(kw + 2))];
            out.extend(wrap::wrap_text(
                v,
                Style::new(),
                width,
                &first,
                &rest,
                Mode::Words,
            ));
        } else {
            out.extend(wrap::wrap_text(
                k,
                t.accent,
                width,
                &[Span::raw("  ")],
                &[Span::raw("  ")],
                Mode::Words,
            ));
            let ind = [Span::raw("    ")];
            out.extend(wrap::wrap_text(v, Style::new(), width, &ind, &ind, Mode::Words));
        }
    }
    for n in notes {
        out.extend(wrap::wrap_text(
            n,
            t.dim,
            width,
            &[Span::raw("  ")],
            &[Span::raw("  ")],
            Mode::Words,
        ));
    }
    out
}

fn tool_lines(tool: &ToolCell, width: usize, look: &Look<'_>) -> Vec<Line<'static>> {
    let t = look.theme;
    let (bullet, bullet_style) = match (&tool.result, tool.interrupted) {
        (_, true) => ("■ ", t.warning),
        (None, false) => (look.spinner, t.spinner),
        (Some(r), _) if r.success => ("● ", t.tool_ok),
        (Some(_), _) => ("● ", t.tool_err),
    };
    let mut call = vec![Span::styled(tool.call.clone(), t.tool)];
    if let (None, false, Some(p)) = (&tool.result, tool.interrupted, &tool.progress) {
        call.push(Span::styled(format!("  {}", wrap::sanitize(p)), t.dim));
    }
    let mut out = wrap::wrap(
        &call,
        width,
        &[Span::styled(bullet.to_string(), bullet_style)],
        &[Span::raw("  ")],
        Mode::Chars,
    );
    // A change that failed made none: no diff for it.
    if tool.result.as_ref().is_none_or(|r| r.success) {
        out.extend(preview_lines(&tool.preview, width, t));
    }
    if tool.result.is_none() && !tool.interrupted {
        out.extend(tool.live.lines(width, t));
    }
    if tool.interrupted && tool.result.is_none() {
        out.extend(wrap::wrap_text(
            "interrupted",
            t.warning,
            width,
            &[Span::styled("  ⎿ ", t.dim)],
            &[Span::raw("    ")],
            Mode::Words,
        ));
    }
    let Some(r) = &tool.result else { return out };
    let style = match (r.success, tool.interrupted) {
        (_, true) => t.warning,
        (true, false) => t.dim,
        (false, false) => t.tool_err,
    };
    let summary = wrap::sanitize(&r.summary);
    let body = wrap::sanitize(&r.body);
    // An error said in the result line is not said again under it.
    let (head, body) = crate::ui::result::head_and_body(&summary, &body);
    out.extend(wrap::wrap_text(
        head,
        style,
        width,
        &[Span::styled("  ⎿ ", t.dim)],
        &[Span::raw("    ")],
        Mode::Words,
    ));
    let body = body.trim_end_matches('\n');
    if body.is_empty() {
        return out;
    }
    let all: Vec<&str> = body.split('\n').collect();
    let shown = if look.result_lines == 0 {
        all.len()
    } else {
        look.result_lines.min(all.len())
    };
    let indent = [Span::raw("    ")];
    for line in &all[..shown] {
        out.extend(wrap::wrap(
            &[Span::raw(line.to_string())],
            width,
            &indent,
            &indent,
            Mode::Chars,
        ));
    }
    if shown < all.len() {
        let more = all.len() - shown;
        let s = if more == 1 { "" } else { "s" };
        out.push(Line::from(vec![
            Span::raw("    "),
            Span::styled(format!("… {more} more line{s}"), t.dim),
        ]));
    }
    out
}

/// A file change under its call line: diff lines red and green, the rest dim.
fn preview_lines(preview: &[crate::ui::diff::Line], width: usize, t: &Theme) -> Vec<Line<'static>> {
    use crate::ui::diff::Line as D;
    let indent = [Span::raw("    ")];
    preview
        .iter()
        .flat_map(|l| {
            let style = match l {
                D::Header(_) => t.bold,
                D::Added(_) => t.tool_ok,
                D::Removed(_) => t.tool_err,
                D::Content(_) | D::Context(_) => Style::new(),
                D::Gap | D::More(_) => t.dim,
            };
            let text = wrap::sanitize(&l.text()).into_owned();
            wrap::wrap(&[Span::styled(text, style)], width, &indent, &indent, Mode::Chars)
        })
        .collect()
}

/// A finished message from a stored session, as a cell (system prompts are not shown).
pub(crate) fn from_message(m: &crate::message::Message) -> Option<Cell> {
    use crate::message::Kind;
    Some(match m.kind {
        Kind::System => return None,
        // Shown as it was live: dimmed, apart from the answer.
        Kind::Reasoning if m.content.trim().is_empty() => return None,
        Kind::Reasoning => Cell::Reasoning(m.content.clone()),
        Kind::Compaction => Cell::Notice(
            crate::protocol::NoticeLevel::Info,
            format!("Earlier conversation compacted. Summary:\n{}", m.content),
        ),
        Kind::User => Cell::User(m.typed_text().to_string()),
        Kind::Assistant => Cell::Assistant(m.content.clone()),
        Kind::ToolCall => {
            let d = m.as_tool_call()?;
            Cell::Tool(ToolCell::started(
                d.id.clone(),
                d.function.name.clone(),
                &d.function.arguments,
            ))
        }
        Kind::ToolResult => {
            let d = m.as_tool_result()?;
            Cell::Tool(ToolCell {
                id: d.tool_call_id.clone(),
                name: d.name.clone(),
                call: String::new(),
                result: Some(ToolResult::from_envelope(&m.content, &d.output, d.success)),
                interrupted: false,
                preview: Vec::new(),
                progress: None,
                live: Default::default(),
            })
        }
    })
}

/// Turns stored history into cells, joining each tool call with its result. A turn that
/// was interrupted shows as it did live: `■ interrupted` where a stored mark says so
/// (`interrupted`: the number of messages before each mark), or, without one, when a
/// turn with an interrupted call ends.
pub(crate) fn from_history(history: &[crate::message::Message], interrupted: &[usize]) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    let mut interrupted_turn = false;
    let mark = |out: &mut Vec<Cell>| {
        if out.last() != Some(&interrupted_marker()) {
            out.push(interrupted_marker());
        }
    };
    for (i, m) in history.iter().enumerate() {
        if interrupted.contains(&i) {
            mark(&mut out);
            interrupted_turn = false;
        }
        let Some(cell) = from_message(m) else {
            continue;
        };
        if interrupted_turn && matches!(cell, Cell::User(_)) {
            mark(&mut out);
            interrupted_turn = false;
        }
        if let Cell::Tool(ToolCell {
            id,
            call,
            result: Some(r),
            ..
        }) = &cell
            && call.is_empty()
        {
            let open = out.iter_mut().rev().find_map(|c| match c {
                Cell::Tool(t) if &t.id == id && t.result.is_none() => Some(t),
                _ => None,
            });
            if let Some(t) = open {
                t.set_result(r.clone());
                interrupted_turn |= t.interrupted;
                // A plan the model kept shows as it did live, after its call.
                let plan = (r.success && t.name == crate::tools::update_plan::NAME)
                    .then(|| plan_of(history, id))
                    .flatten();
                if let Some(steps) = plan {
                    out.push(Cell::Plan(steps));
                }
                continue;
            }
        }
        out.push(cell);
        if let Some(a) = m.as_attachments() {
            out.extend(a.attachments.iter().cloned().map(Cell::Attached));
        }
    }
    if interrupted_turn || interrupted.contains(&history.len()) {
        mark(&mut out);
    }
    out
}

/// The steps of the stored `update_plan` call `id`.
fn plan_of(history: &[crate::message::Message], id: &str) -> Option<Vec<crate::protocol::PlanStep>> {
    history
        .iter()
        .filter_map(|m| m.as_tool_call())
        .find(|d| d.id == id)
        .and_then(|d| crate::tools::update_plan::steps(&d.function.arguments))
}

/// The mark left where a turn was interrupted.
pub(crate) fn interrupted_marker() -> Cell {
    Cell::Marker("■ interrupted".into())
}

/// A plain line in a style, for building `Cell::Lines`.
pub(crate) fn styled(text: impl Into<String>, style: Style) -> Line<'static> {
    Line::from(Span::styled(text.into(), style))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::ui::tui::wrap::line_text;

    fn look(theme: &Theme, n: usize) -> Look<'_> {
        Look {
            theme,
            result_lines: n,
            spinner: "◐ ",
        }
    }

    #[test]
    fn envelopes_decode_to_readable_text() {
        let ok = r#"{"tool_success":true,"result":{"output":"a\nb","count":2}}"#;
        assert_eq!(decode_envelope(ok), "a\nb");
        let err = r#"{"tool_success":true,"result":{"error":"File not found: x"}}"#;
        assert_eq!(decode_envelope(err), "File not found: x");
        let crash = r#"{"tool_success":false,"error":"timed out","error_code":"TOOL_TIMEOUT","partial_output":"half"}"#;
        assert_eq!(decode_envelope(crash), "timed out\nhalf");
        let limit = r#"{"tool_success":true,"result":{"output":"x"},"limit_reached":true,"limit_message":"Tool call limit reached (3). Stopping tool loop."}"#;
        assert!(decode_envelope(limit).ends_with("Stopping tool loop."));
        assert_eq!(decode_envelope("not json"), "not json");
    }

    #[test]
    fn result_lines_are_capped_with_a_marker() {
        let theme = Theme::new(false);
        let body: Vec<String> = (1..=10).map(|i| format!("line {i}")).collect();
        let output =
            serde_json::json!({"tool_success": true, "result": {"output": body.join("\n")}}).to_string();
        let cell = Cell::Tool(ToolCell {
            id: "1".into(),
            name: "bash".into(),
            call: "bash(command=\"seq 10\")".into(),
            result: Some(ToolResult::from_envelope("exit 0", &output, true)),
            interrupted: false,
            preview: Vec::new(),
            progress: None,
            live: Default::default(),
        });
        let lines: Vec<String> = cell.lines(60, &look(&theme, 3)).iter().map(line_text).collect();
        assert_eq!(
            lines,
            [
                "● bash(command=\"seq 10\")",
                "  ⎿ exit 0",
                "    line 1",
                "    line 2",
                "    line 3",
                "    … 7 more lines"
            ]
        );
        assert_eq!(cell.lines(60, &look(&theme, 0)).len(), 12);
    }

    #[test]
    fn an_interrupted_result_keeps_its_partial_output() {
        let theme = Theme::new(false);
        let mut t = ToolCell::started("c".into(), "bash".into(), r#"{"command":"make"}"#);
        let env = serde_json::json!({
            "tool_success": false,
            "error": crate::tool_vocab::envelope::INTERRUPTED_TOOL_ERROR,
            "error_code": "TOOL_CRASHED",
            "partial_output": "compiling a\ncompiling b",
        });
        t.set_result(ToolResult::from_envelope("x", &env.to_string(), false));
        let lines: Vec<String> = Cell::Tool(t)
            .lines(60, &look(&theme, 0))
            .iter()
            .map(line_text)
            .collect();
        assert_eq!(
            lines,
            [
                "■ bash(command=\"make\")",
                "  ⎿ interrupted",
                "    compiling a",
                "    compiling b"
            ]
        );
    }

    #[test]
    fn a_stored_mark_shows_where_a_text_turn_was_interrupted() {
        let h = vec![
            Message::user("talk"),
            Message::assistant("half an answer"),
            Message::user("again"),
            Message::assistant("whole"),
        ];
        let cells = from_history(&h, &[2]);
        assert_eq!(cells[2], interrupted_marker(), "{cells:?}");
        assert_eq!(cells.len(), 5);
        let cells = from_history(&h, &[4]);
        assert_eq!(cells.last(), Some(&interrupted_marker()));
        // A mark after an interrupted call is shown once.
        let h = vec![
            Message::user("run"),
            Message::tool_call("c1", "bash", r#"{"command":"sleep 9"}"#),
            crate::tool_vocab::envelope::interrupted_result("c1", "bash", Some("partial\n")),
        ];
        let cells = from_history(&h, &[3]);
        assert_eq!(cells.iter().filter(|c| **c == interrupted_marker()).count(), 1);
    }

    #[test]
    fn a_resumed_message_shows_its_text_and_one_line_per_attachment() {
        let h = vec![Message::user_with_attachments(
            "look at @a.rs",
            "\n\n<file path=\"a.rs\">\nfn a() {}\n</file>",
            vec!["a.rs, 1 line".into()],
        )];
        let cells = from_history(&h, &[]);
        assert_eq!(
            cells,
            [
                Cell::User("look at @a.rs".into()),
                Cell::Attached("a.rs, 1 line".into())
            ]
        );
    }

    #[test]
    fn history_joins_calls_with_results() {
        let h = vec![
            Message::system("sys"),
            Message::user("hi"),
            Message::tool_call("c1", "glob", r#"{"pattern":"*.rs"}"#),
            Message::tool_result(
                "c1",
                "glob",
                "1 file",
                r#"{"tool_success":true,"result":{"output":"a.rs"}}"#,
                true,
            ),
            Message::assistant("done"),
        ];
        let cells = from_history(&h, &[]);
        assert_eq!(cells.len(), 3);
        match &cells[1] {
            Cell::Tool(t) => {
                assert_eq!(t.call, "glob(pattern=\"*.rs\")");
                assert_eq!(t.result.as_ref().unwrap().body, "a.rs");
            }
            other => panic!("{other:?}"),
        }
    }
}
