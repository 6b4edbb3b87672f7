//! Long sessions against a vendor with a real context window: tool results sized to the
//! window, old output elided on the wire, compaction (automatic, by hand, stored and
//! resumed), recovery from each vendor's context-length refusal, and a clear error for a
//! message that cannot fit. Real agent, real tools, real SQLite; only the vendor is fake.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::common::window_vendor::{Flavor, Step, WindowVendor};
use ikigai::agent::{AgentHandle, AgentSetup, Resume};
use ikigai::config::{Config, Secret};
use ikigai::message::Kind;
use ikigai::protocol::{Event, Op, TurnEndReason};
use ikigai::provider::openai::OpenAiChat;
use ikigai::store::{Record, Sessions};
use ikigai::tools::Registry;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

struct Agent {
    handle: AgentHandle,
    events: UnboundedReceiver<Event>,
}

impl Agent {
    fn start(
        config: &Config,
        cwd: &Path,
        sessions: Option<Arc<dyn Sessions>>,
        resumed: Option<ikigai::agent::Resumed>,
    ) -> Agent {
        let (tx, events) = unbounded_channel();
        let setup = AgentSetup {
            config: config.clone(),
            provider: Arc::new(OpenAiChat::new(config).unwrap()),
            registry: Registry::builtin(),
            sessions,
            cwd: cwd.to_path_buf(),
            system_prompt: "You are a test.".into(),
            environment: String::new(),
            instructions: Vec::new(),
            skills: Default::default(),
            mode: None,
            resumed,
            follow_tree: true,
        };
        Agent {
            handle: ikigai::agent::spawn(setup, tx),
            events,
        }
    }

    async fn until(&mut self, pred: impl Fn(&Event) -> bool) -> Vec<Event> {
        let mut out = Vec::new();
        loop {
            let ev = tokio::time::timeout(Duration::from_secs(60), self.events.recv())
                .await
                .expect("event within 60 s")
                .expect("agent alive");
            let hit = pred(&ev);
            out.push(ev);
            if hit {
                return out;
            }
        }
    }

    async fn turn(&mut self, text: &str) -> Vec<Event> {
        self.handle.ops.send(Op::Submit(text.into())).unwrap();
        self.until(|e| matches!(e, Event::TurnEnded { .. })).await
    }

    async fn shutdown(self) {
        let _ = self.handle.ops.send(Op::Shutdown);
        let _ = tokio::time::timeout(Duration::from_secs(30), self.handle.task).await;
    }
}

fn end(events: &[Event]) -> TurnEndReason {
    events
        .iter()
        .find_map(|e| match e {
            Event::TurnEnded { reason } => Some(*reason),
            _ => None,
        })
        .expect("turn ended")
}

fn notices(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn config(vendor: &WindowVendor, window: u64) -> Config {
    Config {
        base_url: Some(vendor.base_url.clone()),
        api_key: Some(Secret::new("test-key")),
        model: Some("fake-model".into()),
        retry_base_delay_ms: 10,
        max_tool_turns: 1000,
        providers: window_section(window),
        ..Config::default()
    }
}

fn sqlite(dir: &Path) -> (Arc<dyn Sessions>, Config) {
    let config = Config {
        database_url: Some(Secret::new(dir.join("ikigai.db").display().to_string())),
        ..Config::default()
    };
    let (tx, _rx) = unbounded_channel();
    (ikigai::store::open(&config, tx), config)
}

/// A log file of `n` bytes with numbered lines.
fn log_file(dir: &Path, name: &str, n: usize) {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!(
            "{i:06} INFO request handled in 12 ms, status 200, path /api/v1/items\n"
        ));
        i += 1;
    }
    s.truncate(n);
    std::fs::write(dir.join(name), s).unwrap();
}

fn assert_all_fit(vendor: &WindowVendor, window: u64) {
    for (i, s) in vendor.seen().iter().enumerate() {
        assert!(
            !s.refused && s.tokens <= window,
            "request {i} took {} tokens of {window}",
            s.tokens
        );
    }
}

#[tokio::test]
async fn an_88_kb_read_in_an_8k_window_completes_and_later_turns_work() {
    let dir = tempfile::tempdir().unwrap();
    log_file(dir.path(), "big.log", 88 * 1024);
    let vendor = WindowVendor::start(8192, Flavor::LlamaCpp);
    vendor
        .push(Step::call("file_read", r#"{"path":"big.log"}"#))
        .push(Step::text("The log shows requests."))
        .push(Step::call(
            "file_read",
            r#"{"path":"big.log","offset":100,"limit":20}"#,
        ))
        .push(Step::text("Lines 100 to 119 are fine."))
        .push(Step::text("Anything else?"));
    let mut agent = Agent::start(&config(&vendor, 8192), dir.path(), None, None);
    let ev = agent.turn("read big.log").await;
    assert_eq!(end(&ev), TurnEndReason::Done, "{}", notices(&ev));
    let output = ev
        .iter()
        .find_map(|e| match e {
            Event::ToolCallFinished { output, .. } => Some(output.clone()),
            _ => None,
        })
        .unwrap();
    let env: serde_json::Value = serde_json::from_str(&output).unwrap();
    let result = &env["result"];
    assert_eq!(result["truncated"], true);
    assert!(result["next_offset"].as_u64().unwrap() > 1);
    assert!(result["paging"].as_str().unwrap().contains("offset="), "{result}");
    assert!(result["output"].as_str().unwrap().contains("[output truncated:"));
    // About 2k tokens: a quarter of the window.
    let tokens = output.len() / 4;
    assert!((1200..=2300).contains(&tokens), "{tokens} tokens");
    for text in ["and the next lines?", "thanks"] {
        let ev = agent.turn(text).await;
        assert_eq!(end(&ev), TurnEndReason::Done, "{}", notices(&ev));
    }
    assert_eq!(vendor.steps_left(), 0);
    assert_all_fit(&vendor, 8192);
    // The usage events carry the share of the window.
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::Usage { context_pct: Some(p), .. } if *p > 0 && *p <= 100))
    );
    agent.shutdown().await;
}

#[tokio::test]
async fn two_hundred_tool_turns_in_a_16k_window_fit_and_compaction_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    log_file(dir.path(), "part.log", 1500);
    let vendor = WindowVendor::start(16_384, Flavor::OpenAi);
    for _ in 0..200 {
        vendor
            .push(Step::call("file_read", r#"{"path":"part.log"}"#))
            .push(Step::text("Read it; nothing unusual in this part of the log."));
    }
    let (store, _) = sqlite(dir.path());
    let mut agent = Agent::start(&config(&vendor, 16_384), dir.path(), Some(store.clone()), None);
    let mut compactions = 0;
    let mut session = None;
    for i in 0..200 {
        let ev = agent.turn(&format!("turn {i}: read part.log again")).await;
        assert_eq!(end(&ev), TurnEndReason::Done, "turn {i}: {}", notices(&ev));
        compactions += ev.iter().filter(|e| matches!(e, Event::Compacted { .. })).count();
        if session.is_none() {
            session = Some(());
        }
    }
    assert_eq!(vendor.steps_left(), 0);
    assert_all_fit(&vendor, 16_384);
    assert!(compactions >= 1, "no compaction in 200 turns");
    let seen = vendor.seen();
    assert!(seen.iter().any(|s| s.summary));
    // Old results were elided on the wire before compaction was needed.
    assert!(seen.iter().any(|s| {
        s.text()
            .contains(r#"[output of file_read(path="part.log") elided"#)
    }));
    agent.shutdown().await;
    store.flush().await;
    let list = store.list().await.unwrap();
    let (_, records) = store.load(&list[0].id).await.unwrap();
    let stored: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Message(m) if m.kind == Kind::Compaction => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(stored.len(), compactions);
    assert!(stored[0].content.starts_with("SUMMARY:"));
    // The full history stays: every user turn is stored.
    let users = records
        .iter()
        .filter(|r| matches!(r, Record::Message(m) if m.kind == Kind::User))
        .count();
    assert_eq!(users, 200);
}

#[tokio::test]
async fn compact_by_hand_then_resume_carries_the_summary_and_recent_turns() {
    let dir = tempfile::tempdir().unwrap();
    log_file(dir.path(), "a.log", 3000);
    let vendor = WindowVendor::start(32_768, Flavor::Anthropic);
    vendor
        .push(Step::call("file_read", r#"{"path":"a.log"}"#))
        .push(Step::text("Read a.log."))
        .push(Step::text("Second answer."))
        .push(Step::text("After compaction."))
        .push(Step::text("Resumed fine."));
    let (store, _) = sqlite(dir.path());
    let cfg = config(&vendor, 32_768);
    let mut agent = Agent::start(&cfg, dir.path(), Some(store.clone()), None);
    assert_eq!(
        end(&agent.turn("first task: read a.log").await),
        TurnEndReason::Done
    );
    assert_eq!(end(&agent.turn("second question").await), TurnEndReason::Done);
    agent
        .handle
        .ops
        .send(Op::Compact(Some("keep the file names".into())))
        .unwrap();
    let ev = agent.until(|e| matches!(e, Event::Compacted { .. })).await;
    let Some(Event::Compacted { before, after }) = ev.last() else {
        unreachable!()
    };
    assert!(after < before, "{before} -> {after}");
    let summary_req = vendor.seen().into_iter().rfind(|s| s.summary).unwrap();
    assert!(summary_req.text().contains("keep the file names"));
    assert!(summary_req.text().contains("first task: read a.log"));
    assert_eq!(
        end(&agent.turn("third, after compaction").await),
        TurnEndReason::Done
    );
    let last = vendor.seen().pop().unwrap();
    let text = last.text();
    assert!(text.contains("SUMMARY: Task: first task"), "{text}");
    // The first turn is replaced by the summary; the latest turn stays whole.
    assert!(
        !text.contains("Read a.log.") && !text.contains("request handled"),
        "{text}"
    );
    assert!(text.contains("second question") && text.contains("Second answer."));
    assert!(text.contains("third, after compaction"));
    agent.shutdown().await;
    store.flush().await;

    // Resume: the latest compaction plus what came after.
    let resumed = ikigai::agent::resume::load(store.as_ref(), &Resume::LatestInCwd, dir.path())
        .await
        .unwrap();
    assert_eq!(resumed.conversation.messages[0].kind, Kind::Compaction);
    let mut agent = Agent::start(&cfg, dir.path(), Some(store.clone()), Some(resumed));
    assert_eq!(end(&agent.turn("fourth, resumed").await), TurnEndReason::Done);
    let last = vendor.seen().pop().unwrap();
    let text = last.text();
    assert!(text.contains("SUMMARY: Task: first task"), "{text}");
    assert!(text.contains("third, after compaction") && text.contains("After compaction."));
    assert!(text.contains("fourth, resumed") && text.contains("second question"));
    assert!(
        !text.contains("Read a.log.") && !text.contains("request handled"),
        "{text}"
    );
    assert_all_fit(&vendor, 32_768);
    agent.shutdown().await;
    // The database still has everything.
    let list = store.list().await.unwrap();
    let (_, records) = store.load(&list[0].id).await.unwrap();
    assert!(
        records
            .iter()
            .any(|r| matches!(r, Record::Message(m) if m.content == "Read a.log."))
    );
}

#[tokio::test]
async fn elision_stubs_old_results_and_keeps_the_newest_whole() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..8 {
        log_file(dir.path(), &format!("f{i}.log"), 5000);
    }
    let vendor = WindowVendor::start(16_384, Flavor::Gemini);
    for i in 0..8 {
        vendor.push(Step::call("file_read", &format!(r#"{{"path":"f{i}.log"}}"#)));
    }
    vendor.push(Step::text("Read them all."));
    let mut agent = Agent::start(&config(&vendor, 16_384), dir.path(), None, None);
    let ev = agent.turn("read f0.log to f7.log").await;
    assert_eq!(end(&ev), TurnEndReason::Done, "{}", notices(&ev));
    assert_all_fit(&vendor, 16_384);
    let last = vendor.seen().pop().unwrap();
    let tools: Vec<&str> = last
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(tools.len(), 8);
    assert_eq!(
        tools[0],
        r#"[output of file_read(path="f0.log") elided: 5 KB; run it again if needed]"#
    );
    for t in &tools[5..] {
        assert!(
            t.len() > 5000 && t.contains("tool_success"),
            "newest results stay whole"
        );
    }
    // Never in memory: the finished tool calls the front end saw are whole.
    let whole = ev
        .iter()
        .filter(|e| matches!(e, Event::ToolCallFinished { output, .. } if output.len() > 5000))
        .count();
    assert_eq!(whole, 8);
    agent.shutdown().await;
}

#[tokio::test]
async fn an_oversized_message_gets_a_clear_error_and_no_loop() {
    let dir = tempfile::tempdir().unwrap();
    let vendor = WindowVendor::start(8192, Flavor::OpenAi);
    vendor.push(Step::text("Hello again."));
    let mut agent = Agent::start(&config(&vendor, 8192), dir.path(), None, None);
    let big = "please look at this: ".to_string() + &"data ".repeat(20_000);
    let ev = agent.turn(&big).await;
    assert_eq!(end(&ev), TurnEndReason::Error);
    let text = notices(&ev);
    assert!(
        text.contains("too large for this model's context window") && text.contains("/new"),
        "{text}"
    );
    assert!(vendor.seen().is_empty(), "nothing was sent");
    // The session is not dead: the next turn carries the big message as a stub.
    let ev = agent.turn("hello").await;
    assert_eq!(end(&ev), TurnEndReason::Done, "{}", notices(&ev));
    let seen = vendor.seen();
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0].text().contains("[message of 98 KB elided"),
        "{}",
        seen[0].text()
    );
    agent.shutdown().await;
}

#[tokio::test]
async fn each_vendors_refusal_triggers_one_compaction_and_a_retry() {
    for flavor in [
        Flavor::OpenAi,
        Flavor::LlamaCpp,
        Flavor::Anthropic,
        Flavor::Gemini,
    ] {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..3 {
            log_file(dir.path(), &format!("f{i}.log"), 6000);
        }
        // The agent believes in 32k; the server has 6k.
        let vendor = WindowVendor::start(32_768, flavor);
        for i in 0..3 {
            vendor
                .push(Step::call("file_read", &format!(r#"{{"path":"f{i}.log"}}"#)))
                .push(Step::text("ok"));
        }
        vendor.push(Step::text("Recovered."));
        let mut agent = Agent::start(&config(&vendor, 32_768), dir.path(), None, None);
        for i in 0..3 {
            assert_eq!(
                end(&agent.turn(&format!("read f{i}.log")).await),
                TurnEndReason::Done
            );
        }
        vendor.set_window(6000);
        let ev = agent.turn("and now?").await;
        assert_eq!(end(&ev), TurnEndReason::Done, "{flavor:?}: {}", notices(&ev));
        assert!(
            ev.iter().any(|e| matches!(e, Event::Compacted { .. })),
            "{flavor:?}"
        );
        let seen = vendor.seen();
        let refused = seen.iter().filter(|s| s.refused).count();
        assert_eq!(refused, 1, "{flavor:?}: one refusal, then it fits");
        assert!(!seen.last().unwrap().refused);
        agent.shutdown().await;
    }
}

#[tokio::test]
async fn a_server_that_refuses_everything_ends_the_turn_without_looping() {
    let dir = tempfile::tempdir().unwrap();
    let vendor = WindowVendor::start(1100, Flavor::LlamaCpp);
    vendor.push(Step::text("never"));
    let mut agent = Agent::start(&config(&vendor, 32_768), dir.path(), None, None);
    let ev = agent.turn("hi").await;
    assert_eq!(end(&ev), TurnEndReason::Error);
    let text = notices(&ev);
    assert!(text.contains("/new"), "{text}");
    assert!(vendor.seen().len() <= 4, "{} requests", vendor.seen().len());
    agent.shutdown().await;
}

/// `[providers.openai] context_window = window`.
fn window_section(window: u64) -> std::collections::BTreeMap<String, ikigai::config::ProviderSection> {
    let section = ikigai::config::ProviderSection {
        context_window: Some(window),
        ..Default::default()
    };
    [("openai".to_string(), section)].into()
}
