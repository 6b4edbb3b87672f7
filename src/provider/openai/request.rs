//! Canonical conversation → Chat Completions request body. Pure: no IO. The body borrows
//! the conversation and its messages are made and encoded one at a time as the body is
//! written (`provider::body`), from the normalised history (`provider::history`): a
//! 10,000-message request is never a second copy of the conversation, as a JSON tree or
//! as bytes.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::provider::body::{JsonBody, Source};
use crate::provider::history::{ArgumentsPass, ArgumentsSeen, History, Item, any_id};
use crate::provider::image::DataUrl;
use crate::provider::{Request, Spec};

/// Everything in a streaming `/chat/completions` request but its `messages`; `extra`
/// carries the endpoint's options (temperature, output cap, effort).
#[derive(Serialize)]
pub struct Rest<'a> {
    model: &'a str,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// One wire message. `content: null` is kept for an assistant message with calls only.
#[derive(Serialize)]
pub struct WireMessage<'a> {
    role: Role,
    content: Content<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<Cow<'a, str>>,
}

/// Who a wire message is from (compared for every call and image: an enum, not text).
#[derive(Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// Message content: text, an explicit `null`, or parts (a user message with images).
enum Content<'a> {
    Text(Cow<'a, str>),
    Null,
    Parts(Vec<Part<'a>>),
}

impl Serialize for Content<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(t) => s.serialize_str(t),
            Content::Null => s.serialize_none(),
            Content::Parts(parts) => serialize_parts(parts, s),
        }
    }
}

/// A message's parts: rare (a message with images), so kept out of the text path.
#[cold]
#[inline(never)]
fn serialize_parts<S: serde::Serializer>(parts: &[Part<'_>], s: S) -> Result<S::Ok, S::Error> {
    parts.serialize(s)
}

/// One content part: `{"type":"text","text":…}` or
/// `{"type":"image_url","image_url":{"url":"data:image/png;base64,…"}}`.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl<'a> },
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: DataUrl<'a>,
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: Cow<'a, str>,
    #[serde(rename = "type")]
    call_type: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: Cow<'a, str>,
}

impl<'a> WireMessage<'a> {
    fn text(role: Role, content: impl Into<Cow<'a, str>>) -> Self {
        WireMessage {
            role,
            content: Content::Text(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// Everything but the messages, with no endpoint options yet.
pub fn rest<'a>(req: &Request<'a>) -> Rest<'a> {
    let tools: Vec<Value> = req
        .tools
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.to_json_schema(),
            }})
        })
        .collect();
    Rest {
        model: req.model,
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        stop: req.stop,
        tool_choice: (!tools.is_empty()).then_some("auto"),
        tools,
        extra: Map::new(),
    }
}

/// Everything but the messages, with the endpoint's options (temperature, output cap,
/// effort).
pub fn rest_for<'a>(spec: &Spec, req: &Request<'a>) -> Rest<'a> {
    let mut body = rest(req);
    if let Some(t) = spec.temperature {
        body.extra.insert("temperature".into(), json!(t));
    }
    if let Some(n) = req.output_cap(spec) {
        body.extra.insert("max_completion_tokens".into(), json!(n));
    }
    if let Some(e) = &spec.reasoning_effort {
        body.extra.insert("reasoning_effort".into(), json!(e));
    }
    body
}

/// The whole body: `rest`, then the wire messages of `req`.
pub fn body<'a>(
    req: &Request<'a>,
    rest: &Rest<'a>,
) -> serde_json::Result<JsonBody<impl Fn() -> WireMessages<'a> + Send + Sync + use<'a>>> {
    let (system, messages) = (req.system, req.messages);
    let seen = std::sync::Arc::new(ArgumentsSeen::default());
    JsonBody::new(rest, "messages", move || {
        WireMessages::new(system, messages, ArgumentsPass::new(seen.clone()))
    })
}

/// Wire messages: the system prompt first; an assistant text and the tool calls that
/// follow it become one message with a `tool_calls` array; results become `role: tool`.
/// A user message's images make its content parts; a tool result's images (a tool message
/// takes text only) go in a user message after the exchange's results.
/// Made one at a time, as the body is written. Chat Completions takes no reasoning back.
pub struct WireMessages<'a> {
    /// The last wire message, still open to the tool calls that follow it.
    open: Option<WireMessage<'a>>,
    items: History<'a>,
    arguments: ArgumentsPass,
}

impl<'a> WireMessages<'a> {
    fn new(system: &'a str, messages: &'a [crate::message::Message], arguments: ArgumentsPass) -> Self {
        WireMessages {
            open: (!system.is_empty()).then(|| WireMessage::text(Role::System, system)),
            items: History::new(messages, "", any_id),
            arguments,
        }
    }
}

impl<'a> Iterator for WireMessages<'a> {
    type Item = WireMessage<'a>;

    #[inline(always)]
    fn next(&mut self) -> Option<WireMessage<'a>> {
        for item in self.items.by_ref() {
            let next = match item {
                Item::System(t) => WireMessage::text(Role::System, t),
                Item::User(t) => WireMessage::text(Role::User, t),
                Item::Assistant(t) => WireMessage::text(Role::Assistant, t),
                Item::Reasoning { .. } => continue,
                Item::Image { mime, data } => {
                    let part = Part::ImageUrl {
                        image_url: ImageUrl {
                            url: DataUrl { mime, data },
                        },
                    };
                    match self.open.as_mut() {
                        Some(last) if last.role == Role::User => {
                            let content = std::mem::replace(&mut last.content, Content::Null);
                            let mut parts = match content {
                                Content::Parts(parts) => parts,
                                Content::Text(text) => vec![Part::Text { text }],
                                Content::Null => Vec::new(),
                            };
                            parts.push(part);
                            last.content = Content::Parts(parts);
                            continue;
                        }
                        _ => WireMessage {
                            role: Role::User,
                            content: Content::Parts(vec![part]),
                            tool_calls: Vec::new(),
                            tool_call_id: None,
                        },
                    }
                }
                Item::Call { id, function } => {
                    let wire_call = WireCall {
                        id,
                        call_type: "function",
                        function: WireFunction {
                            name: &function.name,
                            arguments: self.arguments.text(function),
                        },
                    };
                    match self.open.as_mut() {
                        Some(last) if last.role == Role::Assistant => {
                            if matches!(&last.content, Content::Text(t) if t.is_empty()) {
                                last.content = Content::Null;
                            }
                            last.tool_calls.push(wire_call);
                            continue;
                        }
                        _ => WireMessage {
                            role: Role::Assistant,
                            content: Content::Null,
                            tool_calls: vec![wire_call],
                            tool_call_id: None,
                        },
                    }
                }
                Item::Result { id, output, .. } => WireMessage {
                    role: Role::Tool,
                    content: Content::Text(Cow::Borrowed(output)),
                    tool_calls: Vec::new(),
                    tool_call_id: Some(id),
                },
            };
            if let Some(done) = self.open.replace(next) {
                return Some(done);
            }
        }
        self.arguments.finish();
        self.open.take()
    }
}

/// The body of `req` as a JSON value (tests and callers that inspect it).
pub fn body_value(req: &Request<'_>) -> Value {
    body(req, &rest(req))
        .and_then(|b| b.to_vec())
        .and_then(|bytes| serde_json::from_slice(&bytes))
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::tool_vocab::{ParamSpec, ToolSchema};

    #[test]
    fn text_and_calls_of_one_response_become_one_wire_message() {
        let msgs = vec![
            Message::user("list"),
            Message::assistant("Let me look."),
            Message::tool_call("a", "glob", r#"{"pattern":"*"}"#),
            Message::tool_call("b", "glob", "{}"),
            Message::tool_result("a", "glob", "1 file", r#"{"tool_success":true}"#, true),
            Message::tool_result("b", "glob", "0 files", "{}", true),
            Message::assistant("Done."),
        ];
        let tools = vec![ToolSchema {
            name: "glob".into(),
            description: "find".into(),
            parameters: vec![ParamSpec::new("pattern", "string", "glob", true)],
            json_schema: None,
        }];
        let req = Request {
            model: "m",
            system: "sys",
            messages: &msgs,
            tools: &tools,
            stop: &[],
            environment: "",
            max_output_tokens: None,
        };
        let b = body_value(&req);
        assert_eq!(b["stream"], true);
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(b["tool_choice"], "auto");
        assert_eq!(b["tools"][0]["function"]["parameters"]["required"][0], "pattern");
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m.len(), 6);
        assert_eq!(m[0], json!({"role": "system", "content": "sys"}));
        assert_eq!(m[2]["content"], "Let me look.");
        assert_eq!(m[2]["tool_calls"].as_array().unwrap().len(), 2);
        assert_eq!(m[2]["tool_calls"][1]["id"], "b");
        assert_eq!(
            m[3],
            json!({"role": "tool", "tool_call_id": "a", "content": r#"{"tool_success":true}"#})
        );
        assert_eq!(m[5]["content"], "Done.");
    }

    #[test]
    fn every_message_is_written_as_serde_json_writes_it() {
        let h = crate::provider::history::varied("");
        crate::provider::body::assert_written_as_serde_json(WireMessages::new(
            "sys \" \u{1}",
            &h,
            ArgumentsPass::new(Default::default()),
        ));
    }

    #[test]
    fn a_second_pass_reuses_the_first_ones_argument_checks_and_writes_the_same_bytes() {
        use crate::provider::body::Source;
        let h = crate::provider::history::varied("");
        let req = Request {
            model: "m",
            system: "sys",
            messages: &h,
            tools: &[],
            stop: &[],
            environment: "",
            max_output_tokens: None,
        };
        let fresh = body(&req, &rest(&req)).unwrap().to_vec().unwrap();
        let b = body(&req, &rest(&req)).unwrap();
        let count = b.byte_count().unwrap();
        // The counting pass filled the checks; these passes read them.
        for _ in 0..2 {
            let again = b.to_vec().unwrap();
            assert_eq!(String::from_utf8_lossy(&again), String::from_utf8_lossy(&fresh));
            assert_eq!(again.len() as u64, count);
        }
        let v: Value = serde_json::from_slice(&fresh).unwrap();
        let calls: Vec<&Value> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
            .collect();
        let args: Vec<&str> = calls
            .iter()
            .map(|c| c["function"]["arguments"].as_str().unwrap())
            .collect();
        assert_eq!(args[1], r#"{"invalid_arguments":"{\"pattern\": \"*"}"#);
        assert_eq!(args[2], "{}");
        assert_eq!(args[3], r#"{"invalid_arguments":"[1]"}"#);
        assert!(args[0].starts_with(r#"{"command": "echo""#), "{}", args[0]);
    }

    #[test]
    fn malformed_arguments_go_out_as_valid_json() {
        let msgs = vec![
            Message::user("x"),
            Message::tool_call("a", "glob", r#"{"pattern": "*"#),
            Message::tool_result("a", "glob", "bad", "{}", false),
        ];
        let req = Request {
            model: "m",
            system: "",
            messages: &msgs,
            tools: &[],
            stop: &[],
            environment: "",
            max_output_tokens: None,
        };
        let b = body_value(&req);
        let args = b["messages"][1]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap();
        let v: Value = serde_json::from_str(args).unwrap();
        assert_eq!(v, json!({"invalid_arguments": r#"{"pattern": "*"#}));
    }

    #[test]
    fn calls_without_text_get_null_content_and_no_tools_means_no_tool_choice() {
        let msgs = vec![Message::user("x"), Message::tool_call("a", "glob", "{}")];
        let req = Request {
            model: "m",
            system: "",
            messages: &msgs,
            tools: &[],
            stop: &[],
            environment: "",
            max_output_tokens: None,
        };
        let b = body_value(&req);
        assert!(b.get("tool_choice").is_none());
        assert_eq!(b["messages"][1]["content"], Value::Null);
        assert_eq!(b["messages"][0]["role"], "user");
    }
}
