//! The Gemini `generateContent` request body: canonical history → `systemInstruction`,
//! `contents` (`user` / `model` turns with text, `functionCall` and `functionResponse`
//! parts, `thoughtSignature`s where they came from), `tools.functionDeclarations` and
//! `generationConfig`. Pure: no IO.

use serde_json::{Map, Value, json};

use super::schema;
use crate::message::{Kind, Message};
use crate::provider::Request;

/// The signature Google documents for replaying a function call that has none (history
/// from another provider); Gemini 3 rejects an unsigned call otherwise.
pub const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// Settings of one request body that are not in the history.
#[derive(Clone, Debug)]
pub struct Options<'a> {
    /// The configured provider name: signatures produced under it are sent back.
    pub name: &'a str,
    pub max_output_tokens: Option<u64>,
    pub temperature: Option<f64>,
    /// `generationConfig.thinkingConfig`, for models that think.
    pub thinking: Option<Value>,
}

/// True for models that think (and so stream thought summaries and signatures).
pub fn is_thinking_model(model: &str) -> bool {
    let m = model.rsplit('/').next().unwrap_or(model);
    m.starts_with("gemini-2.5") || m.starts_with("gemini-3") || m.contains("thinking")
}

fn requires_signatures(model: &str) -> bool {
    model.rsplit('/').next().unwrap_or(model).starts_with("gemini-3")
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
    let mut body = json!({"contents": contents(req.messages, opts.name, requires_signatures(req.model))});
    if !system.is_empty() {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    if !req.tools.is_empty() {
        let decls: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut d = json!({"name": t.name, "description": t.description});
                if let Some(p) = schema::adapt(&t.to_json_schema()) {
                    d["parameters"] = p;
                }
                d
            })
            .collect();
        body["tools"] = json!([{"functionDeclarations": decls}]);
    }
    let mut config = Map::new();
    if let Some(n) = opts.max_output_tokens {
        config.insert("maxOutputTokens".into(), json!(n));
    }
    if let Some(t) = opts.temperature {
        config.insert("temperature".into(), json!(t));
    }
    if !req.stop.is_empty() {
        config.insert("stopSequences".into(), json!(req.stop));
    }
    if let Some(t) = &opts.thinking {
        config.insert("thinkingConfig".into(), t.clone());
    }
    if !config.is_empty() {
        body["generationConfig"] = Value::Object(config);
    }
    body
}

/// One turn being built: its parts, and the thought signatures met in it with the index
/// of the part that followed each.
struct Turn {
    role: &'static str,
    parts: Vec<Value>,
    signatures: Vec<(String, usize)>,
}

/// `contents` alternating `user` / `model`, starting with `user`; every `functionCall`
/// answered by a `functionResponse` in the next user turn; a response with no matching
/// call becomes text.
pub fn contents(history: &[Message], name: &str, sign_calls: bool) -> Vec<Value> {
    let mut turns: Vec<Turn> = Vec::new();
    let mut push = |role: &'static str, part: Option<Value>, signature: Option<String>| {
        if turns.last().is_none_or(|t| t.role != role) {
            turns.push(Turn {
                role,
                parts: Vec::new(),
                signatures: Vec::new(),
            });
        }
        if let Some(t) = turns.last_mut() {
            if let Some(sig) = signature {
                t.signatures.push((sig, t.parts.len()));
            }
            if let Some(p) = part {
                t.parts.push(p);
            }
        }
    };
    for m in history {
        match m.kind {
            Kind::System => {}
            Kind::Compaction => push(
                "user",
                Some(json!({"text": crate::message::compaction_text(&m.content)})),
                None,
            ),
            Kind::User if !m.content.is_empty() => push("user", Some(json!({"text": m.content})), None),
            Kind::Assistant if !m.content.trim().is_empty() => {
                push("model", Some(json!({"text": m.content})), None);
            }
            Kind::User | Kind::Assistant => {}
            Kind::Reasoning => {
                let Some(r) = m.as_reasoning() else { continue };
                if r.provider != name {
                    continue;
                }
                if let Some(sig) = r.opaque.get("thoughtSignature").and_then(Value::as_str) {
                    push("model", None, Some(sig.to_string()));
                }
            }
            Kind::ToolCall => {
                let Some(c) = m.as_tool_call() else { continue };
                let args = c.function.wire_arguments_value();
                push(
                    "model",
                    Some(json!({"functionCall": {"id": c.id, "name": c.function.name, "args": args}})),
                    None,
                );
            }
            Kind::ToolResult => {
                let Some(r) = m.as_tool_result() else { continue };
                let response = match serde_json::from_str::<Value>(&r.output) {
                    Ok(Value::Object(map)) => Value::Object(map),
                    Ok(other) => json!({"output": other}),
                    Err(_) => json!({"output": r.output}),
                };
                push(
                    "user",
                    Some(
                        json!({"functionResponse": {"id": r.tool_call_id, "name": r.name, "response": response}}),
                    ),
                    None,
                );
            }
        }
    }
    let mut out: Vec<Value> = Vec::with_capacity(turns.len() + 1);
    let mut open: Vec<(String, String)> = Vec::new();
    for mut turn in turns {
        if turn.role == "model" {
            place_signatures(&mut turn, sign_calls);
            if turn.parts.is_empty() {
                continue;
            }
            if !open.is_empty() {
                append_user(&mut out, missing_responses(&mut open));
            }
            open = turn
                .parts
                .iter()
                .filter_map(|p| p.get("functionCall"))
                .map(|c| (str_of(c, "id"), str_of(c, "name")))
                .collect();
            if out.is_empty() {
                out.push(json!({"role": "user", "parts": [{"text": "(continued)"}]}));
            }
            out.push(json!({"role": "model", "parts": turn.parts}));
            continue;
        }
        let mut responses = Vec::new();
        let mut others = Vec::new();
        for p in turn.parts {
            let Some(fr) = p.get("functionResponse") else {
                others.push(p);
                continue;
            };
            let id = str_of(fr, "id");
            if let Some(pos) = open.iter().position(|(oid, _)| *oid == id) {
                open.remove(pos);
                responses.push(p);
            } else {
                others.push(json!({"text": format!(
                    "(result of an earlier tool call {} {id}) {}",
                    str_of(fr, "name"),
                    fr.get("response").map(Value::to_string).unwrap_or_default()
                )}));
            }
        }
        responses.extend(missing_responses(&mut open));
        responses.extend(others);
        append_user(&mut out, responses);
    }
    if !open.is_empty() {
        append_user(&mut out, missing_responses(&mut open));
    }
    out
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

fn append_user(out: &mut Vec<Value>, parts: Vec<Value>) {
    if parts.is_empty() {
        return;
    }
    match out.last_mut() {
        Some(last) if last["role"] == "user" => {
            if let Some(existing) = last["parts"].as_array_mut() {
                existing.extend(parts);
            }
        }
        _ => out.push(json!({"role": "user", "parts": parts})),
    }
}

fn missing_responses(open: &mut Vec<(String, String)>) -> Vec<Value> {
    open.drain(..)
        .map(|(id, name)| {
            let response = crate::tools::Envelope::interrupted(None).to_value();
            json!({"functionResponse": {"id": id, "name": name, "response": response}})
        })
        .collect()
}

/// Puts each signature back on a part: the first one on the turn's first function call
/// (where Gemini returns it), others on the part that followed them. A turn whose first
/// call has none gets the documented skip value when the model requires signatures.
fn place_signatures(turn: &mut Turn, sign_calls: bool) {
    let first_call = turn.parts.iter().position(|p| p.get("functionCall").is_some());
    for (i, (sig, at)) in std::mem::take(&mut turn.signatures).into_iter().enumerate() {
        let target = match first_call {
            Some(c) if i == 0 => Some(c),
            _ => (at..turn.parts.len())
                .chain((0..at.min(turn.parts.len())).rev())
                .find(|&j| turn.parts[j].get("thoughtSignature").is_none()),
        };
        if let Some(j) = target
            && let Some(part) = turn.parts.get_mut(j)
            && part.get("thoughtSignature").is_none()
        {
            part["thoughtSignature"] = Value::String(sig);
        }
    }
    if sign_calls
        && let Some(c) = first_call
        && let Some(part) = turn.parts.get_mut(c)
        && part.get("thoughtSignature").is_none()
    {
        part["thoughtSignature"] = Value::String(SKIP_SIGNATURE.to_string());
    }
}
