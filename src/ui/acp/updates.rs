//! How the agent's events and stored messages read as ACP session updates: text and
//! reasoning chunks, tool calls (their kind from `tool_vocab::meta`, the path they act on
//! as a location, a file change as a diff with its old and new text), results, the plan,
//! the permission options and what the editor's choice answers. Data only: reads the file
//! a change is about to replace (to show it whole), sends nothing.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, PermissionOption, PermissionOptionKind, Plan, PlanEntry,
    PlanEntryPriority, PlanEntryStatus, RequestPermissionOutcome, SessionUpdate, TextContent, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use serde_json::Value;

use crate::protocol::{Answer, PlanStep, StepStatus};
use crate::tool_vocab::meta::{self, Change};

/// The largest file shown whole in a diff; a larger one shows the changed text only.
const WHOLE_FILE_LIMIT: u64 = 1 << 20;

/// The permission options' ids (what the editor answers with).
pub(crate) const ALLOW_ONCE: &str = "allow_once";
pub(crate) const ALLOW_ALWAYS: &str = "allow_always";
pub(crate) const REJECT_ONCE: &str = "reject_once";

pub(crate) fn text(text: &str) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text))
}

pub(crate) fn agent_text(t: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(text(t)))
}

pub(crate) fn thought(t: &str) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(t)))
}

pub(crate) fn user_text(t: &str) -> SessionUpdate {
    SessionUpdate::UserMessageChunk(ContentChunk::new(text(t)))
}

fn kind(name: &str) -> ToolKind {
    use crate::tool_vocab::meta::ToolKind as K;
    match meta::of(name).map(|m| m.kind) {
        Some(K::Read) => ToolKind::Read,
        Some(K::Edit) => ToolKind::Edit,
        Some(K::Execute) => ToolKind::Execute,
        Some(K::Fetch) => ToolKind::Fetch,
        Some(K::Search) => ToolKind::Search,
        Some(K::Think) => ToolKind::Think,
        Some(K::Other) | None => ToolKind::Other,
    }
}

fn arg<'a>(args: &'a Value, name: Option<&str>) -> Option<&'a str> {
    name.and_then(|n| args.get(n)).and_then(Value::as_str)
}

/// The file a call acts on, absolute (relative paths are the session's folder's).
fn path_of(name: &str, args: &Value, cwd: &Path) -> Option<PathBuf> {
    let p = arg(args, meta::of(name)?.path)?;
    Some(cwd.join(p))
}

/// A short title: the command a call runs, the URL it reaches or the path it acts on.
fn title(name: &str, args: &Value) -> String {
    let Some(m) = meta::of(name) else {
        return name.to_string();
    };
    let what = arg(args, m.command).or(arg(args, m.url)).or(arg(args, m.path));
    match what {
        Some(w) => format!("{name}: {}", crate::text::shorten(w, 120)),
        None => name.to_string(),
    }
}

/// The file's text now, when it is small and text; `None` for a new file.
fn current_text(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > WHOLE_FILE_LIMIT {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The change a call makes, as a diff, from what can be known without a race.
/// `waiting`: the call waits for the editor's answer, so the file still holds what it
/// would replace: the whole file before and after. Otherwise the call may already have
/// run by the time the file could be read: an edit shows the replaced text and its
/// replacement, a whole-file write no diff (its content is the call's input).
fn diff(name: &str, args: &Value, path: &Path, waiting: bool) -> Option<Diff> {
    let before = || current_text(path).filter(|_| waiting);
    match meta::of(name)?.change? {
        Change::Whole { content } => {
            let new = arg(args, Some(content))?;
            match (waiting, path.exists()) {
                (true, _) => Some(Diff::new(path, new).old_text(before())),
                (false, false) => Some(Diff::new(path, new)),
                (false, true) => None,
            }
        }
        Change::Replace { old, new } => {
            let (old, new) = (arg(args, Some(old))?, arg(args, Some(new))?);
            match before().filter(|t| !old.is_empty() && t.contains(old)) {
                Some(before) => {
                    let all = args.get("replace_all").and_then(Value::as_bool) == Some(true);
                    let after = if all {
                        before.replace(old, new)
                    } else {
                        before.replacen(old, new, 1)
                    };
                    Some(Diff::new(path, after).old_text(before))
                }
                None => Some(Diff::new(path, new).old_text(old.to_string())),
            }
        }
    }
}

/// The `tool_call` update for a call the model just made or a stored one.
pub(crate) fn tool_call(id: &str, name: &str, arguments: &str, cwd: &Path) -> ToolCall {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let mut call = ToolCall::new(id.to_string(), title(name, &args))
        .name(name.to_string())
        .kind(kind(name))
        .status(ToolCallStatus::Pending)
        .raw_input(args.clone());
    if let Some(path) = path_of(name, &args, cwd) {
        if let Some(d) = diff(name, &args, &path, false) {
            call = call.content(vec![ToolCallContent::Diff(d)]);
        }
        call = call.locations(vec![ToolCallLocation::new(path)]);
    }
    call
}

/// The update a permission question carries: the call, pending, with the whole-file
/// diff of what it would change (the file cannot change while the question waits).
pub(crate) fn waiting(id: &str, name: &str, arguments: &str, cwd: &Path) -> ToolCallUpdate {
    let mut update = status(id, ToolCallStatus::Pending);
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    if let Some(d) = path_of(name, &args, cwd).and_then(|p| diff(name, &args, &p, true)) {
        update.fields.content = Some(vec![ToolCallContent::Diff(d)]);
    }
    update
}

/// A call's status changed.
pub(crate) fn status(id: &str, status: ToolCallStatus) -> ToolCallUpdate {
    ToolCallUpdate::new(id.to_string(), ToolCallUpdateFields::new().status(status))
}

/// What a finished call reports: its status and the result the model got.
pub(crate) fn finished(id: &str, name: &str, output: &str, success: bool) -> ToolCallUpdate {
    let status = if success {
        ToolCallStatus::Completed
    } else {
        ToolCallStatus::Failed
    };
    let raw: Value = serde_json::from_str(output).unwrap_or_else(|_| Value::String(output.to_string()));
    let mut fields = ToolCallUpdateFields::new().status(status).raw_output(raw);
    // A diff already shows an edit; its result adds nothing the editor needs.
    let edits = meta::of(name).is_some_and(|m| m.change.is_some());
    if !edits || !success {
        let shown = crate::text::shorten(output, 8000);
        fields = fields.content(vec![ToolCallContent::from(text(shown))]);
    }
    ToolCallUpdate::new(id.to_string(), fields)
}

/// The most of a running command's output shown while it runs (its tail).
const LIVE_TAIL: usize = 32 * 1024;

/// The update that shows a running command's output so far: `shown` (its tail until now)
/// grows by `text`; what was `skipped` is said where it was left out. The editor replaces
/// a call's content with each update, so each one carries the whole tail.
pub(crate) fn live_output(id: &str, shown: &mut String, text: &str, skipped: u64) -> ToolCallUpdate {
    if skipped > 0 {
        shown.push_str(&format!("\n[… {skipped} bytes not shown …]\n"));
    }
    shown.push_str(&crate::text::visible(text));
    if shown.len() > LIVE_TAIL {
        let mut cut = shown.len() - LIVE_TAIL;
        while !shown.is_char_boundary(cut) {
            cut += 1;
        }
        shown.drain(..cut);
    }
    let block = format!("```\n{}\n```", shown.trim_end_matches('\n'));
    let fields = ToolCallUpdateFields::new()
        .status(ToolCallStatus::InProgress)
        .content(vec![ToolCallContent::from(self::text(&block))]);
    ToolCallUpdate::new(id.to_string(), fields)
}

pub(crate) fn plan(steps: &[PlanStep]) -> Plan {
    Plan::new(
        steps
            .iter()
            .map(|s| {
                let status = match s.status {
                    StepStatus::Pending => PlanEntryStatus::Pending,
                    StepStatus::InProgress => PlanEntryStatus::InProgress,
                    StepStatus::Done => PlanEntryStatus::Completed,
                };
                PlanEntry::new(s.step.clone(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

/// What the editor may answer: allow once, allow always (only when the call can be
/// remembered, as the TUI's `a`), reject once.
pub(crate) fn options(can_remember: bool) -> Vec<PermissionOption> {
    let mut out = vec![PermissionOption::new(
        ALLOW_ONCE,
        "Allow",
        PermissionOptionKind::AllowOnce,
    )];
    if can_remember {
        out.push(PermissionOption::new(
            ALLOW_ALWAYS,
            "Always allow",
            PermissionOptionKind::AllowAlways,
        ));
    }
    out.push(PermissionOption::new(
        REJECT_ONCE,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    out
}

/// The answer the editor's choice gives; anything not offered, a cancelled question or
/// a failed request is a no.
pub(crate) fn answer(outcome: Option<&RequestPermissionOutcome>, can_remember: bool) -> Answer {
    match outcome {
        Some(RequestPermissionOutcome::Selected(s)) => match &*s.option_id.0 {
            ALLOW_ONCE => Answer::Yes,
            ALLOW_ALWAYS if can_remember => Answer::Always,
            _ => Answer::No(None),
        },
        _ => Answer::No(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::SelectedPermissionOutcome;

    #[test]
    fn a_waiting_call_shows_the_whole_file_and_an_announced_one_only_what_cannot_race() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let diff_of = |content: &Option<Vec<ToolCallContent>>| match content.as_deref() {
            Some([ToolCallContent::Diff(d)]) => Some((d.old_text.clone(), d.new_text.clone())),
            _ => None,
        };
        let some = |o: &str, n: &str| Some((Some(o.to_string()), n.to_string()));
        let edit = r#"{"path":"a.txt","old_string":"two","new_string":"2"}"#;
        let call = tool_call("c1", "file_edit", edit, dir.path());
        assert_eq!(call.kind, ToolKind::Edit);
        assert_eq!(call.locations[0].path, dir.path().join("a.txt"));
        // Announced: the replaced text only (the edit may have run already).
        assert_eq!(diff_of(&Some(call.content.clone())), some("two", "2"));
        // Waiting for the editor: the whole file, before and after.
        let w = waiting("c1", "file_edit", edit, dir.path());
        assert_eq!(diff_of(&w.fields.content), some("one\ntwo\n", "one\n2\n"));
        let write = r#"{"path":"a.txt","content":"new"}"#;
        assert!(
            tool_call("c2", "file_write", write, dir.path())
                .content
                .is_empty()
        );
        let w = waiting("c2", "file_write", write, dir.path());
        assert_eq!(diff_of(&w.fields.content), some("one\ntwo\n", "new"));
        // A new file has no old text.
        let new = r#"{"path":"b.txt","content":"x"}"#;
        let call = tool_call("c3", "file_write", new, dir.path());
        assert_eq!(
            diff_of(&Some(call.content.clone())),
            Some((None, "x".to_string()))
        );
        let w = waiting("c3", "file_write", new, dir.path());
        assert_eq!(diff_of(&w.fields.content), Some((None, "x".to_string())));
    }

    #[test]
    fn live_output_keeps_a_bounded_visible_tail_and_says_what_was_skipped() {
        let body = |u: &ToolCallUpdate| match u.fields.content.as_deref() {
            Some([ToolCallContent::Content(c)]) => match &c.content {
                ContentBlock::Text(t) => t.text.clone(),
                _ => panic!("not text"),
            },
            _ => panic!("no content"),
        };
        let mut shown = String::new();
        let u = live_output("b", &mut shown, "one\n", 0);
        assert_eq!(u.fields.status, Some(ToolCallStatus::InProgress));
        assert_eq!(body(&u), "```\none\n```");
        // Each update carries the whole tail; escapes cannot act on the editor's view.
        let u = live_output("b", &mut shown, "\x1b[31mtwo\n", 5);
        assert_eq!(body(&u), "```\none\n\n[… 5 bytes not shown …]\n␛[31mtwo\n```");
        let big = "é".repeat(LIVE_TAIL);
        let u = live_output("b", &mut shown, &big, 0);
        assert!(
            shown.len() <= LIVE_TAIL && !shown.contains("one"),
            "{}",
            shown.len()
        );
        assert!(body(&u).ends_with("éé\n```"));
    }

    #[test]
    fn kinds_come_from_the_tools_own_declaration_and_unknown_tools_are_other() {
        let cwd = Path::new("/w");
        for (name, args, want) in [
            ("bash", r#"{"command":"ls"}"#, ToolKind::Execute),
            ("file_read", r#"{"path":"x"}"#, ToolKind::Read),
            ("grep", r#"{"pattern":"x","path":"src"}"#, ToolKind::Search),
            ("web_fetch", r#"{"url":"https://e.x"}"#, ToolKind::Fetch),
            ("update_plan", r#"{}"#, ToolKind::Think),
            ("srv__file_edit", r#"{"path":"x"}"#, ToolKind::Other),
            ("mine", "not json", ToolKind::Other),
        ] {
            let call = tool_call("c", name, args, cwd);
            assert_eq!(call.kind, want, "{name}");
            // Only a built-in's own path argument is a location.
            assert_eq!(
                call.locations.is_empty(),
                meta::of(name).and_then(|m| m.path).is_none(),
                "{name}"
            );
        }
        assert_eq!(
            tool_call("c", "bash", r#"{"command":"ls -l"}"#, cwd).title,
            "bash: ls -l"
        );
    }

    #[test]
    fn only_what_was_offered_allows_and_everything_else_rejects() {
        let pick =
            |id: &str| RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id.to_string()));
        assert_eq!(answer(Some(&pick(ALLOW_ONCE)), false), Answer::Yes);
        assert_eq!(answer(Some(&pick(ALLOW_ALWAYS)), true), Answer::Always);
        // Not offered (the call cannot be remembered): not an allowance.
        assert_eq!(answer(Some(&pick(ALLOW_ALWAYS)), false), Answer::No(None));
        for other in [REJECT_ONCE, "reject_always", "", "ALLOW_ONCE", "allow_once "] {
            assert_eq!(answer(Some(&pick(other)), true), Answer::No(None), "{other:?}");
        }
        assert_eq!(
            answer(Some(&RequestPermissionOutcome::Cancelled), true),
            Answer::No(None)
        );
        assert_eq!(answer(None, true), Answer::No(None));
        assert_eq!(options(false).len(), 2);
        assert_eq!(options(true).len(), 3);
    }
}
