//! Sessions end to end with the real binary and the default SQLite store: kill -9 while a
//! tool runs, then `--continue` / `--resume`; the next request's history is complete and
//! valid, and `ikigai sessions` lists what happened.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::fake_provider::{FakeProvider, Reply};
use serde_json::{Value, json};

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("run ikigai")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The MSGS column of the first session in `ikigai sessions` output (right-aligned under
/// its header).
fn messages_in_first_row(listing: &str) -> Option<u32> {
    let mut lines = listing.lines();
    let header = lines.next()?;
    let row = lines.next()?;
    let end = header.find("MSGS")? + "MSGS".len();
    let start = header[..end - 4].rfind("  ").map_or(0, |i| i + 2);
    row.get(start..end)?.trim().parse().ok()
}

#[test]
fn killed_mid_tool_then_continued_with_a_complete_valid_history() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls_after(
        "Running it.",
        &[(
            "call_slow",
            "bash",
            r#"{"command":"echo $$ > tool.pid; sleep 60"}"#,
        )],
    ));
    let mut child = common::ikigai(h)
        .args(["-p", "run the slow thing", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    // Wait until the tool runs and the store holds the user message and the tool call.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(
            Instant::now() < deadline,
            "the tool never started or nothing was stored"
        );
        let listed = text(&run(common::ikigai(h).arg("sessions")).stdout);
        let stored_call = messages_in_first_row(&listed).is_some_and(|n| n >= 3);
        let pid_written =
            std::fs::read_to_string(h.join("tool.pid")).is_ok_and(|p| p.trim().parse::<i32>().is_ok());
        if pid_written && stored_call {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "{status:?}"
    );
    // The orphaned tool is no longer ours to wait for; end it so the test leaves nothing.
    let pid: i32 = std::fs::read_to_string(h.join("tool.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(pid > 1, "a real process group id: {pid}");
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);

    let out = run(common::ikigai(h).arg("sessions"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    assert!(listed.contains("run the slow thing"), "{listed}");

    fake.push(Reply::text("It was interrupted."));
    let out = run(common::ikigai(h)
        .args(["--continue", "-p", "what happened?", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "It was interrupted.\n");

    let req = fake.requests().pop().unwrap();
    let msgs: Vec<Value> = req.messages()[1..].to_vec();
    assert_eq!(msgs[0], json!({"role": "user", "content": "run the slow thing"}));
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["content"], "Running it.");
    assert_eq!(msgs[1]["tool_calls"][0]["id"], "call_slow");
    assert_eq!(msgs[2]["role"], "tool");
    assert_eq!(msgs[2]["tool_call_id"], "call_slow");
    let env: Value = serde_json::from_str(msgs[2]["content"].as_str().unwrap()).unwrap();
    assert_eq!(env["tool_success"], false);
    assert_eq!(env["error"], "interrupted before the tool finished");
    assert_eq!(msgs[3], json!({"role": "user", "content": "what happened?"}));
    assert_eq!(msgs.len(), 4);

    // The repair was stored: resuming by id prefix gives the same history plus the new turn.
    let out = run(common::ikigai(h).arg("sessions"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    let row = listed.lines().nth(1).unwrap().to_string();
    let prefix: String = row.split_whitespace().next().unwrap().chars().take(6).collect();
    assert_eq!(listed.lines().count(), 2, "one session, continued: {listed}");
    fake.push(Reply::text("Still here."));
    let out = run(common::ikigai(h)
        .args([
            "--resume",
            &prefix,
            "-p",
            "and now?",
            "--base-url",
            &fake.base_url,
        ])
        .env("OPENAI_API_KEY", "k"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let req = fake.requests().pop().unwrap();
    let msgs = req.messages();
    let tool_results = msgs.iter().filter(|m| m["role"] == "tool").count();
    assert_eq!(tool_results, 1, "the repair is not duplicated");
    assert_eq!(
        msgs[msgs.len() - 2],
        json!({"role": "assistant", "content": "It was interrupted."})
    );
    assert_eq!(
        msgs[msgs.len() - 1],
        json!({"role": "user", "content": "and now?"})
    );
}

#[test]
fn resume_errors_are_clear() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let out = run(common::ikigai(home.path())
        .args(["--resume", "deadbeef", "-p", "x", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k"));
    assert_eq!(out.status.code(), Some(2), "an unknown id is the user's to fix");
    assert_eq!(
        text(&out.stderr),
        "ikigai: no stored session matches `deadbeef`; `ikigai sessions` lists all\n"
    );
    let out = run(common::ikigai(home.path())
        .args(["--continue", "-p", "x", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k"));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "ikigai: no stored session in this folder; `ikigai sessions` lists all\n"
    );
    assert!(
        fake.requests().is_empty(),
        "nothing is sent when the resume fails"
    );
}
