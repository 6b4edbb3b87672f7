//! What ikigai does for small models (issue 22), from the outside: the real binary against
//! the scripted Chat Completions vendor, with the exact requests it records checked —
//! lenient arguments (aliases, unknown names ignored and named), for native calls,
//! recovered text calls and text-protocol calls alike; a loop of refused repeats ending the
//! turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common::fake_provider::{FakeProvider, Recorded, Reply};
use serde_json::{Value, json};

fn run(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = common::ikigai(home);
    cmd.current_dir(cwd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.output().expect("run ikigai")
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The content of the last `tool` message of a recorded request.
fn last_tool_content(req: &Recorded) -> String {
    req.messages()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .expect("a tool message")["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A project with `notes.txt`, and the home folder.
fn project() -> (tempfile::TempDir, tempfile::TempDir) {
    let (h, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(cwd.path().join("notes.txt"), "deploy code PLUM-4417\n").unwrap();
    (h, cwd)
}

/// What `file_read` returns for `notes.txt`, read with the real name and nothing else.
fn plain_read(h: &Path, cwd: &Path) -> Value {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "file_read",
        r#"{"path":"notes.txt"}"#,
    )]));
    fake.push(Reply::text("done"));
    let out = run(h, cwd, &["--base-url", &fake.base_url, "-p", "read"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let env: Value = serde_json::from_str(&last_tool_content(&fake.requests()[1])).unwrap();
    assert!(
        env["result"]["output"].as_str().unwrap().contains("PLUM-4417"),
        "{env}"
    );
    env["result"].clone()
}

#[test]
fn native_calls_with_an_alias_and_an_unknown_parameter_run_and_say_so() {
    let (h, cwd) = project();
    let result = plain_read(h.path(), cwd.path());
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "file_read",
        r#"{"file_path":"notes.txt","pattern":"**/*.md"}"#,
    )]));
    fake.push(Reply::tool_calls(&[(
        "c2",
        "bash",
        r#"{"cmd":"echo ran-$((6*7))"}"#,
    )]));
    fake.push(Reply::text("The code is PLUM-4417."));
    let out = run(
        h.path(),
        cwd.path(),
        &["--base-url", &fake.base_url, "-p", "code?"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    let env: Value = serde_json::from_str(&last_tool_content(&reqs[1])).unwrap();
    assert_eq!(
        env,
        json!({
            "note": "read parameter \"file_path\" as \"path\"; ignored unknown parameter \"pattern\"",
            "result": result,
            "tool_success": true
        })
    );
    let env: Value = serde_json::from_str(&last_tool_content(&reqs[2])).unwrap();
    assert_eq!(env["note"], "read parameter \"cmd\" as \"command\"");
    assert_eq!(env["tool_success"], true);
    assert!(
        env["result"]["output"].as_str().unwrap().contains("ran-42"),
        "{env}"
    );
    // The call as the model wrote it is what the history keeps and sends back.
    let call = &reqs[2]
        .messages()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap()["tool_calls"][0]["function"]["arguments"];
    assert_eq!(call, r#"{"file_path":"notes.txt","pattern":"**/*.md"}"#);
}

#[test]
fn a_missing_required_parameter_still_fails_with_its_name_and_type() {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "file_read",
        r#"{"pattern":"*.txt"}"#,
    )]));
    fake.push(Reply::text("sorry"));
    let out = run(
        h.path(),
        cwd.path(),
        &["--base-url", &fake.base_url, "-p", "read"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let env: Value = serde_json::from_str(&last_tool_content(&fake.requests()[1])).unwrap();
    assert_eq!(
        env,
        json!({
            "error": "file_read: missing required parameter `path` (string)",
            "error_code": "INVALID_PARAMS",
            "note": "ignored unknown parameter \"pattern\"",
            "tool_success": false
        })
    );
}

#[test]
fn a_recovered_text_call_with_an_unknown_parameter_runs_and_says_so() {
    // The issue's example: the 0.5B model wrote this as text; recovery used to refuse it.
    let (h, cwd) = project();
    let result = plain_read(h.path(), cwd.path());
    let fake = FakeProvider::start();
    fake.push(Reply::text(
        "{\"name\": \"file_read\", \"arguments\": {\"path\": \"notes.txt\", \"pattern\": \"**/*.md\"}}",
    ));
    fake.push(Reply::text("The code is PLUM-4417."));
    let out = run(
        h.path(),
        cwd.path(),
        &[
            "--provider",
            "llamacpp",
            "--base-url",
            &fake.base_url,
            "-p",
            "code?",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let env: Value = serde_json::from_str(&last_tool_content(&reqs[1])).unwrap();
    assert_eq!(
        env,
        json!({"note": "ignored unknown parameter \"pattern\"", "result": result, "tool_success": true})
    );
}

#[test]
fn a_text_protocol_call_with_an_alias_and_an_unknown_parameter_runs_and_says_so() {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    fake.push(Reply::text(
        "<||SYSTEM.EXEC>file_read(filename=\"notes.txt\", depth=2)<SYSTEM.EXEC||>",
    ));
    fake.push(Reply::text("The code is PLUM-4417."));
    let out = run(
        h.path(),
        cwd.path(),
        &[
            "--provider",
            "llamacpp",
            "--base-url",
            &fake.base_url,
            "--tool-protocol",
            "text",
            "-p",
            "code?",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let last = reqs[1].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    let block = &last[last.find("<||SYSTEM.OUTPUT>").expect("an output block")..];
    assert!(
        block.starts_with(
            "<||SYSTEM.OUTPUT>\nnote: read parameter \"filename\" as \"path\"; ignored unknown parameter \"depth\"\n"
        ),
        "{block}"
    );
    assert!(block.contains("PLUM-4417"), "{block}");
}

#[test]
fn a_call_repeated_after_the_guard_refused_it_ends_the_turn_with_one_notice() {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    let args = r#"{"command":"echo run >> calls.log"}"#;
    for id in ["c1", "c2", "c3", "c4"] {
        fake.push(Reply::tool_calls(&[(id, "bash", args)]));
    }
    fake.push(Reply::text("never asked for"));
    let out = run(
        h.path(),
        cwd.path(),
        &["--base-url", &fake.base_url, "-p", "log it"],
    );
    let (stdout, stderr) = (s(&out.stdout), s(&out.stderr));
    // Two runs, one refusal answered, the repeat of the refusal ends the turn: 4 requests.
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 4, "{stdout}\n{stderr}");
    let log = std::fs::read_to_string(cwd.path().join("calls.log")).unwrap();
    assert_eq!(log.lines().count(), 2);
    let env: Value = serde_json::from_str(&last_tool_content(&reqs[3])).unwrap();
    assert_eq!(env["error_code"], "REPEATED_CALL");
    assert_eq!(stderr.matches("not run again").count(), 1, "{stderr}");
    assert_eq!(
        stderr
            .matches("The model repeated a call that was already refused as identical; the turn ends here.")
            .count(),
        1,
        "{stderr}"
    );
    assert!(!stdout.contains("never asked for"));
    // Like the `max_tool_turns` limit: the turn ended without an answer.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The stored history stays valid: the next turn goes on from it.
    let out = run(
        h.path(),
        cwd.path(),
        &["--base-url", &fake.base_url, "-c", "-p", "and?"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert!(s(&out.stdout).contains("never asked for"));
    let last = fake.requests().pop().unwrap();
    let roles: Vec<&str> = last
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles.iter().filter(|r| **r == "tool").count(), 4, "{roles:?}");
    assert_eq!(roles.last(), Some(&"user"));
}
