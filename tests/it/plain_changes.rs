//! File changes in scripted mode (the real binary, -p, against the fake vendor): a
//! `file_edit` call is followed by its unified diff, a `file_write` by its path, size and
//! first lines, and a long argument is abbreviated in the call line.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::process::Stdio;

use crate::common::fake_provider::{FakeProvider, Reply};

#[test]
fn prompt_mode_shows_edits_as_diffs_and_writes_as_previews() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.rs"), "pub fn f() {}\npub fn keep() {}\n").unwrap();
    let fake = FakeProvider::start();
    let edit = serde_json::json!({
        "path": "lib.rs",
        "old_string": "pub fn f() {}\n",
        "new_string": "pub fn g() {}\n",
    });
    let content: String = (1..=300).map(|i| format!("row {i}\n")).collect();
    let write = serde_json::json!({"path": "big.txt", "content": content});
    fake.push(Reply::tool_calls(&[
        ("call_1", "file_edit", &edit.to_string()),
        ("call_2", "file_write", &write.to_string()),
    ]));
    fake.push(Reply::text("Done."));
    let out = common::ikigai(dir.path())
        .args(["-p", "change it", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("    lib.rs: +1 -1\n    -pub fn f() {}\n    +pub fn g() {}\n"),
        "the edit as a diff:\n{stdout}"
    );
    assert!(
        stdout.contains("    big.txt (300 lines, 2.2 KB)\n    row 1\n    row 2\n"),
        "the write as a preview:\n{stdout}"
    );
    assert!(stdout.contains("    … 292 more lines\n"), "{stdout}");
    assert!(!stdout.contains("row 300"), "not the whole file:\n{stdout}");
    assert!(
        stdout.contains("…(2.2 KB)\""),
        "long argument abbreviated:\n{stdout}"
    );
    assert!(!stdout.contains('\x1b'), "no colours when piped");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("lib.rs")).unwrap(),
        "pub fn g() {}\npub fn keep() {}\n"
    );
}

/// A change that fails (a `file_edit` on a folder) shows no diff: it changed nothing.
#[test]
fn a_failed_edit_shows_no_diff() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("calc")).unwrap();
    let fake = FakeProvider::start();
    let edit = serde_json::json!({"path": "calc", "old_string": "a", "new_string": "b"});
    fake.push(Reply::tool_calls(&[("call_1", "file_edit", &edit.to_string())]));
    fake.push(Reply::text("It is a folder."));
    let out = common::ikigai(dir.path())
        .args(["-p", "edit calc", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(stdout.contains("⎿ ✗"), "the edit failed:\n{stdout}");
    assert!(!stdout.contains("calc: +"), "no diff header:\n{stdout}");
    assert!(!stdout.contains("    -a\n"), "no diff:\n{stdout}");
}

/// An error result is printed once in plain mode, for a terminal reader and a pipe alike
/// (stdout and stderr together), natively and through the text protocol.
#[test]
fn an_error_result_is_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("calc.py"), "print(1)\n").unwrap();
    let read = serde_json::json!({"path": "calc.py", "offset": 1000000});
    for text in [false, true] {
        let fake = FakeProvider::start();
        if text {
            fake.push(Reply::text(
                "<||SYSTEM.EXEC>file_read(path=\"calc.py\", offset=1000000)",
            ));
        } else {
            fake.push(Reply::tool_calls(&[("call_1", "file_read", &read.to_string())]));
        }
        fake.push(Reply::text("It is short."));
        let mut cmd = common::ikigai(dir.path());
        cmd.args(["-p", "read calc", "--base-url", &fake.base_url]);
        if text {
            cmd.args(["--tool-protocol", "text"]);
        }
        let out = cmd
            .env("OPENAI_API_KEY", "k")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{all}");
        assert_eq!(all.matches("past the end").count(), 1, "text={text}:\n{all}");
    }
}
