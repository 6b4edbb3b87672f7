//! Canonical conversation → Chat Completions request body. Pure: no IO. The body borrows
//! the conversation and its messages are made and encoded one at a time as the body is
//! written (`provider::body`): a 10,000-message request is never a second copy of the
//! conversation, as a JSON tree or as bytes.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::message::{Kind, Message, compaction_text};
use crate::provider::Request;
use crate::provider::body::JsonBody;

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
    role: &'static str,
    content: Content<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

/// Message content: text, an explicit `null`, or no field at all.
enum Content<'a> {
    Text(Cow<'a, str>),
    Null,
}

impl Serialize for Content<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(t) => s.serialize_str(t),
            Content::Null => s.serialize_none(),
        }
    }
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
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
    fn text(role: &'static str, content: impl Into<Cow<'a, str>>) -> Self {
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

/// The whole body: `rest`, then the wire messages of `req`.
pub fn body<'a>(
    req: &Request<'a>,
    rest: &Rest<'a>,
) -> serde_json::Result<JsonBody<impl Fn() -> WireMessages<'a> + use<'a>>> {
    let (system, messages) = (req.system, req.messages);
    JsonBody::new(rest, "messages", move || WireMessages::new(system, messages))
}

/// Wire messages: the system prompt first; an assistant text and the tool calls that
/// follow it become one message with a `tool_calls` array; results become `role: tool`.
/// Made one at a time, as the body is written.
pub struct WireMessages<'a> {
    /// The last wire message, still open to the tool calls that follow it.
    open: Option<WireMessage<'a>>,
    rest: std::slice::Iter<'a, Message>,
}

impl<'a> WireMessages<'a> {
    fn new(system: &'a str, messages: &'a [Message]) -> Self {
        WireMessages {
            open: (!system.is_empty()).then(|| WireMessage::text("system", system)),
            rest: messages.iter(),
        }
    }
}

impl<'a> Iterator for WireMessages<'a> {
    type Item = WireMessage<'a>;

    fn next(&mut self) -> Option<WireMessage<'a>> {
        for m in self.rest.by_ref() {
            let next = match m.kind {
                Kind::System => WireMessage::text("system", m.content.as_str()),
                Kind::User => WireMessage::text("user", m.content.as_str()),
                Kind::Compaction => WireMessage::text("user", compaction_text(&m.content)),
                Kind::Assistant => WireMessage::text("assistant", m.content.as_str()),
                Kind::ToolCall => {
                    let Some(call) = m.as_tool_call() else { continue };
                    let wire_call = WireCall {
                        id: &call.id,
                        call_type: "function",
                        function: WireFunction {
                            name: &call.function.name,
                            arguments: call.function.wire_arguments_text(),
                        },
                    };
                    match self.open.as_mut() {
                        Some(last) if last.role == "assistant" => {
                            if matches!(&last.content, Content::Text(t) if t.is_empty()) {
                                last.content = Content::Null;
                            }
                            last.tool_calls.push(wire_call);
                            continue;
                        }
                        _ => WireMessage {
                            role: "assistant",
                            content: Content::Null,
                            tool_calls: vec![wire_call],
                            tool_call_id: None,
                        },
                    }
                }
                // Chat Completions takes no reasoning back; another provider's is never sent.
                Kind::Reasoning => continue,
                Kind::ToolResult => {
                    let Some(r) = m.as_tool_result() else { continue };
                    WireMessage {
                        role: "tool",
                        content: Content::Text(Cow::Borrowed(&r.output)),
                        tool_calls: Vec::new(),
                        tool_call_id: Some(&r.tool_call_id),
                    }
                }
            };
            if let Some(done) = self.open.replace(next) {
                return Some(done);
            }
        }
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
    use crate::tools::{ParamSpec, ToolSchema};

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
        };
        let b = body_value(&req);
        assert!(b.get("tool_choice").is_none());
        assert_eq!(b["messages"][1]["content"], Value::Null);
        assert_eq!(b["messages"][0]["role"], "user");
    }
}
