//! A long conversation's Chat Completions request, as a server on 127.0.0.1 receives it:
//! written piece by piece while it is sent, yet with its exact `Content-Length` (never
//! chunked) and whole; and a server that refuses it before reading it all is heard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures_util::StreamExt;
use ikigai::config::{Config, Secret};
use ikigai::message::Message;
use ikigai::provider::{Provider, ProviderError, Request, StreamEvent};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// What the server saw of the one request it took.
struct Seen {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads a request's head: its header lines, lower-cased names.
async fn read_head(r: &mut BufReader<TcpStream>) -> Vec<(String, String)> {
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        r.read_line(&mut line).await.unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            return headers;
        }
        if let Some((n, v)) = line.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
}

fn provider(url: &str) -> OpenAi {
    let config = Config {
        base_url: Some(url.to_string()),
        api_key: Some(Secret::new("k")),
        model: Some("m".into()),
        ..Config::default()
    };
    ikigai::provider::openai::OpenAiChat::new(&config).unwrap()
}

type OpenAi = ikigai::provider::openai::OpenAiChat;

/// `turns` turns of user, bash call, a 400-byte result and an answer.
fn history(turns: usize) -> Vec<Message> {
    let mut m = Vec::new();
    for t in 0..turns {
        let id = format!("call_{t}");
        m.push(Message::user(format!("turn {t}: run \"echo\"")));
        m.push(Message::tool_call(
            &id,
            "bash",
            format!(r#"{{"command":"echo {t}"}}"#),
        ));
        let out = json!({"tool_success": true, "result": {"output": format!("{t}\n{}", "x".repeat(400))}});
        m.push(Message::tool_result(&id, "bash", "exit 0", out.to_string(), true));
        m.push(Message::assistant(format!("Done with turn {t}.")));
    }
    m
}

/// A request for model `m` with no tools.
fn request<'a>(messages: &'a [Message], system: &'a str) -> Request<'a> {
    Request {
        model: "m",
        system,
        messages,
        tools: &[],
        stop: &[],
        environment: "",
        max_output_tokens: None,
    }
}

const ANSWER: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n\
data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":null}]}\n\n\
data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
data: [DONE]\n\n";

#[tokio::test]
async fn a_long_conversation_goes_out_whole_with_its_exact_length() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        let mut r = BufReader::new(socket);
        let headers = read_head(&mut r).await;
        let seen = Seen {
            headers,
            body: Vec::new(),
        };
        let len: usize = seen
            .header("content-length")
            .expect("a Content-Length")
            .parse()
            .unwrap();
        let mut body = vec![0; len];
        r.read_exact(&mut body).await.unwrap();
        r.get_mut().write_all(ANSWER.as_bytes()).await.unwrap();
        r.get_mut().shutdown().await.unwrap();
        Seen { body, ..seen }
    });
    let msgs = history(2_500);
    let p = provider(&url);
    let req = request(&msgs, "You are a test.");
    let mut text = String::new();
    let mut stream = p.stream(req).await.unwrap();
    while let Some(e) = stream.next().await {
        if let StreamEvent::TextDelta(t) = e.unwrap() {
            text.push_str(&t);
        }
    }
    assert_eq!(text, "ok");
    let seen = server.await.unwrap();
    assert_eq!(seen.header("transfer-encoding"), None, "not chunked");
    assert!(seen.body.len() > 1_000_000, "{} bytes", seen.body.len());
    let body: Value = serde_json::from_slice(&seen.body).unwrap();
    assert_eq!(body["model"], "m");
    assert_eq!(body["stream"], true);
    let wire = body["messages"].as_array().unwrap();
    // The system prompt, then per turn: user, the call, its result, the answer.
    assert_eq!(wire.len(), 1 + 4 * 2_500);
    assert_eq!(wire[0], json!({"role": "system", "content": "You are a test."}));
    assert_eq!(wire[1]["content"], "turn 0: run \"echo\"");
    let last = &wire[wire.len() - 2];
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "call_2499");
    assert_eq!(wire[wire.len() - 1]["content"], "Done with turn 2499.");
    // The same bytes a body built in one piece has (the provider adds its options: a
    // server on this machine samples at the local default).
    let mut body = body;
    assert_eq!(body["temperature"], 0.2);
    body.as_object_mut().unwrap().remove("temperature");
    assert_eq!(body, ikigai::provider::openai::request::body_value(&req));
}

#[tokio::test]
async fn a_refusal_before_the_body_is_read_is_reported_not_a_hang() {
    // llama.cpp's answer when a request does not fit its context, sent as soon as the
    // head arrived; the server then drains the body it never reads.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        let mut r = BufReader::new(socket);
        read_head(&mut r).await;
        let error = json!({"error": {"code": 400, "type": "exceed_context_size_error",
            "message": "request (600000 tokens) exceeds the available context size (8192 tokens)",
            "n_prompt_tokens": 600000, "n_ctx": 8192}})
        .to_string();
        let head = format!(
            "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            error.len()
        );
        r.get_mut().write_all(head.as_bytes()).await.unwrap();
        r.get_mut().write_all(error.as_bytes()).await.unwrap();
        let mut sink = Vec::new();
        let _ = r.read_to_end(&mut sink).await;
    });
    let msgs = history(2_500);
    let p = provider(&url);
    let req = request(&msgs, "");
    let answer = tokio::time::timeout(Duration::from_secs(30), p.stream(req))
        .await
        .expect("an answer, not a hang");
    let Err(e) = answer else {
        panic!("a refused request streamed")
    };
    // The typed refusal the agent reads as "compact and retry", with the counts the
    // server gave and its own words for the user.
    assert!(
        matches!(
            e,
            ProviderError::ContextLength {
                requested: Some(600_000),
                window: Some(8192),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("exceeds the available context size (8192 tokens)"),
        "{e}"
    );
    server.abort();
}
