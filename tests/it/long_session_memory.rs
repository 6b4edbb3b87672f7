//! Memory of a long session, from the outside: the real binary resumes a stored session of
//! 2,500 tool turns (15,000 events, 10,000 messages) and runs one more turn with a bash
//! call against the loopback fake vendor. Its peak RSS (`VmHWM`, read while it waits for
//! the next stdin line) over the same for a 10-turn session is bounded by a multiple of
//! the session's stored content (event text and data). No timing is measured.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;

use crate::common::fake_provider::{FakeProvider, Reply};
use ikigai::config::{Config, Secret};
use ikigai::message::Message;
use ikigai::store::{self, MarkerKind, Record, SessionMeta};
use serde_json::{Value, json};

const SESSION: &str = "0193cccc-0000-7000-8000-000000000001";

/// Stores a session of `turns` turns like `scripts/gen-long-session.py` (user, a bash call,
/// its 400-byte result, usage, an answer, usage) and returns its content's bytes.
async fn store_session(home: &Path, turns: usize) -> u64 {
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
        provider: "openai".into(),
        model: "fake-model".into(),
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

/// Resumes the stored session, runs one turn whose model calls `bash echo hi`, and returns
/// the process's peak RSS up to the end of that turn.
fn resume_one_turn(home: &Path, fake: &FakeProvider) -> u64 {
    fake.push(Reply::tool_calls(&[(
        "call_new",
        "bash",
        r#"{"command":"echo hi"}"#,
    )]));
    fake.push(Reply::text("It printed hi."));
    let config = home.join("config.toml");
    // A window so large the whole history goes out: no elision, no compaction.
    std::fs::write(&config, "[providers.openai]\ncontext_window = 100000000\n").unwrap();
    let mut child = common::ikigai(home)
        .args(["--resume", SESSION, "--json", "--base-url", &fake.base_url])
        .env("IKIGAI_CONFIG", &config)
        .env("OPENAI_API_KEY", "k")
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
    assert!(
        types.iter().any(|t| t == "tool_call_finished"),
        "the turn ran its tool call: {types:?}"
    );
    peak
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ten_thousand_message_session_costs_a_small_multiple_of_its_content() {
    let fake = FakeProvider::start();
    let mut measured = Vec::new();
    for turns in [10, 2_500] {
        let home = tempfile::tempdir().unwrap();
        let content = store_session(home.path(), turns).await;
        let peak = resume_one_turn(home.path(), &fake);
        measured.push((content, peak));
    }
    let [(_, fresh), (content, long)] = measured[..] else {
        unreachable!()
    };
    let mib = |b: u64| b as f64 / 1_048_576.0;
    let ratio = long.saturating_sub(fresh) as f64 / content as f64;
    eprintln!(
        "content {:.2} MiB, peak RSS {:.1} MiB vs {:.1} MiB for 10 turns: {ratio:.2}x the content",
        mib(content),
        mib(long),
        mib(fresh)
    );
    assert!(
        content > 2_000_000,
        "the session is as long as meant: {content} bytes"
    );
    // A test build measures 1.8-2.0x: the conversation once, with its allocator overhead
    // (3.4x when every request body was a whole copy of the history, 6.3x when restore
    // held every row). The bound leaves room for allocator noise, not for another copy of
    // the history (about 1x more).
    assert!(
        ratio <= 2.5,
        "the 10,000-message session costs {:.1} MiB beyond a short one: {ratio:.2}x its {:.2} MiB of content",
        mib(long.saturating_sub(fresh)),
        mib(content)
    );
    // The vendor got the whole history: 10,000 messages and the new turn.
    let requests = fake.requests();
    let last = requests.last().unwrap();
    assert!(last.messages().len() > 10_000, "{}", last.messages().len());
}
