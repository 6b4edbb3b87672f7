//! A fake model vendor on 127.0.0.1 speaking the exact Chat Completions SSE wire format:
//! scripted replies and recorded fixture streams, with every request recorded. Like a
//! strict vendor, it answers 400 to an invalid history (see `strict_history.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};

/// The recorded streams kept in this repository (`tests/fixtures/sse`, see its SOURCES.md).
pub fn fixture_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sse")
        .join(name)
}

pub fn fixture(name: &str) -> Vec<u8> {
    let p = fixture_path(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", p.display()))
}

/// How a streamed reply ends after its chunks.
#[derive(Clone, Debug, PartialEq)]
pub enum End {
    /// The body completes normally.
    Close,
    /// The connection is cut mid-body.
    Drop,
    /// Nothing more is ever sent.
    Stall,
    /// These bytes are sent again and again, as fast as they are read, forever.
    Forever(Vec<u8>),
}

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// An SSE body sent as these chunks, each `delay` apart.
    Sse {
        chunks: Vec<Vec<u8>>,
        delay: Duration,
        end: End,
    },
    /// A plain HTTP answer (errors).
    Status {
        code: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

/// A request the fake received.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub path: String,
    pub headers: HashMap<String, String>,
    pub body: Value,
}

impl Recorded {
    pub fn messages(&self) -> &Vec<Value> {
        self.body["messages"].as_array().expect("messages array")
    }
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {c}\n\n")
}

fn usage_chunk(input: u64, output: u64) -> String {
    let c = json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake",
        "choices": [], "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}});
    format!("data: {c}\n\n")
}

/// Splits `s` into `n` roughly equal pieces at char boundaries.
pub fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let size = chars.len().div_ceil(n.max(1)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

impl Reply {
    /// Payload strings (`data:` contents) as one SSE body, one chunk per event.
    pub fn payloads(payloads: &[String]) -> Reply {
        Reply::Sse {
            chunks: payloads
                .iter()
                .map(|p| format!("data: {p}\n\n").into_bytes())
                .collect(),
            delay: Duration::ZERO,
            end: End::Close,
        }
    }

    /// Raw SSE text, one chunk per event.
    pub fn events(events: Vec<String>) -> Reply {
        Reply::Sse {
            chunks: events.into_iter().map(String::into_bytes).collect(),
            delay: Duration::ZERO,
            end: End::Close,
        }
    }

    /// A plain answer streamed word by word, with usage and `[DONE]`.
    pub fn text(text: &str) -> Reply {
        let mut ev = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
        for word in text.split_inclusive(' ') {
            ev.push(chunk(json!({"content": word}), None));
        }
        ev.push(chunk(json!({}), Some("stop")));
        ev.push(usage_chunk(10, 5));
        ev.push("data: [DONE]\n\n".into());
        Reply::events(ev)
    }

    /// Tool calls (id, name, arguments) whose arguments arrive in 3 fragments each,
    /// optionally after some text.
    pub fn tool_calls_after(text: &str, calls: &[(&str, &str, &str)]) -> Reply {
        let mut ev = vec![chunk(json!({"role": "assistant", "content": null}), None)];
        if !text.is_empty() {
            ev.push(chunk(json!({"content": text}), None));
        }
        for (i, (id, name, args)) in calls.iter().enumerate() {
            ev.push(chunk(
                json!({"tool_calls": [{"index": i, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                None,
            ));
            for piece in pieces(args, 3) {
                ev.push(chunk(
                    json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                    None,
                ));
            }
        }
        ev.push(chunk(json!({}), Some("tool_calls")));
        ev.push(usage_chunk(20, 7));
        ev.push("data: [DONE]\n\n".into());
        Reply::events(ev)
    }

    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Reply {
        Reply::tool_calls_after("", calls)
    }

    /// A recorded fixture, cut into 61-byte chunks so events straddle reads.
    pub fn fixture(name: &str) -> Reply {
        let bytes = fixture(name);
        Reply::Sse {
            chunks: bytes.chunks(61).map(<[u8]>::to_vec).collect(),
            delay: Duration::ZERO,
            end: End::Close,
        }
    }

    /// A body that starts with `start` and never ends (`x` forever, 64 KiB at a time).
    pub fn endless(start: &str) -> Reply {
        Reply::Sse {
            chunks: vec![start.as_bytes().to_vec()],
            delay: Duration::ZERO,
            end: End::Forever(vec![b'x'; 64 * 1024]),
        }
    }

    pub fn status(code: u16, body: &str) -> Reply {
        Reply::Status {
            code,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push((name.to_string(), value.to_string()));
        }
        self
    }

    /// The same chunks, ending differently.
    pub fn ending(mut self, how: End) -> Reply {
        if let Reply::Sse { end, .. } = &mut self {
            *end = how;
        }
        self
    }

    /// Waits `d` before each chunk.
    pub fn paced(mut self, d: Duration) -> Reply {
        if let Reply::Sse { delay, .. } = &mut self {
            *delay = d;
        }
        self
    }

    /// Keeps only the first `n` chunks.
    pub fn truncated(mut self, n: usize) -> Reply {
        if let Reply::Sse { chunks, .. } = &mut self {
            chunks.truncate(n);
        }
        self
    }
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    /// GET requests take scripted replies too (model lists); off by default, so that
    /// context-window probes neither use up replies nor get answered.
    answer_gets: std::sync::atomic::AtomicBool,
    /// A streamed chunk containing this text waits until the hold changes.
    hold: Mutex<Option<String>>,
}

/// The running fake. Dropping it stops the server.
pub struct FakeProvider {
    pub base_url: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeProvider {
    pub fn start() -> FakeProvider {
        let shared = Arc::new(Shared::default());
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
                // Long histories make bodies larger than axum's 2 MB default.
                let app = Router::new()
                    .fallback(handle)
                    .layer(axum::extract::DefaultBodyLimit::disable())
                    .with_state(state);
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stopped => {}
                }
            });
            rt.shutdown_background();
        });
        let addr = ready_rx.recv().expect("fake provider started");
        FakeProvider {
            base_url: format!("http://{addr}/v1"),
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// GET requests (`/models`) are answered from the queue as well.
    pub fn answer_gets(&self) -> &Self {
        self.shared
            .answer_gets
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self
    }

    /// Queues the next answer.
    pub fn push(&self, r: Reply) -> &Self {
        self.shared.replies.lock().expect("lock").push_back(r);
        self
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("lock").clone()
    }

    /// Streams stop before the next chunk that contains `text` (in its SSE bytes) until
    /// the hold is moved or released. Replaces any earlier hold (which releases it).
    pub fn hold_before(&self, text: &str) {
        *self.shared.hold.lock().expect("lock") = Some(text.to_string());
    }

    /// Lets held streams go on.
    pub fn release(&self) {
        *self.shared.hold.lock().expect("lock") = None;
    }

    pub fn pending(&self) -> usize {
        self.shared.replies.lock().expect("lock").len()
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: axum::http::Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    // Questions about the model (llama.cpp /props, /models, Ollama /api/show) are not
    // model requests: this vendor does not answer them, and they use up no reply.
    let gets = shared.answer_gets.load(std::sync::atomic::Ordering::SeqCst);
    if (method == axum::http::Method::GET && !gets) || uri.path().ends_with("/api/show") {
        return Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Body::empty())
            .expect("response");
    }
    let body_json = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let headers_map = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    shared.requests.lock().expect("lock").push(Recorded {
        path: uri.path().to_string(),
        headers: headers_map,
        body: body_json.clone(),
    });
    let verdict = match (uri.path(), body_json.get("messages"), body_json.get("input")) {
        (p, Some(Value::Array(m)), _) if p.ends_with("/chat/completions") => {
            super::strict_history::check_chat(m)
        }
        (p, _, Some(Value::Array(i))) if p.ends_with("/responses") => {
            super::strict_history::check_responses(i)
        }
        _ => Ok(()),
    };
    if let Err(why) = verdict {
        let body = json!({"error": {"message": format!("Invalid history: {why}"),
            "type": "invalid_request_error", "param": "messages", "code": null}});
        return Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .expect("response");
    }
    let reply = shared.replies.lock().expect("lock").pop_front();
    match reply {
        None => Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Body::from(
                r#"{"error":{"message":"fake provider: no scripted reply left"}}"#,
            ))
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
                (chunks.into_iter(), delay, end, false),
                move |(mut it, delay, end, finished)| {
                    let shared = shared.clone();
                    async move {
                        if finished {
                            return None;
                        }
                        match it.next() {
                            Some(c) => {
                                if !delay.is_zero() {
                                    tokio::time::sleep(delay).await;
                                }
                                while shared
                                    .hold
                                    .lock()
                                    .expect("lock")
                                    .as_deref()
                                    .is_some_and(|h| String::from_utf8_lossy(&c).contains(h))
                                {
                                    tokio::time::sleep(Duration::from_millis(10)).await;
                                }
                                Some((Ok::<_, std::io::Error>(Bytes::from(c)), (it, delay, end, false)))
                            }
                            None => match end {
                                End::Close => None,
                                End::Drop => {
                                    // Pending first, so hyper flushes what was sent; then cut.
                                    tokio::time::sleep(Duration::from_millis(100)).await;
                                    Some((Err(std::io::Error::other("cut")), (it, delay, end, true)))
                                }
                                End::Stall => {
                                    std::future::pending::<()>().await;
                                    None
                                }
                                End::Forever(bytes) => {
                                    let c = Bytes::from(bytes.clone());
                                    Some((Ok(c), (it, delay, End::Forever(bytes), false)))
                                }
                            },
                        }
                    }
                },
            );
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .header("cache-control", "no-cache")
                .body(Body::from_stream(stream))
                .expect("response")
        }
    }
}
