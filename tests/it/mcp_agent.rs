//! A conversation through the real agent loop calls an MCP tool of the reference server
//! and answers from its result, in each wire format's strict fake vendor: the tool is
//! offered with its schema, the call runs on the server, and the result goes back.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::agent::{TestAgent, config_for, text_of, turn_end};
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::fake_vendor::{FakeVendor, Wire, anthropic_reply, gemini_reply, responses_reply};
use crate::mcp::{everything_section, registry};
use ikigai::agent::AgentSetup;
use ikigai::config::{Config, Secret};
use ikigai::protocol::{Event, TurnEndReason};
use serde_json::{Value, json};

const SUM: &str = "every__get-sum";

/// The agent on `config`'s provider with the reference server's tools.
async fn agent(config: Config, dir: &std::path::Path) -> (TestAgent, ikigai::tools::mcp::Mcp) {
    let (registry, mcp) = registry(&everything_section("every"), dir).await;
    let provider = crate::common::provider(&config);
    let (tx, events) = tokio::sync::mpsc::unbounded_channel();
    let setup = AgentSetup {
        config,
        provider,
        registry,
        sessions: None,
        cwd: dir.to_path_buf(),
        system_prompt: "You are a test.".into(),
        environment: String::new(),
        instructions: Vec::new(),
        skills: Default::default(),
        mode: None,
        resumed: None,
        follow_tree: true,
    };
    let handle = ikigai::agent::spawn(setup, tx);
    (TestAgent { handle, events }, mcp)
}

async fn converse(config: Config, dir: &std::path::Path) -> Vec<Event> {
    let (mut a, mcp) = agent(config, dir).await;
    let events = a.turn("what is 2 + 3? use the tool").await;
    mcp.shutdown().await;
    events
}

fn check(events: &[Event]) {
    check_with(events, "The sum of 2 and 3 is 5");
}

fn check_with(events: &[Event], result: &str) {
    assert_eq!(turn_end(events), Some(TurnEndReason::Done), "{events:?}");
    assert!(text_of(events).ends_with("The sum is 5."), "{}", text_of(events));
    let finished = events
        .iter()
        .find_map(|e| match e {
            Event::ToolCallFinished { output, success, .. } => Some((output.clone(), *success)),
            _ => None,
        })
        .unwrap();
    assert!(finished.1, "{finished:?}");
    assert!(finished.0.contains(result), "{finished:?}");
}

/// The tool was offered with the server's schema, and its result went back.
fn check_bodies(bodies: &[Value], tools_at: &dyn Fn(&Value) -> Vec<Value>) {
    check_bodies_with(bodies, tools_at, SUM, "\"a\"", "The sum of 2 and 3 is 5");
}

fn check_bodies_with(
    bodies: &[Value],
    tools_at: &dyn Fn(&Value) -> Vec<Value>,
    tool: &str,
    param: &str,
    result: &str,
) {
    assert_eq!(bodies.len(), 2);
    let offered = tools_at(&bodies[0]);
    assert!(
        offered
            .iter()
            .any(|t| t.to_string().contains(tool) && t.to_string().contains(param)),
        "{offered:?}"
    );
    assert!(bodies[1].to_string().contains(result), "{}", bodies[1]);
}

#[tokio::test]
async fn openai_chat() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("call_1", SUM, r#"{"a": 2, "b": 3}"#)]));
    fake.push(Reply::text("The sum is 5."));
    check(&converse(config_for(&fake), dir.path()).await);
    let bodies: Vec<Value> = fake.requests().into_iter().map(|r| r.body).collect();
    check_bodies(&bodies, &|b| b["tools"].as_array().cloned().unwrap_or_default());
}

#[tokio::test]
async fn openai_responses() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(responses_reply("", &[("call_1", SUM, r#"{"a": 2, "b": 3}"#)]));
    fake.push(responses_reply("The sum is 5.", &[]));
    let config = Config {
        provider: Some("openai-responses".into()),
        model: Some("gpt-5-mini".into()),
        ..config_for(&fake)
    };
    check(&converse(config, dir.path()).await);
    let bodies: Vec<Value> = fake.requests().into_iter().map(|r| r.body).collect();
    check_bodies(&bodies, &|b| b["tools"].as_array().cloned().unwrap_or_default());
}

fn vendor_config(fake: &FakeVendor, provider: &str, model: &str) -> Config {
    Config {
        provider: Some(provider.into()),
        base_url: Some(fake.base_url.clone()),
        api_key: Some(Secret::new("vendor-key")),
        model: Some(model.into()),
        retry_base_delay_ms: 10,
        ..Config::default()
    }
}

#[tokio::test]
async fn anthropic() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeVendor::start(Wire::Anthropic);
    fake.push(anthropic_reply(
        None,
        "",
        &[("toolu_01", SUM, r#"{"a": 2, "b": 3}"#)],
    ));
    fake.push(anthropic_reply(None, "The sum is 5.", &[]));
    check(&converse(vendor_config(&fake, "anthropic", "claude-sonnet-4-5"), dir.path()).await);
    assert_eq!(fake.rejections(), Vec::<String>::new());
    let bodies: Vec<Value> = fake.requests().into_iter().map(|r| r.body).collect();
    check_bodies(&bodies, &|b| b["tools"].as_array().cloned().unwrap_or_default());
}

#[tokio::test]
async fn gemini() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeVendor::start(Wire::Gemini);
    // The fake streams string arguments only: the echo tool takes one.
    fake.push(gemini_reply(
        "",
        "",
        "",
        &[("every__echo", json!({"message": "2 + 3 = 5"}))],
    ));
    fake.push(gemini_reply("", "", "The sum is 5.", &[]));
    check_with(
        &converse(vendor_config(&fake, "google", "gemini-2.5-flash"), dir.path()).await,
        "Echo: 2 + 3 = 5",
    );
    assert_eq!(fake.rejections(), Vec::<String>::new());
    let bodies: Vec<Value> = fake.requests().into_iter().map(|r| r.body).collect();
    check_bodies_with(
        &bodies,
        &|b| {
            b["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|t| t["functionDeclarations"].as_array().cloned().unwrap_or_default())
                .collect()
        },
        "every__echo",
        "\"message\"",
        "Echo: 2 + 3 = 5",
    );
}

/// The agent with the reference server, a fake OpenAI endpoint and `tweak` applied.
async fn agent_with(
    fake: &FakeProvider,
    dir: &std::path::Path,
    tweak: impl Fn(&mut Config),
) -> (TestAgent, ikigai::tools::mcp::Mcp) {
    let mut config = config_for(fake);
    tweak(&mut config);
    agent(config, dir).await
}

#[tokio::test]
async fn mcp_calls_count_against_max_tool_turns_and_pass_the_repeat_guard() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    // max_tool_turns = 2: the third call of the response is not run.
    fake.push(Reply::tool_calls(&[
        ("c1", "every__echo", r#"{"message": "one"}"#),
        ("c2", "every__echo", r#"{"message": "two"}"#),
        ("c3", "every__echo", r#"{"message": "three"}"#),
    ]));
    fake.push(Reply::text("stopped"));
    let (mut a, mcp) = agent_with(&fake, dir.path(), |c| c.max_tool_turns = 2).await;
    let events = a.turn("echo thrice").await;
    let results: Vec<(String, bool)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished { summary, success, .. } => Some((summary.clone(), *success)),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[0].1 && results[1].1, "{results:?}");
    assert_eq!(
        results[2],
        ("not executed: tool call limit reached".to_string(), false)
    );
    mcp.shutdown().await;

    // max_identical_calls = 1: the same call again is refused, not run.
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "d1",
        "every__echo",
        r#"{"message": "same"}"#,
    )]));
    fake.push(Reply::tool_calls(&[(
        "d2",
        "every__echo",
        r#"{"message": "same"}"#,
    )]));
    fake.push(Reply::text("ok"));
    let (mut a, mcp) = agent_with(&fake, dir.path(), |c| c.max_identical_calls = 1).await;
    let events = a.turn("echo twice").await;
    let outputs: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished { output, .. } => Some(output.clone()),
            _ => None,
        })
        .collect();
    assert!(outputs[0].contains("Echo: same"), "{outputs:?}");
    assert!(outputs[1].contains("REPEATED_CALL"), "{outputs:?}");
    assert!(!outputs[1].contains("Echo: same"), "{outputs:?}");
    mcp.shutdown().await;
}
