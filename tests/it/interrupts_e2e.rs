//! Interrupts are visible, live and restored (the real binary, the strict fake vendor):
//! a tool call cancelled by Ctrl-C shows what its command printed and a result line, in
//! plain mode and in the TUI; the stored result carries that output, the next request
//! sends it to the model in a valid history, and a resumed session shows the interrupted
//! mark where the live one did (also for a turn that was only text).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::tmux::{Tmux, wait_exit};
use crate::common::wait_for_file;
use serde_json::Value;

const COMMAND: &str = r#"{"command":"echo partial-XYZ; echo $$ > tool.pid; sleep 100"}"#;

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(home: &Path, args: &[&str]) -> Output {
    common::ikigai(home)
        .args(args)
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The only stored session's events, raw (`ikigai export --format jsonl`).
fn stored_events(home: &Path) -> (String, Vec<Value>) {
    let list = run(home, &["sessions", "--json"]);
    let v: Value = serde_json::from_slice(&list.stdout).unwrap();
    let sessions = v.as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{v}");
    let id = sessions[0]["id"].as_str().unwrap().to_string();
    let out = run(home, &["export", &id, "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let events = s(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (id, events)
}

/// The stored result of the interrupted call carries what the command printed, and the
/// next request (a resumed session) sends it to the model after its call.
fn check_stored_and_resumed(home: &Path, fake: &FakeProvider) {
    let (id, events) = stored_events(home);
    let md = s(&run(home, &["export", &id]).stdout);
    assert!(
        md.contains("interrupted before the tool finished\npartial-XYZ"),
        "the transcript shows the partial output:\n{md}"
    );
    let result = events
        .iter()
        .find(|e| e["kind"] == "tool_result")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(result["data"]["tool_call_id"], "call_part");
    assert_eq!(result["data"]["success"], false);
    let env: Value = serde_json::from_str(result["data"]["output"].as_str().unwrap()).unwrap();
    assert_eq!(env["error"], "interrupted before the tool finished");
    assert_eq!(env["partial_output"], "partial-XYZ\n");
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "marker" && e["content"] == "interrupted" || e["kind"] == "interrupted"),
        "an interrupted marker is stored: {events:?}"
    );

    fake.push(Reply::text("It printed partial-XYZ."));
    let out = run(
        home,
        &[
            "--continue",
            "-p",
            "what did it print?",
            "--base-url",
            &fake.base_url,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(s(&out.stdout), "It printed partial-XYZ.\n");
    let req = fake.requests().pop().unwrap();
    let msgs = req.messages();
    let tool = msgs
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("{msgs:?}"));
    assert_eq!(tool["tool_call_id"], "call_part");
    let env: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
    assert_eq!(env["tool_success"], false);
    assert_eq!(env["partial_output"], "partial-XYZ\n");
    assert_eq!(msgs.last().unwrap()["content"], "what did it print?");
}

#[test]
fn plain_mode_ctrl_c_shows_the_partial_output_and_keeps_it() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls_after(
        "Running it.",
        &[("call_part", "bash", COMMAND)],
    ));
    let child = common::ikigai(h)
        .args(["-p", "run it", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The shell wrote its pid after the echo: the output is in the pipe by now.
    let pid: i32 = wait_for_file(&h.join("tool.pid")).trim().parse().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = s(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}\n{}", s(&out.stderr));
    let call = stdout.find("● bash(").expect(&stdout);
    let line = stdout
        .find("  ⎿ ✗ interrupted before the tool finished\n    partial-XYZ\n")
        .expect(&stdout);
    assert!(call < line, "{stdout}");
    assert!(stdout.ends_with("partial-XYZ\n[interrupted]\n"), "{stdout:?}");
    assert!(
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |st| st
            .rsplit(')')
            .next()
            .unwrap()
            .trim_start()
            .starts_with('Z')),
        "the command was killed"
    );
    check_stored_and_resumed(h, &fake);
}

#[test]
fn tui_ctrl_c_shows_the_partial_output_live_and_restored() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls_after(
        "Running it.",
        &[("call_part", "bash", COMMAND)],
    ));
    {
        // The command writes a file: auto, so it runs without a question.
        let t = Tmux::start(h, &fake.base_url, "--approval auto");
        t.wait_text("Ask anything");
        t.type_text("run it");
        t.keys(&["Enter"]);
        wait_for_file(&h.join("tool.pid"));
        t.keys(&["C-c"]);
        let pane = t.wait_text("■ interrupted");
        let call = pane.find("bash(").expect(&pane);
        let out = pane.find("partial-XYZ").expect(&pane);
        let mark = pane.find("■ interrupted").unwrap();
        assert!(call < out && out < mark, "{pane}");
        t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
        t.keys(&["C-d"]);
        wait_exit(&t);
    }
    // Restored: the same partial output and mark, in the same order.
    {
        let t = Tmux::start(h, &fake.base_url, "--continue");
        let pane = t.wait_text("■ interrupted");
        let call = pane.find("bash(").expect(&pane);
        let out = pane.find("partial-XYZ").expect(&pane);
        let mark = pane.find("■ interrupted").unwrap();
        assert!(call < out && out < mark, "{pane}");
        assert_eq!(pane.matches("■ interrupted").count(), 1, "{pane}");
        t.keys(&["C-d"]);
        wait_exit(&t);
    }
    check_stored_and_resumed(h, &fake);
}

#[test]
fn a_text_only_interrupted_turn_is_marked_when_restored() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let fake = FakeProvider::start();
    let words: String = (1..=200).map(|i| format!("w{i} ")).collect();
    fake.push(Reply::text(&format!("HALF-ANSWER {words}")).paced(Duration::from_millis(50)));
    {
        let t = Tmux::start(h, &fake.base_url, "");
        t.wait_text("Ask anything");
        t.type_text("talk");
        t.keys(&["Enter"]);
        t.wait_text("w3 ");
        t.keys(&["C-c"]);
        t.wait_text("■ interrupted");
        t.wait_for("the turn to end", |s| !s.contains("Esc to interrupt"));
        t.keys(&["C-d"]);
        wait_exit(&t);
    }
    let t = Tmux::start(h, &fake.base_url, "--continue");
    let pane = t.wait_text("■ interrupted");
    let answer = pane.find("HALF-ANSWER").expect(&pane);
    let mark = pane.find("■ interrupted").unwrap();
    assert!(answer < mark, "{pane}");
    assert_eq!(pane.matches("■ interrupted").count(), 1, "{pane}");
    t.keys(&["C-d"]);
    wait_exit(&t);
}

#[test]
fn plain_mode_ctrl_c_marks_a_partial_answer_live_and_in_the_resumed_json() {
    use std::io::Read;
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let fake = FakeProvider::start();
    let words: String = (1..=400).map(|i| format!("w{i} ")).collect();
    fake.push(Reply::text(&format!("HALF-ANSWER {words}")).paced(Duration::from_millis(20)));
    let mut child = common::ikigai(h)
        .args(["-p", "talk", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read until part of the answer was printed, then Ctrl-C.
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !s(&seen).contains("w3 ") {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "ended early: {}", s(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    stdout.read_to_end(&mut seen).unwrap();
    let status = child.wait().unwrap();
    let out = s(&seen);
    assert_eq!(status.code(), Some(130), "{out}");
    assert!(out.starts_with("HALF-ANSWER w1 w2 w3 "), "{out}");
    assert!(out.ends_with("\n[interrupted]\n"), "{out:?}");
    assert!(!out.contains("w400"), "{out}");

    // Resumed with --json: the history and where its turn was interrupted.
    fake.push(Reply::text("Go on."));
    let out = run(
        h,
        &[
            "--continue",
            "--json",
            "-p",
            "go on",
            "--base-url",
            &fake.base_url,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let first: Value = serde_json::from_str(s(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "session_started", "{first}");
    let history = first["history"].as_array().unwrap();
    let n = history.iter().filter(|m| m["kind"] != "system").count();
    assert_eq!(n, 2, "the question and the partial answer: {first}");
    assert_eq!(
        first["interrupted"],
        serde_json::json!([history.len()]),
        "{first}"
    );
}
