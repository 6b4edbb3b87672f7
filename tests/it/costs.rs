//! Costs (issue 25 §2) against the real binary and the fake Chat Completions vendor: a
//! provider's configured `price` gives each response's cost in the `--json` usage event
//! (cached input at its own price), `/cost` breaks it down by model, `ikigai sessions`
//! shows the session's cost, and a resumed session starts from it; a local server without
//! a price shows tokens only, never a guessed cost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};

/// An answer whose usage is 2M input tokens (1M of them cached) and 500k output.
fn costly_answer(text: &str) -> Reply {
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    Reply::payloads(&[
        chunk(json!({"role": "assistant", "content": text}), None),
        chunk(json!({}), Some("stop")),
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "fake", "choices": [],
            "usage": {"prompt_tokens": 2_000_000, "completion_tokens": 500_000, "total_tokens": 2_500_000,
                "prompt_tokens_details": {"cached_tokens": 1_000_000}}})
        .to_string(),
        "[DONE]".to_string(),
    ])
}

fn config(home: &Path, fake: &FakeProvider, price: bool) {
    let dir = home.join(".config/ikigai");
    std::fs::create_dir_all(&dir).unwrap();
    let price = if price {
        "price = { input = 1.0, cached = 0.5, output = 2.0 }\n"
    } else {
        ""
    };
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "provider = \"proxy\"\n[providers.proxy]\nkind = \"openai-chat\"\nbase_url = \"{}\"\nmodel = \"team-model\"\n{price}",
            fake.base_url
        ),
    )
    .unwrap();
}

fn run(home: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd: Command = common::ikigai(home);
    cmd.args(args).env("OPENAI_API_KEY", "sk-test");
    match stdin {
        Some(text) => {
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let mut child = cmd.spawn().unwrap();
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
            child.wait_with_output().unwrap()
        }
        None => cmd.stdin(Stdio::null()).output().unwrap(),
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn events(out: &Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn a_priced_provider_reports_each_cost_and_the_session_total_everywhere() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    config(home.path(), &fake, true);
    fake.push(costly_answer("First."));
    let out = run(home.path(), &["--json", "-p", "hello"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let evs = events(&out);
    let usage = evs.iter().find(|e| e["type"] == "usage").expect("a usage event");
    assert_eq!(usage["cached"], 1_000_000);
    // 1M uncached input at $1, 1M cached at $0.50, 500k output at $2.
    assert!((usage["cost"].as_f64().unwrap() - 2.5).abs() < 1e-9, "{usage}");
    // The turn's total, with its answer, on the last line.
    let ended = evs.last().unwrap();
    assert_eq!(
        (&ended["type"], &ended["text"]),
        (&json!("turn_ended"), &json!("First."))
    );
    assert!(
        (ended["usage"]["cost"].as_f64().unwrap() - 2.5).abs() < 1e-9,
        "{ended}"
    );

    // Piped: a second answer, then /cost per model.
    fake.push(costly_answer("Second."));
    let out = run(home.path(), &["--continue"], Some("again\n/cost\n"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(
        shown.contains("team-model: 4000000 in (2000000 cached), 1000000 out — $5.00"),
        "{shown}"
    );
    assert!(shown.contains("Total: $5.00"), "{shown}");

    let list = run(home.path(), &["sessions"], None);
    let table = text(&list.stdout);
    assert!(table.lines().next().unwrap().contains("COST"), "{table}");
    assert!(table.contains("$5.00"), "{table}");

    // A resumed session starts from what it cost so far.
    fake.push(Reply::text("Third."));
    let out = run(home.path(), &["--continue", "--json", "-p", "more"], None);
    let evs = events(&out);
    let started = evs.iter().find(|e| e["type"] == "session_started").unwrap();
    assert!(
        (started["cost"].as_f64().unwrap() - 5.0).abs() < 1e-9,
        "{started}"
    );
}

#[test]
fn a_local_server_without_a_price_shows_tokens_only() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    config(home.path(), &fake, false);
    fake.push(costly_answer("Free."));
    let out = run(home.path(), &["--json", "-p", "hello"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let evs = events(&out);
    let usage = evs.iter().find(|e| e["type"] == "usage").unwrap();
    assert_eq!(usage["input"], 2_000_000);
    assert!(usage.get("cost").is_none(), "no guessed cost: {usage}");
    let ended = evs.last().unwrap();
    assert!(ended["usage"].get("cost").is_none(), "no guessed cost: {ended}");
    let out = run(home.path(), &["--continue"], Some("/cost\n"));
    let shown = text(&out.stdout);
    assert!(shown.contains("no price known (tokens only)"), "{shown}");
    let table = text(&run(home.path(), &["sessions"], None).stdout);
    assert!(!table.contains("COST") && !table.contains('$'), "{table}");
}

#[test]
fn a_bad_price_is_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".config/ikigai");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[providers.openai]\nprice = { input = -1.0, output = 2.0 }\n",
    )
    .unwrap();
    let out = run(home.path(), &["-p", "hi"], None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("price"), "{}", text(&out.stderr));
}
