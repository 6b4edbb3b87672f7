//! The budget step before every request, in order: size tool results to the window,
//! elide old tool output on the wire, compact when it still does not fit (or past
//! `auto_compact_at`), and recover once from the server's own context-length refusal.
//! Never loops: one compaction and one retry per request at most.

use std::borrow::Cow;

use serde_json::{Value, json};

use super::budget::{Budget, WindowSource, is_context_error, refused_tokens, refused_window};
use super::compact::{self, CompactError};
use super::elide::{self, KEEP_NEWEST, Plan};
use super::state::AgentState;
use crate::message::{Kind, Message};
use crate::protocol::NoticeLevel;
use crate::provider::{EventStream, ProviderError};
use crate::tools::Executed;

/// Why no request was sent.
#[derive(Debug)]
pub enum Failure {
    /// The provider failed (after its own retries).
    Provider(ProviderError),
    /// The request cannot be made to fit; the text says what to do.
    TooLarge(String),
}

/// Prepares and sends the next request of a turn.
pub async fn request(st: &mut AgentState) -> Result<EventStream, Failure> {
    // Let front ends show what was emitted (a finished tool call) before the request is
    // encoded: encoding grows with the conversation, showing results must not.
    tokio::task::yield_now().await;
    probe_window(st).await;
    // External tools found so far (a discovery in progress is waited for, briefly).
    let schemas = st.registry.ready_schemas().await;
    st.budget.refresh_fixed(&st.system_prompt, &schemas);
    let mut force = false;
    loop {
        let plan = ensure(st, force).await?;
        st.budget.sent(st.budget.tokens(plan.chars));
        let result = {
            let view = wire(&st.conversation.messages, &plan);
            super::turn::send(st, &view, &schemas).await
        };
        match result {
            Ok(s) => return Ok(s),
            Err(e) if is_context_error(&e) => {
                let text = super::budget::server_text(&e).unwrap_or_default().to_string();
                st.budget.refused(refused_tokens(&text));
                // The server knows its window better than any table.
                if let Some(w) = refused_window(&text).filter(|w| *w < st.budget.window && *w >= 1024) {
                    st.budget.set_window(w, WindowSource::Server);
                }
                if force {
                    return Err(Failure::TooLarge(format!(
                        "{e}\nThe request is still too long after compacting. Send a smaller request, \
                         or start over with /new."
                    )));
                }
                force = true;
                st.notice(
                    NoticeLevel::Info,
                    "the server says the request exceeds its context window; compacting and retrying",
                );
            }
            Err(e) => return Err(Failure::Provider(e)),
        }
    }
}

/// The messages a request carries under `plan`.
pub fn wire<'a>(messages: &'a [Message], plan: &Plan) -> Cow<'a, [Message]> {
    if plan.is_empty() {
        Cow::Borrowed(messages)
    } else {
        Cow::Owned(elide::apply(messages, plan))
    }
}

/// Makes the conversation fit: the elision plan for the next request, compacting first
/// when needed (`force`: the server refused the last one).
pub async fn ensure(st: &mut AgentState, force: bool) -> Result<Plan, Failure> {
    st.tool_ctx.max_output_size = st.budget.tool_cap(st.config.max_output_size);
    st.budget.sync(&st.conversation.messages);
    too_large_message(st)?;
    let plan = plan(st, force);
    let est = st.budget.tokens(plan.chars);
    if !force && est <= st.budget.compact_threshold() {
        return Ok(plan);
    }
    let compacted = match compact::run(st, None).await {
        Ok(_) => true,
        Err(CompactError::Nothing) if !force && est <= st.budget.usable() => return Ok(plan),
        Err(e @ CompactError::Failed(_)) => {
            st.notice(NoticeLevel::Warning, e.to_string());
            if !force && est <= st.budget.usable() {
                return Ok(plan);
            }
            false
        }
        Err(CompactError::Nothing) => false,
    };
    st.budget.sync(&st.conversation.messages);
    let plan = plan_for(st, st.budget.elide_threshold(), KEEP_NEWEST);
    if st.budget.tokens(plan.chars) <= st.budget.usable() && (compacted || !force) {
        return Ok(plan);
    }
    // Stronger elision: every result, the newest too.
    let strong = plan_for(st, 0, 0);
    let est = st.budget.tokens(strong.chars);
    if est <= st.budget.usable() {
        return Ok(strong);
    }
    Err(Failure::TooLarge(format!(
        "The conversation does not fit this model's context window even after compacting: \
         about {est} tokens, and the window holds {} ({} kept for the answer). Start over with \
         /new, or send a smaller request.",
        st.budget.window, st.budget.reserve
    )))
}

/// The elision plan before compaction is considered.
fn plan(st: &AgentState, force: bool) -> Plan {
    if force {
        return plan_for(st, st.budget.elide_threshold(), KEEP_NEWEST);
    }
    request_plan(&st.budget, &st.conversation.messages)
}

/// The wire plan for `messages` with no compaction: nothing elided under the elision
/// threshold, else old tool output elided down to it. `budget` must be synced.
pub fn request_plan(budget: &Budget, messages: &[Message]) -> Plan {
    let chars = budget.messages_chars();
    if budget.tokens(chars) <= budget.elide_threshold() {
        return Plan {
            stubbed: Vec::new(),
            chars,
        };
    }
    elide::plan(
        messages,
        budget,
        chars_for(budget, budget.elide_threshold()),
        KEEP_NEWEST,
    )
}

fn plan_for(st: &AgentState, target_tokens: u64, keep: usize) -> Plan {
    elide::plan(
        &st.conversation.messages,
        &st.budget,
        chars_for(&st.budget, target_tokens),
        keep,
    )
}

/// The most message characters estimated at no more than `target_tokens`.
fn chars_for(b: &Budget, target_tokens: u64) -> u64 {
    let mut lo = 0u64;
    let mut hi = b.messages_chars();
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if b.tokens(mid) <= target_tokens {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// The latest user message alone does not fit: say so plainly (it stays stored, and
/// later requests carry it as a stub).
fn too_large_message(st: &AgentState) -> Result<(), Failure> {
    let msgs = &st.conversation.messages;
    let Some(i) = msgs.iter().rposition(|m| m.kind == Kind::User) else {
        return Ok(());
    };
    // Only while it is the request being answered.
    if msgs[i + 1..].iter().any(|m| m.kind == Kind::Assistant) {
        return Ok(());
    }
    let alone = st.budget.raw_tokens(st.budget.size(i));
    if alone <= st.budget.usable() * 9 / 10 {
        return Ok(());
    }
    Err(Failure::TooLarge(format!(
        "Your message is too large for this model's context window: about {alone} tokens, and the \
         window holds {} ({} kept for the answer). Send a smaller request (for a big file, ask for \
         it to be read in parts), or start over with /new.",
        st.budget.window, st.budget.reserve
    )))
}

/// Asks the server for the window once, when neither the config nor the table knew it.
async fn probe_window(st: &mut AgentState) {
    if st.budget.source != WindowSource::Fallback || st.budget.probed {
        return;
    }
    st.budget.probed = true;
    let Ok(client) = crate::provider::http::client(std::time::Duration::from_secs(
        st.config.connect_timeout_secs.min(3),
    )) else {
        return;
    };
    let timeout = std::time::Duration::from_secs(3);
    let base_url = st.provider.spec().base_url.clone();
    if let Some(w) = crate::provider::window::probe(&client, &base_url, &st.model, timeout).await {
        st.budget.set_window(w, WindowSource::Server);
    }
}

/// After a tool ran: a result cut to fit the window tells the model how to read on.
pub fn after_tool(st: &AgentState, done: &mut Executed) {
    if st.tool_ctx.max_output_size >= st.config.max_output_size {
        return;
    }
    let Some(result) = done.envelope.result.as_mut().and_then(Value::as_object_mut) else {
        return;
    };
    if result.get("truncated") != Some(&Value::Bool(true)) {
        return;
    }
    let hint = match result.get("next_offset").and_then(Value::as_u64) {
        Some(n) => format!(
            "Cut to fit the model's context window ({} bytes per result). Read on with offset={n} \
             and a limit, or search the file with grep.",
            st.tool_ctx.max_output_size
        ),
        None => format!(
            "Cut to fit the model's context window ({} bytes per result). Narrow it down: a more \
             specific pattern or path, or head/tail/grep in bash.",
            st.tool_ctx.max_output_size
        ),
    };
    result.insert("paging".into(), json!(hint));
}
