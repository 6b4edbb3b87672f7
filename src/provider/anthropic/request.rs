//! The Anthropic Messages request body: the options, `system` and `tools` (with
//! `cache_control` breakpoints), then `messages` in strict user/assistant alternation
//! with `tool_use` / `tool_result` / `thinking` blocks, made one at a time from the
//! normalised history as the body is written. Pure: no IO.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::provider::Request;
use crate::provider::body::JsonBody;
use crate::provider::history::{Arguments, History, Item, system_prompt};

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

/// Everything but the `messages`.
pub fn rest(req: &Request<'_>, opts: &Options<'_>) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("max_tokens".into(), json!(opts.max_tokens));
    body.insert("stream".into(), json!(true));
    if !req.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(req.stop));
    }
    let system = system_prompt(req.system, req.messages);
    if !system.is_empty() {
        body.insert(
            "system".into(),
            json!([{"type": "text", "text": system, "cache_control": ephemeral()}]),
        );
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
        body.insert("tools".into(), Value::Array(tools));
    }
    // Mid tool loop, a final assistant message must start with a thinking block when
    // thinking is on; one written by another provider (or before thinking was on) has
    // none, so this request goes without thinking.
    match opts
        .thinking_budget
        .filter(|_| last_assistant_may_think(req.messages, opts.name))
    {
        Some(budget) => {
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
            body.insert(
                "max_tokens".into(),
                json!(opts.max_tokens.max(budget.saturating_add(1024))),
            );
        }
        None => {
            if let Some(t) = opts.temperature {
                body.insert("temperature".into(), json!(t));
            }
        }
    }
    body
}

/// The whole request body.
pub fn body<'a>(
    req: Request<'a>,
    opts: &Options<'a>,
) -> serde_json::Result<JsonBody<impl Fn() -> Messages<'a> + Send + Sync + use<'a>>> {
    let (messages, name) = (req.messages, opts.name);
    JsonBody::new(&rest(&req, opts), "messages", move || {
        Messages::new(messages, name)
    })
}

/// The body as a JSON value (tests and callers that inspect it).
pub fn body_value(req: Request<'_>, opts: &Options<'_>) -> Value {
    use crate::provider::body::Source;
    body(req, opts)
        .and_then(|b| b.to_vec())
        .and_then(|bytes| serde_json::from_slice(&bytes))
        .unwrap_or(Value::Null)
}

/// False when the last assistant message calls tools without starting with thinking.
fn last_assistant_may_think(messages: &[crate::message::Message], name: &str) -> bool {
    let (mut calls, mut thinking, mut in_assistant) = (false, false, false);
    for item in History::new(messages, name, any_valid_id) {
        match side(&item) {
            Some(Side::User) => in_assistant = false,
            Some(Side::Assistant { call, thought }) => {
                if !in_assistant {
                    (calls, thinking, in_assistant) = (false, false, true);
                }
                calls |= call;
                thinking |= thought;
            }
            None => {}
        }
    }
    !calls || thinking
}

/// Which message an item goes to, and what it is there.
enum Side {
    User,
    Assistant { call: bool, thought: bool },
}

fn side(item: &Item<'_>) -> Option<Side> {
    match item {
        Item::System(_) => None,
        Item::User(_) | Item::Result { .. } | Item::Image { .. } => Some(Side::User),
        Item::Assistant(t) => (!t.trim().is_empty()).then_some(Side::Assistant {
            call: false,
            thought: false,
        }),
        Item::Reasoning { opaque, .. } => reasoning_block("", opaque).map(|_| Side::Assistant {
            call: false,
            thought: true,
        }),
        Item::Call { .. } => Some(Side::Assistant {
            call: true,
            thought: false,
        }),
    }
}

fn any_valid_id(id: &str) -> Cow<'_, str> {
    Cow::Borrowed(id)
}

#[derive(Clone, Copy, Debug, Serialize)]
struct Ephemeral {
    #[serde(rename = "type")]
    kind: &'static str,
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// One content block.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: Cow<'a, str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: Cow<'a, str>,
        name: &'a str,
        input: Arguments<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
    },
    Image {
        source: Source<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
    },
    ToolResult {
        tool_use_id: Cow<'a, str>,
        content: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<Ephemeral>,
    },
}

/// An image's `source`: `{"type":"base64","media_type":"image/png","data":"…"}`.
#[derive(Serialize)]
struct Source<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

impl Block<'_> {
    fn is_thinking(&self) -> bool {
        matches!(self, Block::Thinking { .. } | Block::RedactedThinking { .. })
    }

    /// Puts a cache breakpoint on this block; false for blocks that take none.
    fn mark(&mut self) -> bool {
        match self {
            Block::Text { cache_control, .. }
            | Block::Image { cache_control, .. }
            | Block::ToolUse { cache_control, .. }
            | Block::ToolResult { cache_control, .. } => {
                *cache_control = Some(Ephemeral { kind: "ephemeral" });
                true
            }
            Block::Thinking { .. } | Block::RedactedThinking { .. } => false,
        }
    }
}

/// A thinking block from this provider's own reasoning payload, when it can go back.
fn reasoning_block<'a>(text: &'a str, opaque: &'a Value) -> Option<Block<'a>> {
    let str_of = |k: &str| opaque.get(k).and_then(Value::as_str);
    match str_of("type") {
        Some("redacted_thinking") => str_of("data").map(|data| Block::RedactedThinking { data }),
        _ => str_of("signature")
            .filter(|s| !s.is_empty())
            .map(|signature| Block::Thinking {
                thinking: text,
                signature,
            }),
    }
}

/// One wire message.
#[derive(Serialize)]
pub struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// A tool-call id as Anthropic accepts it (`^[a-zA-Z0-9_-]+$`, at most 64 bytes). Valid
/// ids pass unchanged; others are cleaned and given a hash of the original, so one
/// history always serialises the same way and distinct ids stay distinct.
pub fn tool_id(id: &str) -> Cow<'_, str> {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if !id.is_empty() && id.len() <= 64 && id.chars().all(valid) {
        return Cow::Borrowed(id);
    }
    let clean: String = id
        .chars()
        .map(|c| if valid(c) { c } else { '_' })
        .take(40)
        .collect();
    Cow::Owned(format!("{clean}_{:016x}", fnv1a(id.as_bytes())))
}

/// FNV-1a 64: a tiny hash that never changes between builds.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Wire messages in strict alternation, starting with `user`: consecutive blocks of one
/// role share a message (thinking first in an assistant message, results first in a user
/// message), and the last block of the last message carries a cache breakpoint, so the
/// next request reads the whole history from the cache. Made one at a time.
pub struct Messages<'a> {
    items: History<'a>,
    /// A block that belongs to the message after the one being gathered.
    stash: Option<(&'static str, Block<'a>)>,
    /// The message after the one going out (to know which one is last).
    ahead: Option<WireMessage<'a>>,
    started: bool,
}

impl<'a> Messages<'a> {
    pub fn new(history: &'a [crate::message::Message], name: &'a str) -> Self {
        Messages {
            items: History::new(history, name, tool_id),
            stash: None,
            ahead: None,
            started: false,
        }
    }

    fn block(item: Item<'a>) -> Option<(&'static str, Block<'a>)> {
        let block = match item {
            Item::System(_) => return None,
            Item::User(text) => (
                "user",
                Block::Text {
                    text,
                    cache_control: None,
                },
            ),
            Item::Image { mime, data } => (
                "user",
                Block::Image {
                    source: Source {
                        kind: "base64",
                        media_type: mime,
                        data,
                    },
                    cache_control: None,
                },
            ),
            Item::Assistant(t) if t.trim().is_empty() => return None,
            Item::Assistant(t) => (
                "assistant",
                Block::Text {
                    text: Cow::Borrowed(t),
                    cache_control: None,
                },
            ),
            Item::Reasoning { text, opaque } => ("assistant", reasoning_block(text, opaque)?),
            Item::Call { id, function } => (
                "assistant",
                Block::ToolUse {
                    id,
                    name: &function.name,
                    input: Arguments::of(function),
                    cache_control: None,
                },
            ),
            Item::Result {
                id, output, success, ..
            } => (
                "user",
                Block::ToolResult {
                    tool_use_id: id,
                    content: output,
                    is_error: !success,
                    cache_control: None,
                },
            ),
        };
        Some(block)
    }

    /// The next message: consecutive blocks of one role.
    fn gather(&mut self) -> Option<WireMessage<'a>> {
        let (role, first) = match self.stash.take() {
            Some(b) => b,
            None => loop {
                if let Some(b) = Self::block(self.items.next()?) {
                    break b;
                }
            },
        };
        let mut content = vec![first];
        for item in self.items.by_ref() {
            let Some((r, b)) = Self::block(item) else {
                continue;
            };
            if r != role {
                self.stash = Some((r, b));
                break;
            }
            content.push(b);
        }
        if role == "assistant" {
            content.sort_by_key(|b| !b.is_thinking());
        } else {
            content.sort_by_key(|b| !matches!(b, Block::ToolResult { .. }));
        }
        Some(WireMessage { role, content })
    }
}

impl<'a> Iterator for Messages<'a> {
    type Item = WireMessage<'a>;

    fn next(&mut self) -> Option<WireMessage<'a>> {
        if !self.started {
            self.started = true;
            self.ahead = self.gather();
            if self.ahead.as_ref().is_some_and(|m| m.role == "assistant") {
                return Some(WireMessage {
                    role: "user",
                    content: vec![Block::Text {
                        text: Cow::Borrowed("(continued)"),
                        cache_control: None,
                    }],
                });
            }
        }
        let mut current = self.ahead.take()?;
        self.ahead = self.gather();
        if self.ahead.is_none()
            && let Some(b) = current.content.iter_mut().rev().find(|b| !b.is_thinking())
        {
            b.mark();
        }
        Some(current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    #[test]
    fn raw_json_is_written_as_the_model_wrote_it_and_the_rest_parses() {
        let h = crate::provider::history::varied("me");
        crate::provider::body::assert_raw_json_kept(Messages::new(&h, "me"), &h);
    }

    fn messages(h: &[Message], name: &str) -> Vec<Value> {
        Messages::new(h, name)
            .map(|m| crate::provider::body::item_value(&m).unwrap())
            .collect()
    }

    #[test]
    fn tool_ids_are_adapted_stably_and_stay_distinct() {
        assert_eq!(tool_id("toolu_01A-b"), "toolu_01A-b");
        assert!(matches!(tool_id("toolu_01A-b"), Cow::Borrowed(_)));
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
            body_value(
                Request {
                    model: "m",
                    system: "",
                    messages: h,
                    tools: &tools,
                    stop: &[],
                    environment: "",
                    max_output_tokens: None,
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
