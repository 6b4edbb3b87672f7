//! Strict fake vendors on 127.0.0.1 for the Anthropic Messages and Gemini wire formats:
//! every request is recorded and checked as the real vendor checks it (`strict.rs`); a
//! rejected request gets the vendor's 400 error body, an accepted one the next scripted
//! reply (`fake_provider::Reply`, also recorded fixtures).
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use serde_json::{Value, json};

use super::fake_provider::{End, Reply, pieces};
use super::strict;

/// Which vendor the fake imitates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Wire {
    Anthropic,
    Gemini,
}

/// A request the fake received, and why it was rejected if it was.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub query: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
    pub rejected: Option<String>,
}

struct Shared {
    wire: Wire,
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Seen>>,
    /// What `GET …/models` lists (see `with_models`); `None` leaves it to the strict check.
    models: Mutex<Option<Vec<String>>>,
}

/// The running fake; dropping it stops the server.
pub struct FakeVendor {
    pub base_url: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeVendor {
    /// Serves at `http://127.0.0.1:PORT/v1` (Anthropic) or `/v1beta` (Gemini).
    pub fn start(wire: Wire) -> FakeVendor {
        let shared = Arc::new(Shared {
            wire,
            replies: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            models: Mutex::new(None),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let state = shared.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
                ready_tx
                    .send(listener.local_addr().expect("addr"))
                    .expect("ready");
                let app = Router::new().fallback(handle).with_state(state);
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stopped => {}
                }
            });
            rt.shutdown_background();
        });
        let addr = ready_rx.recv().expect("fake vendor started");
        let version = match wire {
            Wire::Anthropic => "v1",
            Wire::Gemini => "v1beta",
        };
        FakeVendor {
            base_url: format!("http://{addr}/{version}"),
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn push(&self, r: Reply) -> &Self {
        self.shared.replies.lock().expect("lock").push_back(r);
        self
    }

    /// Answers `GET /v1/models` (Anthropic) or `GET /v1beta/models` (Gemini) with these
    /// model ids in the vendor's list shape, when the vendor's key header is present
    /// (401 otherwise). Such requests are recorded and use up no reply.
    pub fn with_models(&self, ids: &[&str]) -> &Self {
        *self.shared.models.lock().expect("lock") = Some(ids.iter().map(|s| s.to_string()).collect());
        self
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.shared.requests.lock().expect("lock").clone()
    }

    /// Why each rejected request was rejected.
    pub fn rejections(&self) -> Vec<String> {
        self.requests().into_iter().filter_map(|r| r.rejected).collect()
    }
}

impl Drop for FakeVendor {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn rejection(wire: Wire, message: &str) -> Response {
    let body = match wire {
        Wire::Anthropic => {
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
        }
        Wire::Gemini => json!({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}),
    };
    Response::builder()
        .status(400)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .expect("response")
}

/// The vendor's model list, or 401 without its key header.
fn model_list(wire: Wire, headers: &HashMap<String, String>, ids: &[String]) -> Response {
    let (key, body) = match wire {
        Wire::Anthropic => (
            "x-api-key",
            json!({"data": ids.iter().map(|id| json!({"type": "model", "id": id, "display_name": id})).collect::<Vec<_>>(),
                "has_more": false}),
        ),
        Wire::Gemini => (
            "x-goog-api-key",
            json!({"models": ids.iter().map(|id| json!({"name": format!("models/{id}"),
                "supportedGenerationMethods": ["generateContent", "countTokens"]})).collect::<Vec<_>>()}),
        ),
    };
    let (status, body) = if headers.get(key).is_some_and(|v| !v.is_empty()) {
        (200, body.to_string())
    } else {
        (
            401,
            json!({"error": {"message": format!("{key} header is required")}}).to_string(),
        )
    };
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .expect("response")
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: axum::http::Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let headers: HashMap<String, String> = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let path = uri.path().to_string();
    let query = uri.query().unwrap_or("").to_string();
    let models = shared.models.lock().expect("lock").clone();
    if let (Some(ids), true) = (
        models,
        method == axum::http::Method::GET && path.ends_with("/models"),
    ) {
        let answer = model_list(shared.wire, &headers, &ids);
        shared.requests.lock().expect("lock").push(Seen {
            path,
            query,
            headers,
            body,
            rejected: None,
        });
        return answer;
    }
    let verdict = match shared.wire {
        Wire::Anthropic => strict::anthropic(&path, &headers, &body),
        Wire::Gemini => strict::gemini(&path, &query, &headers, &body),
    };
    shared.requests.lock().expect("lock").push(Seen {
        path,
        query,
        headers,
        body,
        rejected: verdict.clone().err(),
    });
    if let Err(message) = verdict {
        return rejection(shared.wire, &message);
    }
    let reply = shared.replies.lock().expect("lock").pop_front();
    match reply {
        None => Response::builder()
            .status(500)
            .body(Body::from("fake vendor: no scripted reply left"))
            .expect("response"),
        Some(Reply::Status { code, headers, body }) => {
            let mut b = Response::builder().status(code);
            // JSON unless the reply names its own content type.
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                b = b.header("content-type", "application/json");
            }
            for (k, v) in headers {
                b = b.header(k, v);
            }
            b.body(Body::from(body)).expect("response")
        }
        Some(Reply::Sse { chunks, delay, end }) => {
            let stream = futures_util::stream::unfold(
                (chunks.into_iter(), delay, end),
                |(mut it, delay, end)| async move {
                    let c = it.next()?;
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    Some((Ok::<_, std::io::Error>(Bytes::from(c)), (it, delay, end)))
                },
            );
            let _ = End::Close;
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .expect("response")
        }
    }
}

fn anthropic_event(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap_or("message")
    )
}

/// An Anthropic stream: optional thinking (with signature), optional text, then tool
/// calls whose `input_json_delta`s split the arguments into 3 pieces each.
pub fn anthropic_reply(thinking: Option<(&str, &str)>, text: &str, calls: &[(&str, &str, &str)]) -> Reply {
    let mut ev = vec![anthropic_event(json!({"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-fake", "content": [],
        "stop_reason": null, "usage": {"input_tokens": 20, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0, "output_tokens": 1}}}))];
    let mut index = 0;
    if let Some((thought, signature)) = thinking {
        ev.push(anthropic_event(json!({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}})));
        for p in pieces(thought, 2) {
            ev.push(anthropic_event(json!({"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": p}})));
        }
        ev.push(anthropic_event(json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}})));
        ev.push(anthropic_event(
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    if !text.is_empty() {
        ev.push(anthropic_event(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
        for word in text.split_inclusive(' ') {
            ev.push(anthropic_event(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": word}})));
        }
        ev.push(anthropic_event(
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for (id, name, args) in calls {
        ev.push(anthropic_event(json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
        ev.push("event: ping\ndata: {\"type\": \"ping\"}\n\n".to_string());
        for p in pieces(args, 3) {
            ev.push(anthropic_event(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}})));
        }
        ev.push(anthropic_event(
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let stop = if calls.is_empty() { "end_turn" } else { "tool_use" };
    ev.push(anthropic_event(json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 15}})));
    ev.push(anthropic_event(json!({"type": "message_stop"})));
    Reply::events(ev)
}

fn gemini_chunk(parts: Value, finish: Option<&str>) -> String {
    let mut cand = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(f) = finish {
        cand["finishReason"] = json!(f);
    }
    let mut c = json!({"candidates": [cand], "modelVersion": "gemini-fake", "responseId": "resp-fake-1"});
    if finish.is_some() {
        c["usageMetadata"] = json!({"promptTokenCount": 40, "candidatesTokenCount": 9, "thoughtsTokenCount": 11, "cachedContentTokenCount": 30, "totalTokenCount": 60});
    }
    format!("data: {c}\r\n\r\n")
}

/// A Gemini stream (CRLF-framed): optional thought summary, text, then calls. A call's
/// string arguments stream as Vertex `partialArgs` pieces; the first call carries
/// `signature` as its `thoughtSignature`. Calls have no ids (Gemini's are optional).
pub fn gemini_reply(thought: &str, signature: &str, text: &str, calls: &[(&str, Value)]) -> Reply {
    let mut ev = Vec::new();
    if !thought.is_empty() {
        ev.push(gemini_chunk(json!([{"text": thought, "thought": true}]), None));
    }
    for word in text.split_inclusive(' ').filter(|w| !w.is_empty()) {
        ev.push(gemini_chunk(json!([{"text": word}]), None));
    }
    for (i, (name, args)) in calls.iter().enumerate() {
        let mut start = json!({"functionCall": {"name": name, "willContinue": true}});
        if i == 0 && !signature.is_empty() {
            start["thoughtSignature"] = json!(signature);
        }
        ev.push(gemini_chunk(json!([start]), None));
        for (key, value) in args.as_object().into_iter().flatten() {
            let s = value.as_str().unwrap_or_default();
            for p in pieces(s, 3) {
                ev.push(gemini_chunk(
                    json!([{"functionCall": {"partialArgs": [{"jsonPath": format!("$.{key}"), "stringValue": p, "willContinue": true}], "willContinue": true}}]),
                    None,
                ));
            }
        }
        ev.push(gemini_chunk(json!([{"functionCall": {}}]), None));
    }
    ev.push(gemini_chunk(json!([{"text": ""}]), Some("STOP")));
    Reply::events(ev)
}

/// `Reply::events` paced so each event is its own read.
pub fn paced(r: Reply) -> Reply {
    r.paced(Duration::from_millis(1))
}

/// An OpenAI Responses stream (served by `fake_provider::FakeProvider`, whose strict
/// check covers `/responses`): optional function calls (call_id, name, arguments in 3
/// pieces each), then optional text, then `response.completed` with usage.
pub fn responses_reply(text: &str, calls: &[(&str, &str, &str)]) -> Reply {
    let ev = |v: Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap_or(""));
    let mut out = vec![ev(
        json!({"type": "response.created", "response": {"id": "resp_fake", "status": "in_progress"}}),
    )];
    for (i, (call_id, name, args)) in calls.iter().enumerate() {
        let item_id = format!("fc_{i}");
        out.push(ev(json!({"type": "response.output_item.added", "output_index": i,
            "item": {"id": item_id, "type": "function_call", "arguments": "", "call_id": call_id, "name": name}})));
        for p in pieces(args, 3) {
            out.push(ev(json!({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": i, "delta": p})));
        }
        out.push(ev(json!({"type": "response.output_item.done", "output_index": i,
            "item": {"id": item_id, "type": "function_call", "status": "completed", "arguments": args, "call_id": call_id, "name": name}})));
    }
    if !text.is_empty() {
        out.push(ev(json!({"type": "response.output_text.delta", "item_id": "msg_fake", "output_index": calls.len(), "content_index": 0, "delta": text})));
    }
    out.push(ev(
        json!({"type": "response.completed", "response": {"id": "resp_fake", "status": "completed",
        "usage": {"input_tokens": 50, "output_tokens": 9}}}),
    ));
    Reply::events(out)
}
