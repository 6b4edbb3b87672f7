//! One turn of `ikigai mcp serve`: runs this binary as `ikigai -p PROMPT --json` (a new
//! session, or `--resume ID`) in the asked folder with the server's approval mode, reads
//! its events as they come, and gives back the final answer with the session's id. The
//! child is the whole agent (trust, permissions, sandbox, the session store); this file
//! only starts it, follows its JSON lines and stops it. With an approver, the child asks
//! instead of refusing: its `approval_requested` event is put to the approver in words
//! and the answer goes back on its stdin, a line (`--answers-on-stdin`: `yes` or `no`);
//! the child's permission engine decided that it asks, and decides again with the answer.
//! Knows nothing of MCP.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

/// What a turn is asked to do.
#[derive(Clone, Debug)]
pub struct TurnRequest {
    pub prompt: String,
    pub cwd: PathBuf,
    /// Continue this stored session instead of starting one.
    pub resume: Option<String>,
}

/// Answers a question a turn asks (in words): `true` runs the call, `false` refuses it.
pub type Approver = Arc<dyn Fn(String) -> BoxFuture<'static, bool> + Send + Sync>;

/// How it ended.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TurnOutcome {
    pub session_id: Option<String>,
    /// The text of the model's last answer (after its last tool call).
    pub answer: String,
    /// `done`, `interrupted`, `error`, … (the `turn_ended` reason), or `cancelled`.
    pub reason: String,
    pub tool_calls: usize,
    /// What the child said on stderr when it failed, and its exit code.
    pub failure: Option<String>,
    /// The last error the child reported as an event.
    pub said: Option<String>,
}

/// A step worth telling the client while the turn runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    Started { session_id: String },
    ToolCall { summary: String },
}

#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error("could not start ikigai ({program}): {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("the folder {0} does not exist or is not a folder")]
    NoFolder(String),
}

/// The command line a turn runs with: the server's own settings (`args`), then the turn
/// (`answers`: its questions answered on stdin).
pub(super) fn argv(args: &[String], req: &TurnRequest, answers: bool) -> Vec<String> {
    let mut v = args.to_vec();
    if answers {
        v.push("--answers-on-stdin".to_string());
    }
    if let Some(id) = &req.resume {
        v.extend(["--resume".to_string(), id.clone()]);
    }
    v.extend(["--json".to_string(), "-p".to_string(), req.prompt.clone()]);
    v
}

/// Runs one turn of `program` (this binary); `on_step` hears each step as it happens,
/// `approve` (if any) answers the questions it asks (else they are refused, nobody being
/// there). Cancelling `cancel` interrupts the child as Ctrl-C does (what it did is
/// stored), and kills its process group if it has not ended two seconds later.
pub(super) async fn run(
    program: &Path,
    args: &[String],
    req: &TurnRequest,
    cancel: CancellationToken,
    approve: Option<Approver>,
    mut on_step: impl FnMut(Step),
) -> Result<TurnOutcome, TurnError> {
    if !req.cwd.is_dir() {
        return Err(TurnError::NoFolder(req.cwd.display().to_string()));
    }
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(argv(args, req, approve.is_some()))
        .current_dir(&req.cwd)
        // The secrets this process took out of its own environment block go back to the
        // child, which takes them out of its own in turn.
        .env_clear()
        .envs(crate::environ::vars_os())
        .stdin(if approve.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|source| TurnError::Spawn {
        program: program.display().to_string(),
        source,
    })?;
    let pid = child.id();
    let mut answers = child.stdin.take();
    let mut out = TurnOutcome::default();
    let stderr = child.stderr.take().map(|mut e| {
        tokio::spawn(async move {
            let mut s = String::new();
            let _ = (&mut e).take(64 * 1024).read_to_string(&mut s).await;
            s
        })
    });
    let mut cancelled = false;
    if let Some(stdout) = child.stdout.take() {
        let mut lines = BufReader::new(stdout).lines();
        loop {
            tokio::select! {
                line = lines.next_line() => match line {
                    Ok(Some(l)) => {
                        follow(&l, &mut out, &mut on_step);
                        if let (Some(q), Some(ask), Some(w)) = (question(&l), &approve, answers.as_mut()) {
                            // A cancelled turn refuses the call it was asking about.
                            let yes = tokio::select! {
                                yes = ask(q) => yes,
                                () = cancel.cancelled() => false,
                            };
                            let line: &[u8] = if yes { b"yes\n" } else { b"no\n" };
                            if w.write_all(line).await.is_err() || w.flush().await.is_err() {
                                answers = None;
                            }
                        }
                    }
                    _ => break,
                },
                _ = cancel.cancelled(), if !cancelled => {
                    cancelled = true;
                    signal(pid, nix::sys::signal::Signal::SIGINT);
                    let group = pid;
                    tokio::spawn(async move {
                        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
                        signal(group, nix::sys::signal::Signal::SIGKILL);
                    });
                }
            }
        }
    }
    let status = child.wait().await.ok();
    let said = match stderr {
        Some(h) => h.await.unwrap_or_default(),
        None => String::new(),
    };
    if cancelled {
        out.reason = "cancelled".into();
    } else if !status.is_some_and(|s| s.success()) || out.reason.is_empty() {
        let code = status
            .and_then(|s| s.code())
            .map_or("a signal".to_string(), |c| format!("exit code {c}"));
        let said = match &out.said {
            Some(event) if said.trim().is_empty() => crate::text::visible(event).into_owned(),
            _ => crate::text::visible(said.trim()).into_owned(),
        };
        out.failure = Some(if said.is_empty() {
            format!("ikigai ended with {code}")
        } else {
            format!("ikigai ended with {code}: {said}")
        });
    }
    Ok(out)
}

/// Sends `sig` to the child's process group (it leads its own).
fn signal(pid: Option<u32>, sig: nix::sys::signal::Signal) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), sig);
    }
}

/// The question an `approval_requested` event line asks, in words (what would run, and
/// why it asks).
fn question(line: &str) -> Option<String> {
    let ev = serde_json::from_str::<Value>(line).ok()?;
    if ev.get("type").and_then(Value::as_str) != Some("approval_requested") {
        return None;
    }
    let text = |k: &str| ev.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let args = match ev.get("arguments") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    };
    let again = ev.get("outside_sandbox").and_then(Value::as_bool) == Some(true);
    Some(asking(&text("name"), &args, &text("reason"), again))
}

/// The question put to the client's user about a call of `name` with `args`, asked for
/// `reason` (`again`: to run once more outside the sandbox), shown safely.
pub(super) fn asking(name: &str, args: &str, reason: &str, again: bool) -> String {
    let call: String = format!("{name}({args})").chars().take(400).collect();
    let again = if again { " again, outside the sandbox" } else { "" };
    let q =
        format!("ikigai asks to run {call}{again}: {reason}. Accept to allow it once; decline to refuse it.");
    crate::text::visible(&q).into_owned()
}

/// Takes one JSON event line into the outcome.
fn follow(line: &str, out: &mut TurnOutcome, on_step: &mut impl FnMut(Step)) {
    let Ok(ev) = serde_json::from_str::<Value>(line) else {
        return;
    };
    let text = |k: &str| ev.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    match ev.get("type").and_then(Value::as_str) {
        Some("session_started") => {
            let id = text("id");
            if !id.is_empty() {
                out.session_id = Some(id.clone());
                on_step(Step::Started { session_id: id });
            }
        }
        Some("text_delta") => out.answer.push_str(&text("text")),
        Some("tool_call_started") => {
            // What the model said before a call is not its answer.
            out.answer.clear();
            out.tool_calls += 1;
            let args = match ev.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            };
            let call = format!("{}({})", text("name"), args);
            let summary = crate::text::visible(&call);
            on_step(Step::ToolCall {
                summary: summary.chars().take(200).collect(),
            });
        }
        Some("turn_ended") => out.reason = text("reason"),
        // Why a turn failed (a provider's refusal, a dead server) comes as a notice.
        Some("notice") if matches!(ev.get("level").and_then(Value::as_str), Some("error")) => {
            out.said = Some(text("text"));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_what_follows_the_last_tool_call() {
        let mut out = TurnOutcome::default();
        let mut steps = Vec::new();
        for l in [
            r#"{"type":"session_started","id":"abc","model":"m","history":[],"tokens":0}"#,
            r#"{"type":"text_delta","text":"Let me look."}"#,
            r#"{"type":"tool_call_started","id":"c","name":"glob","arguments":{"pattern":"*.rs"}}"#,
            "not json at all",
            r#"{"type":"text_delta","text":"Two "}"#,
            r#"{"type":"text_delta","text":"files."}"#,
            r#"{"type":"turn_ended","reason":"done"}"#,
        ] {
            follow(l, &mut out, &mut |s| steps.push(s));
        }
        assert_eq!(out.session_id.as_deref(), Some("abc"));
        assert_eq!(out.answer, "Two files.");
        assert_eq!(out.reason, "done");
        assert_eq!(out.tool_calls, 1);
        assert_eq!(
            steps,
            vec![
                Step::Started {
                    session_id: "abc".into()
                },
                Step::ToolCall {
                    summary: r#"glob({"pattern":"*.rs"})"#.into()
                },
            ]
        );
    }

    #[test]
    fn an_error_notice_is_kept_as_what_the_child_said() {
        let mut out = TurnOutcome::default();
        for l in [
            r#"{"type":"notice","level":"warning","text":"just a warning"}"#,
            r#"{"type":"notice","level":"error","text":"the provider refused: 401"}"#,
            r#"{"type":"turn_ended","reason":"error"}"#,
        ] {
            follow(l, &mut out, &mut |_| {});
        }
        assert_eq!(out.said.as_deref(), Some("the provider refused: 401"));
        assert_eq!(out.reason, "error");
    }

    #[test]
    fn a_question_names_the_call_and_why_and_only_approval_events_ask() {
        let q = question(
            r#"{"type":"approval_requested","id":"c","name":"bash","arguments":{"command":"rm x"},"reason":"bash runs rm","always":[]}"#,
        )
        .unwrap();
        assert!(
            q.contains(r#"bash({"command":"rm x"})"#) && q.contains("bash runs rm"),
            "{q}"
        );
        assert!(!q.contains("outside the sandbox"), "{q}");
        let again = question(
            r#"{"type":"approval_requested","id":"c","name":"bash","arguments":"x","reason":"r","always":[],"outside_sandbox":true}"#,
        )
        .unwrap();
        assert!(again.contains("again, outside the sandbox"), "{again}");
        // Control characters a model wrote are shown, not sent raw to the client's user.
        let hostile = question(
            r#"{"type":"approval_requested","id":"c","name":"bash","arguments":"\u001b[2Jok","reason":"r","always":[]}"#,
        )
        .unwrap();
        assert!(!hostile.contains('\u{1b}'), "{hostile}");
        for other in [
            r#"{"type":"tool_call_started","id":"c","name":"bash","arguments":"x"}"#,
            r#"{"type":"text_delta","text":"approval_requested"}"#,
            "approval_requested",
        ] {
            assert_eq!(question(other), None, "{other}");
        }
    }

    #[test]
    fn a_resumed_turn_names_the_session() {
        let req = TurnRequest {
            prompt: "go on".into(),
            cwd: "/".into(),
            resume: Some("abc".into()),
        };
        assert!(argv(&[], &req, true).contains(&"--answers-on-stdin".to_string()));
        let v = argv(&["--approval".into(), "read-only".into()], &req, false);
        assert_eq!(
            v,
            [
                "--approval",
                "read-only",
                "--resume",
                "abc",
                "--json",
                "-p",
                "go on"
            ]
        );
    }
}
