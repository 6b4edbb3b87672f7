//! The scripted front end: `-p`, piped stdin and `--json`. Streams the answer to stdout,
//! marks every tool call and result, sends notices to stderr.

use std::io::Write;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::agent::AgentHandle;
use crate::app::AppError;
use crate::message::call_summary;
use crate::protocol::{Event, NoticeLevel, Op, TurnEndReason};

/// Results longer than this many lines are abbreviated unless `verbose`.
pub const RESULT_LINES: usize = 50;

/// Where the user turns come from.
pub enum Input {
    /// One turn (`-p`).
    Prompt(String),
    /// Each non-empty stdin line is a turn; `/exit` ends.
    Stdin,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct PlainOptions {
    pub json: bool,
    pub verbose: bool,
    pub color: bool,
}

/// Renders events as text (or JSON lines) onto two writers.
pub struct Renderer<O: Write, E: Write> {
    out: O,
    err: E,
    opts: PlainOptions,
    at_line_start: bool,
}

const CYAN: &str = "\x1b[36m";
const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const YELLOW: &str = "\x1b[33m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

impl<O: Write, E: Write> Renderer<O, E> {
    pub fn new(out: O, err: E, opts: PlainOptions) -> Self {
        Renderer {
            out,
            err,
            opts,
            at_line_start: true,
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

    /// Renders one event.
    pub fn render(&mut self, ev: &Event) -> std::io::Result<()> {
        if self.opts.json {
            let line = serde_json::to_string(ev).map_err(std::io::Error::other)?;
            writeln!(self.out, "{line}")?;
            return self.out.flush();
        }
        match ev {
            Event::TextDelta { text } => {
                self.out.write_all(text.as_bytes())?;
                if let Some(last) = text.chars().last() {
                    self.at_line_start = last == '\n';
                }
            }
            Event::ToolCallStarted { name, arguments, .. } => {
                self.line_break()?;
                let line = format!("● {}", call_summary(name, arguments));
                writeln!(self.out, "{}", self.paint(CYAN, &line))?;
            }
            Event::ToolCallFinished {
                summary,
                output,
                success,
                ..
            } => {
                let (mark, color) = if *success {
                    ("⎿", GREEN)
                } else {
                    ("⎿ ✗", RED)
                };
                writeln!(self.out, "  {}", self.paint(color, &format!("{mark} {summary}")))?;
                let body = result_text(output);
                // An error summary already says it all.
                if !summary.ends_with(body.as_str()) || body.contains('\n') {
                    self.write_result_body(&body)?;
                }
            }
            Event::TurnEnded { .. } => self.line_break()?,
            Event::Retrying {
                attempt,
                in_secs,
                reason,
            } => {
                let line = format!("ikigai: {reason}; retrying in {in_secs:.1} s (attempt {attempt})");
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
                writeln!(self.err, "{}", self.paint(color, &format!("{prefix}{text}")))?;
            }
            Event::Usage { input, output, .. } if self.opts.verbose => {
                writeln!(
                    self.err,
                    "{}",
                    self.paint(DIM, &format!("tokens: {input} in, {output} out"))
                )?;
            }
            Event::SessionStarted { id: Some(id), .. } if self.opts.verbose => {
                writeln!(self.err, "{}", self.paint(DIM, &format!("session {id}")))?;
            }
            _ => {}
        }
        self.out.flush()
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

/// The text a person wants from an envelope: the output, or the error.
pub fn result_text(envelope: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(envelope) else {
        return envelope.to_string();
    };
    let pick = |v: &Value| -> Option<String> {
        ["output", "error"]
            .iter()
            .find_map(|k| v.get(*k).and_then(Value::as_str).map(str::to_string))
    };
    v.get("result")
        .and_then(pick)
        .or_else(|| pick(&v))
        .unwrap_or_default()
}

/// The next line of input without its line ending; bytes that are not UTF-8 are
/// replaced (U+FFFD) rather than failing the run.
async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<Option<String>> {
    let mut buf = Vec::new();
    if reader.read_until(b'\n', &mut buf).await? == 0 {
        return Ok(None);
    }
    while matches!(buf.last(), Some(b'\n' | b'\r')) {
        buf.pop();
    }
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

/// Runs the turns, rendering to stdout/stderr. Exit code: 0 when every turn finished,
/// 1 when one failed, 130 when the user pressed Ctrl-C.
pub async fn run(
    agent: AgentHandle,
    mut events: UnboundedReceiver<Event>,
    input: Input,
    opts: PlainOptions,
) -> Result<u8, AppError> {
    let mut r = Renderer::new(std::io::stdout(), std::io::stderr(), opts);
    let mut stdin = match input {
        Input::Stdin => Some(BufReader::new(tokio::io::stdin())),
        Input::Prompt(_) => None,
    };
    let mut prompt = match input {
        Input::Prompt(p) => Some(p),
        Input::Stdin => None,
    };
    let mut failed = false;
    let mut cancelled = false;
    // Output that can no longer be written (a closed pipe) stops the run, but the agent
    // still shuts down in order so the session is stored whole.
    let mut output_error: Option<std::io::Error> = None;
    'turns: while !cancelled {
        let text = match (&mut stdin, prompt.take()) {
            (_, Some(p)) => p,
            (Some(reader), None) => match next_line(reader).await? {
                None => break,
                Some(l) if l.trim().is_empty() => continue,
                Some(l) if l.trim() == "/exit" => break,
                Some(l) => l,
            },
            (None, None) => break,
        };
        if agent.ops.send(Op::Submit(text)).is_err() {
            return Err(AppError::Runtime("the agent stopped unexpectedly".into()));
        }
        loop {
            tokio::select! {
                ev = events.recv() => {
                    let Some(ev) = ev else {
                        return Err(AppError::Runtime("the agent stopped unexpectedly".into()));
                    };
                    if let Err(e) = r.render(&ev) {
                        output_error = Some(e);
                        let _ = agent.ops.send(Op::Cancel);
                        break 'turns;
                    }
                    if let Event::TurnEnded { reason } = ev {
                        failed |= matches!(reason, TurnEndReason::Error | TurnEndReason::Interrupted);
                        break;
                    }
                }
                _ = tokio::signal::ctrl_c(), if !cancelled => {
                    cancelled = true;
                    let _ = agent.ops.send(Op::Cancel);
                }
            }
        }
    }
    let _ = agent.ops.send(Op::Shutdown);
    // The agent flushes the store before it ends; show what it says meanwhile.
    let mut task = agent.task;
    loop {
        tokio::select! {
            _ = &mut task => break,
            ev = events.recv() => match ev {
                Some(ev) if output_error.is_none() => {
                    if let Err(e) = r.render(&ev) {
                        output_error = Some(e);
                    }
                }
                Some(_) => {}
                None => break,
            },
        }
    }
    while let Ok(ev) = events.try_recv() {
        if output_error.is_none() {
            let _ = r.render(&ev);
        }
    }
    if let Some(e) = output_error {
        return Err(AppError::Io(e));
    }
    Ok(if cancelled {
        130
    } else if failed {
        1
    } else {
        0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    context_pct: Some(15),
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
    }

    #[tokio::test]
    async fn stdin_lines_tolerate_crlf_and_invalid_utf8() {
        let mut input: &[u8] = b"one\r\ntw\xffo\nlast";
        assert_eq!(next_line(&mut input).await.unwrap().as_deref(), Some("one"));
        assert_eq!(
            next_line(&mut input).await.unwrap().as_deref(),
            Some("tw\u{fffd}o")
        );
        assert_eq!(next_line(&mut input).await.unwrap().as_deref(), Some("last"));
        assert_eq!(next_line(&mut input).await.unwrap(), None);
    }

    #[test]
    fn errors_in_results_are_shown() {
        assert_eq!(
            result_text(r#"{"tool_success":false,"error":"bad","error_code":"INVALID_PARAMS"}"#),
            "bad"
        );
        assert_eq!(
            result_text(r#"{"tool_success":true,"result":{"error":"File not found: x"}}"#),
            "File not found: x"
        );
    }
}
