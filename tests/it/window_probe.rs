//! The window question off the hot path (issue 39 §1): a request that fits any plausible
//! window reaches the server before it is asked its window; the question follows in the
//! background and its answer sizes what comes after (the tool's result, the next request's
//! answer cap); a request past the floor still waits for the answer; while the window is
//! unknown no usage event shows a share of a guessed window; a refusal as too long still
//! teaches the window, compacts and retries.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Output, Stdio};

use crate::common;
use crate::common::agent::{TestAgent, notices, turn_end};
use crate::common::window_vendor::{Flavor, Step, WindowVendor};
use ikigai::config::{Config, Secret};
use ikigai::protocol::{Event, TurnEndReason};
use serde_json::json;

/// `ikigai --base-url VENDOR -p PROMPT` in a folder of its own (the default model,
/// `gpt-5-mini`: 400k in the family table, an answer cap of 16k).
fn run(vendor: &WindowVendor, prompt: &str) -> Output {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("main.rs"), "fn main() {}\n").unwrap();
    common::ikigai(home.path())
        .current_dir(cwd.path())
        .args(["--base-url", &vendor.base_url, "-p", prompt])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_short_request_goes_before_the_window_question_and_its_answer_sizes_the_rest() {
    let vendor = WindowVendor::start(8192, Flavor::LlamaCpp);
    vendor.answer_props();
    vendor
        .push(Step::call("glob", r#"{"pattern":"*.rs"}"#))
        .push(Step::text("One file."));
    let out = run(&vendor, "what files are here?");
    let stderr = common::text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let order = vendor.order();
    assert_eq!(order[0], "POST /v1/chat/completions", "{order:?}");
    let asked = order
        .iter()
        .position(|p| p == "GET /props")
        .unwrap_or_else(|| panic!("the server is still asked: {order:?}"));
    let second = order
        .iter()
        .rposition(|p| p == "POST /v1/chat/completions")
        .unwrap();
    assert!(asked < second, "asked before the tool's result went: {order:?}");
    let seen = vendor.seen();
    assert_eq!(seen.len(), 2, "{order:?}");
    // The first went with the family table's window; the one after the tool with the
    // server's (an eighth of 8192).
    assert_eq!(seen[0].body["max_completion_tokens"], json!(16384));
    assert_eq!(seen[1].body["max_completion_tokens"], json!(1024));
}

#[test]
fn a_request_past_the_floor_waits_for_the_window() {
    let vendor = WindowVendor::start(32_768, Flavor::LlamaCpp);
    vendor.answer_props();
    vendor.push(Step::text("Read it."));
    // ~5,000 tokens of message: more than every plausible window holds with its answer.
    let prompt = "please summarise: ".to_string() + &"lorem ipsum ".repeat(1700);
    let out = run(&vendor, &prompt);
    let stderr = common::text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let order = vendor.order();
    assert_eq!(order[0], "GET /props", "{order:?}");
    let seen = vendor.seen();
    assert_eq!(seen.len(), 1, "{order:?}");
    assert_eq!(seen[0].body["max_completion_tokens"], json!(4096));
}

/// An unknown model at a llama.cpp server that does not say its window (the fallback:
/// 32k, a guess).
fn unknown_window(vendor: &WindowVendor) -> Config {
    Config {
        provider: Some("llamacpp".into()),
        base_url: Some(vendor.base_url.clone()),
        api_key: Some(Secret::new("test-key")),
        model: Some("fake-model".into()),
        retry_base_delay_ms: 10,
        max_tool_turns: 100,
        ..Config::default()
    }
}

/// A log file of `n` bytes with numbered lines.
fn log_file(dir: &std::path::Path, name: &str, n: usize) {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!("{i:06} INFO request handled in 12 ms, status 200\n"));
        i += 1;
    }
    s.truncate(n);
    std::fs::write(dir.join(name), s).unwrap();
}

#[tokio::test]
async fn a_refusal_while_the_window_is_unknown_still_compacts_and_retries() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..2 {
        log_file(dir.path(), &format!("f{i}.log"), 8000);
    }
    // The server holds 5,000 tokens and does not say so until it refuses: the first turn
    // fits, the second's result does not.
    let vendor = WindowVendor::start(5000, Flavor::LlamaCpp);
    for i in 0..2 {
        vendor
            .push(Step::call("file_read", &format!(r#"{{"path":"f{i}.log"}}"#)))
            .push(Step::text("ok"));
    }
    let mut agent = TestAgent::start(unknown_window(&vendor), dir.path());
    let first = agent.turn("read f0.log").await;
    assert_eq!(
        turn_end(&first),
        Some(TurnEndReason::Done),
        "{:?}",
        notices(&first)
    );
    let ev = agent.turn("read f1.log").await;
    assert_eq!(turn_end(&ev), Some(TurnEndReason::Done), "{:?}", notices(&ev));
    let seen = vendor.seen();
    let tokens: Vec<(u64, bool)> = seen.iter().map(|s| (s.tokens, s.refused)).collect();
    assert!(
        ev.iter().any(|e| matches!(e, Event::Compacted { .. })),
        "{:?} {tokens:?}",
        notices(&ev)
    );
    assert_eq!(
        seen.iter().filter(|s| s.refused).count(),
        1,
        "one refusal, then it fits"
    );
    assert!(!seen.last().unwrap().refused);
    // No usage event showed a share of the guessed 32k: none until the refusal taught the
    // server's window, then shares of that.
    let mut shown = 0;
    for e in first.iter().chain(&ev) {
        if let Event::Usage {
            input,
            context_pct: Some(p),
            ..
        } = e
        {
            shown += 1;
            assert_eq!(*p, (*input as f64 / 50.0).round() as u32, "{input} tokens");
        }
    }
    assert!(shown > 0, "the share shows once the window is known");
}
