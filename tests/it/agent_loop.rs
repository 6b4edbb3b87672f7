//! The agent loop end to end over real HTTP against the fake Chat Completions vendor:
//! streaming, tool calls, the limit, errors, retries, broken and stalled streams, cancel.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::time::Duration;

use crate::common::agent::{TestAgent, config_for, notices, text_of, turn_end};
use crate::common::fake_provider::{End, FakeProvider, Reply};
use ikigai::protocol::{Event, Op, TurnEndReason};
use serde_json::{Value, json};

fn tool_messages(req: &common::fake_provider::Recorded) -> Vec<Value> {
    req.messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

fn envelope(m: &Value) -> Value {
    serde_json::from_str(m["content"].as_str().expect("tool content is a string")).expect("envelope JSON")
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").unwrap();
    std::fs::write(dir.path().join("b.rs"), "fn b() {}\n").unwrap();
    std::fs::write(dir.path().join("notes.md"), "hello notes\n").unwrap();
    dir
}

#[tokio::test]
async fn a_text_turn_streams_and_the_request_is_well_formed() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("Hello there, friend."));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("hi").await;
    assert_eq!(text_of(&events), "Hello there, friend.");
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, Event::TextDelta { .. }))
            .count()
            >= 3,
        "streamed in pieces"
    );
    // 10 input tokens; no share of the window: fake-model has no preset and the fake
    // states none, so the window is only the 32k fallback's guess (issue 39 §1: a share of
    // a guessed window is not shown).
    assert!(events.contains(&Event::Usage {
        input: 10,
        output: 5,
        cached: 0,
        context_pct: None,
        cost: None,
    }));
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done));

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.headers["authorization"], "Bearer test-key");
    assert_eq!(r.body["model"], "fake-model");
    assert_eq!(r.body["stream"], true);
    assert_eq!(r.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(r.body["tool_choice"], "auto");
    let names: Vec<&str> = r.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"glob") && names.contains(&"file_read"),
        "{names:?}"
    );
    assert_eq!(
        r.messages(),
        &vec![
            json!({"role": "system", "content": "You are a test."}),
            json!({"role": "user", "content": "hi"})
        ]
    );
}

#[tokio::test]
async fn a_tool_call_with_fragmented_arguments_runs_and_its_result_goes_back() {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("call_1", "glob", r#"{"pattern":"*.rs"}"#)]));
    fake.push(Reply::text("Two Rust files."));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("which rust files?").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done));
    assert!(events.contains(&Event::ToolCallStarted {
        id: "call_1".into(),
        name: "glob".into(),
        arguments: r#"{"pattern":"*.rs"}"#.into()
    }));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let msgs = reqs[1].messages();
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(msgs[2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        msgs[2]["tool_calls"][0]["function"]["arguments"],
        r#"{"pattern":"*.rs"}"#
    );
    assert_eq!(msgs[3]["role"], "tool");
    assert_eq!(msgs[3]["tool_call_id"], "call_1");
    let env = envelope(&msgs[3]);
    assert_eq!(env["tool_success"], true);
    assert_eq!(env["result"]["count"], 2);
    assert_eq!(env["result"]["output"], "a.rs\nb.rs");
    assert_eq!(text_of(&events), "Two Rust files.");
}

#[tokio::test]
async fn three_parallel_calls_with_interleaved_fragments_run_in_order_with_matching_ids() {
    let fake = FakeProvider::start();
    let c = |i: u32, rest: &str| {
        format!(r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":{i}{rest}}}]}}}}]}}"#)
    };
    fake.push(Reply::payloads(&[
        c(
            0,
            r#","id":"call_a","type":"function","function":{"name":"glob","arguments":""}"#,
        ),
        c(
            1,
            r#","id":"call_b","type":"function","function":{"name":"file_read","arguments":"{\"pa"}"#,
        ),
        c(
            2,
            r#","id":"call_c","type":"function","function":{"name":"glob","arguments":"{\"pattern\""}"#,
        ),
        c(0, r#","function":{"arguments":"{\"pattern\":\"*.md\"}"}"#),
        c(2, r#","function":{"arguments":":\"*.rs\"}"}"#),
        c(1, r#","function":{"arguments":"th\":\"notes.md\"}"}"#),
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#.to_string(),
        "[DONE]".to_string(),
    ]));
    fake.push(Reply::text("ok"));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("look around").await;
    let started: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallStarted { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["call_a", "call_b", "call_c"]);
    let reqs = fake.requests();
    let tools = tool_messages(&reqs[1]);
    let ids: Vec<&str> = tools
        .iter()
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_a", "call_b", "call_c"]);
    assert_eq!(envelope(&tools[0])["result"]["output"], "notes.md");
    assert!(
        envelope(&tools[1])["result"]["output"]
            .as_str()
            .unwrap()
            .contains("hello notes")
    );
    assert_eq!(envelope(&tools[2])["result"]["count"], 2);
    // One assistant wire message carries all three calls, before the results.
    let assistant = &reqs[1].messages()[2];
    assert_eq!(assistant["tool_calls"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn text_followed_by_a_tool_call_is_one_wire_message() {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls_after(
        "Let me check.",
        &[("call_1", "glob", r#"{"pattern":"*.md"}"#)],
    ));
    fake.push(Reply::text("Found it."));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("notes?").await;
    assert_eq!(text_of(&events), "Let me check.Found it.");
    let msgs = fake.requests()[1].messages().clone();
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(msgs[2]["content"], "Let me check.");
    assert_eq!(msgs[2]["tool_calls"][0]["function"]["name"], "glob");
    assert_eq!(msgs[3]["role"], "tool");
}

#[tokio::test]
async fn malformed_arguments_and_unknown_tools_become_error_results_not_crashes() {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        ("call_1", "glob", r#"{"pattern": "*.rs""#),
        ("call_2", "no_such_tool", "{}"),
    ]));
    fake.push(Reply::text("Sorry."));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("go").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done));
    let tools = tool_messages(&fake.requests()[1]);
    let bad = envelope(&tools[0]);
    assert_eq!(bad["tool_success"], false);
    assert_eq!(bad["error_code"], "INVALID_PARAMS");
    let unknown = envelope(&tools[1]);
    assert_eq!(unknown["error_code"], "TOOL_NOT_FOUND");
    assert!(unknown["error"].as_str().unwrap().contains("no_such_tool"));
}

#[tokio::test]
async fn the_tool_limit_marks_the_last_result_and_skips_later_calls() {
    let fake = FakeProvider::start();
    // Distinct arguments: identical calls would meet the repeat guard first.
    let g = |p: &str| format!(r#"{{"pattern":"*.{p}"}}"#);
    let (g1, g2, g3, g4, g5) = (g("rs"), g("a"), g("b"), g("c"), g("d"));
    fake.push(Reply::tool_calls(&[("c1", "glob", &g1), ("c2", "glob", &g2)]));
    fake.push(Reply::tool_calls(&[("c3", "glob", &g3), ("c4", "glob", &g4)]));
    fake.push(Reply::tool_calls(&[("c5", "glob", &g5)]));
    let dir = project();
    let mut cfg = config_for(&fake);
    cfg.max_tool_turns = 3;
    let mut agent = TestAgent::start(cfg, dir.path());
    let events = agent.turn("loop forever").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Limit));
    assert!(
        notices(&events)
            .iter()
            .any(|n| n == "Tool call limit reached (3). Stopping tool loop.")
    );
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3, "no request after the calls past the limit");
    let second = tool_messages(&reqs[1]);
    assert_eq!(second.len(), 2);
    assert!(envelope(&second[1]).get("limit_reached").is_none());
    let third = tool_messages(&reqs[2]);
    assert_eq!(third.len(), 4);
    let c3 = envelope(&third[2]);
    assert_eq!(c3["tool_success"], true, "the third call ran");
    assert_eq!(c3["limit_reached"], true);
    assert_eq!(
        c3["limit_message"],
        "Tool call limit reached (3). Stopping tool loop."
    );
    let c4 = envelope(&third[3]);
    assert_eq!(c4["tool_success"], false, "the fourth call did not run");
    assert_eq!(c4["limit_reached"], true);
    assert_eq!(
        c4["error_code"], "LIMIT_REACHED",
        "a call not run says why, as a code"
    );
    // The call in the response after the limit was answered too, so the history is valid.
    let finished: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(finished, ["c1", "c2", "c3", "c4", "c5"]);
    // A later user turn starts counting afresh and its history is complete.
    fake.push(Reply::text("fine"));
    let events = agent.turn("stop").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done));
    let last = fake.requests().pop().unwrap();
    let calls: usize = last
        .messages()
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .map(Vec::len)
        .sum();
    assert_eq!(calls, tool_messages(&last).len());
}

async fn single_error(reply: Reply) -> (Vec<Event>, usize) {
    let fake = FakeProvider::start();
    fake.push(reply);
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("hi").await;
    (events, fake.requests().len())
}

#[tokio::test]
async fn auth_failures_name_the_key_variable_and_are_not_retried() {
    for code in [401, 403] {
        let (events, n) = single_error(Reply::status(
            code,
            r#"{"error":{"message":"Incorrect API key provided: sk-abc12345678"}}"#,
        ))
        .await;
        assert_eq!(turn_end(&events), Some(TurnEndReason::Error));
        assert_eq!(n, 1);
        let msg = notices(&events).join("\n");
        assert!(
            msg.contains("authentication failed") && msg.contains("OPENAI_API_KEY"),
            "{msg}"
        );
        assert!(!msg.contains("sk-abc12345678"), "the key is never shown: {msg}");
    }
}

#[tokio::test]
async fn not_found_names_model_and_endpoint() {
    let (events, n) = single_error(Reply::status(
        404,
        r#"{"error":{"message":"model does not exist"}}"#,
    ))
    .await;
    assert_eq!(n, 1);
    let msg = notices(&events).join("\n");
    assert!(
        msg.contains("fake-model") && msg.contains("/v1/chat/completions") && msg.contains("does not exist"),
        "{msg}"
    );
}

#[tokio::test]
async fn bad_request_shows_the_servers_message() {
    let (events, n) = single_error(Reply::status(
        400,
        r#"{"error":{"message":"Invalid schema for function 'glob'"}}"#,
    ))
    .await;
    assert_eq!(n, 1);
    assert!(
        notices(&events)
            .join("\n")
            .contains("Invalid schema for function 'glob'")
    );
}

#[tokio::test]
async fn connection_refused_on_this_machine_says_nothing_listens_at_once() {
    // Bound but never listening: connections are refused, and no other server (the fake
    // below included) can be given this port while the socket lives.
    let closed = tokio::net::TcpSocket::new_v4().unwrap();
    closed.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = closed.local_addr().unwrap().port();
    let dir = project();
    let fake = FakeProvider::start();
    let mut cfg = config_for(&fake);
    cfg.base_url = Some(format!("http://127.0.0.1:{port}/v1"));
    cfg.max_retries = 5;
    let mut agent = TestAgent::start(cfg, dir.path());
    let events = agent.turn("hi").await;
    // Not the backoff meant for a busy server: one quiet second look, then the error.
    let retries = events
        .iter()
        .filter(|e| matches!(e, Event::Retrying { .. }))
        .count();
    assert_eq!(retries, 0);
    let msg = notices(&events).join("\n");
    assert!(
        msg.contains(&format!("nothing listens at http://127.0.0.1:{port}/v1")),
        "{msg}"
    );
    assert_eq!(turn_end(&events), Some(TurnEndReason::Error));
}

#[tokio::test]
async fn server_errors_and_rate_limits_are_retried_honouring_retry_after() {
    let fake = FakeProvider::start();
    fake.push(Reply::status(503, r#"{"error":{"message":"overloaded"}}"#));
    fake.push(Reply::status(429, r#"{"error":{"message":"slow down"}}"#).with_header("retry-after", "0.05"));
    fake.push(Reply::text("finally"));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("hi").await;
    assert_eq!(text_of(&events), "finally");
    let retries: Vec<(u32, f64)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Retrying { attempt, in_secs, .. } => Some((*attempt, *in_secs)),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 2);
    assert_eq!(retries[0], (1, 0.01), "first backoff is the base delay");
    assert_eq!(retries[1], (2, 0.05), "Retry-After wins");
    assert_eq!(fake.requests().len(), 3);
}

#[tokio::test]
async fn retries_are_bounded() {
    let fake = FakeProvider::start();
    for _ in 0..3 {
        fake.push(Reply::status(500, "boom"));
    }
    let dir = project();
    let mut cfg = config_for(&fake);
    cfg.max_retries = 2;
    let mut agent = TestAgent::start(cfg, dir.path());
    let events = agent.turn("hi").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Error));
    assert_eq!(fake.requests().len(), 3);
    assert!(notices(&events).join("").contains("server error (500): boom"));
}

async fn assert_partial_kept_and_next_turn_valid(
    fake: &FakeProvider,
    mut agent: TestAgent,
    events: Vec<Event>,
    partial: &str,
) {
    assert_eq!(turn_end(&events), Some(TurnEndReason::Interrupted));
    assert_eq!(text_of(&events), partial);
    fake.push(Reply::text("again"));
    let events = agent.turn("continue").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done));
    let last = fake.requests().pop().unwrap();
    let msgs = last.messages();
    assert_eq!(msgs.len(), 4);
    assert_eq!(msgs[2], json!({"role": "assistant", "content": partial}));
    assert_eq!(msgs[3], json!({"role": "user", "content": "continue"}));
}

#[tokio::test]
async fn a_stream_that_breaks_midway_keeps_the_partial_text() {
    let fake = FakeProvider::start();
    fake.push(
        Reply::text("one two three four five")
            .truncated(4)
            .ending(End::Drop),
    );
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("count").await;
    assert!(
        notices(&events).join("").contains("stream broke"),
        "{:?}",
        notices(&events)
    );
    assert_partial_kept_and_next_turn_valid(&fake, agent, events, "one two three ").await;
}

#[tokio::test]
async fn a_stalled_stream_times_out_and_keeps_the_partial_text() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("one two three").truncated(3).ending(End::Stall));
    let dir = project();
    let mut cfg = config_for(&fake);
    cfg.idle_timeout_secs = 1;
    let mut agent = TestAgent::start(cfg, dir.path());
    let events = agent.turn("count").await;
    assert!(
        notices(&events).join("").contains("stalled"),
        "{:?}",
        notices(&events)
    );
    assert_partial_kept_and_next_turn_valid(&fake, agent, events, "one two ").await;
}

#[tokio::test]
async fn an_error_event_midstream_keeps_the_text_before_it() {
    let fake = FakeProvider::start();
    fake.push(Reply::fixture("compat-10-groq-text-then-error-event.sse"));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("hi").await;
    assert!(notices(&events).join("").contains("tool_use_failed"));
    assert_partial_kept_and_next_turn_valid(&fake, agent, events, "maybe").await;
}

#[tokio::test]
async fn cancel_drops_the_stream_and_keeps_what_arrived() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("alpha beta gamma").truncated(3).ending(End::Stall));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    agent.send(Op::Submit("go".into()));
    let seen = agent
        .until(|e| matches!(e, Event::TextDelta { text } if text == "beta "))
        .await;
    assert_eq!(text_of(&seen), "alpha beta ");
    agent.send(Op::Cancel);
    let rest = agent.until_turn_end().await;
    assert_eq!(turn_end(&rest), Some(TurnEndReason::Interrupted));
    let all: Vec<Event> = seen.into_iter().chain(rest).collect();
    assert_partial_kept_and_next_turn_valid(&fake, agent, all, "alpha beta ").await;
}

#[tokio::test]
async fn messages_sent_during_a_turn_are_queued_for_after_it() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("first answer").paced(Duration::from_millis(20)));
    fake.push(Reply::text("second answer"));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    agent.send(Op::Submit("one".into()));
    agent.send(Op::Submit("two".into()));
    let first = agent.until_turn_end().await;
    assert_eq!(text_of(&first), "first answer");
    let second = agent.until_turn_end().await;
    assert_eq!(text_of(&second), "second answer");
    let reqs = fake.requests();
    assert_eq!(reqs[1].messages()[3], json!({"role": "user", "content": "two"}));
}

#[tokio::test]
async fn cancel_kills_a_running_tool_and_answers_its_call() {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        (
            "call_1",
            "bash",
            r#"{"command":"sleep 30 & echo $$ $! > pid.tmp; mv pid.tmp pid; wait"}"#,
        ),
        ("call_2", "glob", r#"{"pattern":"*"}"#),
    ]));
    let dir = project();
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    agent.send(Op::Submit("sleep".into()));
    agent
        .until(|e| matches!(e, Event::ToolCallStarted { id, .. } if id == "call_1"))
        .await;
    let pid_file = dir.path().join("pid");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !pid_file.exists() || std::fs::read_to_string(&pid_file).unwrap().trim().is_empty() {
        assert!(std::time::Instant::now() < deadline, "bash never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pids: Vec<i32> = std::fs::read_to_string(&pid_file)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    // The shell and its `sleep 30 &` child.
    assert_eq!(pids.len(), 2, "{pids:?}");
    let gone = |pid: i32| {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .map(|s| s.contains(") Z "))
                .unwrap_or(true)
    };
    assert!(!gone(pids[1]), "the sleep child runs before the cancel");
    agent.send(Op::Cancel);
    let rest = agent.until_turn_end().await;
    assert_eq!(turn_end(&rest), Some(TurnEndReason::Interrupted));
    // The shell and the background child are both gone.
    for pid in pids {
        while !gone(pid) {
            assert!(
                std::time::Instant::now() < deadline,
                "process {pid} still running after cancel"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // Both calls are answered in the next request, so the history stays valid.
    fake.push(Reply::text("ok"));
    agent.turn("next").await;
    let last = fake.requests().pop().unwrap();
    let tools = tool_messages(&last);
    assert_eq!(tools.len(), 2);
    for t in &tools {
        let env = envelope(t);
        assert_eq!(env["tool_success"], false);
        assert!(env["error"].as_str().unwrap().contains("interrupted"), "{env}");
    }
}

#[tokio::test]
async fn without_a_key_for_openai_a_turn_explains_the_setup_at_once() {
    let fake = FakeProvider::start();
    let dir = project();
    let mut cfg = config_for(&fake);
    cfg.api_key = None;
    // OpenAI's own endpoint, with a key variable that is surely unset in the test run.
    cfg.base_url = Some("https://api.openai.com/v1".to_string());
    cfg.api_key_env = Some("IKIGAI_TEST_UNSET_OPENAI_KEY".to_string());
    let mut agent = TestAgent::start(cfg, dir.path());
    let events = agent.turn("hello").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Error));
    let msg = notices(&events).join("\n");
    assert!(
        msg.contains("export IKIGAI_TEST_UNSET_OPENAI_KEY") && msg.contains("--provider"),
        "{msg}"
    );
    assert!(
        !events.iter().any(|e| matches!(e, Event::Retrying { .. })),
        "nothing was sent"
    );
}
