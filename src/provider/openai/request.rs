//! Canonical conversation → Chat Completions request body. Pure: no IO. The body borrows
//! the conversation and is serialised straight to bytes (no intermediate JSON tree), so a
//! 10,000-message request costs one pass over the text.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::message::{Kind, Message, compaction_text};
use crate::provider::Request;

/// The body of a streaming `/chat/completions` request; `extra` carries the endpoint's
/// options (temperature, output cap, effort).
#[derive(Serialize)]
pub struct Body<'a> {
    model: &'a str,
    messages: WireMessages<'a>,
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
struct WireMessage<'a> {
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

/// The body of a streaming `/chat/completions` request.
pub fn body<'a>(req: &Request<'a>) -> Body<'a> {
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
    Body {
        model: req.model,
        messages: WireMessages {
            system: req.system,
            messages: req.messages,
        },
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        stop: req.stop,
        tool_choice: (!tools.is_empty()).then_some("auto"),
        tools,
        extra: Map::new(),
    }
}

/// Wire messages: the system prompt first; an assistant text and the tool calls that
/// follow it become one message with a `tool_calls` array; results become `role: tool`.
/// Made one at a time while the body is serialised: a long conversation gets no second
/// list beside its body.
struct WireMessages<'a> {
    system: &'a str,
    messages: &'a [Message],
}

impl Serialize for WireMessages<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(None)?;
        // The last wire message, still open to the tool calls that follow it.
        let mut open: Option<WireMessage<'_>> =
            (!self.system.is_empty()).then(|| WireMessage::text("system", self.system));
        for m in self.messages {
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
                    match open.as_mut() {
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
            if let Some(done) = open.replace(next) {
                seq.serialize_element(&done)?;
            }
        }
        if let Some(done) = open {
            seq.serialize_element(&done)?;
        }
        seq.end()
    }
}

/// About the size of the encoded body, a little over rather than under (text plus its
/// JSON escapes, and a fixed allowance per message and per tool), so the buffer it is
/// written to is sized once instead of growing by doubling.
pub fn size_hint(req: &Request<'_>) -> usize {
    let text = |t: &str| t.len() + memchr::memchr3_iter(b'"', b'\\', b'\n', t.as_bytes()).count();
    let messages: usize = req
        .messages
        .iter()
        .map(|m| {
            let data = if let Some(c) = m.as_tool_call() {
                c.id.len() + c.function.name.len() + text(&c.function.arguments)
            } else if let Some(r) = m.as_tool_result() {
                r.tool_call_id.len() + text(&r.output)
            } else {
                0
            };
            text(&m.content) + data + 64
        })
        .sum();
    let tools: usize = req.tools.iter().map(|t| text(&t.description) + 768).sum();
    let size = messages + text(req.system) + tools + 512;
    size + size / 32
}

/// `body` as a JSON value (tests and callers that inspect it).
pub fn body_value(req: &Request<'_>) -> Value {
    serde_json::to_value(body(req)).unwrap_or(Value::Null)
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
    fn size_hint_is_a_little_over_the_encoded_body() {
        let mut msgs = vec![Message::user("say \"hi\"\nplease")];
        for i in 0..200 {
            let id = format!("call_{i}");
            msgs.push(Message::tool_call(
                &id,
                "bash",
                format!(r#"{{"command":"echo \"{i}\""}}"#),
            ));
            let out = json!({"tool_success": true, "result": {"output": format!("{i}\n\"quoted\"\n{}", "x".repeat(300))}});
            msgs.push(Message::tool_result(&id, "bash", "exit 0", out.to_string(), true));
            msgs.push(Message::assistant(format!("Done with {i}.")));
        }
        let tools = vec![ToolSchema {
            name: "bash".into(),
            description: "run".into(),
            parameters: vec![ParamSpec::new("command", "string", "the command", true)],
            json_schema: None,
        }];
        let req = Request {
            model: "m",
            system: "You are a test.",
            messages: &msgs,
            tools: &tools,
            stop: &[],
        };
        let size = serde_json::to_vec(&body(&req)).unwrap().len();
        let hint = size_hint(&req);
        assert!(
            hint >= size && hint <= size + size / 4,
            "hint {hint} for {size} bytes"
        );
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
