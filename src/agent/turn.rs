//! One user turn: request → stream → tool calls → results → repeat until the model
//! answers without tool calls, the limit is reached, or the provider fails.

use futures_util::StreamExt;
use serde_json::json;

use super::limit::{self, Action};
use super::retry;
use super::state::AgentState;
use crate::message::Message;
use crate::protocol::{Event, NoticeLevel, TurnEndReason};
use crate::provider::{EventStream, ProviderError, Request, StreamEvent};
use crate::tools::{Executed, envelope};

/// A tool call as the response gave it.
struct Call {
    id: String,
    name: String,
    arguments: String,
}

/// The reasoning of one response: finished blocks, and text not yet in a block.
#[derive(Default)]
struct Reasoning {
    blocks: Vec<Message>,
    text: String,
}

impl Reasoning {
    /// A finished block; its text is what streamed since the last block when not given.
    fn block(&mut self, text: String, opaque: serde_json::Value, provider: &str) {
        let streamed = std::mem::take(&mut self.text);
        let text = if text.is_empty() { streamed } else { text };
        self.blocks.push(Message::reasoning(text, provider, opaque));
    }

    /// The messages to store, before the response's text and calls.
    fn finish(mut self, provider: &str) -> Vec<Message> {
        if !self.text.is_empty() {
            let text = std::mem::take(&mut self.text);
            self.blocks
                .push(Message::reasoning(text, provider, serde_json::Value::Null));
        }
        self.blocks
    }
}

/// Runs one user turn. Cancel by dropping the future, then call `AgentState::interrupt`.
pub async fn run(st: &mut AgentState, text: String) -> TurnEndReason {
    st.emit(Event::TurnStarted);
    st.append(Message::user(text));
    let limit = st.config.max_tool_turns;
    let mut executed: u32 = 0;
    let mut limit_reached = false;
    loop {
        let mut stream = match request(st).await {
            Ok(s) => s,
            Err(e) => {
                st.notice(NoticeLevel::Error, describe(st, &e));
                return TurnEndReason::Error;
            }
        };
        let mut calls = Vec::new();
        let mut reasoning = Reasoning::default();
        let mut broken = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(StreamEvent::TextDelta(t)) => {
                    st.partial.push_str(&t);
                    st.emit(Event::TextDelta { text: t });
                }
                Ok(StreamEvent::ReasoningDelta(t)) => {
                    reasoning.text.push_str(&t);
                    st.emit(Event::ReasoningDelta { text: t });
                }
                Ok(StreamEvent::Reasoning { text, opaque }) => {
                    reasoning.block(text, opaque, st.provider.name())
                }
                Ok(StreamEvent::ToolCall { id, name, arguments }) => calls.push(Call { id, name, arguments }),
                Ok(StreamEvent::Usage { input, output, .. }) => {
                    st.usage.0 += input;
                    st.usage.1 += output;
                    st.emit(Event::Usage { input, output });
                    st.marker("usage", json!({"input": input, "output": output}));
                }
                Ok(StreamEvent::Finished { .. }) => {}
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            }
        }
        drop(stream);
        for m in reasoning.finish(st.provider.name()) {
            st.append(m);
        }
        st.flush_partial();
        if let Some(e) = broken {
            st.marker("interrupted", json!({"reason": e.to_string()}));
            st.notice(
                NoticeLevel::Error,
                format!("{e}. The answer so far was kept; you can continue the conversation."),
            );
            return TurnEndReason::Interrupted;
        }
        if calls.is_empty() {
            if limit_reached {
                st.notice(NoticeLevel::Warning, envelope::limit_message(limit));
                return TurnEndReason::Limit;
            }
            return TurnEndReason::Done;
        }
        for c in &calls {
            st.append(Message::tool_call(&c.id, &c.name, &c.arguments));
        }
        let plan = limit::plan(executed, limit, calls.len());
        for (c, action) in calls.iter().zip(plan) {
            st.emit(Event::ToolCallStarted {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            });
            let done = match action {
                Action::Skip => skipped(limit),
                Action::Execute | Action::ExecuteLast => {
                    let mut done = st.registry.execute(&c.name, &c.arguments, &st.tool_ctx).await;
                    executed += 1;
                    if action == Action::ExecuteLast {
                        envelope::mark_limit(&mut done.envelope, limit);
                    }
                    done
                }
            };
            let output = done.envelope.to_string();
            st.emit(Event::ToolCallFinished {
                id: c.id.clone(),
                summary: done.summary.clone(),
                output: output.clone(),
                success: done.success,
            });
            st.append(Message::tool_result(
                &c.id,
                &c.name,
                done.summary,
                output,
                done.success,
            ));
        }
        if limit_reached {
            // A response after the limit asked for more tools: none ran; stop here.
            st.notice(NoticeLevel::Warning, envelope::limit_message(limit));
            return TurnEndReason::Limit;
        }
        limit_reached = executed >= limit;
    }
}

/// The result of a call that was not run because the limit was reached.
fn skipped(limit: u32) -> Executed {
    let mut envelope = json!({
        "tool_success": false,
        "error": format!("Not executed: the tool call limit ({limit}) was reached."),
    });
    envelope::mark_limit(&mut envelope, limit);
    Executed {
        summary: "not executed: tool call limit reached".to_string(),
        envelope,
        success: false,
    }
}

/// Sends the request, retrying failures before the first byte with backoff.
async fn request(st: &AgentState) -> Result<EventStream, ProviderError> {
    let base = std::time::Duration::from_millis(st.config.retry_base_delay_ms);
    let mut attempt = 0;
    loop {
        let req = Request {
            model: &st.model,
            system: &st.system_prompt,
            messages: &st.conversation.messages,
            tools: &st.schemas,
        };
        match st.provider.stream(req).await {
            Ok(s) => return Ok(s),
            Err(e) if e.is_retryable() && attempt < st.config.max_retries => {
                attempt += 1;
                let wait = retry::delay(attempt, base, e.retry_after());
                st.emit(Event::Retrying {
                    attempt,
                    in_secs: wait.as_secs_f64(),
                    reason: e.to_string(),
                });
                tokio::time::sleep(wait).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The error as the user should read it, with what to do about it (the provider knows).
fn describe(st: &AgentState, e: &ProviderError) -> String {
    st.provider.describe(e)
}
