//! A compaction says so in every front end: `Context compacted: N → M tokens` on stderr in
//! plain mode, whether asked for (`/compact` on piped stdin) or automatic (`-c -p` past
//! `auto_compact_at`), as the TUI shows it. The real binary against the fake vendor.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};

fn run(home: &Path, fake: &FakeProvider, args: &[&str], stdin: &str) -> Output {
    let mut child = common::ikigai(home)
        .args(["--base-url", &fake.base_url])
        .args(args)
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// The one compaction line of `stderr`, checked for its shape.
fn compacted_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("Context compacted:"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    let line = lines[0];
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert!(line.contains(" → ") && line.contains(" tokens"), "{line}");
    assert_eq!(numbers.len(), 2, "{line}");
    assert!(numbers[1] < numbers[0], "{line}");
    line.to_string()
}

#[test]
fn compact_on_piped_stdin_prints_the_notice() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let long = "word ".repeat(400);
    fake.push(Reply::text(&format!("first answer {long}")));
    fake.push(Reply::text("second answer"));
    fake.push(Reply::text("The summary of it all."));
    let out = run(home.path(), &fake, &[], "first\nsecond\n/compact\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let line = compacted_line(&stderr);
    assert!(line.starts_with("ikigai: Context compacted: "), "{line}");
    assert_eq!(fake.requests().len(), 3, "the third request is the summary");
}

#[test]
fn automatic_compaction_in_a_prompt_run_prints_the_notice() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let long = "word ".repeat(4000);
    fake.push(Reply::text(&format!("first answer {long}")));
    let out = run(home.path(), &fake, &["-p", "first"], "");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Past a tiny `auto_compact_at`, the continued session is compacted before its request.
    let config = home.path().join(".config/ikigai");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "auto_compact_at = 0.01\n").unwrap();
    fake.push(Reply::text("The summary of it all."));
    fake.push(Reply::text("second answer"));
    let out = run(home.path(), &fake, &["-c", "-p", "second"], "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.ends_with("second answer\n"), "{stdout}\n{stderr}");
    compacted_line(&stderr);
}
