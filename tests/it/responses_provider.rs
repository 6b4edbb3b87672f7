//! The `openai-responses` provider against a fake Responses server on 127.0.0.1: the
//! recorded Responses streams decode to the expected events, and a whole turn with a
//! reasoning item and a streamed function call sends a follow-up request of the documented
//! shape (checked field by field; the fake rejects invalid histories as the API does).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::common::agent::{TestAgent, config_for, notices, text_of, turn_end};
use crate::common::fake_provider::{FakeProvider, Reply};
use futures_util::StreamExt;
use ikigai::config::Config;
use ikigai::message::Message;
use ikigai::protocol::{Event, TurnEndReason};
use ikigai::provider::{FinishReason, Provider, ProviderError, Request, StreamEvent};
use serde_json::{Value, json};

fn config(fake: &FakeProvider) -> Config {
    Config {
        provider: Some("openai-responses".into()),
        model: Some("gpt-5-mini".into()),
        retry_base_delay_ms: 10,
        ..config_for(fake)
    }
}

fn provider(cfg: &Config) -> std::sync::Arc<dyn Provider> {
    crate::common::provider(cfg)
}

async fn replay(name: &str) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let fake = FakeProvider::start();
    fake.push(Reply::fixture(name));
    let p = provider(&config(&fake));
    let msgs = vec![Message::user("hi")];
    let req = Request {
        model: "gpt-5-mini",
        system: "",
        messages: &msgs,
        tools: &[],
        stop: &[],
        environment: "",
        max_output_tokens: None,
    };
    let mut stream = p.stream(req).await.unwrap();
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => return (events, Some(e)),
        }
    }
    assert_eq!(fake.requests()[0].path, "/v1/responses");
    (events, None)
}

#[tokio::test]
async fn recorded_reasoning_then_function_call_decodes() {
    let (events, err) = replay("responses-01-reasoning-encrypted-then-function-call.sse").await;
    assert!(err.is_none(), "{err:?}");
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(reasoning.starts_with("**Calculating step-by-step"), "{reasoning}");
    let Some(StreamEvent::Reasoning { text, opaque }) =
        events.iter().find(|e| matches!(e, StreamEvent::Reasoning { .. }))
    else {
        panic!("no reasoning item: {events:?}")
    };
    assert_eq!(text, &reasoning);
    assert_eq!(opaque["type"], "reasoning");
    assert!(
        opaque["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAAABpPDIV")
    );
    assert!(
        opaque.get("id").is_none(),
        "no item id goes back with store:false"
    );
    let calls: Vec<&StreamEvent> = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCall { .. }))
        .collect();
    assert_eq!(
        calls,
        vec![&StreamEvent::ToolCall {
            id: "call_AB6AaRZ1FYZB2RwS6A5vbdqn".into(),
            name: "calculator".into(),
            arguments: r#"{"a":12,"b":7,"op":"add"}"#.into(),
        }]
    );
    let n = events.len();
    assert_eq!(
        &events[n - 2..],
        &[
            StreamEvent::Usage {
                input: 134,
                output: 28,
                cached: 0
            },
            StreamEvent::Finished {
                reason: Some(FinishReason::ToolCalls)
            }
        ]
    );
}

#[tokio::test]
async fn recorded_text_and_error_streams_decode() {
    let (events, err) = replay("responses-02-text-only.sse").await;
    assert!(err.is_none(), "{err:?}");
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert!(!text.is_empty());
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finished {
            reason: Some(FinishReason::Stop)
        })
    );
    let (_, err) = replay("responses-03-error-insufficient-quota-then-failed.sse").await;
    assert!(
        matches!(err, Some(ProviderError::QuotaExhausted { .. })),
        "{err:?}"
    );
}

/// A Responses stream: a reasoning item, then a function call whose arguments arrive in
/// pieces, then `response.completed`.
fn reasoning_and_call(call_id: &str, args: &str) -> Reply {
    let ev = |v: Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap());
    let mut out = vec![
        ev(
            json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress"}}),
        ),
        ev(json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAA-secret-1"}})),
        ev(
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Need the files."}),
        ),
        ev(json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"id": "rs_1", "type": "reasoning", "status": "completed",
                "summary": [{"type": "summary_text", "text": "Need the files."}], "encrypted_content": "gAAAA-secret-2"}})),
        ev(json!({"type": "response.output_item.added", "output_index": 1,
            "item": {"id": "fc_1", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": call_id, "name": "glob"}})),
    ];
    for piece in common::fake_provider::pieces(args, 4) {
        out.push(ev(
            json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": piece}),
        ));
    }
    out.push(ev(
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1, "arguments": args}),
    ));
    out.push(ev(json!({"type": "response.output_item.done", "output_index": 1,
        "item": {"id": "fc_1", "type": "function_call", "status": "completed", "arguments": args, "call_id": call_id, "name": "glob"}})));
    out.push(ev(
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
        "usage": {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 32}, "output_tokens": 9}}}),
    ));
    Reply::events(out)
}

fn text_reply(text: &str) -> Reply {
    let ev = |v: Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap());
    Reply::events(vec![
        ev(json!({"type": "response.created", "response": {"id": "resp_2"}})),
        ev(
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}),
        ),
        ev(
            json!({"type": "response.completed", "response": {"id": "resp_2", "status": "completed",
            "usage": {"input_tokens": 80, "output_tokens": 3}}}),
        ),
    ])
}

#[tokio::test]
async fn a_turn_with_reasoning_and_a_streamed_call_sends_the_documented_follow_up() {
    let fake = FakeProvider::start();
    fake.push(reasoning_and_call("call_x1", r#"{"pattern":"*.rs"}"#));
    fake.push(text_reply("Two files."));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "").unwrap();
    std::fs::write(dir.path().join("b.rs"), "").unwrap();
    let cfg = config(&fake);
    let mut agent = TestAgent::with_provider(cfg.clone(), provider(&cfg), dir.path());
    let events = agent.turn("which rust files?").await;
    assert_eq!(
        turn_end(&events),
        Some(TurnEndReason::Done),
        "{:?}",
        notices(&events)
    );
    assert_eq!(text_of(&events), "Two files.");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ReasoningDelta { text } if text == "Need the files."))
    );
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Usage {
            input: 50,
            output: 9,
            ..
        }
    )));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let first = &reqs[0];
    assert_eq!(first.path, "/v1/responses");
    assert_eq!(first.headers["authorization"], "Bearer test-key");
    let b = &reqs[1].body;
    assert_eq!(b["model"], "gpt-5-mini");
    assert_eq!(b["stream"], true);
    assert_eq!(b["store"], false);
    assert_eq!(b["instructions"], "You are a test.");
    assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(b["reasoning"]["summary"], "auto");
    assert_eq!(b["tool_choice"], "auto");
    let glob = b["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "glob")
        .unwrap();
    assert_eq!(glob["type"], "function");
    assert_eq!(glob["parameters"]["type"], "object");
    assert!(
        glob.get("function").is_none(),
        "Responses tools are flat, not Chat-shaped"
    );
    let input = b["input"].as_array().unwrap();
    assert_eq!(input.len(), 4, "{input:?}");
    assert_eq!(input[0], json!({"role": "user", "content": "which rust files?"}));
    assert_eq!(
        input[1],
        json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Need the files."}],
            "encrypted_content": "gAAAA-secret-2"})
    );
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "call_x1", "name": "glob", "arguments": r#"{"pattern":"*.rs"}"#})
    );
    assert_eq!(input[3]["type"], "function_call_output");
    assert_eq!(input[3]["call_id"], "call_x1");
    let out: Value = serde_json::from_str(input[3]["output"].as_str().unwrap()).unwrap();
    assert_eq!(out["tool_success"], true);
}

#[tokio::test]
async fn reasoning_from_another_provider_is_not_sent() {
    let fake = FakeProvider::start();
    fake.push(text_reply("ok"));
    let p = provider(&config(&fake));
    let msgs = vec![
        Message::user("hi"),
        Message::reasoning("thought", "anthropic", json!({"signature": "sig"})),
        Message::reasoning(
            "thought",
            "openai-responses",
            json!({"type": "reasoning", "summary": [], "encrypted_content": "e"}),
        ),
        Message::assistant("hello"),
        Message::user("again"),
    ];
    let req = Request {
        model: "gpt-5-mini",
        system: "",
        messages: &msgs,
        tools: &[],
        stop: &[],
        environment: "",
        max_output_tokens: None,
    };
    let mut s = p.stream(req).await.unwrap();
    while s.next().await.is_some() {}
    let input = fake.requests()[0].body["input"].as_array().unwrap().clone();
    assert_eq!(input.len(), 4, "{input:?}");
    assert_eq!(input[1]["encrypted_content"], "e");
    assert!(!input.iter().any(|i| i.get("signature").is_some()));
}

#[tokio::test]
async fn a_key_is_required_on_openai_itself_and_named() {
    let cfg = Config {
        provider: Some("openai-responses".into()),
        api_key_env: Some("IKIGAI_TEST_UNSET_RESPONSES_KEY".into()),
        api_key: None,
        ..Config::default()
    };
    let p = provider(&cfg);
    let hint = p.setup_hint().join("\n");
    assert!(hint.contains("IKIGAI_TEST_UNSET_RESPONSES_KEY"), "{hint}");
}
