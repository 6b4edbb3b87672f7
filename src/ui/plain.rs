//! The scripted front end: `-p`, piped stdin and `--json`. Streams the answer to stdout,
//! marks every tool call and result, sends notices to stderr. Piped lines starting with
//! `/` are slash commands (`ui::slash`). Control characters from the model or a tool never
//! reach the terminal (only `\n` and `\t` pass); `--json` prints events exactly.

use std::io::Write;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::agent::AgentHandle;
use crate::config::Config;
use crate::message::call_summary;
use crate::protocol::{Event, NoticeLevel, Op, TurnEndReason};
use crate::tools::Registry;
use crate::ui::slash::{self, Slash};

/// Why the scripted front end stopped early.
#[derive(Debug, thiserror::Error)]
pub enum PlainError {
    /// Reading stdin or writing stdout failed (a closed pipe included). Not retryable.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The agent task ended without being asked to. Not retryable.
    #[error("the agent stopped unexpectedly")]
    AgentGone,
}

/// Results longer than this many lines are abbreviated unless `verbose`.
pub const RESULT_LINES: usize = 50;

/// Where the user turns come from.
pub enum Input {
    /// One turn (`-p`).
    Prompt(String),
    /// Each non-empty stdin line is a turn or a slash command; `/exit` ends.
    Stdin,
}

/// What the scripted front end shows besides agent events (/tools, /config).
pub struct PlainContext {
    pub config: Config,
    pub registry: Registry,
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
    /// The model in use, from `SessionStarted` / `ModelChanged` (for `/model`).
    model: String,
}

const CYAN: &str = "\x1b[36m";
const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const YELLOW: &str = "\x1b[33m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// Text from the model or a tool made safe for a terminal: control characters other than
/// `\n` and `\t` (escape sequences, `\r`, C1 codes) are dropped.
pub fn sanitize(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(text.chars().filter(|c| !unsafe_char(*c)).collect())
}

impl<O: Write, E: Write> Renderer<O, E> {
    pub fn new(out: O, err: E, opts: PlainOptions) -> Self {
        Renderer {
            out,
            err,
            opts,
            at_line_start: true,
            model: String::new(),
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
            Event::SessionStarted { model, .. } | Event::ModelChanged { model } => {
                self.model.clone_from(model)
            }
            _ => {}
        }
        if self.opts.json {
            let line = serde_json::to_string(ev).map_err(std::io::Error::other)?;
            writeln!(self.out, "{line}")?;
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
                let line = format!("● {}", sanitize(&call_summary(name, arguments)));
                writeln!(self.out, "{}", self.paint(CYAN, &line))?;
                for l in crate::ui::diff::plain_lines(name, arguments, self.opts.color) {
                    writeln!(self.out, "{l}")?;
                }
            }
            Event::ToolCallFinished {
                summary,
                output,
                success,
                ..
            } => {
                self.line_break()?;
                let (mark, color) = if *success {
                    ("⎿", GREEN)
                } else {
                    ("⎿ ✗", RED)
                };
                let (body, limit_only) = result_body(output, *success);
                let summary = sanitize(summary);
                let body = sanitize(&body);
                let body = body.as_ref();
                // An error summary ends with the error itself (`CODE: message`): show the
                // message once, under the code when it has several lines.
                let (head, body) = match summary.strip_suffix(body) {
                    Some(_) if body.is_empty() => (summary.as_ref(), body),
                    Some(_) if !body.contains('\n') => (summary.as_ref(), ""),
                    Some(code) => (code.trim_end_matches([':', ' ']), body),
                    None => (summary.as_ref(), body),
                };
                writeln!(self.out, "  {}", self.paint(color, &format!("{mark} {head}")))?;
                if !limit_only {
                    self.write_result_body(body)?;
                }
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
                let line = format!(
                    "ikigai: {}; retrying in {in_secs:.1} s (attempt {attempt})",
                    sanitize(reason)
                );
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
            Event::Sessions { sessions } => {
                // TODO(store): `crate::ui::sessions::format_sessions` once it moves there.
                let home = std::env::var("HOME").ok();
                let table = crate::ui::sessions::format_sessions(sessions, home.as_deref(), &chrono::Local);
                self.print(&table)?;
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

/// The body to show under a result line, and whether it only repeats the tool call limit
/// (named once, by the agent's notice).
fn result_body(envelope: &str, success: bool) -> (String, bool) {
    let limit_only = !success
        && serde_json::from_str::<Value>(envelope)
            .is_ok_and(|v| v.get("limit_reached") == Some(&Value::Bool(true)) && v.get("result").is_none());
    (result_text(envelope), limit_only)
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

/// SIGINT, SIGTERM and SIGHUP as one stream of exit codes (130, 143, 129).
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The exit code of the next signal: 128 + its number.
    async fn next(&mut self) -> u8 {
        tokio::select! {
            _ = self.int.recv() => 130,
            _ = self.term.recv() => 143,
            _ = self.hup.recv() => 129,
        }
    }
}

/// What one line of piped input asks for.
enum Line {
    Op(Op),
    Exit,
    /// Answered here; nothing for the agent.
    Done,
}

/// Answers a slash command the front end handles itself, or turns the line into an op.
fn command<O: Write, E: Write>(
    r: &mut Renderer<O, E>,
    ctx: &PlainContext,
    line: &str,
) -> std::io::Result<(Line, bool)> {
    let Some(cmd) = slash::parse(line) else {
        return Ok((Line::Op(Op::Submit(slash::message_text(line))), false));
    };
    let failed = matches!(cmd, Slash::Usage(_) | Slash::Unknown(_));
    let line = match cmd {
        Slash::Agent(op) => return Ok((Line::Op(op), false)),
        Slash::Exit => Line::Exit,
        Slash::Help => {
            r.print(&slash::help_text())?;
            Line::Done
        }
        Slash::Tools => {
            let width = ctx
                .registry
                .schemas()
                .iter()
                .map(|s| s.name.len())
                .max()
                .unwrap_or(0);
            let mut text = String::new();
            for s in ctx.registry.schemas() {
                let first = s.description.lines().next().unwrap_or("");
                text.push_str(&format!("{:<width$}  {first}\n", s.name));
            }
            r.print(&text)?;
            Line::Done
        }
        Slash::Tool(None) => {
            r.notice(NoticeLevel::Error, "usage: /tool NAME (see /tools)")?;
            Line::Done
        }
        Slash::Tool(Some(name)) => {
            match ctx.registry.get(&name) {
                Some(tool) => {
                    let json =
                        serde_json::to_string_pretty(&tool.schema().to_protocol_json()).unwrap_or_default();
                    r.print(&json)?;
                }
                None => r.notice(NoticeLevel::Error, &format!("no tool named {name}; see /tools"))?,
            }
            Line::Done
        }
        Slash::Config => {
            let rows = ctx.config.describe();
            let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
            let text: String = rows.iter().map(|(k, v)| format!("{k:<width$}  {v}\n")).collect();
            r.print(&text)?;
            Line::Done
        }
        Slash::ShowModel => {
            let text = format!("model: {}/{}", ctx.config.provider, r.model);
            r.print(&text)?;
            Line::Done
        }
        Slash::Usage(text) => {
            r.notice(NoticeLevel::Error, &text)?;
            Line::Done
        }
        Slash::Unknown(name) => {
            let text =
                format!("unknown command {name} (/help lists them; start with // to send it as a message)");
            r.notice(NoticeLevel::Error, &text)?;
            Line::Done
        }
    };
    Ok((line, failed))
}

/// Runs the turns, rendering to stdout/stderr. Exit code: 0 when every turn finished,
/// 1 when one failed (an error, an interruption, the tool call limit, a bad command),
/// 130 / 143 / 129 after SIGINT / SIGTERM / SIGHUP (the turn in flight is cancelled, its
/// tool killed, and the session stored first). Piped input stops at the first turn
/// that ends with an error: the remaining lines are not sent.
pub async fn run(
    agent: AgentHandle,
    mut events: UnboundedReceiver<Event>,
    input: Input,
    opts: PlainOptions,
    ctx: PlainContext,
) -> Result<u8, PlainError> {
    let mut r = Renderer::new(std::io::stdout(), std::io::stderr(), opts);
    r.model.clone_from(&ctx.config.model);
    let mut signals = Signals::new()?;
    let mut stdin = match input {
        Input::Stdin => Some(BufReader::new(tokio::io::stdin())),
        Input::Prompt(_) => None,
    };
    let mut prompt = match input {
        Input::Prompt(p) => Some(p),
        Input::Stdin => None,
    };
    let mut failed = false;
    let mut signalled: Option<u8> = None;
    // Output that can no longer be written (a closed pipe) stops the run, but the agent
    // still shuts down in order so the session is stored whole.
    let mut output_error: Option<std::io::Error> = None;
    'turns: while signalled.is_none() {
        let op = match (&mut stdin, prompt.take()) {
            (_, Some(p)) => Op::Submit(p),
            (Some(reader), None) => {
                let line = tokio::select! {
                    line = next_line(reader) => line?,
                    code = signals.next() => {
                        signalled = Some(code);
                        break 'turns;
                    }
                };
                let Some(line) = line else { break };
                if line.trim().is_empty() {
                    continue;
                }
                match command(&mut r, &ctx, &line) {
                    Ok((Line::Op(op), _)) => op,
                    Ok((Line::Exit, _)) => break,
                    Ok((Line::Done, bad)) => {
                        failed |= bad;
                        continue;
                    }
                    Err(e) => {
                        output_error = Some(e);
                        break;
                    }
                }
            }
            (None, None) => break,
        };
        let is_turn = matches!(op, Op::Submit(_));
        if agent.ops.send(op).is_err() {
            return Err(PlainError::AgentGone);
        }
        if !is_turn {
            // Commands answer with events, shown as they come.
            continue;
        }
        loop {
            tokio::select! {
                ev = events.recv() => {
                    let Some(ev) = ev else {
                        return Err(PlainError::AgentGone);
                    };
                    if let Err(e) = r.render(&ev) {
                        output_error = Some(e);
                        let _ = agent.ops.send(Op::Cancel);
                        break 'turns;
                    }
                    if let Event::TurnEnded { reason } = ev {
                        failed |= reason != TurnEndReason::Done;
                        if reason == TurnEndReason::Error {
                            // The provider refused for good (auth, unknown model…): the
                            // next lines would fail the same way.
                            break 'turns;
                        }
                        break;
                    }
                }
                code = signals.next(), if signalled.is_none() => {
                    signalled = Some(code);
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
        return Err(PlainError::Io(e));
    }
    Ok(match signalled {
        Some(code) => code,
        None if failed => 1,
        None => 0,
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
