//! Stream decoding throughput of the Anthropic, Gemini and OpenAI Responses providers
//! (`make bench`; Chat Completions is `benches/sse.rs`):
//! large streams in each vendor's exact shape (event lines, padding, CRLF framing and
//! fields copied from the recorded fixtures), through SSE framing and decoding, as a
//! network would deliver them (16 KiB reads). Target: ≥ 100 MB/s each.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures_util::StreamExt;
use ikigai::provider::http::sse_data_from;
use ikigai::provider::responses::stream::ResponsesDecoder;
use ikigai::provider::{EventStream, StreamEvent, anthropic, decode, google};
use serde_json::json;

const TEXT_EVENTS: usize = 20_000;
const ARG_FRAGMENTS: usize = 2_000;

/// anthropic-01's shape scaled up: message_start, a thinking block, a long text block
/// with pings, four tool_use blocks with fragmented input, message_delta, message_stop.
fn anthropic_body() -> Vec<u8> {
    let mut out = String::new();
    let mut ev = |t: &str, d: serde_json::Value| out.push_str(&format!("event: {t}\ndata: {d}\n\n"));
    ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_019Q1hrJbZG26Fb9BQhrkHEr", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 377, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1, "service_tier": "standard"}}}),
    );
    ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
    );
    for i in 0..TEXT_EVENTS / 10 {
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": format!(" considering step {i} of the plan")}}),
        );
    }
    ev(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCgIYAhIM".repeat(20)}}),
    );
    ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
    );
    for i in 0..TEXT_EVENTS {
        if i % 500 == 0 {
            ev("ping", json!({"type": "ping"}));
        }
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": format!(" token{i} and")}}),
        );
    }
    ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 1}),
    );
    for call in 0..4 {
        let index = 2 + call;
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": format!("toolu_01NRLabsLyVHZPKxbKvkfS{call:02}"), "name": "file_edit", "input": {}}}),
        );
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": "{\"text\": \""}}),
        );
        for f in 0..ARG_FRAGMENTS {
            ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": format!("frag{f} \\\"x\\\" ")}}),
            );
        }
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": "\"}"}}),
        );
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 65000}}),
    );
    ev("message_stop", json!({"type": "message_stop"}));
    out.into_bytes()
}

/// gemini-01/03's shape scaled up (CRLF): thought parts, text chunks each with the usage
/// metadata Gemini repeats, a signed call, calls with streamed `partialArgs`, STOP.
fn gemini_body() -> Vec<u8> {
    let mut out = String::new();
    let mut chunk = |parts: serde_json::Value, finish: Option<&str>| {
        let mut cand = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if let Some(f) = finish {
            cand["finishReason"] = json!(f);
        }
        let c = json!({"candidates": [cand], "usageMetadata": {"promptTokenCount": 38, "candidatesTokenCount": 6, "totalTokenCount": 212, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 38}], "thoughtsTokenCount": 168}, "modelVersion": "gemini-2.5-flash", "responseId": "48SHaPHpHKbG-8YPtZCawAk"});
        out.push_str(&format!("data: {c}\r\n\r\n"));
    };
    for i in 0..TEXT_EVENTS / 10 {
        chunk(
            json!([{"text": format!("**Step {i}**\n\nI am considering the plan.\n"), "thought": true}]),
            None,
        );
    }
    for i in 0..TEXT_EVENTS {
        chunk(json!([{"text": format!(" token{i} and")}]), None);
    }
    chunk(
        json!([{"functionCall": {"name": "now", "args": {}}, "thoughtSignature": "CiIBVKhc7vB+vaaq6rA/".repeat(50)}]),
        None,
    );
    for _call in 0..4 {
        chunk(
            json!([{"functionCall": {"name": "file_edit", "willContinue": true}}]),
            None,
        );
        for f in 0..ARG_FRAGMENTS {
            chunk(
                json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.text", "stringValue": format!("frag{f} \"x\" "), "willContinue": true}], "willContinue": true}}]),
                None,
            );
        }
        chunk(json!([{"functionCall": {}}]), None);
    }
    chunk(json!([{"text": ""}]), Some("STOP"));
    out.into_bytes()
}

/// A Responses stream in the shape of the fake vendor's (`response.*` events with `event:`
/// lines): a reasoning summary, a long text, four function calls with fragmented
/// arguments, `response.completed` with usage.
fn responses_body() -> Vec<u8> {
    let mut out = String::new();
    let mut ev = |v: serde_json::Value| {
        out.push_str(&format!(
            "event: {}\ndata: {v}\n\n",
            v["type"].as_str().unwrap_or("")
        ))
    };
    ev(
        json!({"type": "response.created", "response": {"id": "resp_68af4c1e5b7c8190a1b2", "status": "in_progress"}}),
    );
    for i in 0..TEXT_EVENTS / 10 {
        ev(
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_68af4c1f0a3c8190", "output_index": 0, "summary_index": 0, "delta": format!("**Step {i}** I am considering the plan. ")}),
        );
    }
    for i in 0..TEXT_EVENTS {
        ev(
            json!({"type": "response.output_text.delta", "item_id": "msg_68af4c2a1d4c8190", "output_index": 1, "content_index": 0, "delta": format!(" token{i} and")}),
        );
    }
    for call in 0..4 {
        let item = format!("fc_68af4c3b2e5d819{call}");
        ev(
            json!({"type": "response.output_item.added", "output_index": call + 2,
            "item": {"id": item, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": format!("call_{call}"), "name": "file_edit"}}),
        );
        let mut args = String::from("{\"text\":\"");
        for f in 0..ARG_FRAGMENTS {
            let delta = format!("frag{f} \\\"x\\\" ");
            args.push_str(&delta);
            ev(
                json!({"type": "response.function_call_arguments.delta", "item_id": item, "output_index": call + 2, "delta": delta}),
            );
        }
        args.push_str("\"}");
        ev(
            json!({"type": "response.function_call_arguments.done", "item_id": item, "output_index": call + 2, "arguments": args}),
        );
        ev(
            json!({"type": "response.output_item.done", "output_index": call + 2,
            "item": {"id": item, "type": "function_call", "status": "completed", "arguments": args, "call_id": format!("call_{call}"), "name": "file_edit"}}),
        );
    }
    ev(
        json!({"type": "response.completed", "response": {"id": "resp_68af4c1e5b7c8190a1b2", "status": "completed",
        "usage": {"input_tokens": 377, "output_tokens": 52000, "output_tokens_details": {"reasoning_tokens": 2000}}}}),
    );
    out.into_bytes()
}

fn responses(body: &[u8]) -> EventStream {
    decode::decode(feed(body), ResponsesDecoder::default())
}

fn feed(body: &[u8]) -> ikigai::provider::http::DataStream {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        body.chunks(16 * 1024).map(|c| Ok(c.to_vec())).collect();
    sse_data_from(
        futures_util::stream::iter(chunks),
        Duration::from_secs(60),
        64 * 1024 * 1024,
    )
}

async fn count_calls(mut events: EventStream) -> usize {
    let mut calls = 0;
    while let Some(e) = events.next().await {
        if let StreamEvent::ToolCall { .. } = e.unwrap() {
            calls += 1;
        }
    }
    calls
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let anthropic_body = anthropic_body();
    let gemini_body = gemini_body();
    // The streams decode to what they hold before anything is timed.
    assert_eq!(
        rt.block_on(count_calls(anthropic::decode(feed(&anthropic_body)))),
        4
    );
    assert_eq!(rt.block_on(count_calls(google::decode(feed(&gemini_body)))), 5);
    let responses_body = responses_body();
    assert_eq!(rt.block_on(count_calls(responses(&responses_body))), 4);

    let mut g = c.benchmark_group("vendor_sse");
    g.measurement_time(Duration::from_secs(8));
    g.throughput(Throughput::Bytes(anthropic_body.len() as u64));
    g.bench_function("anthropic_decode_bytes", |b| {
        b.iter(|| rt.block_on(count_calls(anthropic::decode(feed(&anthropic_body)))))
    });
    g.throughput(Throughput::Bytes(gemini_body.len() as u64));
    g.bench_function("gemini_decode_bytes", |b| {
        b.iter(|| rt.block_on(count_calls(google::decode(feed(&gemini_body)))))
    });
    g.throughput(Throughput::Bytes(responses_body.len() as u64));
    g.bench_function("responses_decode_bytes", |b| {
        b.iter(|| rt.block_on(count_calls(responses(&responses_body))))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
