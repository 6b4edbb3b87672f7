//! The budget step before every request, in order: size tool results to the window,
//! elide old tool output on the wire, compact when it still does not fit (or past
//! `auto_compact_at`), and recover once from the server's own context-length refusal.
//! Never loops: one compaction and one retry per request at most.

use std::borrow::Cow;

use futures_util::StreamExt;
use serde_json::{Value, json};

use super::budget::{Budget, WindowSource};
use super::compact::{self, CompactError};
use super::elide::{self, KEEP_NEWEST, Plan};
use super::state::AgentState;
use super::window;
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
    // External tools found so far (a discovery in progress is waited for, briefly).
    let schemas = st.registry().ready_schemas().await;
    let system = format!("{}{}", st.system_prompt(), st.environment());
    st.budget_mut().refresh_fixed(&system, &schemas);
    window_before(st).await;
    let mut force = false;
    loop {
        let plan = ensure(st, force).await?;
        let tokens = st.budget().tokens(plan.chars);
        st.budget_mut().sent(tokens);
        let result = {
            let view = for_model(wire(st.messages(), &plan), st.provider().takes_images());
            match super::retry::send(st, &view, &schemas).await {
                Ok(stream) => refused_at_once(stream).await,
                Err(e) => Err(e),
            }
        };
        match result {
            Ok(s) => {
                // Sent: now the server may be asked its window, meanwhile.
                window::start(st);
                return Ok(s);
            }
            Err(
                e @ ProviderError::ContextLength {
                    requested, window, ..
                },
            ) => {
                // The window matters now: a question in flight is answered first. The
                // server knows its window better than any table; the request exceeded
                // that window, not the table's (which may be 50 times larger).
                window::settle(st).await;
                let current = st.budget().window();
                if let Some(w) = window.filter(|w| *w < current && *w >= 1024) {
                    st.budget_mut().set_window(w, WindowSource::Server);
                }
                st.budget_mut().refused(requested);
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

/// A response whose first item is a context-length refusal (an engine finds the prompt
/// too long only once it reads it) is a refused request, like a server's 400.
async fn refused_at_once(mut stream: EventStream) -> Result<EventStream, ProviderError> {
    match stream.next().await {
        Some(Err(e @ ProviderError::ContextLength { .. })) => Err(e),
        Some(first) => Ok(Box::pin(
            futures_util::stream::once(async { first }).chain(stream),
        )),
        None => Ok(stream),
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

/// The view without images when the model takes none (a session that switched to such a
/// model after images were attached): a copy then, else the view itself.
pub fn for_model(view: Cow<'_, [Message]>, images: bool) -> Cow<'_, [Message]> {
    if images || view.iter().all(|m| m.images().is_empty()) {
        return view;
    }
    let mut owned = view.into_owned();
    for m in &mut owned {
        match m.data.as_deref_mut() {
            Some(crate::message::Data::Attachments(a)) => a.images.clear(),
            Some(crate::message::Data::ToolResult(r)) => r.images.clear(),
            _ => {}
        }
    }
    Cow::Owned(owned)
}

/// Makes the conversation fit: the elision plan for the next request, compacting first
/// when needed (`force`: the server refused the last one).
pub async fn ensure(st: &mut AgentState, force: bool) -> Result<Plan, Failure> {
    let cap = st.budget().tool_cap(st.config().max_output_size);
    st.set_tool_cap(cap);
    st.sync_budget();
    too_large_message(st)?;
    let plan = plan(st, force);
    let b = st.budget();
    let est = b.tokens(plan.chars);
    if !force && est <= b.compact_threshold() {
        return Ok(plan);
    }
    let usable = b.usable();
    let compacted = match compact::run(st, None).await {
        Ok(_) => true,
        Err(CompactError::Nothing) if !force && est <= usable => return Ok(plan),
        Err(e @ (CompactError::Provider(_) | CompactError::Empty | CompactError::TooLong)) => {
            st.notice(NoticeLevel::Warning, e.to_string());
            if !force && est <= usable {
                return Ok(plan);
            }
            false
        }
        Err(CompactError::Nothing) => false,
    };
    st.sync_budget();
    let b = st.budget();
    let plan = plan_for(st, b.elide_threshold(), KEEP_NEWEST);
    if b.tokens(plan.chars) <= b.usable() && (compacted || !force) {
        return Ok(plan);
    }
    // Stronger elision: every result, the newest too.
    let strong = plan_for(st, 0, 0);
    let est = b.tokens(strong.chars);
    if est <= b.usable() {
        return Ok(strong);
    }
    // Nothing but the message being answered is left to shrink: it is what is too large.
    if let Some(i) = compact::awaiting_answer(st.messages()) {
        return Err(Failure::TooLarge(message_too_large(st, i)));
    }
    Err(Failure::TooLarge(format!(
        "The conversation does not fit this model's context window even after compacting: \
         about {est} tokens, and the window holds {} ({} kept for the answer). Start over with \
         /new, or send a smaller request.",
        b.window(),
        b.reserve()
    )))
}

/// The elision plan before compaction is considered.
fn plan(st: &AgentState, force: bool) -> Plan {
    if force {
        return plan_for(st, st.budget().elide_threshold(), KEEP_NEWEST);
    }
    request_plan(st.budget(), st.messages())
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
        st.messages(),
        st.budget(),
        chars_for(st.budget(), target_tokens),
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

/// The latest user message does not fit, alone or with what every request carries
/// (system prompt, tool schemas): say so plainly (it stays stored, and later requests
/// carry it as a stub). Never summarised instead: compaction keeps it whole.
fn too_large_message(st: &AgentState) -> Result<(), Failure> {
    let msgs = st.messages();
    let Some(i) = msgs.iter().rposition(|m| m.kind == Kind::User) else {
        return Ok(());
    };
    // Only while it is the request being answered.
    if msgs[i + 1..].iter().any(|m| m.kind == Kind::Assistant) {
        return Ok(());
    }
    let b = st.budget();
    let size = b.size(i);
    if b.raw_tokens(size) <= b.usable() * 9 / 10 && b.uncalibrated(size) <= b.usable() {
        return Ok(());
    }
    Err(Failure::TooLarge(message_too_large(st, i)))
}

/// The plain refusal of message `i`, which cannot fit the window.
fn message_too_large(st: &AgentState, i: usize) -> String {
    let b = st.budget();
    let alone = b.raw_tokens(b.size(i));
    format!(
        "Your message is too large for this model's context window: about {alone} tokens, and the \
         window holds {} ({} kept for the answer, and the system prompt and tool descriptions \
         take some too). Send a smaller request (for a big file, ask for it to be read in parts), \
         or start over with /new.",
        b.window(),
        b.reserve()
    )
}

/// Before a request, when the server is still to say its window: a question in flight
/// (asked after an earlier request) is waited for; when nobody asked yet, a request past
/// `window::FLOOR` asks and waits, a shorter one goes first (the question follows it).
async fn window_before(st: &mut AgentState) {
    if window::asked(st) {
        window::settle(st).await;
        return;
    }
    if !window::unknown(st) {
        return;
    }
    st.sync_budget();
    let b = st.budget();
    if b.tokens(b.messages_chars()) > window::FLOOR {
        window::settle(st).await;
    }
}

/// Before tools run: their results are sized to the window, so a question in flight is
/// answered first (it has had the whole response to come back).
pub async fn before_tools(st: &mut AgentState) {
    if !window::unknown(st) {
        return;
    }
    window::settle(st).await;
    let cap = st.budget().tool_cap(st.config().max_output_size);
    st.set_tool_cap(cap);
}

/// After a tool ran: a result cut to fit the window tells the model how to read on.
pub fn after_tool(st: &AgentState, done: &mut Executed) {
    let cap = st.tool_ctx().max_output_size;
    if cap >= st.config().max_output_size {
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
            cap
        ),
        None => format!(
            "Cut to fit the model's context window ({} bytes per result). Narrow it down: a more \
             specific pattern or path, or head/tail/grep in bash.",
            cap
        ),
    };
    result.insert("paging".into(), json!(hint));
}
