//! Canonical conversation → Chat Completions request body. Pure: no IO.

use serde_json::{Value, json};

use crate::message::Kind;
use crate::provider::Request;

/// The JSON body of a streaming `/chat/completions` request.
pub fn body(req: &Request<'_>) -> Value {
    let mut body = json!({
        "model": req.model,
        "messages": messages(req),
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !req.tools.is_empty() {
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
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!("auto");
    }
    body
}

/// Wire messages: the system prompt first; an assistant text and the tool calls that
/// follow it become one message with a `tool_calls` array; results become `role: tool`.
pub fn messages(req: &Request<'_>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        out.push(json!({"role": "system", "content": req.system}));
    }
    for m in req.messages {
        match m.kind {
            Kind::System => out.push(json!({"role": "system", "content": m.content})),
            Kind::User => out.push(json!({"role": "user", "content": m.content})),
            Kind::Assistant => out.push(json!({"role": "assistant", "content": m.content})),
            Kind::ToolCall => {
                let Some(call) = m.as_tool_call() else { continue };
                let wire_call = json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.function.name, "arguments": call.function.arguments},
                });
                match out.last_mut() {
                    Some(last) if last["role"] == "assistant" => {
                        if last["content"].as_str() == Some("") {
                            last["content"] = Value::Null;
                        }
                        match last.get_mut("tool_calls").and_then(Value::as_array_mut) {
                            Some(calls) => calls.push(wire_call),
                            None => last["tool_calls"] = json!([wire_call]),
                        }
                    }
                    _ => out.push(json!({"role": "assistant", "content": null, "tool_calls": [wire_call]})),
                }
            }
            // Chat Completions takes no reasoning back; another provider's is never sent.
            Kind::Reasoning => {}
            Kind::ToolResult => {
                let Some(r) = m.as_tool_result() else { continue };
                out.push(json!({"role": "tool", "tool_call_id": r.tool_call_id, "content": r.output}));
            }
        }
    }
    out
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
        }];
        let req = Request {
            model: "m",
            system: "sys",
            messages: &msgs,
            tools: &tools,
        };
        let b = body(&req);
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
    fn calls_without_text_get_null_content_and_no_tools_means_no_tool_choice() {
        let msgs = vec![Message::user("x"), Message::tool_call("a", "glob", "{}")];
        let req = Request {
            model: "m",
            system: "",
            messages: &msgs,
            tools: &[],
        };
        let b = body(&req);
        assert!(b.get("tool_choice").is_none());
        assert_eq!(b["messages"][1]["content"], Value::Null);
        assert_eq!(b["messages"][0]["role"], "user");
    }
}
