//! Every recorded Anthropic and Gemini stream in the fixtures, served over real HTTP on
//! 127.0.0.1 and decoded by the `anthropic` and `google` providers into canonical events;
//! plus the errors each vendor sends before, inside and instead of a stream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use futures_util::StreamExt;
use std::sync::Arc;

use ikigai::config::{Config, Secret};
use ikigai::message::Message;
use ikigai::provider::anthropic;
use ikigai::provider::{FinishReason, Provider, ProviderError, Request, StreamEvent};
use serde_json::{Value, json};

/// The `anthropic` preset, built by the factory, pointed at the fake.
fn anthropic_at(fake: &FakeProvider) -> Arc<dyn Provider> {
    preset_at(fake, "anthropic", "ant-key")
}

/// The `google` preset, built by the factory, pointed at the fake.
fn google_at(fake: &FakeProvider) -> Arc<dyn Provider> {
    preset_at(fake, "google", "goog-key")
}

fn preset_at(fake: &FakeProvider, name: &str, key: &str) -> Arc<dyn Provider> {
    let config = Config {
        provider: Some(name.into()),
        base_url: Some(fake.base_url.clone()),
        api_key: Some(Secret::new(key)),
        ..Config::default()
    };
    crate::common::provider(&config)
}

/// Events of one reply, and the error that ended it (or that `stream` returned).
async fn run(provider: &dyn Provider, model: &str) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let msgs = vec![Message::user("hi")];
    let req = Request {
        model,
        system: "",
        messages: &msgs,
        tools: &[],
        stop: &[],
        environment: "",
        max_output_tokens: None,
    };
    let mut stream = match provider.stream(req).await {
        Ok(s) => s,
        Err(e) => return (Vec::new(), Some(e)),
    };
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

async fn replay_anthropic(name: &str) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let fake = FakeProvider::start();
    fake.push(Reply::fixture(name));
    run(&*anthropic_at(&fake), "claude-test").await
}

async fn replay_google(name: &str) -> (Vec<StreamEvent>, Option<ProviderError>) {
    let fake = FakeProvider::start();
    fake.push(Reply::fixture(name));
    run(&*google_at(&fake), "gemini-2.5-flash").await
}

fn text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn reasoning_text(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn reasoning_items(events: &[StreamEvent]) -> Vec<(String, Value)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Reasoning { text, opaque } => Some((text.clone(), opaque.clone())),
            _ => None,
        })
        .collect()
}

fn calls(events: &[StreamEvent]) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCall { id, name, arguments } => {
                Some((id.clone(), name.clone(), arguments.clone()))
            }
            _ => None,
        })
        .collect()
}

fn usage(events: &[StreamEvent]) -> Option<(u64, u64, u64)> {
    events.iter().find_map(|e| match e {
        StreamEvent::Usage {
            input,
            output,
            cached,
        } => Some((*input, *output, *cached)),
        _ => None,
    })
}

fn finish(events: &[StreamEvent]) -> Option<Option<FinishReason>> {
    events.iter().find_map(|e| match e {
        StreamEvent::Finished { reason } => Some(reason.clone()),
        _ => None,
    })
}

fn parsed(args: &str) -> Value {
    serde_json::from_str(args).unwrap_or_else(|e| panic!("bad args {args}: {e}"))
}

#[tokio::test]
async fn anthropic_01_text_then_tool_use() {
    let (ev, err) = replay_anthropic("anthropic-01-text-then-tool-use.sse").await;
    assert_eq!(err, None);
    assert_eq!(text(&ev), "I'll check the current weather in Paris for you.");
    let c = calls(&ev);
    assert_eq!(c.len(), 1);
    assert_eq!(
        (c[0].0.as_str(), c[0].1.as_str()),
        ("toolu_01NRLabsLyVHZPKxbKvkfSMn", "get_weather")
    );
    assert_eq!(parsed(&c[0].2), json!({"location": "Paris"}));
    assert_eq!(usage(&ev), Some((377, 65, 0)));
    assert_eq!(finish(&ev), Some(Some(FinishReason::ToolCalls)));
    // Text first, then the call, then usage, then the end.
    assert!(matches!(ev.last(), Some(StreamEvent::Finished { .. })));
}

#[tokio::test]
async fn anthropic_02_padded_recording_with_only_a_tool() {
    let (ev, err) = replay_anthropic("anthropic-02-tool-use-recorded-padded.sse").await;
    assert_eq!(err, None);
    assert_eq!(text(&ev), "");
    let c = calls(&ev);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].0, "toolu_01TJoxvFknVdnV9XpWFPaRmY");
    assert_eq!(
        parsed(&c[0].2),
        json!({"location": "San Francisco, CA", "units": "f"})
    );
    assert_eq!(usage(&ev), Some((656, 74, 0)));
    assert_eq!(finish(&ev), Some(Some(FinishReason::ToolCalls)));
}

#[tokio::test]
async fn anthropic_03_truncated_tool_input_finishes_with_length() {
    let (ev, err) = replay_anthropic("anthropic-03-tool-input-truncated-max-tokens.sse").await;
    assert_eq!(err, None);
    assert!(
        text(&ev).starts_with("I'll create a comprehensive tax guide"),
        "{}",
        text(&ev)
    );
    let c = calls(&ev);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].1, "make_file");
    // The raw, cut-off input is kept (it is not valid JSON); the finish reason says why.
    assert!(c[0].2.starts_with(r#"{"filename": "taxes.txt""#), "{}", c[0].2);
    assert!(serde_json::from_str::<Value>(&c[0].2).is_err());
    assert_eq!(finish(&ev), Some(Some(FinishReason::Length)));
    assert_eq!(usage(&ev), Some((450, 124, 0)));
}

#[tokio::test]
async fn anthropic_04_no_argument_tool_between_pings() {
    let (ev, err) = replay_anthropic("anthropic-04-tool-no-args-interleaved-pings.sse").await;
    assert_eq!(err, None);
    assert_eq!(text(&ev), "I'll update the issue list for you.");
    let c = calls(&ev);
    assert_eq!(c.len(), 1);
    assert_eq!(
        (c[0].0.as_str(), c[0].1.as_str()),
        ("toolu_01QE1WLsSVp5hy5Q3GmGTmjP", "updateIssueList")
    );
    assert_eq!(parsed(&c[0].2), json!({}));
    assert_eq!(usage(&ev), Some((565, 48, 0)));
}

#[tokio::test]
async fn anthropic_05_overloaded_after_text_keeps_the_text_and_is_not_retried() {
    let (ev, err) = replay_anthropic("anthropic-05-overloaded-error-midstream.sse").await;
    assert_eq!(text(&ev), "Hello");
    let err = err.expect("an error ends the stream");
    assert_eq!(err, ProviderError::Api("Overloaded (overloaded_error)".into()));
    assert!(!err.is_retryable());
    assert_eq!(finish(&ev), None);
}

#[tokio::test]
async fn anthropic_overloaded_before_any_text_is_a_retryable_error_from_stream() {
    let fake = FakeProvider::start();
    fake.push(Reply::events(vec![
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n".into(),
        "event: ping\ndata: {\"type\": \"ping\"}\n\n".into(),
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".into(),
    ]));
    let (ev, err) = run(&*anthropic_at(&fake), "claude-test").await;
    assert!(ev.is_empty());
    let err = err.unwrap();
    assert!(err.is_retryable(), "{err}");
    assert!(err.to_string().contains("overloaded_error"), "{err}");
}

#[tokio::test]
async fn anthropic_http_529_and_prompt_too_long_map_to_their_kinds() {
    let fake = FakeProvider::start();
    let body = |t: &str, m: &str| json!({"type": "error", "error": {"type": t, "message": m}}).to_string();
    fake.push(Reply::status(529, &body("overloaded_error", "Overloaded")));
    fake.push(Reply::status(
        400,
        &body(
            "invalid_request_error",
            "prompt is too long: 201000 tokens > 200000 maximum",
        ),
    ));
    fake.push(Reply::status(
        401,
        &body("authentication_error", "invalid x-api-key"),
    ));
    let p = anthropic_at(&fake);
    let e = run(&*p, "claude-test").await.1.unwrap();
    assert!(
        matches!(e, ProviderError::Server { status: 529, .. }) && e.is_retryable(),
        "{e}"
    );
    let e = run(&*p, "claude-test").await.1.unwrap();
    assert!(matches!(e, ProviderError::ContextLength { .. }), "{e}");
    let e = run(&*p, "claude-test").await.1.unwrap();
    assert!(e.to_string().contains("ANTHROPIC_API_KEY"), "{e}");
    let r = &fake.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.headers["x-api-key"], "ant-key");
    assert_eq!(r.headers["anthropic-version"], anthropic::API_VERSION);
}

#[tokio::test]
async fn anthropic_body_cut_before_message_stop_is_an_error() {
    let fake = FakeProvider::start();
    fake.push(Reply::fixture("anthropic-01-text-then-tool-use.sse").truncated(20));
    let (ev, err) = run(&*anthropic_at(&fake), "claude-test").await;
    assert!(!text(&ev).is_empty());
    assert!(
        matches!(err, Some(ProviderError::Stream(ref m)) if m.contains("closed before")),
        "{err:?}"
    );
    assert!(calls(&ev).is_empty());
}

#[tokio::test]
async fn anthropic_thinking_and_redacted_thinking_become_reasoning_with_signatures() {
    let fake = FakeProvider::start();
    let ev = |t: &str, d: Value| format!("event: {t}\ndata: {d}\n\n");
    fake.push(Reply::events(vec![
        ev("message_start", json!({"type": "message_start", "message": {"usage": {"input_tokens": 10, "cache_read_input_tokens": 90, "cache_creation_input_tokens": 5, "output_tokens": 1}}})),
        ev("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}})),
        ev("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}})),
        ev("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "think."}})),
        ev("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}})),
        ev("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        ev("content_block_start", json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}})),
        ev("content_block_stop", json!({"type": "content_block_stop", "index": 1})),
        ev("content_block_start", json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}})),
        ev("content_block_delta", json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "42"}})),
        ev("content_block_stop", json!({"type": "content_block_stop", "index": 2})),
        ev("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 30}})),
        ev("message_stop", json!({"type": "message_stop"})),
    ]));
    let (events, err) = run(&*anthropic_at(&fake), "claude-test").await;
    assert_eq!(err, None);
    assert_eq!(reasoning_text(&events), "Let me think.");
    assert_eq!(
        reasoning_items(&events),
        vec![
            (
                "Let me think.".into(),
                json!({"type": "thinking", "signature": "EqQBCgIYAhIM"})
            ),
            (
                String::new(),
                json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"})
            ),
        ]
    );
    assert_eq!(text(&events), "42");
    // input counts cached and cache-written tokens too; cached is the cache read.
    assert_eq!(usage(&events), Some((105, 30, 90)));
    assert_eq!(finish(&events), Some(Some(FinishReason::Stop)));
}

#[tokio::test]
async fn gemini_01_thoughts_then_signed_function_call_over_crlf() {
    let (ev, err) = replay_google("gemini-01-thinking-then-function-call-crlf.sse").await;
    assert_eq!(err, None);
    assert_eq!(text(&ev), "");
    let thoughts = reasoning_text(&ev);
    assert!(thoughts.starts_with("**Calculating the Days**"), "{thoughts}");
    let items = reasoning_items(&ev);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].0, thoughts);
    let sig = items[0].1["thoughtSignature"].as_str().unwrap();
    assert!(
        sig.starts_with("CiIBVKhc7vB+vaaq6rA/") && sig.len() == 1140,
        "{sig}"
    );
    let c = calls(&ev);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].1, "now");
    assert_eq!(parsed(&c[0].2), json!({}));
    // No id on the wire: a stable one from the response id.
    assert_eq!(c[0].0, "call_48SHaPHpHKbG-8YPtZCawAk_1");
    // The signature is announced before the call it belongs to.
    let sig_at = ev
        .iter()
        .position(|e| matches!(e, StreamEvent::Reasoning { .. }))
        .unwrap();
    let call_at = ev
        .iter()
        .position(|e| matches!(e, StreamEvent::ToolCall { .. }))
        .unwrap();
    assert!(sig_at < call_at);
    assert_eq!(usage(&ev), Some((38, 6 + 168, 0)));
    assert_eq!(finish(&ev), Some(Some(FinishReason::ToolCalls)));
}

#[tokio::test]
async fn gemini_02_call_with_its_own_id() {
    let (ev, err) = replay_google("gemini-02-function-call-with-id-crlf.sse").await;
    assert_eq!(err, None);
    let c = calls(&ev);
    assert_eq!(
        c,
        vec![(
            "96c1su3s".to_string(),
            "get_user_country".to_string(),
            "{}".to_string()
        )]
    );
    let items = reasoning_items(&ev);
    assert_eq!(items.len(), 1);
    assert!(
        items[0].1["thoughtSignature"]
            .as_str()
            .unwrap()
            .starts_with("EpIDCo8DAQw51scL")
    );
    assert_eq!(usage(&ev), Some((29, 12 + 69, 0)));
    assert_eq!(finish(&ev), Some(Some(FinishReason::ToolCalls)));
}

#[tokio::test]
async fn gemini_03_streamed_partial_arguments_of_four_calls() {
    let (ev, err) = replay_google("gemini-03-vertex-streamed-args-multiple-calls.sse").await;
    assert_eq!(err, None);
    assert!(reasoning_text(&ev).starts_with("**Processing User Requests**"));
    let c = calls(&ev);
    let shape: Vec<(&str, Value)> = c.iter().map(|(_, n, a)| (n.as_str(), parsed(a))).collect();
    assert_eq!(
        shape,
        vec![
            ("read_theme", json!({})),
            ("read_screen", json!({"id": "A"})),
            ("read_screen", json!({"id": "B"})),
            ("read_screen", json!({"id": "C"})),
        ]
    );
    let ids: std::collections::HashSet<&str> = c.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids.len(), 4, "ids are unique: {ids:?}");
    assert_eq!(usage(&ev), Some((249, 58 + 183, 0)));
    assert_eq!(finish(&ev), Some(Some(FinishReason::ToolCalls)));
}

#[tokio::test]
async fn gemini_unavailable_before_output_is_retryable_with_its_hint() {
    let fake = FakeProvider::start();
    let err = json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}]}});
    fake.push(Reply::events(vec![format!("data: {err}\r\n\r\n")]));
    fake.push(Reply::status(429, &json!({"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]}}).to_string()));
    fake.push(Reply::status(400, &json!({"error": {"code": 400, "message": "The input token count (1100000) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}).to_string()));
    let p = google_at(&fake);
    let e = run(&*p, "gemini-2.5-flash").await.1.unwrap();
    assert!(e.is_retryable(), "{e}");
    assert_eq!(e.retry_after(), Some(2.0));
    let e = run(&*p, "gemini-2.5-flash").await.1.unwrap();
    assert!(matches!(e, ProviderError::RateLimited { .. }), "{e}");
    assert_eq!(e.retry_after(), Some(7.0));
    let e = run(&*p, "gemini-2.5-flash").await.1.unwrap();
    assert!(matches!(e, ProviderError::ContextLength { .. }), "{e}");
    let r = &fake.requests()[0];
    assert_eq!(r.path, "/v1/models/gemini-2.5-flash:streamGenerateContent");
    assert_eq!(r.headers["x-goog-api-key"], "goog-key");
    assert!(!r.headers.contains_key("authorization"));
}

#[tokio::test]
async fn gemini_body_cut_before_a_finish_reason_is_an_error() {
    let fake = FakeProvider::start();
    // The first event only (thought text), then the body ends.
    let bytes = common::fixture("gemini-01-thinking-then-function-call-crlf.sse");
    let first = bytes.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    fake.push(Reply::Sse {
        chunks: vec![bytes[..first].to_vec()],
        delay: std::time::Duration::ZERO,
        end: common::fake_provider::End::Close,
    });
    let (ev, err) = run(&*google_at(&fake), "gemini-2.5-flash").await;
    assert!(!reasoning_text(&ev).is_empty());
    assert!(
        matches!(err, Some(ProviderError::Stream(ref m)) if m.contains("closed before")),
        "{err:?}"
    );
}

#[tokio::test]
async fn tool_arguments_past_max_response_bytes_end_the_stream() {
    for (name, fixture, model) in [
        (
            "anthropic",
            "anthropic-02-tool-use-recorded-padded.sse",
            "claude-test",
        ),
        (
            "google",
            "gemini-03-vertex-streamed-args-multiple-calls.sse",
            "gemini-3-flash-preview",
        ),
    ] {
        let fake = FakeProvider::start();
        fake.push(Reply::fixture(fixture));
        let config = Config {
            provider: Some(name.into()),
            base_url: Some(fake.base_url.clone()),
            api_key: Some(Secret::new("k")),
            max_response_bytes: 2,
            ..Config::default()
        };
        let p = crate::common::provider(&config);
        let (ev, err) = run(&*p, model).await;
        assert!(calls(&ev).len() <= 1, "{name}: {ev:?}");
        assert!(matches!(err, Some(ProviderError::TooLarge(_))), "{name}: {err:?}");
    }
}

#[tokio::test]
async fn model_lists_come_from_each_vendors_models_endpoint() {
    let fake = FakeProvider::start();
    fake.answer_gets();
    fake.push(Reply::status(
        200,
        r#"{"data":[{"type":"model","id":"claude-sonnet-4-5"},{"type":"model","id":"claude-haiku-4-5"}],"has_more":false}"#,
    ));
    let models = anthropic_at(&fake).models().await.unwrap();
    assert_eq!(models, ["claude-haiku-4-5", "claude-sonnet-4-5"]);
    let r = &fake.requests()[0];
    assert_eq!(r.path, "/v1/models");
    assert_eq!(r.headers["x-api-key"], "ant-key");
    assert_eq!(r.headers["anthropic-version"], anthropic::API_VERSION);

    let fake = FakeProvider::start();
    fake.answer_gets();
    fake.push(Reply::status(
        200,
        r#"{"models":[{"name":"models/gemini-2.5-flash","supportedGenerationMethods":["generateContent","countTokens"]},
            {"name":"models/text-embedding-004","supportedGenerationMethods":["embedContent"]},
            {"name":"models/gemini-2.5-pro","supportedGenerationMethods":["generateContent"]}]}"#,
    ));
    let models = google_at(&fake).models().await.unwrap();
    assert_eq!(models, ["gemini-2.5-flash", "gemini-2.5-pro"]);
    let r = &fake.requests()[0];
    assert_eq!(r.path, "/v1/models");
    assert_eq!(r.headers["x-goog-api-key"], "goog-key");
}
