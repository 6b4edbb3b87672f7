//! The user's current message is never summarised: one too large for the window is
//! refused plainly, whatever the length of the system prompt around it (which differs
//! with the working folder's path). Swept over message sizes from a fifth of the window
//! to past it in twentieths, against a vendor that refuses what does not fit its window.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use crate::common::window_vendor::{Flavor, Step, WindowVendor};
use ikigai::agent::AgentSetup;
use ikigai::config::{Config, Secret};
use ikigai::protocol::{Event, Op, TurnEndReason};
use ikigai::provider::openai::OpenAiChat;
use ikigai::tools::Registry;
use tokio::sync::mpsc::unbounded_channel;

const WINDOW: u64 = 8192;
const REFUSAL: &str = "too large for this model's context window";

/// One turn with `message` after `system`; the events it produced.
async fn turn(vendor: &WindowVendor, system: &str, message: &str) -> Vec<Event> {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        base_url: Some(vendor.base_url.clone()),
        api_key: Some(Secret::new("test-key")),
        model: Some("fake-model".into()),
        retry_base_delay_ms: 10,
        // `[providers.openai] context_window = WINDOW`.
        providers: [(
            "openai".to_string(),
            ikigai::config::ProviderSection {
                context_window: Some(WINDOW),
                ..Default::default()
            },
        )]
        .into(),
        ..Config::default()
    };
    let (tx, mut events) = unbounded_channel();
    let setup = AgentSetup {
        provider: Arc::new(OpenAiChat::new(&config).unwrap()),
        config,
        registry: Registry::builtin(),
        sessions: None,
        cwd: dir.path().to_path_buf(),
        system_prompt: system.to_string(),
        environment: String::new(),
        instructions: Vec::new(),
        skills: Default::default(),
        mode: None,
        resumed: None,
        follow_tree: true,
    };
    let handle = ikigai::agent::spawn(setup, tx);
    handle.ops.send(Op::Submit(message.to_string())).unwrap();
    let mut out = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(60), events.recv())
            .await
            .expect("an event within 60 s")
            .expect("agent alive");
        let end = matches!(ev, Event::TurnEnded { .. });
        out.push(ev);
        if end {
            break;
        }
    }
    let _ = handle.ops.send(Op::Shutdown);
    let _ = handle.task.await;
    out
}

fn notices(events: &[Event]) -> String {
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

#[tokio::test]
async fn a_message_too_large_for_the_window_is_refused_never_summarised() {
    sweep(WINDOW).await;
}

/// The server's window is smaller than the agent believes (as a tokenizer that counts
/// more tokens than bytes/4 makes it): the server's refusal ends the same way.
#[tokio::test]
async fn a_message_the_server_refuses_is_refused_never_summarised() {
    sweep(WINDOW * 3 / 4).await;
}

async fn sweep(server_window: u64) {
    let mut refused = 0;
    let mut answered = 0;
    // The system prompt as a short, a middling and a long working folder make it.
    for folder in [4, 60, 400] {
        let system = format!("You are a test.\nWorking directory: /{}\n", "d".repeat(folder));
        for twentieth in 4..=24 {
            // From a fifth of the window to past it, in tokens of about 4 bytes.
            let words = (WINDOW as usize * twentieth / 20) * 4 / 5;
            let message = format!("look at this: {}", "data ".repeat(words));
            let vendor = WindowVendor::start(server_window, Flavor::LlamaCpp);
            vendor.push(Step::text("Answered your message."));
            let ev = turn(&vendor, &system, &message).await;
            let end = ev
                .iter()
                .find_map(|e| match e {
                    Event::TurnEnded { reason } => Some(*reason),
                    _ => None,
                })
                .unwrap();
            let seen = vendor.seen();
            let case =
                format!("server window {server_window}, folder {folder}, {twentieth}/20 of the window");
            // Never summarised: no summary request carries the message.
            for s in seen.iter().filter(|s| s.summary) {
                assert!(!s.text().contains("look at this"), "{case}: summarised");
            }
            assert!(
                !ev.iter().any(|e| matches!(e, Event::Compacted { .. })),
                "{case}: nothing else to compact"
            );
            match end {
                TurnEndReason::Done => {
                    answered += 1;
                    let last = seen.last().unwrap();
                    assert!(!last.refused, "{case}");
                    let users: Vec<&str> = last
                        .messages()
                        .iter()
                        .filter(|m| m["role"] == "user")
                        .filter_map(|m| m["content"].as_str())
                        .collect();
                    assert_eq!(users, [message.as_str()], "{case}: sent whole");
                }
                TurnEndReason::Error => {
                    refused += 1;
                    let text = notices(&ev);
                    assert!(text.contains(REFUSAL) && text.contains("/new"), "{case}: {text}");
                }
                other => panic!("{case}: {other:?}: {}", notices(&ev)),
            }
        }
    }
    // The sweep covers both sides of the line.
    assert!(
        answered >= 3 && refused >= 6,
        "{answered} answered, {refused} refused"
    );
}
