//! One `session/prompt`: the editor's content blocks become one user turn (`Op::Submit`;
//! files and images as `@` mentions, embedded files as context after the text), and the
//! turn's events go to the editor as session updates until `TurnEnded`, which picks the
//! stop reason. An approval question becomes `session/request_permission`. A turn that
//! ends in an error answers the prompt with an error; the connection stays up.

use std::collections::HashMap;

use agent_client_protocol::v1::schema::{
    ContentBlock, EmbeddedResourceResource, PromptResponse, RequestPermissionRequest, SessionNotification,
    SessionUpdate, StopReason, ToolCallStatus, UsageUpdate,
};
use base64::Engine;

use super::commands::{self, Prompt};
use super::{Cx, Shared, updates};
use crate::protocol::{Event, NoticeLevel, Op, TurnEndReason};

/// The user turn the blocks make, and the files it mentions that must live until the
/// turn has read them (images the editor sent).
fn turn_text(blocks: Vec<ContentBlock>) -> Result<(String, Vec<tempfile::NamedTempFile>), String> {
    let mut text = String::new();
    let mut context = String::new();
    let mut files = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::ResourceLink(link) => match link.uri.strip_prefix("file://") {
                Some(path) => text.push_str(&format!(" @{path} ")),
                None => text.push_str(&format!(" {} ", link.uri)),
            },
            ContentBlock::Resource(r) => match r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    context.push_str(&format!(
                        "\n\n<context uri=\"{}\">\n{}\n</context>",
                        t.uri, t.text
                    ));
                }
                _ => {
                    return Err(
                        "binary embedded resources are not supported; attach the file instead".into(),
                    );
                }
            },
            ContentBlock::Image(img) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(img.data.as_bytes())
                    .map_err(|e| format!("an image is not valid base64: {e}"))?;
                let suffix = match img.mime_type.as_str() {
                    "image/png" => ".png",
                    "image/jpeg" => ".jpg",
                    "image/gif" => ".gif",
                    "image/webp" => ".webp",
                    other => return Err(format!("images of type {other} are not supported")),
                };
                // Private (0600) and removed when the turn is over; the model gets its
                // bytes as an attachment, as with any `@image.png`.
                let mut file = tempfile::Builder::new()
                    .prefix("ikigai-acp-")
                    .suffix(suffix)
                    .tempfile()
                    .map_err(|e| e.to_string())?;
                std::io::Write::write_all(&mut file, &bytes).map_err(|e| e.to_string())?;
                text.push_str(&format!(" @{} ", file.path().display()));
                files.push(file);
            }
            _ => return Err("audio is not supported".into()),
        }
    }
    text.push_str(&context);
    Ok((text, files))
}

fn send(cx: &Cx, session: &str, update: SessionUpdate) {
    let _ = cx.send_notification(SessionNotification::new(session.to_string(), update));
}

/// Runs one turn to its end.
pub(crate) async fn run(
    s: &Shared,
    cx: &Cx,
    session: &str,
    blocks: Vec<ContentBlock>,
) -> Result<PromptResponse, agent_client_protocol::Error> {
    let (text, _files) = turn_text(blocks).map_err(|e| {
        agent_client_protocol::Error::invalid_params().data(serde_json::json!({"message": e}))
    })?;
    if text.trim().is_empty() {
        return Err(agent_client_protocol::Error::invalid_params()
            .data(serde_json::json!({"message": "the prompt is empty"})));
    }
    let custom = s.custom();
    let prompt = commands::read(&text, &custom);
    // Nothing can reach the model without its key; a command can still run.
    if let (Prompt::Message(_), Some(e)) = (&prompt, s.needs_key()) {
        return Err(e);
    }
    let text = match prompt {
        Prompt::Message(text) => text,
        Prompt::Answer(text) | Prompt::Refused(text) => {
            send(cx, session, updates::agent_text(&text));
            return Ok(PromptResponse::new(StopReason::EndTurn));
        }
        Prompt::Agent(op) => return command(s, cx, session, op).await,
    };
    let mut events = s.events.lock().await;
    // What came between turns (a notice from a background task) is told first.
    while let Ok(ev) = events.try_recv() {
        if let Event::Notice { level, text } = ev {
            s.notice(level, &text);
        }
    }
    s.tell(cx, session);
    if s.ops.send(Op::Submit(text)).is_err() {
        return Err(super::error("the agent stopped"));
    }
    // The tool and arguments of each running call, for its question and its result.
    let mut calls: HashMap<String, (String, String)> = HashMap::new();
    // What each running command printed so far (its tail), shown while it runs.
    let mut live: HashMap<String, String> = HashMap::new();
    let mut last_error: Option<String> = None;
    loop {
        let Some(ev) = events.recv().await else {
            return Err(super::error(
                last_error.unwrap_or_else(|| "the agent stopped unexpectedly".into()),
            ));
        };
        s.follow_model(&ev);
        match ev {
            Event::TextDelta { text } => send(cx, session, updates::agent_text(&text)),
            Event::ReasoningDelta { text } => send(cx, session, updates::thought(&text)),
            Event::ToolCallStarted { id, name, arguments } => {
                let call = updates::tool_call(&id, &name, &arguments, &s.cwd);
                calls.insert(id, (name, arguments));
                send(cx, session, SessionUpdate::ToolCall(call));
            }
            Event::Permission(record) if record.decision == crate::policy::record::Outcome::Approved => {
                let update = updates::status(&record.tool_call_id, ToolCallStatus::InProgress);
                send(cx, session, SessionUpdate::ToolCallUpdate(update));
            }
            Event::ToolCallFinished {
                id, output, success, ..
            } => {
                let name = calls.remove(&id).map(|(n, _)| n).unwrap_or_default();
                live.remove(&id);
                let update = updates::finished(&id, &name, &output, success);
                send(cx, session, SessionUpdate::ToolCallUpdate(update));
            }
            Event::ToolOutputDelta { id, text, skipped } => {
                let shown = live.entry(id.clone()).or_default();
                let update = updates::live_output(&id, shown, &text, skipped);
                send(cx, session, SessionUpdate::ToolCallUpdate(update));
            }
            Event::PlanUpdated { steps } => send(cx, session, SessionUpdate::Plan(updates::plan(&steps))),
            Event::Usage {
                input,
                context_pct: Some(pct),
                cost,
                ..
            } if pct > 0 => {
                // The window, from the share of it the request used.
                let size = input.saturating_mul(100) / u64::from(pct);
                let mut usage = UsageUpdate::new(input, size.max(input));
                if let Some(c) = cost {
                    usage = usage.cost(agent_client_protocol::v1::schema::Cost::new(c, "USD"));
                }
                send(cx, session, SessionUpdate::UsageUpdate(usage));
            }
            Event::ApprovalRequested {
                id,
                reason,
                always,
                outside_sandbox,
                ..
            } => {
                let can_remember = !always.is_empty() && !outside_sandbox;
                let mut call = match calls.get(&id) {
                    Some((name, arguments)) => updates::waiting(&id, name, arguments, &s.cwd),
                    None => updates::status(&id, ToolCallStatus::Pending),
                };
                call.fields.title = calls.get(&id).map(|(n, _)| format!("{n}: {reason}"));
                let req =
                    RequestPermissionRequest::new(session.to_string(), call, updates::options(can_remember));
                let outcome = cx.send_request(req).block_task().await.ok().map(|r| r.outcome);
                let answer = updates::answer(outcome.as_ref(), can_remember);
                let _ = s.ops.send(Op::Approve { id, answer });
            }
            Event::Notice { level, text } => {
                if level == NoticeLevel::Error {
                    last_error = Some(text.clone());
                }
                s.notice(level, &text);
                s.tell(cx, session);
            }
            Event::Retrying { reason, in_secs, .. } => {
                eprintln!("ikigai: retrying in {in_secs:.1}s: {reason}");
            }
            Event::TurnEnded { reason } => {
                let stop = match reason {
                    TurnEndReason::Done => StopReason::EndTurn,
                    TurnEndReason::Interrupted => StopReason::Cancelled,
                    TurnEndReason::Limit => StopReason::MaxTurnRequests,
                    TurnEndReason::Error => {
                        return Err(super::error(
                            last_error.unwrap_or_else(|| "the turn failed".into()),
                        ));
                    }
                };
                return Ok(PromptResponse::new(stop));
            }
            _ => {}
        }
    }
}

/// Runs a command the agent answers: its answers go to the editor as text. The agent
/// answers ops in order, so the approval mode set again to what it is comes back after
/// the command's last answer: that ends the prompt.
async fn command(
    s: &Shared,
    cx: &Cx,
    session: &str,
    op: Op,
) -> Result<PromptResponse, agent_client_protocol::Error> {
    let refresh = op == Op::RefreshTools;
    let mut events = s.events.lock().await;
    while let Ok(ev) = events.try_recv() {
        if let Event::Notice { level, text } = ev {
            s.notice(level, &text);
        }
    }
    s.tell(cx, session);
    let mode = s.mode();
    if s.ops.send(op).is_err() || s.ops.send(Op::SetApprovalMode(mode)).is_err() {
        return Err(super::error("the agent stopped"));
    }
    loop {
        match events.recv().await {
            None => return Err(super::error("the agent stopped unexpectedly")),
            Some(Event::ApprovalMode { .. }) => break,
            Some(ev) => {
                s.follow_model(&ev);
                if let Some(text) = commands::answer_text(&ev) {
                    send(
                        cx,
                        session,
                        updates::agent_text(&format!("{}\n\n", text.trim_end())),
                    );
                }
            }
        }
    }
    drop(events);
    // `/model` may have switched it.
    s.tell_options(cx, session);
    if refresh {
        // The command folders are read again too.
        s.reload_commands(cx, session);
    }
    Ok(PromptResponse::new(StopReason::EndTurn))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{ImageContent, ResourceLink, TextContent};

    #[test]
    fn blocks_become_one_turn_with_mentions_and_images_as_private_files() {
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nrest");
        let blocks = vec![
            ContentBlock::Text(TextContent::new("look at")),
            ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///w/src/main.rs")),
            ContentBlock::Image(ImageContent::new(png, "image/png")),
        ];
        let (text, files) = turn_text(blocks).unwrap();
        assert!(text.starts_with("look at @/w/src/main.rs "), "{text}");
        assert_eq!(files.len(), 1);
        let path = files[0].path().to_path_buf();
        assert!(text.contains(&format!("@{}", path.display())), "{text}");
        assert_eq!(std::fs::read(&path).unwrap()[..4], *b"\x89PNG");
        drop(files);
        assert!(!path.exists());
        let bad = vec![ContentBlock::Image(ImageContent::new("%%%", "image/png"))];
        assert!(turn_text(bad).is_err());
        let odd = vec![ContentBlock::Image(ImageContent::new("", "image/tiff"))];
        assert!(turn_text(odd).is_err());
    }
}
