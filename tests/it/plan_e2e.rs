//! The model's plan (`update_plan`) with the real binary and the fake vendor: `--json`
//! emits `plan_updated` with the steps, plain mode prints each change, the TUI pins the plan
//! above the input while the turn runs and keeps each change in the scrollback; the tool
//! never asks (ask and read-only modes run it), and its schema stays under 150 tokens on
//! the wire.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Output, Stdio};

use serde_json::{Value, json};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::tmux::Tmux;

fn plan(done: usize) -> String {
    let steps = ["read the code", "fix the bug", "run the tests"];
    let steps: Vec<Value> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let status = match i {
                _ if i < done => "done",
                _ if i == done => "in_progress",
                _ => "pending",
            };
            json!({"step": s, "status": status})
        })
        .collect();
    json!({ "steps": steps }).to_string()
}

fn run(home: &std::path::Path, args: &[&str]) -> Output {
    common::ikigai(home)
        .args(args)
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn json_emits_plan_updated_and_the_tool_never_asks() {
    for mode in ["ask", "read-only"] {
        let home = tempfile::tempdir().unwrap();
        let fake = FakeProvider::start();
        fake.push(Reply::tool_calls(&[("p1", "update_plan", &plan(1))]));
        fake.push(Reply::text("Planned."));
        let out = run(
            home.path(),
            &[
                "--json",
                "-p",
                "plan it",
                "--approval",
                mode,
                "--base-url",
                &fake.base_url,
            ],
        );
        assert!(
            out.status.success(),
            "{mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let events: Vec<Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let updated: Vec<&Value> = events.iter().filter(|e| e["type"] == "plan_updated").collect();
        assert_eq!(updated.len(), 1, "{mode}: {events:#?}");
        assert_eq!(
            updated[0]["steps"],
            json!([
                {"step": "read the code", "status": "done"},
                {"step": "fix the bug", "status": "in_progress"},
                {"step": "run the tests", "status": "pending"}
            ])
        );
        let finished = events.iter().find(|e| e["type"] == "tool_call_finished").unwrap();
        assert_eq!(finished["success"], true, "{mode}: {finished}");
        assert_eq!(finished["summary"], "1/3 done");
        assert!(!events.iter().any(|e| e["type"] == "approval_requested"));
        let permission = events.iter().find(|e| e["type"] == "permission").unwrap();
        assert_eq!(permission["decision"], "approved", "{mode}: {permission}");
        assert_eq!(permission["by"], "read_only_list", "{mode}: {permission}");
    }
}

#[test]
fn a_plan_that_is_not_valid_is_an_error_for_the_model_and_emits_nothing() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let bad = json!({"steps": [{"step": "x", "status": "started"}]}).to_string();
    fake.push(Reply::tool_calls(&[("p1", "update_plan", &bad)]));
    fake.push(Reply::text("Oops."));
    let out = run(
        home.path(),
        &["--json", "-p", "plan", "--base-url", &fake.base_url],
    );
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("plan_updated"), "{text}");
    let reqs = fake.requests();
    let tool = reqs[1]
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    let env: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
    assert_eq!(env["error_code"], "INVALID_PARAMS");
    assert!(
        env["error"]
            .as_str()
            .unwrap()
            .contains("unknown variant `started`"),
        "{env}"
    );
}

#[test]
fn plain_mode_prints_each_change_of_the_plan() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("p1", "update_plan", &plan(0))]));
    fake.push(Reply::tool_calls(&[("p2", "update_plan", &plan(1))]));
    fake.push(Reply::text("Halfway."));
    let out = run(home.path(), &["-p", "plan it", "--base-url", &fake.base_url]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Plan (0/3 done)\n  ▸ read the code\n  ○ fix the bug\n  ○ run the tests\n"),
        "{text}"
    );
    assert!(
        text.contains("Plan (1/3 done)\n  ✓ read the code\n  ▸ fix the bug\n  ○ run the tests\n"),
        "{text}"
    );
}

#[test]
fn the_schema_sent_to_the_model_costs_at_most_150_tokens() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text("Hi."));
    let out = run(home.path(), &["-p", "hi", "--base-url", &fake.base_url]);
    assert!(out.status.success());
    let reqs = fake.requests();
    let tool = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "update_plan")
        .expect("update_plan is offered")
        .clone();
    let bytes = tool.to_string().len();
    // The budget's estimate: bytes / 4.
    assert!(
        bytes / 4 <= 150,
        "update_plan costs {} tokens ({bytes} bytes)",
        bytes / 4
    );
    let description = tool["function"]["description"].as_str().unwrap();
    assert!(description.contains("three or more steps"), "{description}");
}

#[test]
fn the_tui_pins_the_plan_while_the_turn_runs_and_keeps_each_change_in_the_scrollback() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let waits = "echo working; while [ ! -e go ]; do sleep 0.05; done";
    fake.push(Reply::tool_calls(&[("p1", "update_plan", &plan(1))]));
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        &json!({ "command": waits }).to_string(),
    )]));
    fake.push(Reply::text("All done."));
    // The default ask mode: update_plan runs without a question; bash asks.
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("Ask anything");
    t.type_text("fix it");
    t.keys(&["Enter"]);
    let pane = t.wait_text("y yes · n no");
    assert!(
        pane.contains("$ echo working"),
        "the question is about bash:\n{pane}"
    );
    assert!(pane.contains("▸ fix the bug"), "{pane}");
    t.keys(&["y"]);
    let pane = t.wait_for("the command to run", |s| s.contains("│ working"));
    assert_eq!(
        pane.matches("Plan (1/3 done)").count(),
        2,
        "in the scrollback and pinned above the input:\n{pane}"
    );
    let pinned = pane.rfind("Plan (1/3 done)").unwrap();
    let running = pane.find("Running bash").unwrap();
    assert!(
        pinned < running,
        "pinned above the spinner and the input:\n{pane}"
    );
    std::fs::write(home.path().join("go"), "").unwrap();
    t.wait_text("All done.");
    let all = t.wait_for("the pinned plan to go", |s| {
        !s.contains("Running bash") && s.matches("Plan (1/3 done)").count() == 1
    });
    assert!(all.contains("  ✓ read the code"), "{all}");
    let history = t.capture_all();
    assert_eq!(
        history.matches("Plan (1/3 done)").count(),
        1,
        "the scrollback keeps the change once:\n{history}"
    );
}
