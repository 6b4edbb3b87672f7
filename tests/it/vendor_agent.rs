//! One real agent turn per vendor wire format against its strict loopback fake: the model
//! thinks, writes, calls a tool whose arguments stream in pieces, the tool runs, and the
//! follow-up request is checked field by field against the API's documented shape
//! (Anthropic Messages; Gemini generateContent).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::common::agent::{TestAgent, text_of, turn_end};
use crate::common::fake_provider::Reply;
use crate::common::fake_vendor::{FakeVendor, Wire, anthropic_reply, gemini_reply};
use ikigai::config::{Config, Secret};
use ikigai::protocol::{Event, TurnEndReason};
use ikigai::provider::Provider;
use serde_json::{Value, json};

fn config(fake: &FakeVendor, provider: &str, model: &str) -> Config {
    Config {
        provider: Some(provider.into()),
        base_url: Some(fake.base_url.clone()),
        api_key: Some(Secret::new("vendor-key")),
        model: Some(model.into()),
        retry_base_delay_ms: 10,
        ..Config::default()
    }
}

fn agent(config: Config, cwd: &std::path::Path) -> TestAgent {
    let provider: Arc<dyn Provider> = crate::common::provider(&config);
    TestAgent::start_with(config, provider, cwd)
}

fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
    std::fs::write(dir.path().join("main.rs"), "fn main() {}\n").unwrap();
    dir
}

fn started_call(events: &[Event]) -> (String, String, String) {
    events
        .iter()
        .find_map(|e| match e {
            Event::ToolCallStarted { id, name, arguments } => {
                Some((id.clone(), name.clone(), arguments.clone()))
            }
            _ => None,
        })
        .expect("a tool call started")
}

fn finished_output(events: &[Event]) -> (String, bool) {
    events
        .iter()
        .find_map(|e| match e {
            Event::ToolCallFinished { output, success, .. } => Some((output.clone(), *success)),
            _ => None,
        })
        .expect("a tool call finished")
}

#[tokio::test]
async fn anthropic_turn_with_streamed_tool_arguments_and_a_documented_follow_up() {
    let dir = workdir();
    let fake = FakeVendor::start(Wire::Anthropic);
    fake.push(anthropic_reply(
        Some(("I should look for text files.", "sig-EqQBCgIYAhIM")),
        "Let me look.",
        &[("toolu_01A09q90qw90lq917835lq9", "glob", r#"{"pattern": "*.txt"}"#)],
    ));
    fake.push(anthropic_reply(None, "There is one: notes.txt.", &[]));
    let mut a = agent(config(&fake, "anthropic", "claude-sonnet-4-5"), dir.path());
    let events = a.turn("which text files are here?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done), "{events:?}");
    assert_eq!(text_of(&events), "Let me look.There is one: notes.txt.");
    let (id, name, arguments) = started_call(&events);
    assert_eq!(
        (id.as_str(), name.as_str()),
        ("toolu_01A09q90qw90lq917835lq9", "glob")
    );
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"pattern": "*.txt"})
    );
    let (output, success) = finished_output(&events);
    assert!(
        success && output.contains("notes.txt") && !output.contains("main.rs"),
        "{output}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ReasoningDelta { text } if text.contains("text files")))
    );

    let reqs = fake.requests();
    assert_eq!(fake.rejections(), Vec::<String>::new());
    assert_eq!(reqs.len(), 2);
    let r = &reqs[1];
    // Transport: POST /v1/messages with the key and version headers.
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.headers["x-api-key"], "vendor-key");
    assert_eq!(r.headers["anthropic-version"], "2023-06-01");
    assert_eq!(r.headers["content-type"], "application/json");
    let b = &r.body;
    assert_eq!(b["model"], "claude-sonnet-4-5");
    assert!(b["max_tokens"].as_u64().unwrap() >= 1024);
    assert_eq!(b["stream"], true);
    // system: one text block, cached.
    let system = b["system"].as_array().unwrap();
    assert_eq!(system.len(), 1);
    assert_eq!(system[0]["type"], "text");
    assert!(system[0]["text"].as_str().unwrap().contains("You are a test."));
    assert_eq!(system[0]["cache_control"], json!({"type": "ephemeral"}));
    // tools: {name, description, input_schema}; the last one carries the breakpoint.
    let tools = b["tools"].as_array().unwrap();
    let glob = tools.iter().find(|t| t["name"] == "glob").unwrap();
    assert!(glob["description"].as_str().is_some_and(|d| !d.is_empty()));
    assert_eq!(glob["input_schema"]["type"], "object");
    assert!(glob["input_schema"]["properties"]["pattern"].is_object());
    assert_eq!(
        tools.last().unwrap()["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        tools.iter().filter(|t| t.get("cache_control").is_some()).count(),
        1
    );
    // messages: user, assistant (thinking, text, tool_use), user (tool_result).
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 3, "{m:#?}");
    assert_eq!(
        m[0],
        json!({"role": "user", "content": [{"type": "text", "text": "which text files are here?"}]})
    );
    assert_eq!(m[1]["role"], "assistant");
    assert_eq!(
        m[1]["content"],
        json!([
            {"type": "thinking", "thinking": "I should look for text files.", "signature": "sig-EqQBCgIYAhIM"},
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "glob", "input": {"pattern": "*.txt"}},
        ])
    );
    assert_eq!(m[2]["role"], "user");
    let results = m[2]["content"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    let tr = &results[0];
    assert_eq!(tr["type"], "tool_result");
    assert_eq!(tr["tool_use_id"], "toolu_01A09q90qw90lq917835lq9");
    assert!(tr.get("is_error").is_none());
    assert_eq!(tr["cache_control"], json!({"type": "ephemeral"}));
    let envelope: Value = serde_json::from_str(tr["content"].as_str().unwrap()).unwrap();
    assert_eq!(envelope["tool_success"], true);
    assert!(envelope.to_string().contains("notes.txt"));
}

#[tokio::test]
async fn gemini_turn_with_streamed_tool_arguments_and_a_documented_follow_up() {
    let dir = workdir();
    let fake = FakeVendor::start(Wire::Gemini);
    fake.push(gemini_reply(
        "**Finding files** I will search for text files.",
        "CiIBVKhc7vB+sig",
        "Let me look.",
        &[("glob", json!({"pattern": "*.txt"}))],
    ));
    fake.push(gemini_reply("", "", "There is one: notes.txt.", &[]));
    let mut a = agent(config(&fake, "google", "gemini-2.5-flash"), dir.path());
    let events = a.turn("which text files are here?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done), "{events:?}");
    assert_eq!(text_of(&events), "Let me look.There is one: notes.txt.");
    let (id, name, arguments) = started_call(&events);
    assert_eq!(name, "glob");
    assert_eq!(id, "call_resp-fake-1_1");
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"pattern": "*.txt"})
    );
    let (output, success) = finished_output(&events);
    assert!(success && output.contains("notes.txt"), "{output}");

    let reqs = fake.requests();
    assert_eq!(fake.rejections(), Vec::<String>::new());
    assert_eq!(reqs.len(), 2);
    let r = &reqs[1];
    assert_eq!(r.path, "/v1beta/models/gemini-2.5-flash:streamGenerateContent");
    assert_eq!(r.query, "alt=sse");
    assert_eq!(r.headers["x-goog-api-key"], "vendor-key");
    assert!(!r.headers.contains_key("authorization"));
    let b = &r.body;
    assert_eq!(b["systemInstruction"]["parts"].as_array().unwrap().len(), 1);
    assert!(
        b["systemInstruction"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .contains("You are a test.")
    );
    let decls = b["tools"][0]["functionDeclarations"].as_array().unwrap();
    let glob = decls.iter().find(|d| d["name"] == "glob").unwrap();
    assert_eq!(glob["parameters"]["type"], "object");
    assert!(glob["parameters"]["properties"]["pattern"].is_object());
    assert_eq!(b["generationConfig"]["thinkingConfig"]["includeThoughts"], true);
    let c = b["contents"].as_array().unwrap();
    assert_eq!(c.len(), 3, "{c:#?}");
    assert_eq!(
        c[0],
        json!({"role": "user", "parts": [{"text": "which text files are here?"}]})
    );
    assert_eq!(c[1]["role"], "model");
    // The signature goes back on the call it came with; thought text is not sent back.
    assert_eq!(
        c[1]["parts"],
        json!([
            {"text": "Let me look."},
            {"functionCall": {"id": id, "name": "glob", "args": {"pattern": "*.txt"}}, "thoughtSignature": "CiIBVKhc7vB+sig"},
        ])
    );
    assert_eq!(c[2]["role"], "user");
    let parts = c[2]["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 1);
    let fr = &parts[0]["functionResponse"];
    assert_eq!(fr["name"], "glob");
    assert_eq!(fr["id"], id.as_str());
    assert_eq!(fr["response"]["tool_success"], true);
    assert!(fr["response"].to_string().contains("notes.txt"));
}

#[tokio::test]
async fn strict_fakes_reject_what_the_vendors_reject() {
    let client = reqwest::Client::new();
    let anthropic = FakeVendor::start(Wire::Anthropic);
    let post = |url: String, body: Value, key: (&'static str, &'static str)| {
        let client = client.clone();
        async move {
            let r = client
                .post(url)
                .header(key.0, key.1)
                .header("anthropic-version", "2023-06-01")
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let url = format!("{}/messages", anthropic.base_url);
    let key = ("x-api-key", "k");
    let two_users = json!({"model": "m", "max_tokens": 10, "stream": true, "messages": [
        {"role": "user", "content": "a"}, {"role": "user", "content": "b"}]});
    let (code, body) = post(url.clone(), two_users, key).await;
    assert_eq!(code, 400);
    assert!(body.contains("alternate"), "{body}");
    let orphan_result = json!({"model": "m", "max_tokens": 10, "stream": true, "messages": [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "r"}]}]});
    let (code, body) = post(url.clone(), orphan_result, key).await;
    assert_eq!(code, 400);
    assert!(body.contains("tool_use_id"), "{body}");
    let bad_id = json!({"model": "m", "max_tokens": 10, "stream": true, "messages": [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call:1", "name": "glob", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call:1", "content": "r"}]}]});
    let (code, body) = post(url, bad_id, key).await;
    assert_eq!(code, 400);
    assert!(body.contains("pattern"), "{body}");

    let gemini = FakeVendor::start(Wire::Gemini);
    let url = format!(
        "{}/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        gemini.base_url
    );
    let key = ("x-goog-api-key", "k");
    let response_without_call = json!({"contents": [
        {"role": "user", "parts": [{"text": "a"}]},
        {"role": "model", "parts": [{"text": "ok"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "glob", "response": {"x": 1}}}]}]});
    let (code, body) = post(url.clone(), response_without_call, key).await;
    assert_eq!(code, 400);
    assert!(
        body.contains("function response turn comes immediately after a function call turn"),
        "{body}"
    );
    let unsigned = json!({"contents": [
        {"role": "user", "parts": [{"text": "a"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "glob", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "glob", "response": {"x": 1}}}]}]});
    let g3 = format!(
        "{}/models/gemini-3-flash-preview:streamGenerateContent?alt=sse",
        gemini.base_url
    );
    let (code, body) = post(g3, unsigned, key).await;
    assert_eq!(code, 400);
    assert!(body.contains("thought_signature"), "{body}");
    assert_eq!(anthropic.rejections().len(), 3);
    assert_eq!(gemini.rejections().len(), 2);
}

fn retries(events: &[Event]) -> Vec<(u32, f64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Retrying {
                attempt,
                in_secs,
                reason,
            } => Some((*attempt, *in_secs, reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn anthropic_overload_in_the_stream_before_any_text_is_retried_by_the_agent() {
    let dir = workdir();
    let fake = FakeVendor::start(Wire::Anthropic);
    fake.push(Reply::events(vec![
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n".into(),
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".into(),
    ]));
    fake.push(Reply::status(
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    ));
    fake.push(anthropic_reply(None, "Back again.", &[]));
    let mut a = agent(config(&fake, "anthropic", "claude-sonnet-4-5"), dir.path());
    let events = a.turn("hi").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done), "{events:?}");
    assert_eq!(text_of(&events), "Back again.");
    let r = retries(&events);
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(
        r.iter().all(|(_, _, why)| why.contains("overloaded_error")),
        "{r:?}"
    );
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test]
async fn gemini_resource_exhausted_is_retried_after_the_vendors_hint() {
    let dir = workdir();
    let fake = FakeVendor::start(Wire::Gemini);
    fake.push(Reply::status(
        429,
        &json!({"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.05s"}]}})
        .to_string(),
    ));
    fake.push(gemini_reply("", "", "Hello.", &[]));
    let mut a = agent(config(&fake, "google", "gemini-2.5-flash"), dir.path());
    let events = a.turn("hi").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done), "{events:?}");
    assert_eq!(text_of(&events), "Hello.");
    let r = retries(&events);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!((r[0].1 - 0.05).abs() < 1e-9, "the retry hint is honoured: {r:?}");
}
