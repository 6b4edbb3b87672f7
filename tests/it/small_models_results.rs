//! A small local model that writes a tool's result itself (issue 38 §2), from the outside:
//! the real binary against the scripted Chat Completions vendor with the `llamacpp`
//! preset. The result tags go out as stop sequences; a server that ignores them still
//! never gets a made-up result shown as the answer; a reply left with no words is asked
//! for once more, with the correction, and only once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::common::fake_provider::{FakeProvider, Recorded, Reply};
use serde_json::Value;

use common::{run_in as run, text as s};

/// A project with `notes.txt`, and the home folder.
fn project() -> (tempfile::TempDir, tempfile::TempDir) {
    let (h, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(cwd.path().join("notes.txt"), "deploy code PLUM-4417\n").unwrap();
    (h, cwd)
}

fn ask(fake: &FakeProvider, h: &tempfile::TempDir, cwd: &tempfile::TempDir) -> (String, String) {
    let out = run(
        h.path(),
        cwd.path(),
        &[
            "--provider",
            "llamacpp",
            "--base-url",
            &fake.base_url,
            "-p",
            "What is the deploy code?",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    (s(&out.stdout), s(&out.stderr))
}

/// The chat requests the fake received (not a window probe or a model list).
fn chats(fake: &FakeProvider) -> Vec<Recorded> {
    fake.requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .collect()
}

fn last_user(req: &Recorded) -> String {
    let m = req.messages().iter().rev().find(|m| m["role"] == "user").unwrap();
    m["content"].as_str().unwrap().to_string()
}

#[test]
fn the_result_tags_are_stop_sequences_and_a_made_up_result_is_never_the_answer() {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    // What the 1.5B model wrote with the primer on, from a server that did not stop:
    // a result of its own, no call.
    fake.push(Reply::text(
        "<tool_response>\n{\"result\": {\"output\": \"deploy code FAKE-0000\"}}\n</tool_response>",
    ));
    fake.push(Reply::text("The deploy code is PLUM-4417."));
    let (stdout, stderr) = ask(&fake, &h, &cwd);
    let reqs = chats(&fake);
    let stop: Vec<&str> = reqs[0].body["stop"]
        .as_array()
        .expect("stop sequences sent")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(stop.contains(&"<tool_response>"), "{stop:?}");
    // Nothing of the made-up result is shown; the model was told once and answered.
    assert!(
        !stdout.contains("FAKE-0000") && !stderr.contains("FAKE-0000"),
        "{stdout}\n{stderr}"
    );
    assert_eq!(reqs.len(), 2, "one more request, with the correction");
    assert!(
        last_user(&reqs[1]).contains("never write one yourself"),
        "{:?}",
        reqs[1].messages()
    );
    assert!(stdout.contains("The deploy code is PLUM-4417."), "{stdout}");
    // The correction is not stored: the next turn's request carries no trace of it.
    fake.push(Reply::text("ok"));
    let out = run(
        h.path(),
        cwd.path(),
        &[
            "--provider",
            "llamacpp",
            "--base-url",
            &fake.base_url,
            "-c",
            "-p",
            "thanks",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let reqs = chats(&fake);
    let body = reqs.last().unwrap().body.to_string();
    assert!(
        !body.contains("never write one yourself") && !body.contains("FAKE-0000"),
        "{body}"
    );
}

/// The recorded stream (`local-06`): the 1.5B model, asked what version Cargo.toml
/// declares, wrote a result of its own ("cargo version 1.64.0"; the file says 0.50.0).
/// Replayed as the server sent it (no stop honoured), nothing of it is shown or trusted.
#[test]
fn the_recorded_made_up_result_of_the_1_5b_model_is_never_shown_or_trusted() {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    fake.push(Reply::fixture(
        "local-06-llamacpp-server-qwen-1.5b-writes-a-tool-response.sse",
    ));
    fake.push(Reply::text("I have not read the file yet."));
    let (stdout, stderr) = ask(&fake, &h, &cwd);
    assert!(
        !stdout.contains("1.64.0") && !stderr.contains("1.64.0"),
        "{stdout}\n{stderr}"
    );
    let reqs = chats(&fake);
    assert_eq!(reqs.len(), 2, "asked once more, with the correction");
    assert!(last_user(&reqs[1]).contains("never write one yourself"));
    assert!(stdout.contains("I have not read the file yet."), "{stdout}");
}

#[test]
fn a_call_written_as_text_before_a_made_up_result_runs_and_the_made_up_part_is_dropped() {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    fake.push(Reply::text(
        "<tool_call>\n{\"name\": \"file_read\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>\n\
         <tool_response>\n{\"result\": \"FAKE-0000\"}\n</tool_response>\nThe code is FAKE-0000.",
    ));
    fake.push(Reply::text("The deploy code is PLUM-4417."));
    let (stdout, stderr) = ask(&fake, &h, &cwd);
    let reqs = chats(&fake);
    assert_eq!(reqs.len(), 2);
    let tool = reqs[1]
        .messages()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .expect("the call ran");
    assert!(tool["content"].as_str().unwrap().contains("PLUM-4417"), "{tool}");
    assert!(
        !stdout.contains("FAKE-0000") && !stderr.contains("FAKE-0000"),
        "{stdout}\n{stderr}"
    );
    assert!(!reqs[1].body.to_string().contains("FAKE-0000"));
}

/// The request that asks once more starts inside a response, where the agent's own
/// retry cannot reach: a server that fails it in a way worth retrying (busy; a
/// kept-alive connection it closed, seen with llama-server: "connection closed before
/// message completed" ended the turn with no answer) gets it again after a pause.
#[test]
fn the_request_asking_once_more_is_retried_when_the_server_fails_it_for_a_moment() {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    fake.push(Reply::text(""));
    fake.push(Reply::status(503, "{\"error\":{\"message\":\"busy\"}}"));
    fake.push(Reply::text("The deploy code is PLUM-4417."));
    let (stdout, stderr) = ask(&fake, &h, &cwd);
    assert!(
        stdout.contains("The deploy code is PLUM-4417."),
        "{stdout}\n{stderr}"
    );
    let reqs = chats(&fake);
    assert_eq!(
        reqs.len(),
        3,
        "the first, the one asking once more, and its retry"
    );
    assert_eq!(reqs[1].body, reqs[2].body, "the same request again");
}

#[test]
fn a_reply_with_no_words_is_asked_for_once_and_only_once() {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    // An echoed result (cut) and then nothing at all: one correction, no loop.
    fake.push(Reply::text(
        "<tool_response>{\"result\": \"PLUM-4417\"}</tool_response>",
    ));
    fake.push(Reply::text(""));
    fake.push(Reply::text("never asked for"));
    let (stdout, _) = ask(&fake, &h, &cwd);
    assert_eq!(chats(&fake).len(), 2);
    assert!(!stdout.contains("never asked for"));
    // Where recovery of text calls is off (a vendor's server, not a local one), no stop
    // sequences and no second request.
    let fake = FakeProvider::start();
    fake.push(Reply::text(""));
    fake.push(Reply::text("never asked for"));
    let cfg = h.path().join("vendor.toml");
    std::fs::write(&cfg, "[providers.openai]\nrecover_text_tool_calls = false\n").unwrap();
    let out = run(
        h.path(),
        cwd.path(),
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--provider",
            "openai",
            "--base-url",
            &fake.base_url,
            "-p",
            "hi",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let reqs = chats(&fake);
    assert_eq!(
        reqs.len(),
        1,
        "{:#?}\n{}",
        reqs.iter()
            .map(|r| (&r.path, r.body.to_string()))
            .collect::<Vec<_>>(),
        s(&out.stderr)
    );
    assert!(
        reqs[0]
            .body
            .get("stop")
            .is_none_or(|v| v.as_array().is_some_and(|a| a.is_empty()))
    );
}

#[test]
fn in_the_text_protocol_a_reply_with_no_words_after_a_commands_output_is_asked_for_once() {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    // What the 1.5B model did in the coding tasks: one command, then nothing.
    fake.push(Reply::text("<||SYSTEM.EXEC>cat notes.txt"));
    fake.push(Reply::text(""));
    fake.push(Reply::text("The deploy code is PLUM-4417."));
    fake.push(Reply::text("never asked for"));
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
    let (stdout, stderr) = (s(&out.stdout), s(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let reqs = chats(&fake);
    assert_eq!(reqs.len(), 3, "{stdout}\n{stderr}");
    // The correction follows the conversation as it was sent, the output block included.
    let msgs = reqs[2].messages();
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"].as_str().unwrap().contains("run the next command"),
        "{msgs:?}"
    );
    assert!(
        msgs.iter()
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains("PLUM-4417")))
    );
    assert!(stdout.contains("The deploy code is PLUM-4417."), "{stdout}");
    assert!(!stdout.contains("never asked for"));
}
