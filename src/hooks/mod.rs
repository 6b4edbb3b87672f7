//! Runs the configured hooks (`config::hooks`) of one event, Claude Code's way: each
//! matching hook is `bash -c COMMAND` started like a tool process (through the launcher,
//! under the sandbox in force, its own process group killed at the end or at its
//! timeout, the filtered tool environment: no keys), in the project folder, with the
//! event's JSON object on stdin. Exit 0 continues (stdout may be JSON with
//! `hookSpecificOutput`: `additionalContext`, `permissionDecision` allow / deny / ask with
//! `permissionDecisionReason`, `updatedInput`; or `decision: "block"` with `reason`;
//! plain stdout is context for SessionStart and UserPromptSubmit); exit 2 blocks with
//! stderr as the reason; any other end is an error that does not block. Reports what each
//! run said; decides no permission (the caller never lets a hook widen one).

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::config::hooks::{Hook, HookEvent};
use crate::tools::process::{self, Outcome as ProcessOutcome, Spec, StderrMode};

/// Bytes of a hook's stdout and stderr kept.
const OUTPUT_CAP: usize = 64 * 1024;

/// What a PreToolUse hook said about the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Permission {
    /// Skip the question (never a deny rule, never the sandbox).
    Allow,
    Deny,
    Ask,
}

/// Everything the hooks of one event said, together.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Said {
    /// Exit 2 or `decision: "block"` (or `permissionDecision: "deny"`): the reason.
    pub blocked: Option<String>,
    /// The strictest `permissionDecision` (deny over ask over allow) and its reason.
    pub permission: Option<(Permission, String)>,
    /// `additionalContext` (or plain stdout where that counts), in order.
    pub context: Vec<String>,
    /// The last `updatedInput`.
    pub updated_input: Option<Value>,
    /// One per hook run: which, how long, what it decided.
    pub runs: Vec<Ran>,
    /// Errors that did not block (another exit code, a timeout, output not understood).
    pub errors: Vec<String>,
}

/// One hook run, as reported.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Ran {
    pub command: String,
    pub source: String,
    pub ms: u64,
    pub outcome: String,
    /// All of it in one line.
    pub line: String,
}

/// Where and how hooks run.
pub(crate) struct Runner<'a> {
    pub hooks: &'a [Hook],
    pub cwd: &'a Path,
    /// The filtered tool environment.
    pub env: Vec<(OsString, OsString)>,
    pub session_id: &'a str,
}

impl Runner<'_> {
    /// Whether any hook of `event` applies to `tool` (every hook, for events without one).
    pub(crate) fn any(&self, event: HookEvent, tool: Option<&str>) -> bool {
        self.hooks
            .iter()
            .any(|h| h.event == event && tool.is_none_or(|t| h.matches(t)))
    }

    /// Runs the hooks of `event` that apply to `tool`, in order, with `fields` added to
    /// the common ones (`session_id`, `cwd`, `hook_event_name`).
    pub(crate) async fn run(&self, event: HookEvent, tool: Option<&str>, fields: Value) -> Said {
        let mut said = Said::default();
        let mut input = json!({
            "session_id": self.session_id,
            "cwd": self.cwd,
            "hook_event_name": event.as_str(),
        });
        if let (Some(obj), Value::Object(more)) = (input.as_object_mut(), fields) {
            obj.extend(more);
        }
        let stdin = input.to_string().into_bytes();
        for h in self
            .hooks
            .iter()
            .filter(|h| h.event == event && tool.is_none_or(|t| h.matches(t)))
        {
            let started = Instant::now();
            let ran = self.one(h, stdin.clone()).await;
            let ms = started.elapsed().as_millis() as u64;
            let what = read(event, ran, h.timeout_secs, &mut said);
            let name = match tool {
                Some(t) => format!("{} {t}", event.as_str()),
                None => event.as_str().to_string(),
            };
            let source = h.source.describe();
            said.runs.push(Ran {
                line: format!(
                    "hook {name}: {} ({source}), {ms} ms: {what}",
                    crate::text::shorten(&h.command, 60),
                ),
                command: h.command.clone(),
                source,
                ms,
                outcome: what,
            });
        }
        said
    }

    async fn one(&self, h: &Hook, stdin: Vec<u8>) -> Result<process::Finished, String> {
        let path_var = self
            .env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_os_str());
        let program = crate::trusted_path::find_in("bash", path_var, self.cwd)
            .map_err(|e| format!("cannot run bash: {e}"))?;
        // Claude Code's scripts find the project by this variable.
        let mut env = self.env.clone();
        env.retain(|(k, _)| k != "CLAUDE_PROJECT_DIR");
        env.push(("CLAUDE_PROJECT_DIR".into(), self.cwd.as_os_str().to_owned()));
        let spec = Spec {
            program,
            args: vec!["-c".into(), h.command.clone().into()],
            cwd: self.cwd.to_path_buf(),
            env,
            stdin: Some(stdin),
            stderr: StderrMode::Separate(OUTPUT_CAP),
            stdout_cap: OUTPUT_CAP,
            stop_when_full: false,
            timeout: Duration::from_secs(h.timeout_secs),
            share_partial: false,
            live: process::LiveFrom::Nothing,
        };
        process::run(spec)
            .await
            .map_err(|e| format!("cannot start it: {e}"))
    }
}

/// Reads one run into `said`; returns what it decided, for its line.
fn read(event: HookEvent, ran: Result<process::Finished, String>, timeout: u64, said: &mut Said) -> String {
    let f = match ran {
        Ok(f) => f,
        Err(e) => {
            said.errors.push(e.clone());
            return format!("error: {e}");
        }
    };
    let stdout = f.stdout.finish().text;
    let stderr = f.stderr.map(|e| e.finish().text).unwrap_or_default();
    let code = match f.outcome {
        ProcessOutcome::Exited(s) => s.code(),
        ProcessOutcome::TimedOut => {
            let e = format!("timed out after {timeout} s; it was killed");
            said.errors.push(e.clone());
            return e;
        }
        ProcessOutcome::OutputFull => None,
    };
    match code {
        Some(0) => {}
        Some(2) => {
            let why = stderr.trim().to_string();
            said.blocked.get_or_insert(why.clone());
            return format!("blocked: {}", crate::text::shorten(&why, 120));
        }
        other => {
            let e = format!(
                "failed ({}): {}",
                other.map_or("killed".to_string(), |c| format!("exit {c}")),
                crate::text::shorten(stderr.trim(), 200)
            );
            said.errors.push(e.clone());
            return e;
        }
    }
    let trimmed = stdout.trim();
    let Ok(Value::Object(out)) = serde_json::from_str::<Value>(trimmed) else {
        if !trimmed.is_empty() && matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit) {
            said.context.push(trimmed.to_string());
            return "context added".into();
        }
        return "ok".into();
    };
    let specific = out.get("hookSpecificOutput").cloned().unwrap_or(Value::Null);
    let mut what = Vec::new();
    if let Some(c) = specific["additionalContext"].as_str().filter(|c| !c.is_empty()) {
        said.context.push(c.to_string());
        what.push("context added".to_string());
    }
    if out.get("decision").and_then(Value::as_str) == Some("block") {
        let why = out
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("blocked by a hook");
        said.blocked.get_or_insert(why.to_string());
        what.push(format!("blocked: {why}"));
    }
    if event == HookEvent::PreToolUse {
        let reason = specific["permissionDecisionReason"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let p = match specific["permissionDecision"].as_str() {
            Some("allow") => Some(Permission::Allow),
            Some("deny") => Some(Permission::Deny),
            Some("ask") => Some(Permission::Ask),
            _ => None,
        };
        if let Some(p) = p {
            let rank = |p: Permission| match p {
                Permission::Allow => 0,
                Permission::Ask => 1,
                Permission::Deny => 2,
            };
            if said.permission.as_ref().is_none_or(|(q, _)| rank(p) > rank(*q)) {
                said.permission = Some((p, reason.clone()));
            }
            what.push(format!("{p:?}").to_lowercase());
        }
        if let Some(u) = specific.get("updatedInput").filter(|u| u.is_object()) {
            said.updated_input = Some(u.clone());
            what.push("input updated".into());
        }
    }
    if what.is_empty() {
        "ok".into()
    } else {
        what.join(", ")
    }
}
