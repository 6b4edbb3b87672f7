//! The Anthropic Messages request body: canonical history → `system`, `messages` with
//! `tool_use` / `tool_result` / `thinking` blocks in strict user/assistant alternation,
//! `tools`, and `cache_control` breakpoints. Pure: no IO.

use serde_json::{Value, json};

use crate::message::{Kind, Message};
use crate::provider::Request;

/// Settings of one request body that are not in the history.
#[derive(Clone, Debug)]
pub struct Options<'a> {
    /// The configured provider name: reasoning produced under it is sent back.
    pub name: &'a str,
    pub max_tokens: u32,
    /// Extended thinking budget (`thinking: {type: enabled}`), when asked for.
    pub thinking_budget: Option<u32>,
    pub temperature: Option<f64>,
}

/// The whole request body.
pub fn body(req: &Request<'_>, opts: &Options<'_>) -> Value {
    let mut system = req.system.to_string();
    for m in req.messages.iter().filter(|m| m.kind == Kind::System) {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&m.content);
    }
    let mut body = json!({
        "model": req.model,
        "max_tokens": opts.max_tokens,
        "stream": true,
        "messages": messages(req.messages, opts.name),
    });
    if !req.stop.is_empty() {
        body["stop_sequences"] = json!(req.stop);
    }
    if !system.is_empty() {
        body["system"] = json!([{"type": "text", "text": system, "cache_control": ephemeral()}]);
    }
    if !req.tools.is_empty() {
        let mut tools: Vec<Value> = req
            .tools
            .iter()
            .map(
                |t| json!({"name": t.name, "description": t.description, "input_schema": t.to_json_schema()}),
            )
            .collect();
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = ephemeral();
        }
        body["tools"] = Value::Array(tools);
    }
    // Mid tool loop, a final assistant message must start with a thinking block when
    // thinking is on; one written by another provider (or before thinking was on) has
    // none, so this request goes without thinking.
    let thinking = opts
        .thinking_budget
        .filter(|_| last_assistant_may_think(&body["messages"]));
    match thinking {
        Some(budget) => {
            body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
            body["max_tokens"] = json!(opts.max_tokens.max(budget.saturating_add(1024)));
        }
        None => {
            if let Some(t) = opts.temperature {
                body["temperature"] = json!(t);
            }
        }
    }
    body
}

/// False when the last assistant message calls tools without starting with thinking.
fn last_assistant_may_think(messages: &Value) -> bool {
    let Some(last) = messages
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "assistant"))
    else {
        return true;
    };
    let blocks = last["content"].as_array().map(Vec::as_slice).unwrap_or_default();
    let calls = blocks.iter().any(|b| b["type"] == "tool_use");
    !calls
        || blocks
            .first()
            .is_some_and(|b| matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// A tool-call id as Anthropic accepts it (`^[a-zA-Z0-9_-]+$`, at most 64 bytes). Valid
/// ids pass unchanged; others are cleaned and given a hash of the original, so one
/// history always serialises the same way and distinct ids stay distinct.
pub fn tool_id(id: &str) -> String {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !id.is_empty() && id.len() <= 64 && id.chars().all(valid) {
        return id.to_string();
    }
    let clean: String = id
        .chars()
        .map(|c| if valid(c) { c } else { '_' })
        .take(40)
        .collect();
    format!("{clean}_{:016x}", fnv1a(id.as_bytes()))
}

/// FNV-1a 64: a tiny hash that never changes between builds.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Wire messages in strict alternation, starting with `user`: consecutive blocks of one
/// role share a message, every `tool_use` gets its `tool_result` in the next user
/// message, and a result with no matching call becomes plain text.
pub fn messages(history: &[Message], name: &str) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, block: Value| match turns.last_mut() {
        Some((r, blocks)) if *r == role => blocks.push(block),
        _ => turns.push((role, vec![block])),
    };
    for m in history {
        match m.kind {
            Kind::System => {}
            Kind::Compaction => push(
                "user",
                json!({"type": "text", "text": crate::message::compaction_text(&m.content)}),
            ),
            Kind::User => {
                if !m.content.is_empty() {
                    push("user", json!({"type": "text", "text": m.content}));
                }
            }
            Kind::Assistant => {
                if !m.content.trim().is_empty() {
                    push("assistant", json!({"type": "text", "text": m.content}));
                }
            }
            Kind::Reasoning => {
                let Some(r) = m.as_reasoning() else { continue };
                if r.provider != name {
                    continue;
                }
                match r.opaque.get("type").and_then(Value::as_str) {
                    Some("redacted_thinking") => {
                        if let Some(data) = r.opaque.get("data").and_then(Value::as_str) {
                            push("assistant", json!({"type": "redacted_thinking", "data": data}));
                        }
                    }
                    _ => {
                        if let Some(sig) = r.opaque.get("signature").and_then(Value::as_str)
                            && !sig.is_empty()
                        {
                            push(
                                "assistant",
                                json!({"type": "thinking", "thinking": m.content, "signature": sig}),
                            );
                        }
                    }
                }
            }
            Kind::ToolCall => {
                let Some(c) = m.as_tool_call() else { continue };
                push(
                    "assistant",
                    json!({"type": "tool_use", "id": tool_id(&c.id), "name": c.function.name,
                        "input": c.function.wire_arguments_value()}),
                );
            }
            Kind::ToolResult => {
                let Some(r) = m.as_tool_result() else { continue };
                let mut block = json!({"type": "tool_result", "tool_use_id": tool_id(&r.tool_call_id),
                    "content": r.output});
                if !r.success {
                    block["is_error"] = json!(true);
                }
                push("user", block);
            }
        }
    }
    let turns = pair_tool_blocks(turns);
    let mut out: Vec<Value> = Vec::with_capacity(turns.len() + 1);
    for (role, mut blocks) in turns {
        if role == "assistant" {
            // Thinking comes first in an assistant message.
            blocks.sort_by_key(|b| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")));
        } else {
            // Results come first in a user message.
            blocks.sort_by_key(|b| b["type"] != "tool_result");
        }
        if out.is_empty() && role == "assistant" {
            out.push(json!({"role": "user", "content": [{"type": "text", "text": "(continued)"}]}));
        }
        out.push(json!({"role": role, "content": blocks}));
    }
    mark_last_for_cache(&mut out);
    out
}

/// Every `tool_use` answered by a `tool_result` in the next user message (an error result
/// is added when the history lost it), and every `tool_result` answering a `tool_use` of
/// the assistant message right before it (others become text). Re-merges roles.
fn pair_tool_blocks(turns: Vec<(&'static str, Vec<Value>)>) -> Vec<(&'static str, Vec<Value>)> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::with_capacity(turns.len());
    let mut open: Vec<String> = Vec::new();
    let mut iter = turns.into_iter().peekable();
    while let Some((role, blocks)) = iter.next() {
        if role == "assistant" {
            open = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .filter_map(|b| b["id"].as_str().map(str::to_string))
                .collect();
            out.push((role, blocks));
            if !open.is_empty() && iter.peek().is_none_or(|(r, _)| *r != "user") {
                out.push(("user", missing_results(&mut open)));
            }
            continue;
        }
        let mut kept = Vec::with_capacity(blocks.len());
        for b in blocks {
            if b["type"] != "tool_result" {
                kept.push(b);
                continue;
            }
            let id = b["tool_use_id"].as_str().unwrap_or("");
            if let Some(pos) = open.iter().position(|o| o == id) {
                open.remove(pos);
                kept.push(b);
            } else {
                let text = format!(
                    "(result of an earlier tool call {id}) {}",
                    b["content"].as_str().unwrap_or("")
                );
                kept.push(json!({"type": "text", "text": text}));
            }
        }
        kept.extend(missing_results(&mut open));
        if kept.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((r, prev)) if *r == "user" => prev.extend(kept),
            _ => out.push(("user", kept)),
        }
    }
    out
}

fn missing_results(open: &mut Vec<String>) -> Vec<Value> {
    open.drain(..)
        .map(|id| {
            json!({"type": "tool_result", "tool_use_id": id, "is_error": true,
                "content": crate::tools::envelope::INTERRUPTED_TOOL_ERROR})
        })
        .collect()
}

/// A breakpoint on the last block of the last message, so the next request reads the
/// whole history from the cache.
fn mark_last_for_cache(out: &mut [Value]) {
    let Some(last) = out.last_mut() else { return };
    let Some(blocks) = last["content"].as_array_mut() else {
        return;
    };
    if let Some(b) = blocks
        .iter_mut()
        .rev()
        .find(|b| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
    {
        b["cache_control"] = ephemeral();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_ids_are_adapted_stably_and_stay_distinct() {
        assert_eq!(tool_id("toolu_01A-b"), "toolu_01A-b");
        let a = tool_id("functions.glob:0");
        let b = tool_id("functions.glob:1");
        assert_eq!(a, tool_id("functions.glob:0"));
        assert_ne!(a, b);
        for id in [
            &a,
            &b,
            &tool_id(""),
            &tool_id(&"x".repeat(300)),
            &tool_id("call 1/ä"),
        ] {
            assert!(!id.is_empty() && id.len() <= 64, "{id}");
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{id}"
            );
        }
        assert!(a.starts_with("functions_glob_0_"), "{a}");
    }

    #[test]
    fn thinking_is_left_off_when_the_tool_loop_began_without_it() {
        let tools = vec![];
        let opts = Options {
            name: "anthropic",
            max_tokens: 4096,
            thinking_budget: Some(2048),
            temperature: Some(0.2),
        };
        let mut h = vec![Message::user("go")];
        let req = |h: &[Message]| {
            body(
                &Request {
                    model: "m",
                    system: "",
                    messages: h,
                    tools: &tools,
                    stop: &[],
                },
                &opts,
            )
        };
        let b = req(&h);
        assert_eq!(b["thinking"], json!({"type": "enabled", "budget_tokens": 2048}));
        assert_eq!(b["max_tokens"], 4096);
        assert!(b.get("temperature").is_none());
        h.push(Message::tool_call("a", "glob", "{}"));
        h.push(Message::tool_result("a", "glob", "", "r", true));
        let b = req(&h);
        assert!(b.get("thinking").is_none());
        assert_eq!(b["temperature"], 0.2);
        h.insert(
            1,
            Message::reasoning("hm", "anthropic", json!({"type": "thinking", "signature": "s"})),
        );
        assert!(req(&h).get("thinking").is_some());
    }

    #[test]
    fn consecutive_results_share_one_user_message_before_the_next_text() {
        let h = vec![
            Message::user("go"),
            Message::tool_call("a", "glob", "{}"),
            Message::tool_call("b", "glob", "{}"),
            Message::tool_result("a", "glob", "", "ra", true),
            Message::tool_result("b", "glob", "", "rb", false),
            Message::user("and now?"),
        ];
        let m = messages(&h, "anthropic");
        assert_eq!(m.len(), 3);
        assert_eq!(m[1]["content"].as_array().unwrap().len(), 2);
        let user = m[2]["content"].as_array().unwrap();
        let kinds: Vec<&str> = user.iter().map(|b| b["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["tool_result", "tool_result", "text"]);
        assert_eq!(user[1]["is_error"], true);
        assert_eq!(user[2]["cache_control"], json!({"type": "ephemeral"}));
        assert!(user[0].get("cache_control").is_none());
    }
}
