//! Switching provider mid-session: one canonical history holding tool calls and
//! reasoning produced by OpenAI-compatible, Anthropic and Gemini streams (decoded from the
//! recorded fixtures) is serialised for each vendor and accepted by its strict fake;
//! reasoning goes back only to the provider that produced it, ids are adapted stably.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::fake_vendor::{FakeVendor, Wire, anthropic_reply, gemini_reply};
use futures_util::StreamExt;
use ikigai::config::{Config, Secret};
use ikigai::message::{Kind, Message};
use ikigai::provider::{Provider, Request, StreamEvent};
use ikigai::tools::Registry;
use serde_json::{Value, json};

fn build(name: &str, base_url: &str, model: &str) -> Arc<dyn Provider> {
    let config = Config {
        provider: Some(name.into()),
        base_url: Some(base_url.into()),
        api_key: Some(Secret::new("k")),
        model: Some(model.into()),
        ..Config::default()
    };
    crate::common::provider(&config)
}

async fn events(p: &dyn Provider, model: &str, history: &[Message]) -> Vec<StreamEvent> {
    let tools = Registry::builtin().schemas();
    let req = Request {
        model,
        system: "You are a test.",
        messages: history,
        tools: &tools,
        stop: &[],
        environment: "",
        max_output_tokens: None,
    };
    let mut s = p.stream(req).await.unwrap();
    let mut out = Vec::new();
    while let Some(e) = s.next().await {
        out.push(e.unwrap());
    }
    out
}

/// What the agent stores from one response (reasoning, then text, then calls), plus a
/// successful result for every call.
fn stored(events: &[StreamEvent], provider: &str) -> Vec<Message> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut thought = String::new();
    let mut calls = Vec::new();
    for e in events {
        match e {
            StreamEvent::TextDelta(t) => text.push_str(t),
            StreamEvent::ReasoningDelta(t) => thought.push_str(t),
            StreamEvent::Reasoning { text: t, opaque } => {
                let t = if t.is_empty() {
                    std::mem::take(&mut thought)
                } else {
                    t.clone()
                };
                thought.clear();
                out.push(Message::reasoning(t, provider, opaque.clone()));
            }
            StreamEvent::ToolCall { id, name, arguments } => {
                calls.push((id.clone(), name.clone(), arguments.clone()))
            }
            _ => {}
        }
    }
    if !thought.is_empty() {
        out.push(Message::reasoning(thought, provider, Value::Null));
    }
    if !text.is_empty() {
        out.push(Message::assistant(text));
    }
    for (id, name, args) in &calls {
        out.push(Message::tool_call(id, name, args));
    }
    for (id, name, _) in &calls {
        let envelope = json!({"tool_success": true, "result": {"output": format!("ran {name}")}}).to_string();
        out.push(Message::tool_result(id, name, "ok", envelope, true));
    }
    out
}

async fn replayed(provider: &str, fixture: &str) -> Vec<Message> {
    let fake = FakeProvider::start();
    fake.push(Reply::fixture(fixture));
    let (name, model) = match provider {
        "anthropic" => ("anthropic", "claude-sonnet-4-5"),
        "google" => ("google", "gemini-2.5-flash"),
        _ => ("xai", "grok-3-mini"),
    };
    let p = build(name, &fake.base_url, model);
    stored(&events(&*p, model, &[Message::user("x")]).await, name)
}

/// A session that used xAI (reasoning, a call with an id Anthropic refuses), then
/// Anthropic (thinking with a signature, a call), then Gemini (a signed call, parallel
/// calls without ids), and ends with a new user question.
async fn mixed_history() -> Vec<Message> {
    let mut h = vec![Message::user("what is the weather?")];
    let xai = replayed("xai", "compat-01-xai-grok-reasoning-tool-call-one-chunk.sse").await;
    assert!(xai.iter().any(|m| m.kind == Kind::Reasoning));
    h.extend(xai);
    // An OpenAI-compatible server's id with characters Anthropic rejects.
    h.push(Message::assistant("Checking one more thing."));
    h.push(Message::tool_call(
        "functions.glob:0",
        "glob",
        r#"{"pattern":"*.rs"}"#,
    ));
    h.push(Message::tool_result(
        "functions.glob:0",
        "glob",
        "1 file",
        r#"{"tool_success":true,"result":{"output":"main.rs"}}"#,
        true,
    ));
    h.push(Message::user("and in Paris?"));
    let anthropic = replayed("anthropic", "anthropic-01-text-then-tool-use.sse").await;
    h.extend(anthropic);
    h.push(Message::reasoning(
        "hidden",
        "anthropic",
        json!({"type": "thinking", "signature": "sig-anthropic-1"}),
    ));
    h.push(Message::assistant("It is sunny."));
    h.push(Message::user("what day is it?"));
    h.extend(replayed("google", "gemini-01-thinking-then-function-call-crlf.sse").await);
    h.extend(replayed("google", "gemini-03-vertex-streamed-args-multiple-calls.sse").await);
    h.push(Message::assistant("Done."));
    h.push(Message::user("thanks, anything else?"));
    h
}

#[tokio::test]
async fn a_mixed_history_is_accepted_by_the_strict_anthropic_fake() {
    let history = mixed_history().await;
    let fake = FakeVendor::start(Wire::Anthropic);
    fake.push(anthropic_reply(None, "Nothing else.", &[]));
    fake.push(anthropic_reply(None, "Nothing else.", &[]));
    let p = build("anthropic", &fake.base_url, "claude-sonnet-4-5");
    let ev = events(&*p, "claude-sonnet-4-5", &history).await;
    assert_eq!(ev.first(), Some(&StreamEvent::TextDelta("Nothing ".into())));
    events(&*p, "claude-sonnet-4-5", &history).await;
    assert_eq!(fake.rejections(), Vec::<String>::new());
    let reqs = fake.requests();
    let body = &reqs[0].body;
    // The same history serialises identically every time (stable id adaptation).
    assert_eq!(body, &reqs[1].body);
    let text = body.to_string();
    // Only Anthropic's own thinking goes back; xAI and Gemini reasoning is dropped.
    assert!(text.contains("sig-anthropic-1"));
    assert!(!text.contains("thoughtSignature") && !text.contains("CiIBVKhc7vB"));
    let thinking: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "thinking")
        .collect();
    assert_eq!(thinking.len(), 1);
    // Every tool_use id is valid for Anthropic; the adapted one still pairs with its result.
    let ids: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 1 + 1 + 1 + 1 + 4);
    assert!(ids.iter().all(|id| {
        id.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }));
    assert!(
        ids.contains(&"toolu_01NRLabsLyVHZPKxbKvkfSMn"),
        "valid ids stay as they are: {ids:?}"
    );
    assert!(!ids.contains(&"functions.glob:0"));
}

#[tokio::test]
async fn a_mixed_history_is_accepted_by_the_strict_gemini_fake_including_gemini_3() {
    let history = mixed_history().await;
    let fake = FakeVendor::start(Wire::Gemini);
    fake.push(gemini_reply("", "", "Nothing else.", &[]));
    fake.push(gemini_reply("", "", "Nothing else.", &[]));
    for model in ["gemini-2.5-flash", "gemini-3-flash-preview"] {
        let p = build("google", &fake.base_url, model);
        let ev = events(&*p, model, &history).await;
        let text: String = ev
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Nothing else.");
    }
    assert_eq!(fake.rejections(), Vec::<String>::new());
    let reqs = fake.requests();
    let g25 = reqs[0].body.to_string();
    // Gemini's own signatures go back; Anthropic's thinking does not.
    assert!(g25.contains("CiIBVKhc7vB+vaaq6rA/"));
    assert!(!g25.contains("sig-anthropic-1") && !g25.contains("\"thinking\""));
    assert!(!g25.contains(ikigai::provider::google::request::SKIP_SIGNATURE));
    // For Gemini 3, calls from other providers carry the documented skip signature.
    let g3 = &reqs[1].body;
    let model_turns: Vec<&Value> = g3["contents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["role"] == "model")
        .collect();
    for turn in model_turns {
        let parts = turn["parts"].as_array().unwrap();
        if let Some(first_call) = parts.iter().find(|p| p.get("functionCall").is_some()) {
            assert!(first_call["thoughtSignature"].is_string(), "{turn}");
        }
    }
    assert!(
        g3.to_string()
            .contains(ikigai::provider::google::request::SKIP_SIGNATURE)
    );
}

#[tokio::test]
async fn lost_results_and_stray_results_still_make_a_valid_history() {
    // A call whose result was lost, and a result whose call is gone (compacted away).
    let history = vec![
        Message::user("go"),
        Message::tool_call("call_a", "glob", r#"{"pattern":"*"}"#),
        Message::user("never mind"),
        Message::tool_result("call_gone", "glob", "0 files", r#"{"tool_success":true}"#, true),
        Message::user("hello?"),
        // A call cut off by max_tokens: its raw text is not JSON.
        Message::tool_call("call_t", "file_write", r#"{"path": "taxes.txt", "content": "TAX"#),
        Message::tool_result(
            "call_t",
            "file_write",
            "not run",
            r#"{"tool_success":false,"error":"cut off"}"#,
            false,
        ),
        Message::user("try again"),
    ];
    let anthropic = FakeVendor::start(Wire::Anthropic);
    anthropic.push(anthropic_reply(None, "Hi.", &[]));
    let p = build("anthropic", &anthropic.base_url, "claude-sonnet-4-5");
    events(&*p, "claude-sonnet-4-5", &history).await;
    assert_eq!(anthropic.rejections(), Vec::<String>::new());
    let sent = anthropic.requests()[0].body.to_string();
    assert!(
        sent.contains(r#""input":{"invalid_arguments":"{\"path\": \"taxes.txt\", \"content\": \"TAX"}"#),
        "{sent}"
    );
    let gemini = FakeVendor::start(Wire::Gemini);
    gemini.push(gemini_reply("", "", "Hi.", &[]));
    let p = build("google", &gemini.base_url, "gemini-2.5-flash");
    events(&*p, "gemini-2.5-flash", &history).await;
    assert_eq!(gemini.rejections(), Vec::<String>::new());
    let c = gemini.requests()[0].body["contents"].clone();
    assert_eq!(c[1]["parts"][0]["functionCall"]["name"], "glob");
    assert_eq!(
        c[2]["parts"][0]["functionResponse"]["response"]["tool_success"],
        false
    );
}

#[tokio::test]
async fn switching_to_anthropic_with_thinking_in_the_middle_of_a_tool_loop_is_accepted() {
    // Gemini called tools and their results are in; now Anthropic, with thinking on, answers.
    let mut history = vec![Message::user("what day is it?")];
    history.extend(replayed("google", "gemini-01-thinking-then-function-call-crlf.sse").await);
    let fake = FakeVendor::start(Wire::Anthropic);
    fake.push(anthropic_reply(None, "Monday.", &[]));
    fake.push(anthropic_reply(None, "Monday.", &[]));
    let mut config = Config {
        provider: Some("anthropic".into()),
        base_url: Some(fake.base_url.clone()),
        api_key: Some(Secret::new("k")),
        model: Some("claude-sonnet-4-5".into()),
        ..Config::default()
    };
    config.providers.insert(
        "anthropic".into(),
        ikigai::config::ProviderSection {
            reasoning_effort: Some("low".into()),
            ..Default::default()
        },
    );
    let p = crate::common::provider(&config);
    events(&*p, "claude-sonnet-4-5", &history).await;
    // A fresh question after the loop: thinking is on again.
    history.push(Message::assistant("It is Monday."));
    history.push(Message::user("and tomorrow?"));
    events(&*p, "claude-sonnet-4-5", &history).await;
    assert_eq!(fake.rejections(), Vec::<String>::new());
    let reqs = fake.requests();
    assert!(reqs[0].body.get("thinking").is_none());
    assert_eq!(reqs[1].body["thinking"]["type"], "enabled");
}
