//! The stream is bounded and linear, and a hostile or broken vendor never poisons the
//! history: size cap, deadline, a plain JSON answer, unique tool-call ids, malformed and
//! cut-off tool calls. Every follow-up request passes the fake's strict history checks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common::agent::{TestAgent, config_for, notices, text_of, turn_end};
use crate::common::fake_provider::{FakeProvider, Reply};
use ikigai::protocol::{Event, TurnEndReason};
use serde_json::{Value, json};

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").unwrap();
    dir
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    .to_string()
}

fn started_ids(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallStarted { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect()
}

fn finished(events: &[Event]) -> Vec<(String, String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished {
                summary,
                output,
                success,
                ..
            } => Some((summary.clone(), output.clone(), *success)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn one_eight_megabyte_data_line_arrives_whole() {
    let fake = FakeProvider::start();
    let text = "a".repeat(8 << 20);
    fake.push(Reply::payloads(&[
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
        "[DONE]".into(),
    ]));
    let dir = project();
    let mut cfg = config_for(&fake);
    cfg.max_response_bytes = 16 << 20;
    let mut agent = TestAgent::start(cfg, dir.path());
    let events = agent.turn("big").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done));
    assert_eq!(text_of(&events).len(), 8 << 20);
}

#[tokio::test]
async fn a_response_past_max_response_bytes_is_cut_and_the_partial_text_kept() {
    let fake = FakeProvider::start();
    let word = "0123456789 ".repeat(10);
    let mut payloads = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    for _ in 0..200 {
        payloads.push(chunk(json!({"content": word}), None));
    }
    fake.push(Reply::payloads(&payloads));
    fake.push(Reply::text("fine"));
    let dir = project();
    let mut cfg = config_for(&fake);
    cfg.max_response_bytes = 4096;
    let mut agent = TestAgent::start(cfg, dir.path());
    let events = agent.turn("talk forever").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Interrupted));
    let shown = notices(&events).join("\n");
    assert!(
        shown.contains("max_response_bytes") && shown.contains("kept"),
        "{shown}"
    );
    let partial = text_of(&events);
    assert!(!partial.is_empty() && partial.len() <= 4096, "{}", partial.len());
    // The partial answer is in the history the next request sends.
    let events = agent.turn("go on").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done));
    let reqs = fake.requests();
    let msgs = reqs[1].messages();
    assert!(
        msgs.iter()
            .any(|m| m["role"] == "assistant" && m["content"] == partial.as_str()),
        "{msgs:?}"
    );
}

#[tokio::test]
async fn arguments_past_max_response_bytes_end_the_turn_without_running_anything() {
    let fake = FakeProvider::start();
    let mut payloads = vec![chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
            "function": {"name": "glob", "arguments": "{\"pattern\": \""}}]}),
        None,
    )];
    for _ in 0..100 {
        payloads.push(chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "x".repeat(100)}}]}),
            None,
        ));
    }
    fake.push(Reply::payloads(&payloads));
    let dir = project();
    let mut cfg = config_for(&fake);
    cfg.max_response_bytes = 2048;
    let mut agent = TestAgent::start(cfg, dir.path());
    let events = agent.turn("x").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Interrupted));
    assert!(started_ids(&events).is_empty(), "no call ran");
    assert!(notices(&events).join("\n").contains("max_response_bytes"));
}

#[tokio::test]
async fn a_slow_endless_stream_meets_response_timeout_secs() {
    let fake = FakeProvider::start();
    let mut payloads = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    for i in 0..600 {
        payloads.push(chunk(json!({"content": format!("w{i} ")}), None));
    }
    fake.push(Reply::payloads(&payloads).paced(Duration::from_millis(100)));
    let dir = project();
    let mut cfg = config_for(&fake);
    cfg.response_timeout_secs = 1;
    cfg.idle_timeout_secs = 30;
    let mut agent = TestAgent::start(cfg, dir.path());
    let events = agent.turn("drip").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Interrupted));
    let shown = notices(&events).join("\n");
    assert!(shown.contains("response_timeout_secs"), "{shown}");
    assert!(text_of(&events).starts_with("w0 "), "partial text kept");
}

#[tokio::test]
async fn a_plain_json_completion_is_read_as_the_answer() {
    let fake = FakeProvider::start();
    let body = json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Plain answer."},
        "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}});
    fake.push(Reply::status(200, &body.to_string()));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("hi").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done), "{events:?}");
    assert_eq!(text_of(&events), "Plain answer.");
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Usage {
            input: 3,
            output: 2,
            ..
        }
    )));
}

#[tokio::test]
async fn tool_call_ids_are_unique_in_the_session() {
    let fake = FakeProvider::start();
    // Missing ids twice, then a server that reuses `call_1` in every response and sends
    // one id at two indexes.
    fake.push(Reply::tool_calls(&[("", "glob", r#"{"pattern":"*.rs"}"#)]));
    fake.push(Reply::tool_calls(&[("", "glob", r#"{"pattern":"*.rs"}"#)]));
    fake.push(Reply::tool_calls(&[("call_1", "glob", "{}")]));
    fake.push(Reply::tool_calls(&[
        ("call_1", "glob", "{}"),
        ("call_1", "list_dir", "{}"),
    ]));
    fake.push(Reply::text("done"));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("look").await;
    assert_eq!(
        turn_end(&events),
        Some(TurnEndReason::Done),
        "{:?}",
        notices(&events)
    );
    let ids = started_ids(&events);
    assert_eq!(ids.len(), 5);
    let unique: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), 5, "{ids:?}");
    assert!(ids.iter().all(|i| !i.is_empty()));
    assert_eq!(ids[2], "call_1", "a vendor's id is kept when it is unique");
    // The strict fake accepted every follow-up: it answers 400 to duplicate ids, which
    // would have ended the turn with an error before the fifth request.
    assert_eq!(fake.requests().len(), 5);
    assert_eq!(fake.pending(), 0);
}

#[tokio::test]
async fn malformed_arguments_reach_the_model_as_invalid_params_and_the_history_stays_valid() {
    let fake = FakeProvider::start();
    let raw = r#"{"pattern": "*"#;
    fake.push(Reply::tool_calls(&[("call_bad", "glob", raw)]));
    fake.push(Reply::text("sorry"));
    fake.push(Reply::text("still here"));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("find").await;
    assert_eq!(
        turn_end(&events),
        Some(TurnEndReason::Done),
        "{:?}",
        notices(&events)
    );
    let (_, output, success) = finished(&events).remove(0);
    assert!(!success);
    let env: Value = serde_json::from_str(&output).unwrap();
    assert_eq!(env["error_code"], "INVALID_PARAMS");
    let err = env["error"].as_str().unwrap();
    assert!(err.contains("not valid JSON") && err.contains(raw), "{err}");
    // The raw text is what the call shows; the wire carries valid JSON on every later turn.
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolCallStarted { arguments, .. } if arguments == raw))
    );
    let events = agent.turn("and now?").await;
    assert_eq!(text_of(&events), "still here");
    let reqs = fake.requests();
    let call = &reqs[2].messages()[2]["tool_calls"][0];
    let wire: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(wire, json!({"invalid_arguments": raw}));
}

#[tokio::test]
async fn a_call_cut_off_by_the_length_limit_is_not_run_and_the_model_is_told() {
    let fake = FakeProvider::start();
    fake.push(Reply::payloads(&[
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_w", "type": "function",
                "function": {"name": "file_write", "arguments": "{\"path\": \"out.txt\", \"content\": \"hal"}}]}),
            None,
        ),
        chunk(json!({}), Some("length")),
        "[DONE]".into(),
    ]));
    fake.push(Reply::payloads(&[
        chunk(json!({"content": "The answer was cut"}), None),
        chunk(json!({}), Some("length")),
        "[DONE]".into(),
    ]));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("write it").await;
    assert!(!dir.path().join("out.txt").exists(), "the cut-off call never ran");
    let (summary, output, success) = finished(&events).remove(0);
    assert!(!success && summary.contains("cut off"), "{summary}");
    assert!(output.contains("finish_reason: length"), "{output}");
    let shown = notices(&events).join("\n");
    assert!(shown.contains("cut off") && shown.contains("length"), "{shown}");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2, "the model was told and answered");
    let tool = reqs[1]
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert!(tool["content"].as_str().unwrap().contains("cut off"), "{tool}");
}
