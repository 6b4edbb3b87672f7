//! Secrets from the outside: the configured key's value (and the value without its `sk-`
//! prefix) never appears in stdout, stderr, `--json`, the database files or any later
//! request; URL passwords are hidden wherever a URL is shown.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common::fake_provider::{FakeProvider, Reply};
use serde_json::json;

const KEY: &str = "sk-SECRET1234567";
const BARE: &str = "SECRET1234567";

fn run(home: &Path, args: &[&str], stdin: &str) -> Output {
    let mut cmd = common::ikigai(home);
    cmd.args(args)
        .env("OPENAI_API_KEY", KEY)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A streamed answer whose text arrives in exactly these pieces.
fn text_in_pieces(pieces: &[&str]) -> Reply {
    let mut ev: Vec<String> = pieces
        .iter()
        .map(|p| {
            let c = json!({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
                "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": null}]});
            format!("data: {c}\n\n")
        })
        .collect();
    let end = json!({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    ev.push(format!("data: {end}\n\n"));
    ev.push("data: [DONE]\n\n".into());
    Reply::events(ev)
}

fn assert_clean(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    assert!(!text.contains(BARE), "the key is in {what}: {text}");
}

#[test]
fn the_key_value_never_leaves_through_output_database_or_requests() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    std::fs::write(h.path().join("notes.txt"), format!("deploy token {KEY} here\n")).unwrap();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        r#"{"command":"cat notes.txt; echo \"env:$OPENAI_API_KEY\""}"#,
    )]));
    // The model repeats the key, split across stream chunks.
    fake.push(text_in_pieces(&[
        "The token is sk-SEC",
        "RET12",
        "34567 and ",
        "raw:SECRET1234567.",
    ]));
    let out = run(
        h.path(),
        &["-p", &format!("my key is {KEY}"), "--base-url", &fake.base_url],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_clean("stdout", &out.stdout);
    assert_clean("stderr", &out.stderr);
    let stdout = s(&out.stdout);
    assert!(stdout.contains("deploy token [redacted] here"), "{stdout}");
    assert!(
        stdout.contains("The token is [redacted] and raw:[redacted]."),
        "{stdout}"
    );

    // The vendor echoes the key in an error body; the next request carries no key.
    fake.push(Reply::status(
        400,
        &format!(r#"{{"error":{{"message":"bad request raw:{BARE}"}}}}"#),
    ));
    let out = run(
        h.path(),
        &["--json", "-c", "-p", "again", "--base-url", &fake.base_url],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_clean("--json stdout", &out.stdout);
    assert_clean("stderr", &out.stderr);
    assert!(s(&out.stdout).contains("raw:[redacted]"), "{}", s(&out.stdout));

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    for (i, r) in reqs.iter().enumerate() {
        assert_clean(&format!("request {i}"), r.body.to_string().as_bytes());
    }
    let data = h.path().join(".local/share/ikigai");
    // Checkpoints keep the project's files byte for byte (undo puts them back), notes.txt
    // and its key included — the README's one exception; they must be private instead.
    let checkpoints = data.join("checkpoints");
    let mode = |p: &std::path::Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode(&checkpoints), 0o700, "checkpoints are private");
    let mut files = 0;
    let mut dirs = vec![data.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p == checkpoints {
                continue;
            }
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            assert_clean(&p.display().to_string(), &std::fs::read(&p).unwrap());
            files += 1;
        }
    }
    assert!(files >= 1, "the database is in {}", data.display());
    let listed = common::ikigai(h.path()).arg("sessions").output().unwrap();
    assert_clean("ikigai sessions", &listed.stdout);
}

#[test]
fn url_passwords_are_hidden_in_config_retries_and_errors() {
    let h = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(h.path().join(".config/ikigai")).unwrap();
    std::fs::write(
        h.path().join(".config/ikigai/config.toml"),
        "max_retries = 1\nretry_base_delay_ms = 1\nconnect_timeout_secs = 2\n",
    )
    .unwrap();
    let base = "http://user:basepw12345@127.0.0.1:1/v1?api_key=querykey999";
    let out = run(h.path(), &["--base-url", base], "/config\nhello\n");
    let all = format!("{}{}", s(&out.stdout), s(&out.stderr));
    assert!(all.contains("user:redacted@127.0.0.1:1"), "{all}");
    assert!(
        !all.contains("basepw12345") && !all.contains("querykey999"),
        "{all}"
    );
    // Nothing listens there: said at once, the URL's password hidden.
    assert!(
        all.contains("nothing listens at http://user:redacted@127.0.0.1:1/v1"),
        "{all}"
    );

    let mut cmd = common::ikigai(h.path());
    let out = cmd
        .arg("sessions")
        .env(
            "IKIGAI_DATABASE_URL",
            "postgres://u@127.0.0.1:1/db?password=supersecretpw",
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = s(&out.stderr);
    assert!(err.contains("password=redacted"), "{err}");
    assert!(!err.contains("supersecretpw"), "{err}");
}
