//! The scripted front end: `-p`, piped stdin and `--json`. Streams the answer to stdout,
//! marks every tool call and result, sends notices to stderr. Piped lines starting with
//! `/` are slash commands (`ui::slash`). Control characters from the model or a tool never
//! reach the terminal (only `\n` and `\t` pass); `--json` prints events exactly.

use std::io::Write;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::agent::AgentHandle;
use crate::config::Config;
use crate::protocol::{Event, NoticeLevel, Op, TurnEndReason};
use crate::tools::Registry;
use crate::ui::custom_commands::CustomCommands;
use crate::ui::slash::{self, Slash};

mod json;
mod render;
#[cfg(test)]
mod tests_hostile;

pub use render::{PlainOptions, RESULT_LINES, Renderer, sanitize};

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

/// Where the user turns come from.
pub enum Input {
    /// One turn (`-p`).
    Prompt(String),
    /// Each non-empty stdin line is a turn or a slash command; `/exit` ends.
    Stdin,
}

/// What the scripted front end shows besides agent events (/tools, /config).
pub struct PlainContext {
    /// The settings, as loaded (never changed).
    pub config: Config,
    /// The provider the run begins on.
    pub provider: crate::provider::Spec,
    pub registry: Registry,
    /// Approval questions are answered on stdin, a line each (`--answers-on-stdin`),
    /// instead of refused as nobody is there.
    pub answers: bool,
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
    custom: &CustomCommands,
    line: &str,
) -> std::io::Result<(Line, bool)> {
    let Some(cmd) = slash::parse(line) else {
        return Ok((Line::Op(Op::Submit(slash::message_text(line))), false));
    };
    // A custom command: its body is the message (built-ins were matched first).
    if let Slash::Unknown(_) = cmd
        && let Some(text) = custom.expand(line)
    {
        return Ok(match text {
            Ok(text) => (Line::Op(Op::Submit(text)), false),
            Err(why) => {
                r.notice(NoticeLevel::Error, &why)?;
                (Line::Done, true)
            }
        });
    }
    let failed = matches!(cmd, Slash::Usage(_) | Slash::Unknown(_));
    let line = match cmd {
        Slash::Agent(op) => return Ok((Line::Op(op), false)),
        Slash::Exit => Line::Exit,
        Slash::Help => {
            r.print(&slash::help_text())?;
            let more = custom.help_text();
            if !more.is_empty() {
                r.print(&more)?;
            }
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
            for s in ctx.registry.skipped() {
                text.push_str(&format!("skipped {}  {}\n", s.path.display(), s.reason));
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
        Slash::Mcp(None) => {
            r.print(&crate::ui::mcp::live(&ctx.registry))?;
            Line::Done
        }
        Slash::Mcp(Some(name)) => {
            match crate::ui::mcp::live_server(&ctx.registry, &name) {
                Some(text) => r.print(&text)?,
                None => r.notice(
                    NoticeLevel::Error,
                    &format!("no MCP server named `{name}`; see /mcp"),
                )?,
            }
            Line::Done
        }
        Slash::Config => {
            let switched = (!r.provider.is_empty() && r.provider != ctx.provider.name)
                .then(|| {
                    crate::provider::spec_for(
                        &ctx.config,
                        &r.provider,
                        Some(&r.model),
                        &crate::provider::env_key,
                    )
                    .ok()
                })
                .flatten();
            let rows =
                crate::provider::describe(&ctx.config, switched.as_ref().unwrap_or(&ctx.provider), &r.model);
            let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
            let text: String = rows.iter().map(|(k, v)| format!("{k:<width$}  {v}\n")).collect();
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
/// that ends with an error, or the first bad command: the remaining lines are not sent.
pub async fn run(
    agent: AgentHandle,
    mut events: UnboundedReceiver<Event>,
    input: Input,
    opts: PlainOptions,
    ctx: PlainContext,
) -> Result<u8, PlainError> {
    let mut r = Renderer::new(std::io::stdout(), std::io::stderr(), opts);
    r.model.clone_from(&ctx.provider.model);
    r.json.provider.clone_from(&ctx.provider.name);
    let mut signals = Signals::new()?;
    let mut stdin = match input {
        Input::Stdin => Some(BufReader::new(tokio::io::stdin())),
        Input::Prompt(_) => None,
    };
    let mut prompt = match input {
        Input::Prompt(p) => Some(p),
        Input::Stdin => None,
    };
    let mut answers = ctx.answers.then(|| BufReader::new(tokio::io::stdin()));
    let mut failed = false;
    let mut signalled: Option<u8> = None;
    // Output that can no longer be written (a closed pipe) stops the run, but the agent
    // still shuts down in order so the session is stored whole.
    let mut output_error: Option<std::io::Error> = None;
    // The session is shown before the first prompt goes out: a resumed session's
    // `session_started` (its whole history, a copy) is written and dropped before the
    // agent builds the first request, so the copy and the request are never held together.
    while output_error.is_none() {
        let Some(ev) = events.recv().await else {
            return Err(PlainError::AgentGone);
        };
        if let Err(e) = r.render(&ev) {
            output_error = Some(e);
        }
        if matches!(ev, Event::SessionStarted { .. }) {
            break;
        }
    }
    // Custom commands (`/review`), for piped lines and `-p` alike.
    let mut custom = if output_error.is_none() {
        let (custom, notices) = CustomCommands::load(&std::env::current_dir()?);
        for text in notices {
            if let Err(e) = r.notice(NoticeLevel::Warning, &text) {
                output_error = Some(e);
            }
        }
        custom
    } else {
        CustomCommands::default()
    };
    'turns: while signalled.is_none() && output_error.is_none() {
        let op = match (&mut stdin, prompt.take()) {
            (_, Some(p)) => match slash::parse(&p).and_then(|c| match c {
                Slash::Unknown(_) => custom.expand(&p),
                _ => None,
            }) {
                Some(Ok(text)) => Op::Submit(text),
                Some(Err(why)) => {
                    failed = true;
                    if let Err(e) = r.notice(NoticeLevel::Error, &why) {
                        output_error = Some(e);
                    }
                    break 'turns;
                }
                None => Op::Submit(p),
            },
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
                // What the tool folders hold is known only once discovery is done.
                if matches!(slash::parse(&line), Some(Slash::Tools | Slash::Tool(Some(_)))) {
                    ctx.registry.discovered().await;
                }
                // A rescan is done here, in order with the lines after it (the registry is
                // the agent's too: its next request offers the new set).
                if slash::parse(&line) == Some(Slash::Agent(Op::RefreshTools)) {
                    let n = ctx.registry.refresh().await;
                    let mut shown = Ok(());
                    // The command folders are read again too.
                    let (fresh, notices) = CustomCommands::load(&std::env::current_dir()?);
                    custom = fresh;
                    for text in ctx.registry.take_notices().into_iter().chain(notices) {
                        shown = shown.and_then(|()| r.notice(NoticeLevel::Warning, &text));
                    }
                    let done = format!("Tools refreshed. {n} tools available.");
                    if let Err(e) = shown.and_then(|()| r.notice(NoticeLevel::Info, &done)) {
                        output_error = Some(e);
                        break;
                    }
                    continue;
                }
                match command(&mut r, &ctx, &custom, &line) {
                    Ok((Line::Op(op), _)) => op,
                    Ok((Line::Exit, _)) => break,
                    // A bad command stops the input as a failed turn does: the lines
                    // after it were written expecting it to work.
                    Ok((Line::Done, true)) => {
                        failed = true;
                        break;
                    }
                    Ok((Line::Done, false)) => continue,
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
                    // Nobody is here to approve: the call is not run (`NOT_APPROVED`),
                    // unless the answers come on stdin (the question went out above).
                    if let Event::ApprovalRequested { id, .. } = &ev {
                        let answer = match answers.as_mut() {
                            None => crate::protocol::Answer::Unattended,
                            Some(input) => tokio::select! {
                                line = next_line(input) => answer_of(line),
                                code = signals.next(), if signalled.is_none() => {
                                    signalled = Some(code);
                                    let _ = agent.ops.send(Op::Cancel);
                                    crate::protocol::Answer::Unattended
                                }
                            },
                        };
                        let _ = agent.ops.send(Op::Approve { id: id.clone(), answer });
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

/// The answer a line of stdin gives (`--answers-on-stdin`): `yes` runs the call, `no`
/// refuses it as the user would; anything else, or no line, is nobody's answer.
fn answer_of(line: std::io::Result<Option<String>>) -> crate::protocol::Answer {
    use crate::protocol::Answer;
    match line {
        Ok(Some(l)) if l.trim() == "yes" => Answer::Yes,
        Ok(Some(l)) if l.trim() == "no" => Answer::No(None),
        _ => Answer::Unattended,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_yes_runs_a_call_and_only_no_refuses_it_as_the_user() {
        use crate::protocol::Answer;
        let line = |l: &str| Ok(Some(l.to_string()));
        assert_eq!(answer_of(line("yes")), Answer::Yes);
        assert_eq!(answer_of(line(" yes\r")), Answer::Yes);
        assert_eq!(answer_of(line("no")), Answer::No(None));
        // Nothing else is an answer: not "always" (nothing is remembered from a pipe),
        // not a yes in other words, not the end of the input or a failed read.
        for other in ["always", "y", "YES", "yes please", "", "s"] {
            assert_eq!(answer_of(line(other)), Answer::Unattended, "{other:?}");
        }
        assert_eq!(answer_of(Ok(None)), Answer::Unattended);
        assert_eq!(answer_of(Err(std::io::Error::other("gone"))), Answer::Unattended);
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
}
