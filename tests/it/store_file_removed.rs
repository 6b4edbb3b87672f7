//! The SQLite file removed by a tool the model ran (the real binary, `-p`): every run
//! warns once, naming the file, and every event of the session survives in a file created
//! again at the same path. Run 20 times each way, since the removal races the writer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Stdio;

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::history;

const RUNS: usize = 20;

/// One `-p` turn whose tool runs `command` (it removes the database), then an answer.
/// Returns what the run wrote on stderr after checking the stored session.
fn one_run(home: &Path, command: &str) -> String {
    let db = home.join(".local/share/ikigai/ikigai.db");
    let url = format!("sqlite://{}", db.display());
    let fake = FakeProvider::start();
    let args = serde_json::json!({ "command": command }).to_string();
    fake.push(Reply::tool_calls(&[("call_1", "bash", &args)]));
    fake.push(Reply::text("still here"));
    let out = common::ikigai(home)
        .args(["--base-url", &fake.base_url, "-p", "keep everything"])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        String::from_utf8_lossy(&out.stdout).ends_with("still here\n"),
        "{err}"
    );
    assert!(db.is_file(), "the file was not created again: {err}");
    // The session of this run (an earlier one went with the file the tool removed).
    let sessions = history::sessions(&url);
    assert_eq!(sessions.len(), 1, "{err}");
    let m = sessions[0].messages();
    assert_eq!(m.len(), 4, "{m:?}\n{err}");
    assert_eq!(m[0], "user:keep everything");
    assert!(m[1].starts_with("tool_call:"), "{m:?}");
    assert!(m[2].starts_with("tool_result:"), "{m:?}");
    assert_eq!(m[3], "assistant:still here", "{err}");
    assert!(history::violations(&sessions[0]).is_empty());
    // The usage markers of both responses are kept too.
    let usage = sessions[0].events.iter().filter(|e| e.kind == "usage").count();
    assert_eq!(usage, 2, "{:?}", sessions[0].events);
    err
}

/// `RUNS` runs of `command`, each in a fresh home; `earlier`: a session is stored there
/// first, so the file exists before the run (else the run creates it, and the removal
/// may race the opening).
fn check(command: &str, earlier: bool) {
    for run in 0..RUNS {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let db = h.join(".local/share/ikigai/ikigai.db");
        if earlier {
            let fake = FakeProvider::start();
            fake.push(Reply::text("hello"));
            let out = common::ikigai(h)
                .args(["--base-url", &fake.base_url, "-p", "hi"])
                .env("OPENAI_API_KEY", "k")
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0));
            assert!(db.is_file());
        }
        let err = one_run(h, &command.replace("DB", &db.display().to_string()));
        let warnings = err.matches("was deleted or replaced").count();
        assert_eq!(warnings, 1, "run {run}: one warning, naming the file: {err}");
        assert!(err.contains(&db.display().to_string()), "run {run}: {err}");
    }
}

#[test]
fn a_tool_removing_the_database_file_loses_nothing() {
    check("rm -f 'DB'", true);
}

#[test]
fn a_tool_removing_a_new_database_file_loses_nothing() {
    check("rm -f 'DB'", false);
}

#[test]
fn a_tool_removing_the_database_and_its_journal_loses_nothing() {
    check("rm -f 'DB' 'DB-wal' 'DB-shm'", true);
}

#[test]
fn a_tool_replacing_the_database_file_loses_nothing() {
    check("rm -f 'DB' && : > 'DB'", true);
}
