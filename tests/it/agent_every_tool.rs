//! The agent end to end with every built-in tool: the fake vendor asks for each tool in
//! turn and the next request must carry that tool's real result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::agent::{TestAgent, config_for, turn_end};
use crate::common::fake_provider::{FakeProvider, Reply};
use ikigai::protocol::TurnEndReason;
use serde_json::{Value, json};

#[tokio::test]
async fn each_tool_runs_and_the_next_request_carries_its_result() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    42\n}\n",
    )
    .unwrap();
    let steps: Vec<(&str, Value)> = vec![
        ("glob", json!({"pattern": "src/**/*.rs"})),
        ("file_read", json!({"path": "src/lib.rs"})),
        ("grep", json!({"pattern": "fn answer"})),
        (
            "file_write",
            json!({"path": "notes/todo.txt", "content": "ship it\n"}),
        ),
        (
            "file_edit",
            json!({"path": "src/lib.rs", "old_string": "42", "new_string": "43"}),
        ),
        ("list_dir", json!({})),
        (
            "bash",
            json!({"command": "cat notes/todo.txt; echo oops >&2; exit 3"}),
        ),
    ];
    let fake = FakeProvider::start();
    for (i, (name, args)) in steps.iter().enumerate() {
        let id = format!("call_{i}");
        fake.push(Reply::tool_calls(&[(id.as_str(), name, &args.to_string())]));
    }
    fake.push(Reply::text("All tools used."));
    let mut agent = TestAgent::start(config_for(&fake), dir.path());
    let events = agent.turn("use every tool").await;
    assert_eq!(turn_end(&events), Some(TurnEndReason::Done));

    let reqs = fake.requests();
    assert_eq!(reqs.len(), steps.len() + 1);
    let result = |i: usize| -> Value {
        let last = reqs[i + 1].messages().last().unwrap().clone();
        assert_eq!(last["role"], "tool");
        assert_eq!(last["tool_call_id"], format!("call_{i}"));
        let env: Value = serde_json::from_str(last["content"].as_str().unwrap()).unwrap();
        assert_eq!(env["tool_success"], true, "step {i}: {env}");
        env["result"].clone()
    };
    let glob = result(0);
    assert_eq!(glob["count"], 1);
    assert!(glob["output"].as_str().unwrap().contains("src/lib.rs"));
    assert!(result(1)["output"].as_str().unwrap().contains("42"));
    let grep = result(2);
    assert_eq!(grep["count"], 1);
    assert!(
        grep["output"]
            .as_str()
            .unwrap()
            .contains("src/lib.rs:1: pub fn answer() -> u32 {"),
        "{grep}"
    );
    assert_eq!(result(3)["bytes"], 8);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/todo.txt")).unwrap(),
        "ship it\n"
    );
    assert_eq!(result(4)["replacements"], 1);
    assert!(
        std::fs::read_to_string(dir.path().join("src/lib.rs"))
            .unwrap()
            .contains("43")
    );
    let ls = result(5)["output"].as_str().unwrap().to_string();
    assert!(ls.contains("notes") && ls.contains("src"), "{ls}");
    let bash = result(6);
    assert_eq!(bash["exit_code"], 3);
    let out = bash["output"].as_str().unwrap();
    assert!(out.contains("ship it") && out.contains("oops"), "{out}");
}
