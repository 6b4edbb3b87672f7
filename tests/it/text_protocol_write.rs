//! The text protocol's whole-file form (issue 38 §3) from the outside: the real binary
//! against a fake llama.cpp server whose model writes `write PATH` and the file's lines
//! in one exec tag (the stop sequence eating its closing tag, as a real server does),
//! or a heredoc. The file is written as an ordinary `file_write` call, stored and sent
//! back in the same form; a form that is not whole is never run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::path::Path;

use crate::common::fake_provider::{FakeProvider, Reply};
use serde_json::Value;

use common::{run_in as run, text as s};

fn run_text(h: &Path, cwd: &Path, url: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec![
        "--provider",
        "llamacpp",
        "--base-url",
        url,
        "--tool-protocol",
        "text",
    ];
    all.extend_from_slice(args);
    run(h, cwd, &all)
}

fn contents(req: &Value) -> String {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

const FILE: &str = "def add(a, b):\n    return a + b  # \"quotes\" and 'quotes' and $HOME\n";

#[test]
fn the_whole_file_form_writes_the_file_as_a_file_write_call_and_is_sent_back_as_written() {
    let fake = FakeProvider::start();
    fake.push(Reply::text(&format!(
        "I'll write it.\n<||SYSTEM.EXEC>write calc.py\n```python\n{FILE}```\n"
    )));
    fake.push(Reply::text("Done: calc.py defines add."));
    let (h, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = run_text(
        h.path(),
        cwd.path(),
        &fake.base_url,
        &["--approval", "auto", "--json", "-p", "write add"],
    );
    let (stdout, stderr) = (s(&out.stdout), s(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // Written exactly, no shell in between (quotes and $HOME stay as written).
    assert_eq!(std::fs::read_to_string(cwd.path().join("calc.py")).unwrap(), FILE);
    // An ordinary file_write call in the events.
    let call = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "tool_call_started")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(call["name"], "file_write", "{call}");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    // The prompt teaches the form; the history shows the call in it, and its result.
    let system = reqs[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains("write its path after `write`, then the whole file (no quoting needed)"),
        "{system}"
    );
    // ...and the example exchange shows it in use.
    let example = reqs[0].body["messages"][2]["content"].as_str().unwrap();
    assert!(
        example.contains("<||SYSTEM.EXEC>write calc.py\ndef add(a, b):\n    return a + b<SYSTEM.EXEC||>"),
        "{example}"
    );
    let sent = contents(&reqs[1].body);
    assert!(
        sent.contains(&format!("<||SYSTEM.EXEC>write calc.py\n{}", FILE.trim_end())),
        "{sent}"
    );
    assert!(sent.contains("Wrote"), "{sent}");
}

#[test]
fn a_closed_heredoc_runs_and_a_form_that_is_not_whole_does_not() {
    let fake = FakeProvider::start();
    fake.push(Reply::text(
        "<||SYSTEM.EXEC>cat > hi.txt <<'EOF'\nsay \"hi\" to $USER\nEOF\n",
    ));
    fake.push(Reply::text("Written."));
    let (h, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = run_text(
        h.path(),
        cwd.path(),
        &fake.base_url,
        &["--approval", "auto", "-p", "go"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("hi.txt")).unwrap(),
        "say \"hi\" to $USER\n"
    );

    // A heredoc never ended, then prose: shown as text with a notice, never run.
    let fake = FakeProvider::start();
    fake.push(Reply::text(
        "<||SYSTEM.EXEC>cat > no.txt <<'EOF'\nhalf a file\nand then I explain",
    ));
    let out = run_text(
        h.path(),
        cwd.path(),
        &fake.base_url,
        &["--approval", "auto", "-p", "go"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert!(!cwd.path().join("no.txt").exists());
    assert_eq!(fake.requests().len(), 1);
}
