//! Live output of a running command with the real binary and the fake vendor: the command
//! prints lines, then waits for a file the test creates. While it waits, its lines are
//! already on screen in the TUI (tmux) and in plain mode on a terminal's stderr, and
//! `--json` has emitted them as `tool_output_delta` events; the result the model gets is
//! the whole output as before. A flood of output comes in bounded deltas.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Instant;

use serde_json::{Value, json};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::tmux::Tmux;

/// Prints three lines, waits for `go` in the working directory, prints one more.
const WAITS: &str = "for i in 1 2 3; do echo line$i; done; \
    while [ ! -e go ]; do sleep 0.05; done; echo after";

fn bash(cmd: &str) -> String {
    json!({ "command": cmd }).to_string()
}

fn spawn_json(home: &Path, base_url: &str) -> (Child, Receiver<Value>) {
    spawn_json_key(home, base_url, "k")
}

fn spawn_json_key(home: &Path, base_url: &str, key: &str) -> (Child, Receiver<Value>) {
    let mut child = common::ikigai(home)
        .args(["--json", "-p", "go", "--base-url", base_url])
        .env("OPENAI_API_KEY", key)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

/// Events until `stop` holds for those so far, 40 s at most.
fn events_until(rx: &Receiver<Value>, got: &mut Vec<Value>, stop: impl Fn(&[Value]) -> bool) {
    let deadline = Instant::now() + common::tmux::DEADLINE;
    while !stop(got) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(e) => got.push(e),
            Err(_) => panic!("the events never came; got {got:#?}"),
        }
    }
}

fn delta_text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "tool_output_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect()
}

fn has(events: &[Value], kind: &str) -> bool {
    events.iter().any(|e| e["type"] == kind)
}

#[test]
fn json_emits_tool_output_delta_while_the_command_runs_and_the_result_is_unchanged() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("c1", "bash", &bash(WAITS))]));
    fake.push(Reply::text("Done."));
    let (child, rx) = spawn_json(home.path(), &fake.base_url);
    let mut events = Vec::new();
    events_until(&rx, &mut events, |e| delta_text(e).contains("line3\n"));
    assert!(
        !has(&events, "tool_call_finished"),
        "the lines came while the command still ran: {events:#?}"
    );
    assert_eq!(delta_text(&events), "line1\nline2\nline3\n");
    let delta = events.iter().find(|e| e["type"] == "tool_output_delta").unwrap();
    assert_eq!(delta["id"], "c1");
    std::fs::write(home.path().join("go"), "").unwrap();
    events.extend(rx.iter());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(delta_text(&events), "line1\nline2\nline3\nafter\n");
    let at = |kind: &str| events.iter().position(|e| e["type"] == kind).unwrap();
    assert!(at("tool_output_delta") < at("tool_call_finished"));
    // What the model gets is the whole output, as without live output.
    let reqs = fake.requests();
    let tool = reqs[1]
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    let env: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
    assert_eq!(env["result"]["output"], "line1\nline2\nline3\nafter\n");
    assert_eq!(env["result"]["exit_code"], 0);
    // stderr is not a terminal here: nothing of the output is echoed on it.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("line1"), "{err}");
}

#[test]
fn a_flood_of_output_comes_in_bounded_deltas_and_the_result_stays_capped() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    // About 2 MB, printed as fast as the pipe takes it.
    fake.push(Reply::tool_calls(&[("c1", "bash", &bash("seq 1 300000"))]));
    fake.push(Reply::text("Done."));
    let (mut child, rx) = spawn_json(home.path(), &fake.base_url);
    let events: Vec<Value> = rx.iter().collect();
    assert!(child.wait().unwrap().success());
    let deltas: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_output_delta")
        .collect();
    assert!(!deltas.is_empty());
    let total: usize = (1..=300000).map(|n: u32| n.to_string().len() + 1).sum();
    let mut accounted = 0;
    for d in &deltas {
        let text = d["text"].as_str().unwrap();
        assert!(text.len() <= 8 * 1024, "a delta of {} bytes", text.len());
        accounted += text.len() + d["skipped"].as_u64().unwrap_or(0) as usize;
    }
    assert_eq!(accounted, total, "every byte is shown or counted as skipped");
    assert!(
        deltas.iter().any(|d| d["skipped"].as_u64().unwrap_or(0) > 0),
        "a flood skips"
    );
    assert!(delta_text(&events).ends_with("299999\n300000\n"));
    let finished = events.iter().find(|e| e["type"] == "tool_call_finished").unwrap();
    assert!(
        finished["output"].to_string().contains("output truncated"),
        "the stored result is capped as before"
    );
}

#[test]
fn the_tui_shows_the_lines_in_the_tool_block_before_the_command_ends() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("c1", "bash", &bash(WAITS))]));
    fake.push(Reply::text("All done."));
    let t = Tmux::start(home.path(), &fake.base_url, "--approval auto");
    t.wait_text("Ask anything");
    t.type_text("go");
    t.keys(&["Enter"]);
    let pane = t.wait_for("the live lines", |s| s.contains("│ line3"));
    assert!(pane.contains("│ line1") && pane.contains("│ line2"), "{pane}");
    assert!(pane.contains("Running bash"), "still running:\n{pane}");
    assert!(!pane.contains("All done."), "{pane}");
    std::fs::write(home.path().join("go"), "").unwrap();
    let pane = t.wait_text("All done.");
    assert!(pane.contains("after"), "{pane}");
    assert!(
        !pane.contains("│ line"),
        "the live window is gone once the call ended:\n{pane}"
    );
}

#[test]
fn plain_mode_on_a_terminal_shows_the_lines_on_stderr_before_the_command_ends() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("c1", "bash", &bash(WAITS))]));
    fake.push(Reply::text("All done."));
    // stdout to a file, so what the pane shows is stderr (a terminal) alone.
    let t = Tmux::start(home.path(), &fake.base_url, "-p go > out.txt");
    let pane = t.wait_text("    line3");
    assert!(pane.contains("    line1"), "{pane}");
    assert!(!pane.contains("EXITED"), "still running:\n{pane}");
    std::fs::write(home.path().join("go"), "").unwrap();
    t.wait_text("EXITED:0");
    let out = std::fs::read_to_string(home.path().join("out.txt")).unwrap();
    assert!(out.contains("All done."), "{out}");
}

#[test]
fn an_external_tool_shows_its_stderr_live_and_its_stdout_stays_its_result() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".ikigai/tools");
    std::fs::create_dir_all(&dir).unwrap();
    let tool = dir.join("slow_job");
    let schema = json!({"name": "slow_job", "description": "A job that reports progress.",
                        "parameters": {}});
    std::fs::write(
        &tool,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --schema ]; then echo '{schema}'; exit 0; fi\n\
             echo 'step 1 of 2' >&2\nwhile [ ! -e go ]; do sleep 0.05; done\n\
             echo 'step 2 of 2' >&2\necho '{{\"output\": \"finished\"}}'\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("c1", "slow_job", "{}")]));
    fake.push(Reply::text("Done."));
    let (child, rx) = spawn_json(home.path(), &fake.base_url);
    let mut events = Vec::new();
    events_until(&rx, &mut events, |e| delta_text(e).contains("step 1 of 2\n"));
    assert!(!has(&events, "tool_call_finished"), "{events:#?}");
    std::fs::write(home.path().join("go"), "").unwrap();
    events.extend(rx.iter());
    assert!(child.wait_with_output().unwrap().status.success());
    assert_eq!(delta_text(&events), "step 1 of 2\nstep 2 of 2\n");
    let finished = events.iter().find(|e| e["type"] == "tool_call_finished").unwrap();
    assert_eq!(finished["success"], true, "{finished}");
    let output = finished["output"].to_string();
    assert!(
        output.contains("finished") && !output.contains("step 1"),
        "{output}"
    );
}

#[test]
fn a_key_printed_by_a_command_is_redacted_in_the_live_output_even_across_deltas() {
    let home = tempfile::tempdir().unwrap();
    let key = "sk-live-test-0123456789abcdef";
    std::fs::write(home.path().join("leak.txt"), key).unwrap();
    // The key is printed in two pieces with a pause between (two reads, two deltas).
    let cmd = "head -c 12 leak.txt; sleep 0.3; tail -c +13 leak.txt; echo; echo end";
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("c1", "bash", &bash(cmd))]));
    fake.push(Reply::text("Done."));
    let (child, rx) = spawn_json_key(home.path(), &fake.base_url, key);
    let events: Vec<Value> = rx.iter().collect();
    assert!(child.wait_with_output().unwrap().status.success());
    let shown = delta_text(&events);
    assert_eq!(shown, "[redacted]\nend\n", "{events:#?}");
    let all: String = events.iter().map(Value::to_string).collect();
    assert!(!all.contains("0123456789abcdef"), "{all}");
}
