//! Canonical conversation → Responses API request body (`input` items). Pure: no IO.
//! Reasoning goes back only when this provider produced it; arguments are always JSON.

use serde_json::{Value, json};

use crate::message::Kind;
use crate::provider::{Request, Spec};

/// True for models that reason (and accept the `reasoning` parameter).
pub fn is_reasoning_model(model: &str) -> bool {
    let m = model.rsplit('/').next().unwrap_or(model);
    m.starts_with("gpt-5")
        || m.starts_with("o1")
        || m.starts_with("o3")
        || m.starts_with("o4")
        || m.starts_with("codex")
}

/// The JSON body of a streaming `/responses` request (stateless: `store: false`).
pub fn body(req: &Request<'_>, spec: &Spec) -> Value {
    let mut body = json!({
        "model": req.model,
        "input": input(req, &spec.name),
        "stream": true,
        "store": false,
    });
    if !req.system.is_empty() {
        body["instructions"] = json!(req.system);
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description,
                    "parameters": t.to_json_schema(), "strict": false})
            })
            .collect();
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!("auto");
    }
    if is_reasoning_model(req.model) || spec.reasoning_effort.is_some() {
        let mut reasoning = json!({"summary": "auto"});
        if let Some(e) = &spec.reasoning_effort {
            reasoning["effort"] = json!(e);
        }
        body["reasoning"] = reasoning;
        // With store:false the reasoning comes back encrypted, to be sent on later turns.
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    if let Some(t) = spec.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(n) = spec.max_output_tokens {
        body["max_output_tokens"] = json!(n);
    }
    body
}

/// The `input` items: messages, `function_call` / `function_call_output`, and this
/// provider's own reasoning items (with their encrypted content).
pub fn input(req: &Request<'_>, provider: &str) -> Vec<Value> {
    let mut out = Vec::with_capacity(req.messages.len());
    for m in req.messages {
        match m.kind {
            Kind::System => out.push(json!({"role": "system", "content": m.content})),
            Kind::User => out.push(json!({"role": "user", "content": m.content})),
            Kind::Compaction => {
                out.push(json!({"role": "user", "content": crate::message::compaction_text(&m.content)}))
            }
            Kind::Assistant => out.push(json!({"role": "assistant", "content": m.content})),
            Kind::Reasoning => {
                let Some(r) = m.as_reasoning() else { continue };
                if r.provider == provider && r.opaque.get("encrypted_content").is_some() {
                    out.push(r.opaque.clone());
                }
            }
            Kind::ToolCall => {
                let Some(c) = m.as_tool_call() else { continue };
                out.push(
                    json!({"type": "function_call", "call_id": c.id, "name": c.function.name,
                    "arguments": c.function.wire_arguments()}),
                );
            }
            Kind::ToolResult => {
                let Some(r) = m.as_tool_result() else { continue };
                out.push(
                    json!({"type": "function_call_output", "call_id": r.tool_call_id, "output": r.output}),
                );
            }
        }
    }
    out
}
