//! The checks a strict vendor makes on a request before answering, per wire format:
//! Anthropic Messages and Gemini generateContent. `Err` holds the vendor-style message.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::{HashMap, HashSet};

use serde_json::Value;

fn valid_anthropic_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn blocks(content: &Value) -> Result<Vec<&Value>, String> {
    match content {
        Value::String(s) if !s.is_empty() => Ok(Vec::new()),
        Value::Array(b) if !b.is_empty() => Ok(b.iter().collect()),
        _ => Err("messages: content must be a non-empty string or a non-empty array".into()),
    }
}

/// Anthropic `POST /v1/messages`.
pub fn anthropic(path: &str, headers: &HashMap<String, String>, body: &Value) -> Result<(), String> {
    if !path.ends_with("/v1/messages") {
        return Err(format!("unknown path {path}"));
    }
    if headers.get("x-api-key").is_none_or(String::is_empty) {
        return Err("x-api-key header is required".into());
    }
    if headers.get("anthropic-version").is_none() {
        return Err("anthropic-version header is required".into());
    }
    if headers.get("authorization").is_some() {
        return Err("unexpected authorization header".into());
    }
    if !body["model"].is_string() {
        return Err("model: Field required".into());
    }
    if body["max_tokens"].as_u64().is_none_or(|n| n == 0) {
        return Err("max_tokens: Field required".into());
    }
    if body["stream"] != true {
        return Err("this fake only streams".into());
    }
    let mut breakpoints = 0;
    match &body["system"] {
        Value::Null | Value::String(_) => {}
        Value::Array(sys) => {
            for b in sys {
                if b["type"] != "text" || !b["text"].is_string() {
                    return Err("system: blocks must be text".into());
                }
                breakpoints += usize::from(b.get("cache_control").is_some());
            }
        }
        _ => return Err("system: must be a string or text blocks".into()),
    }
    let mut tool_names = HashSet::new();
    for t in body["tools"].as_array().into_iter().flatten() {
        let name = t["name"].as_str().unwrap_or("");
        if !valid_anthropic_id(name) || name.len() > 64 || !tool_names.insert(name) {
            return Err(format!("tools: invalid or duplicate name {name:?}"));
        }
        if t["input_schema"]["type"] != "object" {
            return Err("tools: input_schema.type must be object".into());
        }
        breakpoints += usize::from(t.get("cache_control").is_some());
    }
    let messages = body["messages"].as_array().ok_or("messages: Field required")?;
    if messages.is_empty() {
        return Err("messages: at least one message is required".into());
    }
    let mut seen_ids = HashSet::new();
    let mut open: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        let expected = if i % 2 == 0 { "user" } else { "assistant" };
        if role != expected {
            return Err(format!(
                "messages: roles must alternate between \"user\" and \"assistant\", starting with user (message {i} is {role:?})"
            ));
        }
        let bs = blocks(&m["content"])?;
        breakpoints += bs.iter().filter(|b| b.get("cache_control").is_some()).count();
        if role == "user" {
            let mut answered = Vec::new();
            let mut after_other = false;
            for b in &bs {
                match b["type"].as_str() {
                    Some("tool_result") => {
                        if after_other {
                            return Err(format!("messages.{i}: tool_result blocks must come first"));
                        }
                        let id = b["tool_use_id"].as_str().unwrap_or("");
                        if !open.iter().any(|o| o == id) {
                            return Err(format!(
                                "messages.{i}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                            ));
                        }
                        if !(b["content"].is_string() || b["content"].is_array()) {
                            return Err(format!(
                                "messages.{i}: tool_result content must be a string or blocks"
                            ));
                        }
                        answered.push(id.to_string());
                    }
                    Some("text") => {
                        after_other = true;
                        if b["text"].as_str().is_none_or(str::is_empty) {
                            return Err(format!("messages.{i}: text content blocks must be non-empty"));
                        }
                    }
                    Some("image" | "document") => after_other = true,
                    other => {
                        return Err(format!(
                            "messages.{i}: block type {other:?} not allowed in a user message"
                        ));
                    }
                }
            }
            if let Some(missing) = open.iter().find(|o| !answered.contains(o)) {
                return Err(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {missing}"
                ));
            }
            open.clear();
        } else {
            if !open.is_empty() {
                return Err(format!("messages.{i}: tool_use without tool_result"));
            }
            let mut before_content = true;
            for b in &bs {
                match b["type"].as_str() {
                    Some("thinking") => {
                        if !before_content {
                            return Err(format!("messages.{i}: thinking blocks must come first"));
                        }
                        if b["signature"].as_str().is_none_or(str::is_empty) || !b["thinking"].is_string() {
                            return Err(format!("messages.{i}: thinking.signature: Field required"));
                        }
                        if b.get("cache_control").is_some() {
                            return Err(format!("messages.{i}: thinking blocks cannot be cached"));
                        }
                    }
                    Some("redacted_thinking") => {
                        if !b["data"].is_string() {
                            return Err(format!("messages.{i}: redacted_thinking.data: Field required"));
                        }
                    }
                    Some("text") => {
                        before_content = false;
                        if b["text"].as_str().is_none_or(|t| t.trim().is_empty()) {
                            return Err(format!(
                                "messages.{i}: text content blocks must contain non-whitespace text"
                            ));
                        }
                    }
                    Some("tool_use") => {
                        before_content = false;
                        let id = b["id"].as_str().unwrap_or("");
                        if !valid_anthropic_id(id) {
                            return Err(format!(
                                "messages.{i}.content.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$' ({id:?})"
                            ));
                        }
                        if !seen_ids.insert(id.to_string()) {
                            return Err(format!("messages.{i}: `tool_use` ids must be unique ({id})"));
                        }
                        if !b["input"].is_object() || b["name"].as_str().is_none_or(str::is_empty) {
                            return Err(format!("messages.{i}: tool_use needs a name and an input object"));
                        }
                        open.push(id.to_string());
                    }
                    other => {
                        return Err(format!(
                            "messages.{i}: block type {other:?} not allowed from the assistant"
                        ));
                    }
                }
            }
        }
    }
    if !open.is_empty() {
        return Err("the last message has tool_use blocks without results".into());
    }
    if messages.last().is_some_and(|m| m["role"] != "user") {
        return Err("the last message must be from the user".into());
    }
    if breakpoints > 4 {
        return Err(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."
        ));
    }
    if body.get("thinking").is_some()
        && let Some(last) = messages.iter().rev().find(|m| m["role"] == "assistant")
        && let Some(bs) = last["content"].as_array()
        && bs.iter().any(|b| b["type"] == "tool_use")
        && !bs
            .first()
            .is_some_and(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking")
    {
        return Err("Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.".into());
    }
    if body.get("thinking").is_some() && body.get("temperature").is_some() {
        return Err("temperature may only be set to 1 when thinking is enabled".into());
    }
    Ok(())
}

const GEMINI_SCHEMA_KEYS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

fn gemini_schema(s: &Value, at: &str) -> Result<(), String> {
    let obj = s.as_object().ok_or(format!("{at}: schema must be an object"))?;
    for (k, v) in obj {
        if !GEMINI_SCHEMA_KEYS.contains(&k.as_str()) {
            return Err(format!(
                "Invalid JSON payload received. Unknown name \"{k}\" at '{at}': Cannot find field."
            ));
        }
        if k == "properties" {
            let props = v
                .as_object()
                .ok_or(format!("{at}.properties must be an object"))?;
            if props.is_empty() {
                return Err(format!("{at}.properties: should be non-empty for OBJECT type"));
            }
            for (name, p) in props {
                gemini_schema(p, &format!("{at}.properties[{name}]"))?;
            }
        }
        if k == "items" {
            gemini_schema(v, &format!("{at}.items"))?;
        }
    }
    if obj.get("type") == Some(&Value::String("object".into())) && obj.get("properties").is_none() {
        return Err(format!("{at}.properties: should be non-empty for OBJECT type"));
    }
    Ok(())
}

/// Gemini `POST …/models/{model}:streamGenerateContent?alt=sse`.
pub fn gemini(
    path: &str,
    query: &str,
    headers: &HashMap<String, String>,
    body: &Value,
) -> Result<(), String> {
    let Some(model) = path
        .split("/models/")
        .nth(1)
        .and_then(|m| m.strip_suffix(":streamGenerateContent"))
    else {
        return Err(format!("unknown path {path}"));
    };
    if !query.split('&').any(|q| q == "alt=sse") {
        return Err("this fake only streams with alt=sse".into());
    }
    if headers.get("x-goog-api-key").is_none_or(String::is_empty) {
        return Err("API key not valid. Please pass a valid API key.".into());
    }
    if let Some(sys) = body.get("systemInstruction")
        && sys["parts"]
            .as_array()
            .is_none_or(|p| p.is_empty() || p.iter().any(|p| !p["text"].is_string()))
    {
        return Err("systemInstruction: parts must be text".into());
    }
    for t in body["tools"].as_array().into_iter().flatten() {
        for d in t["functionDeclarations"].as_array().into_iter().flatten() {
            if d["name"].as_str().is_none_or(str::is_empty) {
                return Err("functionDeclarations: name is required".into());
            }
            if let Some(p) = d.get("parameters") {
                gemini_schema(
                    p,
                    &format!("tools.function_declarations[{}].parameters", d["name"]),
                )?;
            }
        }
    }
    let contents = body["contents"].as_array().ok_or("contents is not specified")?;
    if contents.is_empty() {
        return Err("contents is not specified".into());
    }
    let signatures_required = model.starts_with("gemini-3");
    let mut prev: Option<&Value> = None;
    for (i, c) in contents.iter().enumerate() {
        let role = c["role"].as_str().unwrap_or("");
        if role != "user" && role != "model" {
            return Err(format!("contents[{i}].role must be user or model"));
        }
        if i == 0 && role != "user" {
            return Err("contents[0] must come from the user".into());
        }
        let parts = c["parts"]
            .as_array()
            .filter(|p| !p.is_empty())
            .ok_or(format!("contents[{i}].parts must not be empty"))?;
        for p in parts {
            let kinds = ["text", "functionCall", "functionResponse", "inlineData"]
                .iter()
                .filter(|k| p.get(**k).is_some())
                .count();
            if kinds != 1 {
                return Err(format!("contents[{i}]: each part holds exactly one kind of data"));
            }
            if let Some(fc) = p.get("functionCall") {
                if role != "model" {
                    return Err(format!("contents[{i}]: functionCall in a user turn"));
                }
                if fc["name"].as_str().is_none_or(str::is_empty)
                    || !fc.get("args").is_none_or(Value::is_object)
                {
                    return Err(format!(
                        "contents[{i}]: functionCall needs a name and object args"
                    ));
                }
            }
        }
        let calls: Vec<&Value> = parts.iter().filter_map(|p| p.get("functionCall")).collect();
        if signatures_required
            && let Some(first) = parts.iter().find(|p| p.get("functionCall").is_some())
            && first["thoughtSignature"].as_str().is_none_or(str::is_empty)
        {
            return Err(format!(
                "Function call `{}` in the `{i}.` content block is missing a `thought_signature`.",
                first["functionCall"]["name"]
            ));
        }
        let responses: Vec<&Value> = parts.iter().filter_map(|p| p.get("functionResponse")).collect();
        if !responses.is_empty() {
            let prev_calls: Vec<&Value> = prev
                .filter(|p| p["role"] == "model")
                .and_then(|p| p["parts"].as_array())
                .map(|ps| ps.iter().filter_map(|p| p.get("functionCall")).collect())
                .unwrap_or_default();
            if prev_calls.is_empty() {
                return Err(format!(
                    "Please ensure that function response turn comes immediately after a function call turn. (contents[{i}])"
                ));
            }
            if responses.len() != prev_calls.len() {
                return Err(format!(
                    "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn. (contents[{i}])"
                ));
            }
            for r in &responses {
                if !r["response"].is_object() {
                    return Err(format!(
                        "contents[{i}]: functionResponse.response must be an object"
                    ));
                }
                let matched = prev_calls.iter().any(|c| {
                    c["name"] == r["name"]
                        && (c.get("id").is_none() || r.get("id").is_none() || c["id"] == r["id"])
                });
                if !matched {
                    return Err(format!(
                        "contents[{i}]: functionResponse {} matches no functionCall",
                        r["name"]
                    ));
                }
            }
        }
        if let Some(p) = prev
            && p["role"] == "model"
            && p["parts"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|x| x.get("functionCall").is_some()))
            && responses.is_empty()
        {
            return Err(format!(
                "Please ensure that function call turn comes immediately before a function response turn. (contents[{i}])"
            ));
        }
        if role == "model" && !calls.is_empty() && prev.is_some_and(|p| p["role"] == "model") {
            return Err(format!("contents[{i}]: two model turns in a row"));
        }
        prev = Some(c);
    }
    if prev.is_some_and(|p| p["role"] != "user") {
        return Err("the last content must come from the user".into());
    }
    Ok(())
}
