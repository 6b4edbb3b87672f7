//! The named points of a session where hooks run (`crate::hooks`): SessionStart (its
//! context goes with the first prompt), UserPromptSubmit (may block the prompt or add
//! context), PreToolUse (may block the call, change its input — judged again by the
//! permission engine — or say allow / deny / ask, never widening a rule or the sandbox),
//! PostToolUse (its context or feedback is added to the result), Stop, PreCompact,
//! Notification (a question waits for the user) and SessionEnd, which decide nothing.
//! Each run is reported as one `Event::Hook` (a dim line; `hook` under `--json`). With no
//! hook configured nothing runs and
//! nothing changes.

use serde_json::{Value, json};

use super::state::AgentState;
use crate::config::hooks::HookEvent;
use crate::hooks::{Permission, Runner, Said};
use crate::protocol::{Event, NoticeLevel};

/// Runs `event`'s hooks (for `tool`) and reports each run.
async fn run(st: &mut AgentState, event: HookEvent, tool: Option<&str>, fields: Value) -> Option<Said> {
    if st.config().hooks.is_empty() {
        return None;
    }
    let runner = Runner {
        hooks: &st.config().hooks,
        cwd: st.cwd(),
        env: st.tool_ctx().env.current(),
        session_id: st.session_id(),
    };
    if !runner.any(event, tool) {
        return None;
    }
    let said = runner.run(event, tool, fields).await;
    for r in &said.runs {
        st.emit(Event::Hook {
            event: event.as_str().to_string(),
            tool: tool.map(String::from),
            command: r.command.clone(),
            source: r.source.clone(),
            ms: r.ms,
            outcome: r.outcome.clone(),
            line: r.line.clone(),
        });
    }
    for e in &said.errors {
        st.notice(
            NoticeLevel::Warning,
            format!("a {} hook failed: {e}", event.as_str()),
        );
    }
    Some(said)
}

/// SessionStart: its context is kept for the first prompt.
pub(crate) async fn session_start(st: &mut AgentState, source: &str) {
    if let Some(said) = run(st, HookEvent::SessionStart, None, json!({"source": source})).await {
        st.hook_context.extend(said.context);
    }
}

/// UserPromptSubmit: `Err(reason)` when a hook blocked the prompt; else the context to
/// send with it (SessionStart's too, the first time).
pub(crate) async fn prompt_submit(st: &mut AgentState, prompt: &str) -> Result<Vec<String>, String> {
    let mut context = std::mem::take(&mut st.hook_context);
    if let Some(said) = run(st, HookEvent::UserPromptSubmit, None, json!({"prompt": prompt})).await {
        if let Some(why) = said.blocked {
            return Err(why);
        }
        context.extend(said.context);
    }
    Ok(context)
}

/// What the PreToolUse hooks decided for one call.
#[derive(Default)]
pub(crate) struct Pre {
    /// Not run, and why.
    pub blocked: Option<String>,
    pub permission: Option<(Permission, String)>,
    /// The arguments to run with instead (JSON text).
    pub arguments: Option<String>,
}

/// PreToolUse for call `name` with `arguments` (JSON text).
pub(crate) async fn pre_tool(st: &mut AgentState, id: &str, name: &str, arguments: &str) -> Pre {
    let input: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let fields = json!({"tool_name": name, "tool_input": input, "tool_use_id": id});
    let Some(said) = run(st, HookEvent::PreToolUse, Some(name), fields).await else {
        return Pre::default();
    };
    let blocked = said.blocked.or_else(|| match &said.permission {
        Some((Permission::Deny, why)) => Some(if why.is_empty() {
            "a PreToolUse hook denied it".to_string()
        } else {
            why.clone()
        }),
        _ => None,
    });
    Pre {
        blocked,
        permission: said.permission,
        arguments: said.updated_input.map(|v| v.to_string()),
    }
}

/// PostToolUse: what the hooks said back (context, or a block's reason) is added to
/// the result the model gets.
pub(crate) async fn post_tool(
    st: &mut AgentState,
    id: &str,
    name: &str,
    arguments: &str,
    done: &mut crate::tools::Executed,
) {
    let input: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let fields = json!({"tool_name": name, "tool_input": input, "tool_use_id": id,
        "tool_response": done.envelope.to_value()});
    let Some(said) = run(st, HookEvent::PostToolUse, Some(name), fields).await else {
        return;
    };
    let mut notes: Vec<String> = done.envelope.note.iter().cloned().collect();
    if let Some(why) = said.blocked {
        notes.push(format!("A PostToolUse hook says: {why}"));
    }
    notes.extend(
        said.context
            .into_iter()
            .map(|c| format!("A PostToolUse hook adds: {c}")),
    );
    done.envelope.note = (!notes.is_empty()).then(|| notes.join("; "));
}

/// Stop (the turn is about to end), PreCompact, Notification and SessionEnd: run and
/// reported; they decide nothing.
pub(crate) async fn notify(st: &mut AgentState, event: HookEvent, fields: Value) {
    let _ = run(st, event, None, fields).await;
}

/// Answers `Op::ListHooks` (`/hooks`): each hook with its event, matcher, timeout and
/// where it was configured.
pub(crate) fn list(st: &mut AgentState) {
    let hooks = &st.config().hooks;
    let text = if hooks.is_empty() {
        "No hooks are configured ([hooks] in your config.toml or a trusted project's .ikigai/config.toml)."
            .to_string()
    } else {
        let mut t = String::from("Hooks, in the order they run:");
        for h in hooks {
            t.push_str(&format!(
                "\n{} {}: {} (timeout {} s; {})",
                h.event.as_str(),
                h.matcher.as_deref().unwrap_or("*"),
                h.command,
                h.timeout_secs,
                h.source.describe()
            ));
        }
        t
    };
    st.notice(NoticeLevel::Info, text);
}
