//! A fake Chat Completions vendor with a context window: it counts every request's tokens
//! (bytes/4 of the JSON messages and tools, as a tokenizer-free server would estimate),
//! refuses a request over its window with 400 and the real error body of the vendor it
//! plays, rejects histories a strict vendor rejects (a tool result without its call),
//! answers summary requests with a short summary by itself, and otherwise plays scripted
//! steps. Every request is recorded with its token count, and every method and path in
//! the order they came (the window questions too). Asked, it answers llama.cpp's `/props`
//! with its window.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

/// Whose context-length error the vendor answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    OpenAi,
    LlamaCpp,
    Anthropic,
    Gemini,
}

impl Flavor {
    /// The vendor's real 400 body for a prompt of `tokens` in a window of `window`.
    pub fn error_body(self, tokens: u64, window: u64) -> String {
        match self {
            Flavor::OpenAi => json!({"error": {
                "message": format!("This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."),
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
            Flavor::LlamaCpp => json!({"error": {"code": 400,
                "message": format!("request ({tokens} tokens) exceeds the available context size ({window} tokens), try increasing it"),
                "type": "exceed_context_size_error", "n_prompt_tokens": tokens, "n_ctx": window}}),
            Flavor::Anthropic => json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": format!("prompt is too long: {tokens} tokens > {window} maximum")}}),
            Flavor::Gemini => json!({"error": {"code": 400,
                "message": format!("The input token count ({tokens}) exceeds the maximum number of tokens allowed ({window})."),
                "status": "INVALID_ARGUMENT"}}),
        }
        .to_string()
    }
}

/// What the model does when asked (a summary request is answered by itself).
#[derive(Clone, Debug)]
pub enum Step {
    /// One tool call.
    Call { name: String, arguments: String },
    /// A plain answer.
    Text(String),
}

impl Step {
    pub fn call(name: &str, arguments: &str) -> Step {
        Step::Call {
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    pub fn text(t: &str) -> Step {
        Step::Text(t.into())
    }
}

/// One request as the vendor saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub body: Value,
    pub tokens: u64,
    /// Refused: over the window.
    pub refused: bool,
    /// A summary request (answered with a summary).
    pub summary: bool,
}

impl Seen {
    pub fn messages(&self) -> &Vec<Value> {
        self.body["messages"].as_array().expect("messages")
    }

    /// Every message's text content, joined (to look for stubs and summaries).
    pub fn text(&self) -> String {
        self.messages()
            .iter()
            .filter_map(|m| m["content"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

struct Shared {
    window: Mutex<u64>,
    flavor: Flavor,
    steps: Mutex<VecDeque<Step>>,
    seen: Mutex<Vec<Seen>>,
    calls: Mutex<u64>,
    /// `METHOD /path` of every request, in order.
    order: Mutex<Vec<String>>,
    /// Whether `GET /props` answers with the window.
    props: std::sync::atomic::AtomicBool,
}

/// The running vendor; dropping it stops the server.
pub struct WindowVendor {
    pub base_url: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Tokens of a request as this vendor counts them.
pub fn count_tokens(body: &Value) -> u64 {
    let messages = body["messages"].to_string().len() as u64;
    let tools = body.get("tools").map_or(0, |t| t.to_string().len() as u64);
    (messages + tools).div_ceil(4)
}

impl WindowVendor {
    pub fn start(window: u64, flavor: Flavor) -> WindowVendor {
        let shared = Arc::new(Shared {
            window: Mutex::new(window),
            flavor,
            steps: Mutex::new(VecDeque::new()),
            seen: Mutex::new(Vec::new()),
            calls: Mutex::new(0),
            order: Mutex::new(Vec::new()),
            props: std::sync::atomic::AtomicBool::new(false),
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
        let addr = ready_rx.recv().expect("vendor started");
        WindowVendor {
            base_url: format!("http://{addr}/v1"),
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn push(&self, step: Step) -> &Self {
        self.shared.steps.lock().unwrap().push_back(step);
        self
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    pub fn set_window(&self, w: u64) {
        *self.shared.window.lock().unwrap() = w;
    }

    /// Answers llama.cpp's `GET /props` with the window (`default_generation_settings.n_ctx`).
    pub fn answer_props(&self) -> &Self {
        self.shared.props.store(true, std::sync::atomic::Ordering::SeqCst);
        self
    }

    /// `METHOD /path` of every request so far, in the order they came.
    pub fn order(&self) -> Vec<String> {
        self.shared.order.lock().unwrap().clone()
    }

    pub fn steps_left(&self) -> usize {
        self.shared.steps.lock().unwrap().len()
    }
}

impl Drop for WindowVendor {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({"id": "chatcmpl-w", "object": "chat.completion.chunk", "created": 1, "model": "w",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {c}\n\n")
}

fn sse(events: Vec<String>) -> Response {
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(Body::from(events.concat()))
        .expect("response")
}

fn status(code: u16, body: String) -> Response {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .expect("response")
}

/// A strict vendor's check: every tool message answers a call made before it.
fn history_error(messages: &[Value]) -> Option<String> {
    let mut called = HashSet::new();
    for m in messages {
        if let Some(calls) = m["tool_calls"].as_array() {
            for c in calls {
                called.insert(c["id"].as_str().unwrap_or_default().to_string());
            }
        }
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or_default();
            if !called.contains(id) {
                return Some(format!("tool message {id} does not answer a preceding tool call"));
            }
        }
    }
    None
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: axum::http::Uri,
    body: Bytes,
) -> Response {
    shared
        .order
        .lock()
        .unwrap()
        .push(format!("{method} {}", uri.path()));
    // Ollama's window question is a POST, but not a model request.
    if uri.path().ends_with("/api/show") {
        return status(404, String::new());
    }
    if method == Method::GET {
        if uri.path() == "/props" && shared.props.load(std::sync::atomic::Ordering::SeqCst) {
            let window = *shared.window.lock().unwrap();
            return status(
                200,
                json!({"default_generation_settings": {"n_ctx": window}}).to_string(),
            );
        }
        return status(404, String::new());
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let tokens = count_tokens(&body);
    let window = *shared.window.lock().unwrap();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    let summary = body.get("tools").is_none() && last_user.starts_with("Summarise the conversation");
    let refused = tokens > window;
    shared.seen.lock().unwrap().push(Seen {
        body: body.clone(),
        tokens,
        refused,
        summary,
    });
    if refused {
        return status(400, shared.flavor.error_body(tokens, window));
    }
    if let Some(why) = history_error(&messages) {
        return status(
            400,
            json!({"error": {"message": why, "type": "invalid_request_error"}}).to_string(),
        );
    }
    let usage = |out: u64| {
        let c = json!({"id": "chatcmpl-w", "object": "chat.completion.chunk", "created": 1, "model": "w",
            "choices": [], "usage": {"prompt_tokens": tokens, "completion_tokens": out, "total_tokens": tokens + out}});
        format!("data: {c}\n\n")
    };
    let step = if summary {
        // Short, and naming the first task it saw so tests can follow it.
        let first = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default();
        let first: String = first.chars().take(80).collect();
        Step::Text(format!(
            "SUMMARY: Task: {first}. Decisions: none. Files touched: none. Open questions: none."
        ))
    } else {
        shared
            .steps
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Step::text("ok"))
    };
    let mut ev = vec![chunk(json!({"role": "assistant", "content": null}), None)];
    match step {
        Step::Text(t) => {
            ev.push(chunk(json!({"content": t}), None));
            ev.push(chunk(json!({}), Some("stop")));
        }
        Step::Call { name, arguments } => {
            let n = {
                let mut c = shared.calls.lock().unwrap();
                *c += 1;
                *c
            };
            ev.push(chunk(
                json!({"tool_calls": [{"index": 0, "id": format!("call_{n}"), "type": "function",
                    "function": {"name": name, "arguments": arguments}}]}),
                None,
            ));
            ev.push(chunk(json!({}), Some("tool_calls")));
        }
    }
    ev.push(usage(10));
    ev.push("data: [DONE]\n\n".into());
    let _ = StatusCode::OK;
    sse(ev)
}
