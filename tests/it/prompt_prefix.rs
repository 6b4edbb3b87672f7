//! A byte-stable prefix (issue 39 §3), so servers' prompt caches (llama-server's, OpenAI's,
//! Anthropic's `cache_control`) hit on every request: in every wire format, each request
//! of a session (a tool round, then the next turn) carries the previous one unchanged —
//! the same tools, the same system prompt, the same messages — and only adds after it
//! (the text protocol's continued assistant message grows at its end); Anthropic's cache
//! breakpoints sit on the last tool, the system prompt and the newest block; a session
//! resumed on another day keeps its system prompt, date included. The first request's
//! size is reported for the native tools and the text protocol.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::fake_vendor::{FakeVendor, Wire, anthropic_reply, gemini_reply, responses_reply};
use serde_json::{Value, json};

/// A fake of one wire format, with the three replies of the session below queued.
enum Fake {
    Openai(FakeProvider),
    Vendor(FakeVendor),
}

impl Fake {
    fn url(&self) -> &str {
        match self {
            Fake::Openai(f) => &f.base_url,
            Fake::Vendor(f) => &f.base_url,
        }
    }

    fn bodies(&self) -> Vec<Value> {
        match self {
            Fake::Openai(f) => f.requests().into_iter().map(|r| r.body).collect(),
            Fake::Vendor(f) => f.requests().into_iter().map(|r| r.body).collect(),
        }
    }
}

/// The formats: name, provider flags, the fake, and the key of the conversation.
fn formats() -> Vec<(&'static str, Vec<&'static str>, Fake, &'static str)> {
    let glob = r#"{"pattern":"*.rs"}"#;
    let chat = FakeProvider::start();
    chat.push(Reply::tool_calls(&[("call_1", "glob", glob)]))
        .push(Reply::text("One file."))
        .push(Reply::text("Still one."));
    let responses = FakeProvider::start();
    responses
        .push(responses_reply("", &[("call_1", "glob", glob)]))
        .push(responses_reply("One file.", &[]))
        .push(responses_reply("Still one.", &[]));
    let anthropic = FakeVendor::start(Wire::Anthropic);
    anthropic
        .push(anthropic_reply(None, "", &[("toolu_1", "glob", glob)]))
        .push(anthropic_reply(None, "One file.", &[]))
        .push(anthropic_reply(None, "Still one.", &[]));
    let gemini = FakeVendor::start(Wire::Gemini);
    gemini
        .push(gemini_reply("", "", "", &[("glob", json!({"pattern": "*.rs"}))]))
        .push(gemini_reply("", "", "One file.", &[]))
        .push(gemini_reply("", "", "Still one.", &[]));
    let text = FakeProvider::start();
    text.push(Reply::text("Let me look.\n<||SYSTEM.EXEC>ls<SYSTEM.EXEC||>"))
        .push(Reply::text("One file."))
        .push(Reply::text("Still one."));
    vec![
        (
            "chat",
            vec!["--provider", "openai"],
            Fake::Openai(chat),
            "messages",
        ),
        (
            "responses",
            vec!["--provider", "openai-responses"],
            Fake::Openai(responses),
            "input",
        ),
        (
            "anthropic",
            vec!["--provider", "anthropic"],
            Fake::Vendor(anthropic),
            "messages",
        ),
        (
            "gemini",
            vec!["--provider", "google"],
            Fake::Vendor(gemini),
            "contents",
        ),
        (
            "text protocol",
            vec!["--provider", "llamacpp", "--tool-protocol", "text"],
            Fake::Openai(text),
            "messages",
        ),
    ]
}

/// `ikigai FLAGS --base-url URL` in `cwd`, with `input` piped in (one prompt a line).
fn session(home: &Path, cwd: &Path, flags: &[&str], url: &str, input: &str) -> Output {
    let mut child = common::ikigai(home)
        .current_dir(cwd)
        .args(flags)
        .args(["--base-url", url])
        .envs([
            ("OPENAI_API_KEY", "k"),
            ("ANTHROPIC_API_KEY", "k"),
            ("GEMINI_API_KEY", "k"),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// `v` without Anthropic's `cache_control` breakpoints (where they sit moves with the
/// conversation's end; the cached content does not).
fn unmarked(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), unmarked(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

/// Checks that request `b` carries request `a` unchanged and only adds after it.
fn extends(name: &str, key: &str, a: &Value, b: &Value) {
    let (mut fa, mut fb) = (unmarked(a), unmarked(b));
    let ma = fa[key].take();
    let mb = fb[key].take();
    assert_eq!(
        fa.to_string(),
        fb.to_string(),
        "{name}: what every request carries besides the conversation"
    );
    let (ma, mb) = (ma.as_array().unwrap(), mb.as_array().unwrap());
    assert!(ma.len() <= mb.len(), "{name}: the conversation only grows");
    let last = ma.len() - 1;
    for (i, m) in ma.iter().enumerate() {
        if *m == mb[i] {
            continue;
        }
        // The text protocol continues its assistant message: the earlier text stays its
        // start.
        let grown = i == last
            && m["role"] == mb[i]["role"]
            && m["role"] == "assistant"
            && mb[i]["content"]
                .as_str()
                .zip(m["content"].as_str())
                .is_some_and(|(now, then)| now.starts_with(then));
        assert!(grown, "{name}: message {i} changed:\n{m}\n{}", mb[i]);
    }
}

#[test]
fn every_request_of_a_session_carries_the_one_before_it_unchanged() {
    for (name, flags, fake, key) in formats() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        std::fs::write(cwd.path().join("main.rs"), "fn main() {}\n").unwrap();
        let out = session(
            home.path(),
            cwd.path(),
            &flags,
            fake.url(),
            "which files?\nand now?\n",
        );
        let stderr = common::text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        let bodies = fake.bodies();
        assert_eq!(bodies.len(), 3, "{name}: {stderr}");
        extends(name, key, &bodies[0], &bodies[1]);
        extends(name, key, &bodies[1], &bodies[2]);
        if name == "anthropic" {
            for b in &bodies {
                let marked = |v: &Value| v.get("cache_control").is_some();
                let tools = b["tools"].as_array().unwrap();
                let (last_tool, others) = tools.split_last().unwrap();
                assert!(marked(last_tool) && !others.iter().any(marked), "{name}");
                assert!(marked(&b["system"][0]), "{name}");
                let blocks: Vec<&Value> = b["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|m| m["content"].as_array().unwrap())
                    .collect();
                let (newest, older) = blocks.split_last().unwrap();
                assert!(marked(newest) && !older.iter().any(|v| marked(v)), "{name}");
            }
        }
    }
}

/// The system prompt a request carries, in any format.
fn system(body: &Value) -> String {
    let first = body["messages"][0].clone();
    if first["role"] == "system" {
        return first["content"].as_str().unwrap().to_string();
    }
    body["system"][0]["text"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_session_resumed_on_another_day_keeps_its_system_prompt() {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text("hello")).push(Reply::text("again"));
    let flags = ["--provider", "openai"];
    let out = session(home.path(), cwd.path(), &flags, &fake.base_url, "hi\n");
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
    // The session began on another day.
    let db = home.path().join(".local/share/ikigai/ikigai.db");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display()))
        .await
        .unwrap();
    sqlx::query("UPDATE sessions SET created_at = '2024-02-29T10:00:00+00:00'")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let first = system(&fake.requests()[0].body);
    let today = first.lines().last().unwrap().to_string();
    assert!(today.starts_with("Date: "), "the date comes last: {first}");
    let out = session(
        home.path(),
        cwd.path(),
        &[&flags[..], &["-c"]].concat(),
        &fake.base_url,
        "hi again\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
    let resumed = system(&fake.requests()[1].body);
    let (head, date) = resumed.trim_end().rsplit_once('\n').unwrap();
    assert_eq!(date, "Date: 2024-02-29", "{resumed}");
    assert_eq!(
        head,
        first.trim_end().rsplit_once('\n').unwrap().0,
        "the same prompt but for the session's date"
    );
}

#[test]
fn a_new_session_in_another_folder_sends_the_same_system_prompt_and_tools() {
    // A local server's prompt cache keeps the longest common prefix: the system prompt
    // and the tool list (rendered after it by chat templates) must not hold the folder.
    // (A vendor's model gets it after the system prompt, as before: above.)
    for (name, flags) in [
        ("native", vec!["--provider", "llamacpp"]),
        (
            "text protocol",
            vec!["--provider", "llamacpp", "--tool-protocol", "text"],
        ),
    ] {
        let home = tempfile::tempdir().unwrap();
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let fake = FakeProvider::start();
        fake.push(Reply::text("one")).push(Reply::text("two"));
        for cwd in [a.path(), b.path()] {
            let out = session(home.path(), cwd, &flags, &fake.base_url, "hi\n");
            assert_eq!(
                out.status.code(),
                Some(0),
                "{name}: {}",
                common::text(&out.stderr)
            );
        }
        let reqs = fake.requests();
        let (first, second) = (&reqs[0].body, &reqs[1].body);
        assert_eq!(system(first), system(second), "{name}");
        assert_eq!(first["tools"], second["tools"], "{name}");
        let folder = |cwd: &Path| format!("Working directory: {}", cwd.display());
        assert!(!system(first).contains("Working directory"), "{name}");
        // The session's one prompt (the local preset's example exchange comes before it).
        let prompt = |body: &Value| {
            let msgs = body["messages"].as_array().unwrap();
            msgs.iter().rev().find(|m| m["role"] == "user").unwrap()["content"].to_string()
        };
        assert!(prompt(first).contains(&folder(a.path())), "{name}");
        assert!(prompt(second).contains(&folder(b.path())), "{name}");
        // Everything before the first user message is the same bytes.
        let before_user = |body: &Value| {
            let msgs = body["messages"].as_array().unwrap();
            let at = msgs.iter().rposition(|m| m["role"] == "user").unwrap();
            (
                body["tools"].to_string(),
                Value::Array(msgs[..at].to_vec()).to_string(),
            )
        };
        assert_eq!(before_user(first), before_user(second), "{name}");
    }
}

#[test]
fn first_request_sizes_are_reported() {
    // Native tools (all built-ins, no MCP) and the text protocol, each against its fake.
    let mut sizes = Vec::new();
    for (name, flags) in [
        ("native", vec!["--provider", "openai"]),
        (
            "text protocol",
            vec!["--provider", "llamacpp", "--tool-protocol", "text"],
        ),
    ] {
        let fake = FakeProvider::start();
        fake.push(Reply::text("ok"));
        let home = tempfile::tempdir().unwrap();
        let out = session(home.path(), home.path(), &flags, &fake.base_url, "hi\n");
        assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
        let body = &fake.requests()[0].body;
        let total = body.to_string().len();
        let tools = body.get("tools").map_or(0, |t| t.to_string().len());
        let system = system(body).len();
        println!("first request, {name}: {total} bytes ({tools} of tool schemas, {system} of system prompt)");
        sizes.push(total);
    }
    // Reported, not yet a target (issue 39 §3's cuts come with `make eval`); a guard
    // against growth by accident.
    assert!(sizes[0] < 9_000 && sizes[1] < 4_000, "{sizes:?}");
}
