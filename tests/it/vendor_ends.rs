//! How a response ends, as the real binary shows it, for every wire format against its
//! loopback fake: a content-filter end keeps the partial text and says which filter
//! reason stopped it; the cached part of the input tokens reaches the usage event
//! (`--json`), the `--verbose` token line and the TUI status line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Output, Stdio};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::fake_vendor::{FakeVendor, Wire, anthropic_event, gemini_chunk};
use serde_json::{Value, json};

fn run(home: &std::path::Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = common::ikigai(home);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("run ikigai")
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A Gemini stream: text, then a finish `reason` with a blocked safety category.
fn gemini_filtered(text: &str, reason: &str) -> Reply {
    let mut last: Value = serde_json::from_str(
        gemini_chunk(json!([{"text": ""}]), Some(reason))
            .trim_start_matches("data: ")
            .trim(),
    )
    .unwrap();
    last["candidates"][0]["safetyRatings"] =
        json!([{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}]);
    Reply::events(vec![
        gemini_chunk(json!([{"text": text}]), None),
        format!("data: {last}\r\n\r\n"),
    ])
}

/// An Anthropic stream: text, then `stop_reason`.
fn anthropic_stopped(text: &str, stop_reason: &str) -> Reply {
    Reply::events(vec![
        anthropic_event(
            json!({"type": "message_start", "message": {"id": "msg_f", "type": "message",
            "role": "assistant", "model": "claude-fake", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 20, "cache_read_input_tokens": 100, "output_tokens": 1}}}),
        ),
        anthropic_event(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        anthropic_event(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ),
        anthropic_event(json!({"type": "content_block_stop", "index": 0})),
        anthropic_event(
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": 15}}),
        ),
        anthropic_event(json!({"type": "message_stop"})),
    ])
}

/// A Chat Completions stream: text, then `finish_reason`, with usage naming cached tokens.
fn chat_finished(text: &str, finish_reason: &str) -> Reply {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    Reply::payloads(&[
        chunk(json!({"role": "assistant", "content": text}), Value::Null),
        chunk(json!({}), json!(finish_reason)),
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
            "usage": {"prompt_tokens": 900, "completion_tokens": 7, "total_tokens": 907,
                "prompt_tokens_details": {"cached_tokens": 768}}})
        .to_string(),
        "[DONE]".to_string(),
    ])
}

/// A Responses stream: text, then `response.incomplete` for `reason`.
fn responses_incomplete(text: &str, reason: &str) -> Reply {
    let ev = |v: Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap_or(""));
    Reply::events(vec![
        ev(json!({"type": "response.created", "response": {"id": "resp_f", "status": "in_progress"}})),
        ev(
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
            "content_index": 0, "delta": text}),
        ),
        ev(
            json!({"type": "response.incomplete", "response": {"id": "resp_f", "status": "incomplete",
            "incomplete_details": {"reason": reason},
            "usage": {"input_tokens": 50, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 0}}}}),
        ),
    ])
}

/// A Responses stream: text, then `response.completed` with `cached` of 50 input tokens.
fn responses_done(text: &str, cached: u64) -> Reply {
    let ev = |v: Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap_or(""));
    Reply::events(vec![
        ev(json!({"type": "response.created", "response": {"id": "resp_d", "status": "in_progress"}})),
        ev(
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
            "content_index": 0, "delta": text}),
        ),
        ev(
            json!({"type": "response.completed", "response": {"id": "resp_d", "status": "completed",
            "usage": {"input_tokens": 50, "output_tokens": 3, "input_tokens_details": {"cached_tokens": cached}}}}),
        ),
    ])
}

/// The answer and the warning of one `-p` run.
fn filtered(out: &Output, partial: &str, reason: &str) {
    let (stdout, stderr) = (s(&out.stdout), s(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(stdout.contains(partial), "the partial text is kept: {stdout}");
    assert!(
        stderr.contains("content filter") && stderr.contains(reason),
        "a notice names the reason `{reason}`: {stderr}"
    );
}

#[test]
fn every_gemini_filter_end_keeps_the_text_and_names_its_reason() {
    let h = tempfile::tempdir().unwrap();
    for reason in ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII"] {
        let fake = FakeVendor::start(Wire::Gemini);
        fake.push(gemini_filtered("Here is the first half ", reason));
        let out = run(
            h.path(),
            &["-p", "hi", "--provider", "google", "--base-url", &fake.base_url],
            &[("GEMINI_API_KEY", "goog-key")],
        );
        filtered(&out, "Here is the first half", reason);
        assert!(
            s(&out.stderr).contains("HARM_CATEGORY_DANGEROUS_CONTENT"),
            "{}",
            s(&out.stderr)
        );
        assert!(fake.rejections().is_empty(), "{:?}", fake.rejections());
    }
}

#[test]
fn anthropic_refusal_and_openai_content_filter_keep_the_text_and_say_so() {
    let h = tempfile::tempdir().unwrap();
    let fake = FakeVendor::start(Wire::Anthropic);
    fake.push(anthropic_stopped("I started to answer", "refusal"));
    let out = run(
        h.path(),
        &[
            "-p",
            "hi",
            "--provider",
            "anthropic",
            "--base-url",
            &fake.base_url,
        ],
        &[("ANTHROPIC_API_KEY", "ant-key")],
    );
    filtered(&out, "I started to answer", "refusal");

    let fake = FakeProvider::start();
    fake.push(chat_finished("Partly written", "content_filter"));
    let out = run(
        h.path(),
        &["-p", "hi", "--base-url", &fake.base_url],
        &[("OPENAI_API_KEY", "k")],
    );
    filtered(&out, "Partly written", "content_filter");

    let fake = FakeProvider::start();
    fake.push(responses_incomplete("Also partly", "content_filter"));
    let out = run(
        h.path(),
        &[
            "-p",
            "hi",
            "--provider",
            "openai-responses",
            "--base-url",
            &fake.base_url,
        ],
        &[("OPENAI_API_KEY", "k")],
    );
    filtered(&out, "Also partly", "content_filter");
}

/// The usage events of a `--json` run.
fn usage(out: &Output) -> Vec<Value> {
    s(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "usage")
        .collect()
}

#[test]
fn cached_input_tokens_reach_json_and_the_verbose_token_line() {
    let h = tempfile::tempdir().unwrap();
    // Anthropic: input counts the cache reads; `cached` says how many.
    let fake = FakeVendor::start(Wire::Anthropic);
    fake.push(anthropic_stopped("Done.", "end_turn"));
    let out = run(
        h.path(),
        &[
            "--json",
            "-p",
            "hi",
            "--provider",
            "anthropic",
            "--base-url",
            &fake.base_url,
        ],
        &[("ANTHROPIC_API_KEY", "ant-key")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let u = usage(&out);
    assert_eq!(u.len(), 1, "{}", s(&out.stdout));
    assert_eq!(
        (&u[0]["input"], &u[0]["output"], &u[0]["cached"]),
        (&json!(120), &json!(15), &json!(100))
    );

    // Chat Completions: `prompt_tokens_details.cached_tokens`.
    let fake = FakeProvider::start();
    fake.push(chat_finished("Done.", "stop"));
    let out = run(
        h.path(),
        &["--json", "-p", "hi", "--base-url", &fake.base_url],
        &[("OPENAI_API_KEY", "k")],
    );
    let u = usage(&out);
    assert_eq!(
        (&u[0]["input"], &u[0]["cached"]),
        (&json!(900), &json!(768)),
        "{u:?}"
    );

    // Responses: `input_tokens_details.cached_tokens`.
    let fake = FakeProvider::start();
    fake.push(responses_done("Done.", 40));
    let out = run(
        h.path(),
        &[
            "--json",
            "-p",
            "hi",
            "--provider",
            "openai-responses",
            "--base-url",
            &fake.base_url,
        ],
        &[("OPENAI_API_KEY", "k")],
    );
    let u = usage(&out);
    assert_eq!(
        (&u[0]["input"], &u[0]["cached"]),
        (&json!(50), &json!(40)),
        "{u:?}"
    );

    // Gemini: `cachedContentTokenCount`; the plain front end names it under --verbose.
    let fake = FakeVendor::start(Wire::Gemini);
    fake.push(crate::common::fake_vendor::gemini_reply("", "", "Done.", &[]));
    let out = run(
        h.path(),
        &[
            "--verbose",
            "-p",
            "hi",
            "--provider",
            "google",
            "--base-url",
            &fake.base_url,
        ],
        &[("GEMINI_API_KEY", "goog-key")],
    );
    assert!(
        s(&out.stderr).contains("tokens: 40 in (30 cached), 20 out"),
        "{}",
        s(&out.stderr)
    );

    // None reported: no `cached` field at all.
    let fake = FakeProvider::start();
    fake.push(Reply::text("Plain."));
    let out = run(
        h.path(),
        &["--json", "-p", "hi", "--base-url", &fake.base_url],
        &[("OPENAI_API_KEY", "k")],
    );
    let u = usage(&out);
    assert!(u[0].get("cached").is_none(), "{u:?}");
}

#[test]
fn the_tui_shows_the_filter_notice_and_the_cached_tokens_in_its_status_line() {
    use crate::common::tmux::{Tmux, wait_exit};
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(chat_finished("Partly written", "content_filter"));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.type_text("hi");
    t.keys(&["Enter"]);
    let pane = t.wait_text("content filter");
    assert!(pane.contains("Partly written"), "the partial text stays: {pane}");
    assert!(pane.contains("(content_filter)"), "the reason is named: {pane}");
    let pane = t.wait_for("the status line to count cached tokens", |s| {
        s.contains("907 tok (768 cached")
    });
    assert!(pane.contains("907 tok (768 cached"), "{pane}");
    t.keys(&["C-d"]);
    wait_exit(&t);
}
