//! One user turn: request → stream → tool calls → results → repeat until the model
//! answers without tool calls, the limit is reached, or the provider fails. Each
//! response's calls are one round (`round.rs`: judged, run, answered in call order).

use futures_util::StreamExt;
use serde_json::json;

use super::context::Failure;
use super::guard::RepeatGuard;
use super::limit;
use super::round::{Call, Counters};
use super::state::AgentState;
use crate::message::{Message, fresh_call_id};
use crate::protocol::{Event, NoticeLevel, TurnEndReason};
use crate::provider::text_protocol::decode::is_recovered_id;
use crate::provider::{FinishReason, StreamEvent};
use crate::store::MarkerKind;
use crate::tool_vocab::envelope;

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
pub(crate) async fn run(st: &mut AgentState, text: String) -> TurnEndReason {
    // Nothing can be sent without the key: said before anything is stored, so no
    // session is made of a message that never went out.
    let spec = st.provider().spec();
    if spec.missing_key() {
        let e = crate::provider::ProviderError::MissingKey {
            env_var: spec.api_key_env.clone(),
        };
        st.notice(NoticeLevel::Error, st.provider().describe(&e));
        return TurnEndReason::Error;
    }
    // `/skill NAME PROMPT` sends PROMPT with the skill; an unknown one stops the turn
    // before anything is sent.
    let text = match super::skill_use::message(st.skills(), &text) {
        Ok(text) => text,
        Err(why) => {
            st.notice(NoticeLevel::Error, format!("{why}; nothing was sent"));
            return TurnEndReason::Error;
        }
    };
    // `@file` mentions are read first: a missing one stops the turn before anything is sent.
    let attached = match super::mentions::attach(&text, st.tool_ctx()).await {
        Ok(a) => a,
        Err(e) => {
            st.notice(NoticeLevel::Error, format!("{e}; nothing was sent"));
            return TurnEndReason::Error;
        }
    };
    let accepted = st.provider().image_types();
    if let Some(why) = super::images::refused(st.provider().as_ref(), &attached.images, accepted) {
        st.notice(NoticeLevel::Error, why);
        return TurnEndReason::Error;
    }
    st.set_tool_images(accepted);
    let mut attached = attached;
    // Skills the prompt names (`$NAME`, `/skill NAME`) go with it.
    super::skill_use::attach(st.skills(), &text, &mut attached.lines, &mut attached.blocks);
    match super::hooks::prompt_submit(st, &text).await {
        Err(why) => {
            st.notice(
                NoticeLevel::Error,
                format!("A UserPromptSubmit hook blocked the prompt; nothing was sent: {why}"),
            );
            return TurnEndReason::Error;
        }
        Ok(context) => {
            if !context.is_empty() {
                // Shown with the message, as attachments are; kept apart from the typed text.
                attached
                    .lines
                    .push(format!("context from hooks, {} part(s)", context.len()));
            }
            for c in context {
                attached
                    .blocks
                    .push_str(&format!("\n\n<hook-context>\n{c}\n</hook-context>"));
            }
        }
    }
    st.emit(Event::UserMessage {
        text: text.clone(),
        attachments: attached.lines.clone(),
    });
    st.emit(Event::TurnStarted);
    st.append(Message::user_with_images(
        &text,
        &attached.blocks,
        attached.lines,
        attached.images,
    ));
    let limit = st.config().max_tool_turns;
    let mut limit_reached = false;
    let mut n = Counters {
        executed: 0,
        refusals: 0,
        guard: RepeatGuard::new(st.config().max_identical_calls),
        guard_noticed: false,
    };
    loop {
        // The budget step (tool caps, elision, compaction, recovery) sends the request.
        let mut stream = match super::context::request(st).await {
            Ok(s) => s,
            Err(Failure::Provider(e)) => {
                st.notice(NoticeLevel::Error, st.provider().describe(&e));
                return TurnEndReason::Error;
            }
            Err(Failure::TooLarge(text)) => {
                st.notice(NoticeLevel::Error, text);
                return TurnEndReason::Error;
            }
        };
        let mut calls = Vec::new();
        // Calls past the limit are answered in one step: the first of them is kept (its
        // result says how many followed it); the others are counted, never kept or shown.
        let keep = limit.saturating_sub(n.executed) as usize + 1;
        let mut surplus: usize = 0;
        // The ids already used in the session, gathered once per response.
        let mut used_ids: Option<std::collections::HashSet<String>> = None;
        let mut reasoning = Reasoning::default();
        let mut finish = None;
        let mut broken = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(StreamEvent::TextDelta(t)) => st.stream_text(&t),
                Ok(StreamEvent::ReasoningDelta(t)) => {
                    reasoning.text.push_str(&t);
                    st.emit(Event::ReasoningDelta { text: t });
                }
                Ok(StreamEvent::Reasoning { text, opaque }) => {
                    reasoning.block(text, opaque, st.provider().name())
                }
                Ok(StreamEvent::ToolCall { id, name, arguments }) => {
                    if calls.len() >= keep {
                        surplus += 1;
                        continue;
                    }
                    let used = used_ids.get_or_insert_with(|| st.conversation().call_ids());
                    let id = unique_id(used, id);
                    // Text and reasoning before a call stay before it; text after it, after.
                    for m in std::mem::take(&mut reasoning).finish(st.provider().name()) {
                        st.append(m);
                    }
                    st.flush_partial();
                    st.append(Message::tool_call(&id, &name, &arguments));
                    if is_recovered_id(&id) {
                        st.marker(MarkerKind::Recovered, json!({"tool_call_id": id}));
                    }
                    calls.push(Call { id, name, arguments });
                }
                Ok(StreamEvent::Notice(text)) => st.notice(NoticeLevel::Warning, text),
                Ok(StreamEvent::Usage {
                    input,
                    output,
                    cached,
                }) => {
                    let cost = st.add_usage(input, cached, output);
                    super::window::poll(st);
                    let context_pct = st.budget_mut().observe(input);
                    let context_pct = super::window::share(st, context_pct);
                    st.emit(Event::Usage {
                        input,
                        output,
                        cached,
                        context_pct,
                        cost,
                    });
                    let mut data = json!({"input": input, "output": output, "model": st.model()});
                    if cached > 0 {
                        data["cached"] = json!(cached);
                    }
                    if let Some(c) = cost {
                        data["cost"] = json!(c);
                    }
                    st.marker(MarkerKind::Usage, data);
                }
                Ok(StreamEvent::Finished { reason }) => finish = reason,
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            }
        }
        drop(stream);
        for m in reasoning.finish(st.provider().name()) {
            st.append(m);
        }
        st.flush_partial();
        if let Some(e) = broken {
            st.marker(MarkerKind::Interrupted, json!({"reason": e.to_string()}));
            st.notice(
                NoticeLevel::Error,
                format!("{e}. The answer so far was kept; you can continue the conversation."),
            );
            if !calls.is_empty() {
                // Calls that were announced but never run are answered, so the history
                // stays valid for every vendor.
                st.interrupt();
            }
            return TurnEndReason::Interrupted;
        }
        if let Some(FinishReason::ContentFilter(reason)) = &finish {
            st.notice(
                NoticeLevel::Warning,
                format!(
                    "The provider's content filter stopped the answer ({reason}); the text so far was kept."
                ),
            );
        }
        // Cut off inside its last call: the call kept last is the response's last only
        // when none was left out after it.
        let cut_off = finish == Some(FinishReason::Length) && surplus == 0;
        if finish == Some(FinishReason::Length) && calls.is_empty() {
            st.notice(
                NoticeLevel::Warning,
                "The answer was cut off by the model's output token limit (finish_reason: length).",
            );
        }
        if calls.is_empty() {
            super::hooks::notify(
                st,
                crate::config::hooks::HookEvent::Stop,
                serde_json::json!({"stop_hook_active": false}),
            )
            .await;
            if limit_reached {
                st.notice(NoticeLevel::Warning, envelope::limit_message(limit));
                return TurnEndReason::Limit;
            }
            return TurnEndReason::Done;
        }
        super::context::before_tools(st).await;
        let plan = limit::plan(n.executed, limit, calls.len());
        super::round::run(st, &calls, plan, (limit, cut_off, surplus), &mut n).await;
        if surplus > 0 {
            st.notice(
                NoticeLevel::Warning,
                format!(
                    "The response asked for {surplus} more tool call{} past max_tool_turns ({limit}); \
                     none of them ran, and they are not kept in the conversation.",
                    if surplus == 1 { "" } else { "s" }
                ),
            );
        }
        if limit_reached {
            // A response after the limit asked for more tools: none ran; stop here.
            st.notice(NoticeLevel::Warning, envelope::limit_message(limit));
            return TurnEndReason::Limit;
        }
        if n.refusals >= 2 {
            // Refused once, asked again: every further round trip would be refused too.
            st.notice(
                NoticeLevel::Warning,
                "The model repeated a call that was already refused as identical; the turn ends here.",
            );
            return TurnEndReason::Limit;
        }
        limit_reached = n.executed >= limit;
    }
}

/// An id unique in the session: a missing id, or one in `used` (the conversation's, and
/// this response's so far), is replaced by a fresh one, which joins `used`.
fn unique_id(used: &mut std::collections::HashSet<String>, id: String) -> String {
    let id = if id.is_empty() || used.contains(&id) {
        fresh_call_id()
    } else {
        id
    };
    used.insert(id.clone());
    id
}
