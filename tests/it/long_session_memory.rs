//! Memory of a long session, from the outside: the real binary resumes a stored session of
//! 2,500 tool turns (15,000 events, 10,000 messages) and runs one more turn with a bash
//! call against the loopback fake vendor of each wire format (Chat Completions,
//! Responses, Anthropic, Gemini). Its peak RSS (`VmHWM`, read while it waits for the next
//! stdin line) over the same for a 10-turn session is bounded by a multiple of the
//! session's stored content (event text and data). No timing is measured.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;

use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::fake_vendor::{FakeVendor, Wire, anthropic_reply, gemini_reply, responses_reply};
use ikigai::config::{Config, Secret};
use ikigai::message::Message;
use ikigai::store::{self, MarkerKind, Record, SessionMeta};
use serde_json::{Value, json};

const SESSION: &str = "0193cccc-0000-7000-8000-000000000001";

/// Stores a session of `turns` turns on `provider` (model `fake-model`) like `scripts/gen-long-session.py` (user, a bash call,
/// its 400-byte result, usage, an answer, usage) and returns its content's bytes.
async fn store_session(home: &Path, turns: usize, provider: &str) -> u64 {
    let db = home.join(".local/share/ikigai/ikigai.db");
    let url = format!("sqlite://{}", db.display());
    let config = Config {
        database_url: Some(Secret::new(&url)),
        ..Default::default()
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let s = store::open(&config, tx);
    s.begin(SessionMeta {
        id: SESSION.into(),
        cwd: home.display().to_string(),
        provider: provider.into(),
        model: "fake-model".into(),
        parent: None,
    });
    let out = "x".repeat(400);
    let usage = |i: u64, o: u64| Record::Marker {
        kind: MarkerKind::Usage,
        data: json!({"input": i, "output": o}),
    };
    for t in 0..turns {
        let id = format!("call_{t}");
        s.record(
            SESSION,
            Record::Message(Message::user(format!("turn {t}: please run echo"))),
        );
        let args = json!({"command": format!("echo turn {t}")}).to_string();
        s.record(SESSION, Record::Message(Message::tool_call(&id, "bash", args)));
        let env =
            json!({"tool_success": true, "result": {"output": format!("turn {t}\n{out}\nexit code 0")}});
        s.record(
            SESSION,
            Record::Message(Message::tool_result(&id, "bash", "exit 0", env.to_string(), true)),
        );
        s.record(SESSION, usage(100, 10));
        s.record(
            SESSION,
            Record::Message(Message::assistant(format!(
                "Done with turn {t}. The command printed its output."
            ))),
        );
        s.record(SESSION, usage(120, 12));
    }
    // Reads come after the writes queued before them: everything is stored by now.
    assert_eq!(s.list().await.unwrap().len(), 1);
    drop(s);
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let (events, content): (i64, i64) = sqlx::query_as(
        "SELECT count(*), COALESCE(SUM(LENGTH(content) + LENGTH(COALESCE(data, ''))), 0) FROM events",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    pool.close().await;
    assert_eq!(events as usize, turns * 6);
    content as u64
}

/// `VmHWM` of a live process, in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// A loopback fake of one wire format.
enum Fake {
    /// Chat Completions and Responses.
    Openai(FakeProvider),
    /// Anthropic and Gemini.
    Vendor(FakeVendor),
}

/// One wire format: the provider preset that speaks it and its fake.
struct Format {
    provider: &'static str,
    key_var: &'static str,
    fake: Fake,
    /// The list of the request body that carries the history.
    list: &'static str,
}

impl Format {
    fn all() -> Vec<Format> {
        vec![
            Format {
                provider: "openai",
                key_var: "OPENAI_API_KEY",
                fake: Fake::Openai(FakeProvider::start()),
                list: "messages",
            },
            Format {
                provider: "openai-responses",
                key_var: "OPENAI_API_KEY",
                fake: Fake::Openai(FakeProvider::start()),
                list: "input",
            },
            Format {
                provider: "anthropic",
                key_var: "ANTHROPIC_API_KEY",
                fake: Fake::Vendor(FakeVendor::start(Wire::Anthropic)),
                list: "messages",
            },
            Format {
                provider: "google",
                key_var: "GEMINI_API_KEY",
                fake: Fake::Vendor(FakeVendor::start(Wire::Gemini)),
                list: "contents",
            },
        ]
    }

    fn base_url(&self) -> &str {
        match &self.fake {
            Fake::Openai(f) => &f.base_url,
            Fake::Vendor(f) => &f.base_url,
        }
    }

    /// Scripts one turn: a `bash echo hi` call, then an answer.
    fn push_turn(&self) {
        let args = r#"{"command":"echo hi"}"#;
        let call = [("call_new", "bash", args)];
        let (first, second) = match self.provider {
            "openai" => (Reply::tool_calls(&call), Reply::text("It printed hi.")),
            "openai-responses" => (responses_reply("", &call), responses_reply("It printed hi.", &[])),
            "anthropic" => (
                anthropic_reply(None, "", &call),
                anthropic_reply(None, "It printed hi.", &[]),
            ),
            _ => (
                gemini_reply("", "", "", &[("bash", json!({"command": "echo hi"}))]),
                gemini_reply("", "", "It printed hi.", &[]),
            ),
        };
        match &self.fake {
            Fake::Openai(f) => {
                f.push(first);
                f.push(second);
            }
            Fake::Vendor(f) => {
                f.push(first);
                f.push(second);
            }
        }
    }

    /// The request bodies the fake accepted.
    fn bodies(&self) -> Vec<Value> {
        match &self.fake {
            Fake::Openai(f) => f.requests().into_iter().map(|r| r.body).collect(),
            Fake::Vendor(f) => {
                assert!(f.rejections().is_empty(), "{:?}", f.rejections());
                f.requests().into_iter().map(|r| r.body).collect()
            }
        }
    }
}

/// Resumes the stored session, runs one turn whose model calls `bash echo hi`, and returns
/// the process's peak RSS up to the end of that turn.
fn resume_one_turn(home: &Path, format: &Format) -> u64 {
    format.push_turn();
    let config = home.join("config.toml");
    // A window so large the whole history goes out: no elision, no compaction.
    std::fs::write(
        &config,
        format!("[providers.{}]\ncontext_window = 100000000\n", format.provider),
    )
    .unwrap();
    let mut child = common::ikigai(home)
        // The session's own provider and model: nothing is switched on resume.
        .args(["--resume", SESSION, "--json", "--provider", format.provider])
        .args(["--model", "fake-model"])
        .args(["--base-url", format.base_url()])
        .env("IKIGAI_CONFIG", &config)
        .env(format.key_var, "k")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "run echo").unwrap();
    let mut types = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while !types.iter().any(|t| t == "turn_ended") {
        let line = lines.next().expect("ikigai ended before the turn did").unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        types.push(v["type"].as_str().unwrap_or_default().to_string());
    }
    // Between turns: the process is alive, waiting for the next line, its peak behind it.
    let peak = peak_rss(child.id());
    drop(stdin);
    assert!(child.wait().unwrap().success());
    format.bodies();
    assert!(
        types.iter().any(|t| t == "tool_call_finished"),
        "{}: the turn ran its tool call: {types:?}",
        format.provider
    );
    peak
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ten_thousand_message_session_costs_a_small_multiple_of_its_content() {
    let mib = |b: u64| b as f64 / 1_048_576.0;
    for format in Format::all() {
        let (short, long) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let fresh_content = store_session(short.path(), 10, format.provider).await;
        let content = store_session(long.path(), 2_500, format.provider).await;
        assert!(fresh_content < 20_000, "{fresh_content}");
        assert!(
            content > 2_000_000,
            "the session is as long as meant: {content} bytes"
        );
        let fresh = resume_one_turn(short.path(), &format);
        let peak = resume_one_turn(long.path(), &format);
        let ratio = peak.saturating_sub(fresh) as f64 / content as f64;
        eprintln!(
            "{}: content {:.2} MiB, peak RSS {:.1} MiB vs {:.1} MiB for 10 turns: {ratio:.2}x the content",
            format.provider,
            mib(content),
            mib(peak),
            mib(fresh)
        );
        // A test build measures 1.8-2.0x: the conversation once, with its allocator
        // overhead (3.4x when every Chat Completions body was a whole copy of the
        // history, 6.3x when restore held every row). The bound leaves room for allocator
        // noise, not for another copy of the history (about 1x more).
        assert!(
            ratio <= 2.5,
            "{}: the 10,000-message session costs {:.1} MiB beyond a short one: {ratio:.2}x its {:.2} MiB of content",
            format.provider,
            mib(peak.saturating_sub(fresh)),
            mib(content)
        );
        // The vendor got the whole history: 10,000 messages and the new turn.
        let bodies = format.bodies();
        let last = bodies.last().unwrap();
        let items = last[format.list].as_array().map_or(0, Vec::len);
        assert!(items > 10_000, "{}: {items}", format.provider);
    }
}
