//! Reasoning from the outside: under `--json` it arrives as `reasoning_delta` events,
//! apart from the answer's `text_delta`s; in plain output it is never printed into the
//! answer; and it is stored, so a resumed session has it in its history (the TUI shows it
//! dimmed from there, see `ui::tui::tests_models`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common::fake_provider::{FakeProvider, Reply};
use serde_json::{Value, json};

fn run(home: &Path, args: &[&str]) -> Output {
    let mut cmd = common::ikigai(home);
    cmd.args(args)
        .current_dir(home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn ikigai");
    child.stdin.take().unwrap().write_all(b"").unwrap();
    child.wait_with_output().unwrap()
}

/// Reasoning in two pieces, then the answer.
fn thinking_then_answer() -> Reply {
    let c = |delta: Value, finish: Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    Reply::payloads(&[
        c(
            json!({"role": "assistant", "reasoning_content": "First, "}),
            Value::Null,
        ),
        c(json!({"reasoning_content": "think hard."}), Value::Null),
        c(json!({"content": "The answer is 4."}), Value::Null),
        c(json!({}), json!("stop")),
        "[DONE]".into(),
    ])
}

#[test]
fn reasoning_is_marked_in_json_and_kept_out_of_the_answer() {
    let fake = FakeProvider::start();
    fake.push(thinking_then_answer());
    fake.push(thinking_then_answer());
    fake.push(Reply::text("ok"));
    let h = tempfile::tempdir().unwrap();
    let out = run(h.path(), &["--json", "-p", "2+2?", "--base-url", &fake.base_url]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |kind: &str| -> String {
        events
            .iter()
            .filter(|e| e["type"] == kind)
            .map(|e| e["text"].as_str().unwrap())
            .collect()
    };
    assert_eq!(of("reasoning_delta"), "First, think hard.");
    assert_eq!(of("text_delta"), "The answer is 4.");
    let first_text = events.iter().position(|e| e["type"] == "text_delta").unwrap();
    let last_thought = events
        .iter()
        .rposition(|e| e["type"] == "reasoning_delta")
        .unwrap();
    assert!(last_thought < first_text, "reasoning comes before the answer");

    // Plain output: the answer only.
    let out = run(h.path(), &["-p", "again", "--base-url", &fake.base_url]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.trim(), "The answer is 4.");

    // Stored: a resume brings the reasoning back in the history, as reasoning.
    let out = run(
        h.path(),
        &["-c", "--json", "-p", "thanks", "--base-url", &fake.base_url],
    );
    let started: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(started["type"], "session_started");
    let history = started["history"].as_array().unwrap();
    let thoughts: Vec<&Value> = history.iter().filter(|m| m["kind"] == "reasoning").collect();
    assert_eq!(thoughts.len(), 1, "{history:?}");
    assert_eq!(thoughts[0]["content"], "First, think hard.");
    assert!(
        history
            .iter()
            .filter(|m| m["kind"] == "assistant")
            .all(|m| m["content"] == "The answer is 4.")
    );
}
