//! Compaction: the model summarises the conversation so far (task, decisions, files
//! touched, open questions); the summary, stored as a `compaction` event, stands for the
//! earlier messages in every later request, and the recent messages stay whole (a user
//! message nothing has answered yet always does). The database keeps the full history;
//! only the in-memory conversation shrinks. Sends through `retry`, never through a turn.

use futures_util::StreamExt;

use super::elide;
use super::state::AgentState;
use crate::message::{Kind, Message};
use crate::protocol::Event;
use crate::provider::{ProviderError, StreamEvent};

/// Share of the usable window the recent messages kept whole may take.
const KEEP_SHARE: f64 = 0.30;

/// Why a compaction did not happen.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum CompactError {
    /// Everything is among the messages kept whole.
    #[error("there is nothing to compact yet")]
    Nothing,
    /// The summary request failed (after retries), or its stream broke.
    #[error("the model could not summarise the conversation: {0}")]
    Provider(ProviderError),
    #[error("the model could not summarise the conversation: the summary came back empty")]
    Empty,
    /// Refused as too long even after shrinking its input once.
    #[error("the model could not summarise the conversation: the conversation is too long even to summarise")]
    TooLong,
}

/// Estimated tokens before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Compacted {
    pub before: u64,
    pub after: u64,
}

/// Compacts the conversation now; `instructions` are the user's additions (`/compact …`).
/// Emits `Event::Compacted` and records the summary.
pub(crate) async fn run(st: &mut AgentState, instructions: Option<&str>) -> Result<Compacted, CompactError> {
    super::hooks::notify(
        st,
        crate::config::hooks::HookEvent::PreCompact,
        serde_json::json!({"custom_instructions": instructions.unwrap_or("")}),
    )
    .await;
    st.sync_budget();
    let b = st.budget();
    let before = b.tokens(b.messages_chars());
    let messages = st.messages();
    let keep_chars = (b.usable() as f64 * KEEP_SHARE) as u64 * 4;
    let mut from = keep_from(messages, |i| b.size(i), keep_chars);
    // The message being answered stays whole, however large: it is never summarised.
    if let Some(i) = awaiting_answer(messages) {
        from = from.min(i);
    }
    let only_old_summary = from == 1 && messages[0].kind == Kind::Compaction;
    if from == 0 || only_old_summary {
        return Err(CompactError::Nothing);
    }
    let summary = summarise(st, from, instructions).await?;
    let kept = st.messages().len() - from;
    let compaction = Message::compaction(summary, st.records(), kept);
    st.install_compaction(compaction, from);
    let b = st.budget();
    let after = b.tokens(b.messages_chars());
    st.emit(Event::Compacted { before, after });
    Ok(Compacted { before, after })
}

/// The user message the next request asks the model to answer, when nothing has
/// answered it yet (it is the last message): compaction never summarises it.
pub(crate) fn awaiting_answer(messages: &[Message]) -> Option<usize> {
    let last = messages.len().checked_sub(1)?;
    (messages[last].kind == Kind::User).then_some(last)
}

/// Where the messages kept whole begin: the current user turn when it fits in
/// `max_chars`, else the earliest boundary after it that does (a boundary never splits a
/// tool call from its result). `messages.len()` keeps nothing.
pub(crate) fn keep_from(messages: &[Message], size: impl Fn(usize) -> u64, max_chars: u64) -> usize {
    let n = messages.len();
    let last_user = messages.iter().rposition(|m| m.kind == Kind::User).unwrap_or(0);
    let boundary = |b: usize| {
        matches!(messages[b].kind, Kind::User | Kind::Assistant | Kind::ToolCall)
            && (b == 0 || messages[b - 1].kind != Kind::ToolCall)
    };
    let mut tail = 0u64;
    let mut best = n;
    for b in (last_user..n).rev() {
        tail += size(b);
        if tail > max_chars {
            break;
        }
        if boundary(b) {
            best = b;
        }
    }
    best
}

/// Asks the model for the summary of `messages[..from]`, shrinking the input once if the
/// server finds it too long.
async fn summarise(
    st: &mut AgentState,
    from: usize,
    instructions: Option<&str>,
) -> Result<String, CompactError> {
    let words = (st.budget().window() / 20).clamp(150, 1500);
    let mut ask = format!(
        "Summarise the conversation above for your own later use: it replaces the earlier \
messages, which you will no longer see. Use at most {words} words, in these sections: \
Task (what the user wants, with their latest request in their own words); Decisions (what was \
decided and why); Files touched (paths and what changed); Current state (what was done, what \
works, what failed, the last results that matter); Open questions and next steps. Be specific: \
names, paths, commands, error messages. Do not call tools; answer with the summary only."
    );
    if let Some(extra) = instructions.map(str::trim).filter(|s| !s.is_empty()) {
        ask.push_str(&format!("\n\nThe user asks for this as well: {extra}"));
    }
    let ask_chars = super::budget::message_chars(&Message::user(ask.clone()));
    let answer_tokens = words * 2;
    let mut room = st.budget().usable().saturating_sub(answer_tokens);
    for attempt in 0..2 {
        let input = fit(st, from, ask_chars, room);
        let mut wire = input;
        wire.push(Message::user(ask.clone()));
        let tokens = st
            .budget()
            .tokens(wire.iter().map(super::budget::message_chars).sum());
        st.budget_mut().sent(tokens);
        let result = super::retry::send(st, &wire, &[]).await;
        let mut stream = match result {
            Ok(s) => s,
            Err(crate::provider::ProviderError::ContextLength { requested, .. }) if attempt == 0 => {
                st.budget_mut().refused(requested);
                room /= 2;
                continue;
            }
            Err(e) => return Err(CompactError::Provider(e)),
        };
        let mut text = String::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(StreamEvent::TextDelta(t)) => text.push_str(&t),
                Ok(StreamEvent::Usage { input, .. }) => {
                    st.budget_mut().observe(input);
                }
                Ok(_) => {}
                Err(e) => return Err(CompactError::Provider(e)),
            }
        }
        let text = text.trim().to_string();
        if text.is_empty() {
            return Err(CompactError::Empty);
        }
        return Ok(text);
    }
    Err(CompactError::TooLong)
}

/// `messages[..from]` made to fit in `room` tokens with the question: old tool output
/// elided (all of it if need be), then the oldest messages dropped.
fn fit(st: &AgentState, from: usize, ask_chars: u64, room: u64) -> Vec<Message> {
    let msgs = &st.messages()[..from];
    let b = st.budget();
    let fits = |chars: u64| b.tokens(chars + ask_chars) <= room;
    let total: u64 = (0..from).map(|i| b.size(i)).sum();
    if fits(total) {
        return msgs.to_vec();
    }
    let mut sub = b.clone();
    sub.sync(msgs);
    let target = (0..64).map(|k| total >> k).find(|&c| fits(c)).unwrap_or(0);
    let plan = elide::plan(msgs, &sub, target, 0);
    let mut out = elide::apply(msgs, &plan);
    let mut chars = plan.chars;
    // Still too long: drop the oldest messages, never splitting a call from its result.
    let mut start = 0;
    while !fits(chars) && start < out.len() {
        chars = chars.saturating_sub(super::budget::message_chars(&out[start]));
        start += 1;
        while start < out.len() && out[start].kind == Kind::ToolResult {
            chars = chars.saturating_sub(super::budget::message_chars(&out[start]));
            start += 1;
        }
    }
    out.drain(..start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_current_turn_or_a_safe_suffix_of_it() {
        let mut m = vec![
            Message::user("old"),
            Message::assistant("done"),
            Message::user("now"),
        ];
        for i in 0..4 {
            let id = format!("c{i}");
            m.push(Message::tool_call(&id, "bash", "{}"));
            m.push(Message::tool_result(&id, "bash", "ok", "out", true));
        }
        // Everything of the current turn fits.
        assert_eq!(keep_from(&m, |_| 10, 1000), 2);
        // Only the last two calls fit: the suffix starts at a call, not at a result.
        let from = keep_from(&m, |_| 10, 40);
        assert_eq!(from, 7);
        assert_eq!(m[from].kind, Kind::ToolCall);
        // Nothing fits.
        assert_eq!(keep_from(&m, |_| 10, 5), m.len());
    }
}
