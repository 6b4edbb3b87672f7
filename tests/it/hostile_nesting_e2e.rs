//! A hostile model's deeply nested JSON, through the real binary: tool-call arguments
//! nested 100,000 deep. Parsers that recurse overflow the stack on such text (sonic-rs,
//! which writes request bodies, aborted ikigai on it); vendors parse arguments too. ikigai
//! must neither crash nor send a request a strict vendor rejects: where arguments arrive
//! as text (Anthropic's pieces, Chat Completions' string) the call fails as a tool error
//! and the arguments go back as text, `{"invalid_arguments": …}`, and the turn ends with
//! the model's answer; where they arrive as JSON inside the chunk (Gemini) the chunk
//! cannot be read and the turn ends with a short, plain error, the text before it kept.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Output, Stdio};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::fake_vendor::{FakeVendor, Wire, anthropic_reply, gemini_chunk};
use serde_json::json;

const DEPTH: usize = 100_000;

fn deep() -> String {
    format!("{{\"pattern\":{}{}}}", "[".repeat(DEPTH), "]".repeat(DEPTH))
}

fn run(home: &std::path::Path, args: &[&str], key: (&str, &str)) -> Output {
    let mut cmd = common::ikigai(home);
    cmd.args(args)
        .env(key.0, key.1)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.output().expect("run ikigai")
}

/// The last 2,000 characters of `s` (a failure shows the end of a long output).
fn tail(s: &str) -> &str {
    let mut i = s.len().saturating_sub(2000);
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

/// The run ended well, with the model's answer after the failed call.
fn answered(out: &Output) {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", tail(&stderr));
    let answer = "Those arguments were broken.";
    assert!(stdout.contains(answer), "{}", tail(&stdout));
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn anthropic_arguments_nested_100000_deep_fail_the_call_and_go_back_as_text() {
    let h = tempfile::tempdir().unwrap();
    let fake = FakeVendor::start(Wire::Anthropic);
    fake.push(anthropic_reply(None, "", &[("toolu_deep", "glob", &deep())]));
    fake.push(anthropic_reply(None, "Those arguments were broken.", &[]));
    let out = run(
        h.path(),
        &[
            "-p",
            "go",
            "--provider",
            "anthropic",
            "--base-url",
            &fake.base_url,
        ],
        ("ANTHROPIC_API_KEY", "sk-ant-key"),
    );
    answered(&out);
    assert_eq!(fake.rejections(), Vec::<String>::new());
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].body["messages"].as_array().unwrap();
    let block = |kind: &str| {
        messages
            .iter()
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .find(|b| b["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} block is sent back"))
    };
    let call = block("tool_use");
    assert_eq!(call["id"], "toolu_deep");
    assert_eq!(call["input"], json!({"invalid_arguments": deep()}));
    let result = block("tool_result");
    assert_eq!(result["tool_use_id"], "toolu_deep");
    assert_eq!(result["is_error"], true, "{result}");
}

#[test]
fn gemini_arguments_nested_100000_deep_end_the_turn_with_a_clear_error() {
    let h = tempfile::tempdir().unwrap();
    let fake = FakeVendor::start(Wire::Gemini);
    let chunk = format!(
        "data: {{\"candidates\":[{{\"content\":{{\"role\":\"model\",\"parts\":[{{\"functionCall\":{{\"name\":\"glob\",\"args\":{}}}}}]}},\"index\":0}}]}}\r\n\r\n",
        deep()
    );
    fake.push(Reply::events(vec![
        gemini_chunk(json!([{"text": "Looking. "}]), None),
        chunk,
        gemini_chunk(json!([{"text": ""}]), Some("STOP")),
    ]));
    let out = run(
        h.path(),
        &["-p", "go", "--provider", "google", "--base-url", &fake.base_url],
        ("GEMINI_API_KEY", "goog-key"),
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // An error exit, not a signal: the chunk cannot be read, and that is said plainly.
    assert_eq!(out.status.code(), Some(1), "stderr: {}", tail(&stderr));
    assert!(
        stdout.contains("Looking."),
        "the text before it is kept: {}",
        tail(&stdout)
    );
    assert!(
        stderr.contains("malformed chunk") && stderr.contains("recursion limit"),
        "{}",
        tail(&stderr)
    );
    assert!(
        stderr.len() < 4000,
        "the chunk is not dumped whole: {} bytes",
        stderr.len()
    );
}

#[test]
fn chat_arguments_nested_100000_deep_fail_the_call_and_go_back_as_text() {
    let h = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("call_deep", "glob", &deep())]));
    fake.push(Reply::text("Those arguments were broken."));
    let out = run(
        h.path(),
        &["-p", "go", "--base-url", &fake.base_url],
        ("OPENAI_API_KEY", "sk-key"),
    );
    answered(&out);
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].messages();
    let call = messages
        .iter()
        .find_map(|m| m["tool_calls"].as_array().and_then(|c| c.first()))
        .expect("the call is sent back");
    assert_eq!(call["id"], "call_deep");
    let arguments: serde_json::Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, json!({"invalid_arguments": deep()}));
    let result = messages.iter().find(|m| m["role"] == "tool").expect("its result");
    assert_eq!(result["tool_call_id"], "call_deep");
    assert!(
        result["content"].as_str().unwrap().contains("INVALID_PARAMS"),
        "{result}"
    );
}
