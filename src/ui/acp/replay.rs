//! `session/load`: a stored session's history as the session updates the editor would
//! have seen live: the user's and the model's text, reasoning, each tool call with its
//! result. System messages are not shown; a compaction reads as a note.

use std::collections::HashMap;
use std::path::Path;

use agent_client_protocol::v1::schema::SessionUpdate;

use super::updates;
use crate::message::{Kind, Message};

/// The updates that show `history`, in order.
pub(crate) fn updates(history: &[Message], cwd: &Path) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    let mut names: HashMap<&str, &str> = HashMap::new();
    for m in history {
        match m.kind {
            Kind::User => out.push(updates::user_text(&m.content)),
            Kind::Assistant if !m.content.is_empty() => out.push(updates::agent_text(&m.content)),
            Kind::Reasoning if !m.content.is_empty() => out.push(updates::thought(&m.content)),
            Kind::Compaction => out.push(updates::agent_text("(the earlier conversation was compacted)")),
            Kind::ToolCall => {
                if let Some(c) = m.as_tool_call() {
                    names.insert(&c.id, &c.function.name);
                    out.push(SessionUpdate::ToolCall(updates::tool_call(
                        &c.id,
                        &c.function.name,
                        &c.function.arguments,
                        cwd,
                    )));
                }
            }
            Kind::ToolResult => {
                if let Some(r) = m.as_tool_result() {
                    let name = names.get(r.tool_call_id.as_str()).copied().unwrap_or(&r.name);
                    out.push(SessionUpdate::ToolCallUpdate(updates::finished(
                        &r.tool_call_id,
                        name,
                        &r.output,
                        r.success,
                    )));
                }
            }
            _ => {}
        }
    }
    out
}
