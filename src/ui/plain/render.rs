//! How the scripted front end shows agent events: text, tool calls and results on stdout,
//! notices on stderr, or one JSON line per event (`--json`). Control characters from the
//! model or a tool are shown as visible symbols (only `\n` and `\t` pass); ikigai's own
//! colours are added after. Writes only to the writers it is given.

use std::io::Write;

use crate::message::call_summary;
use crate::protocol::{Event, NoticeLevel, TurnEndReason};
use crate::ui::result;

/// Results longer than this many lines are abbreviated unless `verbose`.
pub const RESULT_LINES: usize = 50;

#[derive(Clone, Copy, Debug, Default)]
pub struct PlainOptions {
    pub json: bool,
    pub verbose: bool,
    pub color: bool,
    /// Show what a running command prints on stderr as it prints it (stderr is a terminal).
    pub live: bool,
}

/// Renders events as text (or JSON lines) onto two writers.
pub struct Renderer<O: Write, E: Write> {
    out: O,
    err: E,
    opts: PlainOptions,
    at_line_start: bool,
    /// The attempt whose retry is being counted down, once its first line was shown.
    retrying: Option<u32>,
    /// The model in use, from `SessionStarted` / `ModelChanged` (for `/model`).
    pub model: String,
    /// The provider in use when `/model` switched it (empty: the one the run began on).
    pub provider: String,
    /// The diff of the file change in flight, shown with its result when it succeeded.
    preview: Vec<String>,
    /// `--json` lines, with what they add to the events.
    pub(crate) json: super::json::JsonLines,
    /// A running command's live output left stderr inside a line.
    live_open: bool,
}

const CYAN: &str = "\x1b[36m";
const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const YELLOW: &str = "\x1b[33m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// Text from the model or a tool made safe for a terminal: control characters other than
/// `\n` and `\t` (escape sequences, `\r`, C1 codes) and bidirectional controls are shown
/// as visible symbols (`crate::text::visible`).
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    crate::text::visible(text)
}

impl<O: Write, E: Write> Renderer<O, E> {
    pub fn new(out: O, err: E, opts: PlainOptions) -> Self {
        Renderer {
            out,
            err,
            opts,
            at_line_start: true,
            retrying: None,
            model: String::new(),
            provider: String::new(),
            preview: Vec::new(),
            json: super::json::JsonLines::default(),
            live_open: false,
        }
    }

    pub fn into_parts(self) -> (O, E) {
        (self.out, self.err)
    }

    fn paint(&self, color: &str, text: &str) -> String {
        if self.opts.color {
            format!("{color}{text}{RESET}")
        } else {
            text.to_string()
        }
    }

    fn line_break(&mut self) -> std::io::Result<()> {
        if !self.at_line_start {
            self.out.write_all(b"\n")?;
            self.at_line_start = true;
        }
        Ok(())
    }

    /// Prints the answer to a command the front end handles itself (stdout).
    pub fn print(&mut self, text: &str) -> std::io::Result<()> {
        self.line_break()?;
        self.out.write_all(sanitize(text).as_bytes())?;
        if !text.ends_with('\n') {
            self.out.write_all(b"\n")?;
        }
        self.out.flush()
    }

    /// Prints a notice of the front end's own (stderr, or a JSON line under `--json`).
    pub fn notice(&mut self, level: NoticeLevel, text: &str) -> std::io::Result<()> {
        self.render(&Event::notice(level, text))
    }

    /// Renders one event.
    pub fn render(&mut self, ev: &Event) -> std::io::Result<()> {
        match ev {
            Event::SessionStarted { model, .. } => self.model.clone_from(model),
            Event::ModelChanged { model, provider } => {
                self.model.clone_from(model);
                self.provider.clone_from(provider);
            }
            Event::Retrying { .. } => {}
            _ => self.retrying = None,
        }
        if self.opts.json {
            self.json.write(&mut self.out, ev)?;
            return self.out.flush();
        }
        match ev {
            Event::TextDelta { text } => {
                let text = sanitize(text);
                self.out.write_all(text.as_bytes())?;
                if let Some(last) = text.chars().last() {
                    self.at_line_start = last == '\n';
                }
            }
            Event::ToolCallStarted { name, arguments, .. } => {
                self.line_break()?;
                let call = crate::ui::plan::call_line(name, arguments)
                    .unwrap_or_else(|| call_summary(name, arguments));
                let line = format!("● {}", sanitize(&call));
                writeln!(self.out, "{}", self.paint(CYAN, &line))?;
                self.preview = crate::ui::diff::plain_lines(name, arguments, self.opts.color);
            }
            Event::ToolOutputDelta { text, .. } if self.opts.live => self.live_output(text)?,
            Event::PlanUpdated { steps } => {
                self.line_break()?;
                for line in crate::ui::plan::lines(steps) {
                    writeln!(self.out, "{}", sanitize(&line))?;
                }
            }
            Event::ToolCallFinished {
                summary,
                output,
                success,
                ..
            } => {
                self.end_live_output()?;
                self.line_break()?;
                // A change that failed made none: no diff for it.
                for l in std::mem::take(&mut self.preview) {
                    if *success {
                        writeln!(self.out, "{l}")?;
                    }
                }
                let (mark, color) = if *success {
                    ("⎿", GREEN)
                } else {
                    ("⎿ ✗", RED)
                };
                // The limit is named once, by the agent's notice.
                let limit_only = !*success && result::only_limit(output);
                let summary = sanitize(summary);
                let body = result::text(output);
                let body = sanitize(&body);
                let (head, body) = result::head_and_body(&summary, &body);
                writeln!(self.out, "  {}", self.paint(color, &format!("{mark} {head}")))?;
                if !limit_only {
                    self.write_result_body(body)?;
                }
                // A call interrupted or timed out shows what it printed before.
                let partial = result::partial_output(output);
                self.write_result_body(&sanitize(&partial))?;
            }
            Event::TurnEnded { reason } => {
                self.line_break()?;
                if *reason == TurnEndReason::Interrupted {
                    writeln!(self.out, "{}", self.paint(DIM, "[interrupted]"))?;
                }
            }
            Event::Retrying {
                attempt,
                in_secs,
                reason,
            } => {
                // The agent counts a wait down once a second: the first line says why,
                // then every 10 s and the last 3 s say how long is left.
                let line = if self.retrying == Some(*attempt) {
                    let left = in_secs.round() as u64;
                    if !left.is_multiple_of(10) && left > 3 {
                        return Ok(());
                    }
                    format!("ikigai: retrying in {left} s (attempt {attempt})")
                } else {
                    self.retrying = Some(*attempt);
                    format!(
                        "ikigai: {}; retrying in {in_secs:.1} s (attempt {attempt})",
                        sanitize(reason)
                    )
                };
                writeln!(self.err, "{}", self.paint(YELLOW, &line))?;
            }
            Event::Notice { level, text } => {
                self.line_break()?;
                self.out.flush()?;
                let (prefix, color) = match level {
                    NoticeLevel::Info => ("ikigai: ", DIM),
                    NoticeLevel::Warning => ("ikigai: warning: ", YELLOW),
                    NoticeLevel::Error => ("ikigai: error: ", RED),
                };
                writeln!(
                    self.err,
                    "{}",
                    self.paint(color, &format!("{prefix}{}", sanitize(text)))
                )?;
            }
            // One dim line per hook run.
            Event::Hook { line, .. } => {
                self.line_break()?;
                self.out.flush()?;
                writeln!(
                    self.err,
                    "{}",
                    self.paint(DIM, &format!("ikigai: {}", sanitize(line)))
                )?;
            }
            // What a message's `@file` mentions attached, one line each.
            Event::UserMessage { attachments, .. } if !attachments.is_empty() => {
                self.line_break()?;
                self.out.flush()?;
                for a in attachments {
                    writeln!(self.err, "{}", self.paint(DIM, &format!("📎 {}", sanitize(a))))?;
                }
            }
            Event::Compacted { before, after } => {
                self.line_break()?;
                self.out.flush()?;
                let line = format!("ikigai: {}", crate::ui::compacted_text(*before, *after));
                writeln!(self.err, "{}", self.paint(DIM, &line))?;
            }
            Event::Providers { providers } => {
                self.print(&crate::ui::models::text(providers))?;
            }
            Event::Permissions {
                mode,
                rules,
                remembered,
                session,
            } => {
                self.print(&crate::ui::permissions_cmd::format_list(
                    *mode, rules, remembered, session,
                ))?;
            }
            Event::Spend { models, cost } => {
                self.print(&crate::ui::cost::format_spend(models, *cost))?;
            }
            Event::Sessions { sessions } => {
                let home = crate::environ::var("HOME");
                let table = crate::ui::sessions::format_sessions(sessions, home.as_deref(), &chrono::Local);
                self.print(&table)?;
            }
            Event::UndoRefused { turns, files } => {
                let text = crate::checkpoints::undo::refused_text(*turns, files, false);
                self.notice(NoticeLevel::Warning, &text)?;
            }
            Event::Usage {
                input,
                output,
                cached,
                ..
            } if self.opts.verbose => {
                // The answer's last line ends first: stdout and stderr often share a terminal.
                self.line_break()?;
                self.out.flush()?;
                let cached = if *cached > 0 {
                    format!(" ({cached} cached)")
                } else {
                    String::new()
                };
                writeln!(
                    self.err,
                    "{}",
                    self.paint(DIM, &format!("tokens: {input} in{cached}, {output} out"))
                )?;
            }
            Event::SessionStarted { id: Some(id), .. } if self.opts.verbose => {
                writeln!(
                    self.err,
                    "{}",
                    self.paint(DIM, &format!("session {}", sanitize(id)))
                )?;
            }
            Event::ToolCallProgress { text, .. } if self.opts.verbose => {
                writeln!(
                    self.err,
                    "{}",
                    self.paint(DIM, &format!("    progress: {}", sanitize(text)))
                )?;
            }
            Event::ToolStderr { text, .. } if self.opts.verbose => {
                for line in sanitize(text).lines() {
                    writeln!(self.err, "{}", self.paint(DIM, &format!("    stderr: {line}")))?;
                }
            }
            _ => {}
        }
        self.out.flush()
    }

    /// A running command's output, as it prints it: indented on stderr, after what stdout
    /// already shows.
    fn live_output(&mut self, text: &str) -> std::io::Result<()> {
        self.out.flush()?;
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let text = sanitize(&text);
        let mut shown = String::with_capacity(text.len() + 8);
        for piece in text.split_inclusive('\n') {
            if !self.live_open {
                shown.push_str("    ");
            }
            shown.push_str(piece);
            self.live_open = !piece.ends_with('\n');
        }
        write!(self.err, "{}", self.paint(DIM, &shown))?;
        self.err.flush()
    }

    /// Ends a live output line left open, before the result is shown.
    fn end_live_output(&mut self) -> std::io::Result<()> {
        if std::mem::take(&mut self.live_open) {
            writeln!(self.err)?;
        }
        Ok(())
    }

    fn write_result_body(&mut self, body: &str) -> std::io::Result<()> {
        let lines: Vec<&str> = body.lines().collect();
        let shown = if self.opts.verbose {
            lines.len()
        } else {
            lines.len().min(RESULT_LINES)
        };
        for line in &lines[..shown] {
            writeln!(self.out, "    {line}")?;
        }
        if shown < lines.len() {
            let more = format!("    … {} more lines (--verbose shows all)", lines.len() - shown);
            writeln!(self.out, "{}", self.paint(DIM, &more))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn render(events: &[Event], opts: PlainOptions) -> (String, String) {
        let mut r = Renderer::new(Vec::new(), Vec::new(), opts);
        for e in events {
            r.render(e).unwrap();
        }
        let (o, e) = r.into_parts();
        (String::from_utf8(o).unwrap(), String::from_utf8(e).unwrap())
    }

    fn finished(output: &str) -> Event {
        Event::ToolCallFinished {
            id: "a".into(),
            summary: "2 files".into(),
            output: output.into(),
            success: true,
        }
    }

    #[test]
    fn text_tool_call_and_result_are_marked_without_ansi() {
        let (out, err) = render(
            &[
                Event::TextDelta {
                    text: "Looking".into(),
                },
                Event::ToolCallStarted {
                    id: "a".into(),
                    name: "glob".into(),
                    arguments: r#"{"pattern":"*.rs"}"#.into(),
                },
                finished(r#"{"tool_success":true,"result":{"output":"a.rs\nb.rs","count":2}}"#),
                Event::TextDelta { text: "Done".into() },
                Event::TurnEnded {
                    reason: TurnEndReason::Done,
                },
                Event::notice(NoticeLevel::Warning, "db down"),
            ],
            PlainOptions::default(),
        );
        assert_eq!(
            out,
            "Looking\n● glob(pattern=\"*.rs\")\n  ⎿ 2 files\n    a.rs\n    b.rs\nDone\n"
        );
        assert_eq!(err, "ikigai: warning: db down\n");
        assert!(!out.contains('\x1b'));
    }

    #[test]
    fn a_retry_countdown_says_why_once_then_every_ten_seconds_and_the_last_three() {
        let retry = |attempt, in_secs: f64| Event::Retrying {
            attempt,
            in_secs,
            reason: "rate limited (429)".into(),
        };
        let mut events: Vec<Event> = (1..=25).rev().map(|s| retry(1, f64::from(s))).collect();
        events.push(Event::TurnStarted);
        events.push(retry(1, 2.0));
        let (_, err) = render(&events, PlainOptions::default());
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(
            lines,
            [
                "ikigai: rate limited (429); retrying in 25.0 s (attempt 1)",
                "ikigai: retrying in 20 s (attempt 1)",
                "ikigai: retrying in 10 s (attempt 1)",
                "ikigai: retrying in 3 s (attempt 1)",
                "ikigai: retrying in 2 s (attempt 1)",
                "ikigai: retrying in 1 s (attempt 1)",
                "ikigai: rate limited (429); retrying in 2.0 s (attempt 1)",
            ]
        );
    }

    #[test]
    fn long_results_are_abbreviated_unless_verbose() {
        let body: Vec<String> = (0..60).map(|i| format!("line {i}")).collect();
        let env =
            serde_json::json!({"tool_success": true, "result": {"output": body.join("\n")}}).to_string();
        let (out, _) = render(&[finished(&env)], PlainOptions::default());
        assert!(out.contains("line 49") && !out.contains("line 50"));
        assert!(out.contains("… 10 more lines"));
        let (out, _) = render(
            &[finished(&env)],
            PlainOptions {
                verbose: true,
                ..Default::default()
            },
        );
        assert!(out.contains("line 59") && !out.contains("more lines"));
    }

    #[test]
    fn json_mode_prints_one_object_per_event() {
        let (out, _) = render(
            &[
                Event::TextDelta { text: "hi".into() },
                Event::Usage {
                    input: 1,
                    output: 2,
                    cached: 0,
                    context_pct: Some(15),
                    cost: None,
                },
                Event::Usage {
                    input: 900,
                    output: 2,
                    cached: 800,
                    context_pct: None,
                    cost: None,
                },
            ],
            PlainOptions {
                json: true,
                ..Default::default()
            },
        );
        let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines[0]["type"], "text_delta");
        assert_eq!(
            lines[1],
            serde_json::json!({"type": "usage", "input": 1, "output": 2, "context_pct": 15})
        );
        assert_eq!(
            lines[2],
            serde_json::json!({"type": "usage", "input": 900, "output": 2, "cached": 800})
        );
    }

    #[test]
    fn interrupted_turns_are_marked_and_control_characters_shown() {
        let (out, err) = render(
            &[
                Event::TextDelta {
                    text: "half \x1b[31mred\x07\r\tdone".into(),
                },
                Event::TurnEnded {
                    reason: TurnEndReason::Interrupted,
                },
                Event::notice(NoticeLevel::Error, "bad \x1b]0;title\x07"),
            ],
            PlainOptions::default(),
        );
        assert_eq!(out, "half ␛[31mred␇␍\tdone\n[interrupted]\n");
        assert_eq!(err, "ikigai: error: bad ␛]0;title␇\n");
    }

    #[test]
    fn a_multi_line_error_is_shown_once_and_limit_results_add_nothing() {
        let bad = r#"{"tool_success":false,"error":"not JSON:\n{\"a\":","error_code":"INVALID_PARAMS"}"#;
        let (out, _) = render(
            &[Event::ToolCallFinished {
                id: "a".into(),
                summary: "INVALID_PARAMS: not JSON:\n{\"a\":".into(),
                output: bad.into(),
                success: false,
            }],
            PlainOptions::default(),
        );
        assert_eq!(out, "  ⎿ ✗ INVALID_PARAMS\n    not JSON:\n    {\"a\":\n");
        let skipped = r#"{"tool_success":false,"error":"Not executed: limit (2)","limit_reached":true}"#;
        let (out, _) = render(
            &[Event::ToolCallFinished {
                id: "b".into(),
                summary: "not executed: tool call limit reached".into(),
                output: skipped.into(),
                success: false,
            }],
            PlainOptions::default(),
        );
        assert_eq!(out, "  ⎿ ✗ not executed: tool call limit reached\n");
    }

    #[test]
    fn an_interrupted_call_shows_its_result_line_and_what_it_printed() {
        let out = crate::tool_vocab::envelope::interrupted_result("a", "bash", Some("step 1\nstep 2\n"));
        let r = out.as_tool_result().unwrap();
        let (out, _) = render(
            &[
                Event::ToolCallFinished {
                    id: "a".into(),
                    summary: out.content.clone(),
                    output: r.output.clone(),
                    success: false,
                },
                Event::TurnEnded {
                    reason: TurnEndReason::Interrupted,
                },
            ],
            PlainOptions::default(),
        );
        assert_eq!(
            out,
            "  ⎿ ✗ interrupted before the tool finished\n    step 1\n    step 2\n[interrupted]\n"
        );
    }

    #[test]
    fn errors_in_results_are_shown() {
        assert_eq!(
            result::text(r#"{"tool_success":false,"error":"bad","error_code":"INVALID_PARAMS"}"#),
            "bad"
        );
        assert_eq!(
            result::text(r#"{"tool_success":true,"result":{"error":"File not found: x"}}"#),
            "File not found: x"
        );
    }

    #[test]
    fn live_output_goes_to_stderr_indented_and_ends_its_line_before_the_result() {
        let delta = |t: &str| Event::ToolOutputDelta {
            id: "a".into(),
            text: t.into(),
            skipped: 0,
        };
        let live = PlainOptions {
            live: true,
            ..Default::default()
        };
        let events = [
            delta("one\ntw"),
            delta("o\r\n\x1b[31mred\n50%\r60%"),
            finished(r#"{"tool_success":true,"result":{"output":"x"}}"#),
        ];
        let (out, err) = render(&events, live);
        assert_eq!(err, "    one\n    two\n    ␛[31mred\n    50%\n    60%\n");
        assert!(out.contains("⎿ 2 files"), "{out}");
        let (_, err) = render(&events, PlainOptions::default());
        assert_eq!(err, "", "not on a terminal: nothing");
    }

    #[test]
    fn json_mode_carries_live_output_and_plans() {
        let (out, _) = render(
            &[
                Event::ToolOutputDelta {
                    id: "a".into(),
                    text: "x\n".into(),
                    skipped: 0,
                },
                Event::ToolOutputDelta {
                    id: "a".into(),
                    text: "y".into(),
                    skipped: 9,
                },
                Event::PlanUpdated {
                    steps: vec![crate::protocol::PlanStep {
                        step: "s".into(),
                        status: crate::protocol::StepStatus::InProgress,
                    }],
                },
            ],
            PlainOptions {
                json: true,
                ..Default::default()
            },
        );
        let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(
            lines[0],
            serde_json::json!({"type": "tool_output_delta", "id": "a", "text": "x\n"})
        );
        assert_eq!(lines[1]["skipped"], 9);
        assert_eq!(
            lines[2],
            serde_json::json!({"type": "plan_updated", "steps": [{"step": "s", "status": "in_progress"}]})
        );
    }
}
