//! The real `ikigai` binary in scripted mode (-p, piped stdin, --json) against the fake
//! vendor on 127.0.0.1: output, exit codes, configuration errors, key hygiene.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::io::Write;
use std::process::{Output, Stdio};

use crate::common::fake_provider::{FakeProvider, Reply};
use serde_json::{Value, json};

fn home() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.path().join("lib.rs"), "pub fn f() {}\n").unwrap();
    dir
}

fn run(home: &std::path::Path, args: &[&str], envs: &[(&str, &str)], stdin: &str) -> Output {
    let mut cmd = common::ikigai(home);
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn ikigai");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn prompt_mode_streams_the_answer_and_marks_tool_calls() {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls_after(
        "Looking.",
        &[("call_1", "glob", r#"{"pattern":"*.rs"}"#)],
    ));
    fake.push(Reply::text("There are two Rust files."));
    let h = home();
    let out = run(
        h.path(),
        &["-p", "what files are here?", "--base-url", &fake.base_url],
        &[("OPENAI_API_KEY", "k")],
        "",
    );
    let stdout = s(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", s(&out.stderr));
    assert_eq!(
        stdout,
        "Looking.\n● glob(pattern=\"*.rs\")\n  ⎿ 2 files\n    lib.rs\n    main.rs\nThere are two Rust files.\n"
    );
    assert!(!stdout.contains('\x1b'), "no ANSI codes when piped");
    let reqs = fake.requests();
    assert_eq!(reqs[0].messages()[1]["content"], "what files are here?");
    let system = reqs[0].messages()[0]["content"].as_str().unwrap();
    assert!(
        system.contains(&h.path().display().to_string()),
        "system prompt names the cwd"
    );
}

#[test]
fn piped_stdin_runs_one_turn_per_line_until_exit() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("first answer"));
    fake.push(Reply::text("second answer"));
    let h = home();
    let out = run(
        h.path(),
        &["--base-url", &fake.base_url],
        &[("OPENAI_API_KEY", "k")],
        "first question\n\n   \nsecond question\n/exit\nnever sent\n",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", s(&out.stderr));
    assert_eq!(s(&out.stdout), "first answer\nsecond answer\n");
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let msgs = reqs[1].messages();
    assert_eq!(msgs.len(), 4, "the second turn carries the first");
    assert_eq!(msgs[2]["content"], "first answer");
    assert_eq!(msgs[3]["content"], "second question");
}

#[test]
fn json_mode_prints_one_event_per_line() {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("call_1", "glob", r#"{"pattern":"*.rs"}"#)]));
    fake.push(Reply::text("done"));
    let h = home();
    let out = run(
        h.path(),
        &["--json", "-p", "go", "--base-url", &fake.base_url],
        &[("OPENAI_API_KEY", "k")],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", s(&out.stderr));
    let events: Vec<Value> = s(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for t in [
        "session_started",
        "turn_started",
        "tool_call_started",
        "tool_call_finished",
        "usage",
        "text_delta",
    ] {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }
    assert_eq!(types.last(), Some(&"turn_ended"));
    let finished = events.iter().find(|e| e["type"] == "tool_call_finished").unwrap();
    assert_eq!(finished["success"], true);
    // The envelope is JSON itself, not JSON inside a string.
    assert_eq!(finished["output"]["result"]["count"], 2, "{finished}");
    assert_eq!(finished["output"]["tool_success"], true);
    let started = events.iter().find(|e| e["type"] == "session_started").unwrap();
    assert_eq!(
        (&started["provider"], &started["model"]),
        (&json!("openai"), &json!("gpt-5-mini")),
        "{started}"
    );
    // `jq -r 'select(.type=="turn_ended").text'` gives the answer; the usage is the
    // turn's (two responses of the fake: 10 + 20 in, 5 + 7 out).
    let ended = events.last().unwrap();
    assert_eq!(ended["text"], "done", "{ended}");
    assert_eq!(ended["usage"], json!({"input": 30, "output": 12}), "{ended}");
}

#[test]
fn provider_failure_exits_1_and_says_why() {
    let fake = FakeProvider::start();
    fake.push(Reply::status(500, r#"{"error":{"message":"kaboom"}}"#));
    let h = home();
    std::fs::create_dir_all(h.path().join(".config/ikigai")).unwrap();
    std::fs::write(h.path().join(".config/ikigai/config.toml"), "max_retries = 0\n").unwrap();
    let out = run(
        h.path(),
        &["-p", "hi", "--base-url", &fake.base_url],
        &[("OPENAI_API_KEY", "k")],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        s(&out.stderr).contains("server error (500): kaboom"),
        "{}",
        s(&out.stderr)
    );
}

/// A loopback server that is not running is said at once (no retry countdown), with
/// what to do.
#[test]
fn nothing_listening_on_this_machine_is_said_at_once() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let h = home();
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = run(h.path(), &["-p", "hi", "--base-url", &url], &[], "");
    assert_eq!(out.status.code(), Some(1));
    let err = s(&out.stderr);
    assert!(err.contains(&format!("nothing listens at {url}")), "{err}");
    assert!(err.contains("Start the server"), "{err}");
}

#[test]
fn a_bad_config_file_exits_2_naming_file_line_and_key() {
    let h = home();
    let cfg = h.path().join("bad.toml");
    std::fs::write(&cfg, "model = \"x\"\nmax_tool_turns = 5\ncolour = \"blue\"\n").unwrap();
    let out = run(
        h.path(),
        &["--config", cfg.to_str().unwrap(), "-p", "hi"],
        &[("OPENAI_API_KEY", "k")],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    let err = s(&out.stderr);
    assert!(
        err.contains("bad.toml:3: `colour = \"blue\"`") && err.contains("unknown field"),
        "{err}"
    );
}

#[test]
fn a_mistyped_kind_or_protocol_exits_2_listing_the_valid_values() {
    let h = home();
    let cfg = h.path().join("typo.toml");
    for (text, bad, line, valid) in [
        (
            "model = \"x\"\n[providers.mine]\nkind = \"openai-chatt\"\n",
            "openai-chatt",
            "typo.toml:3:",
            "openai-responses",
        ),
        ("tool_protocol = \"txt\"\n", "txt", "typo.toml:1:", "native"),
    ] {
        std::fs::write(&cfg, text).unwrap();
        let out = run(
            h.path(),
            &["--config", cfg.to_str().unwrap(), "-p", "hi"],
            &[("OPENAI_API_KEY", "k")],
            "",
        );
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = s(&out.stderr);
        assert!(
            err.contains(line) && err.contains(bad) && err.contains(valid),
            "{err}"
        );
    }
}

/// Every numeric setting has a range, checked when the file is read: the error names
/// the file, the line and the range (values that once passed, or failed later with
/// contradictory errors).
#[test]
fn a_number_out_of_range_exits_2_naming_file_and_line() {
    let h = home();
    let cfg = h.path().join("range.toml");
    for (text, at, says) in [
        (
            "model = \"x\"\nauto_compact_at = 1.5\n",
            "range.toml:2: `auto_compact_at = 1.5`",
            "above 0 and at most 1",
        ),
        (
            "[providers.local]\nctx = 10\nthreads = 0\n",
            "range.toml:2: `ctx = 10`",
            "must be 256 to",
        ),
        (
            "[providers.local]\nctx = 1024\nthreads = 0\n",
            "range.toml:3: `threads = 0`",
            "must be 1 to",
        ),
        (
            "[providers.mine]\nkind = \"openai-chat\"\ncontext_window = 0\n",
            "range.toml:3:",
            "must be 1024 to",
        ),
        ("max_tool_turns = 0\n", "range.toml:1:", "must be 1 to"),
        (
            "checkpoint_limit_mb = 2000000\n",
            "range.toml:1: `checkpoint_limit_mb = 2000000`",
            "must be 0 to",
        ),
    ] {
        std::fs::write(&cfg, text).unwrap();
        let out = run(
            h.path(),
            &["--config", cfg.to_str().unwrap(), "-p", "hi"],
            &[("OPENAI_API_KEY", "k")],
            "",
        );
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = s(&out.stderr);
        assert!(err.contains(at) && err.contains(says), "{text}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
}

#[test]
fn no_key_for_openai_explains_how_to_configure_and_exits_2_without_hanging() {
    let h = home();
    let out = run(h.path(), &["-p", "hi"], &[], "");
    assert_eq!(out.status.code(), Some(2));
    let err = s(&out.stderr);
    assert!(
        err.contains("OPENAI_API_KEY") && err.contains("--base-url") && err.contains("Local server"),
        "{err}"
    );
    assert!(
        err.contains("--model PATH/TO/MODEL.gguf"),
        "the in-process engine: {err}"
    );
    assert!(err.lines().count() <= 9, "a few lines: {err}");
    assert!(
        err.lines().all(|l| l.chars().count() <= 80),
        "fits 80 columns: {err}"
    );
}

#[test]
fn a_local_server_needs_no_key() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("local hello"));
    let h = home();
    let out = run(
        h.path(),
        &["-p", "hi"],
        &[("OPENAI_BASE_URL", &fake.base_url)],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(s(&out.stdout), "local hello\n");
    assert!(!fake.requests()[0].headers.contains_key("authorization"));
}

#[test]
fn the_api_key_is_never_printed() {
    let secret = "sk-test-SECRET-0123456789";
    let fake = FakeProvider::start();
    for _ in 0..2 {
        fake.push(Reply::status(
            401,
            &format!(r#"{{"error":{{"message":"Incorrect API key provided: {secret}"}}}}"#),
        ));
    }
    let h = home();
    let out = run(
        h.path(),
        &["-p", "hi", "--base-url", &fake.base_url],
        &[("OPENAI_API_KEY", secret)],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let all = format!("{}{}", s(&out.stdout), s(&out.stderr));
    assert!(
        all.contains("authentication failed") && all.contains("OPENAI_API_KEY"),
        "{all}"
    );
    assert!(!all.contains("SECRET-0123456789"), "{all}");
    let help = run(h.path(), &["--help"], &[("OPENAI_API_KEY", secret)], "");
    assert_eq!(help.status.code(), Some(0));
    assert!(!s(&help.stdout).contains("SECRET") && s(&help.stdout).contains("--prompt"));
    let json = run(
        h.path(),
        &["--json", "-p", "hi", "--base-url", &fake.base_url],
        &[("OPENAI_API_KEY", secret)],
        "",
    );
    assert!(!s(&json.stdout).contains("SECRET"));
}

#[test]
fn usage_errors_exit_2_and_version_prints() {
    let h = home();
    let out = run(h.path(), &["--no-such-flag"], &[], "");
    assert_eq!(out.status.code(), Some(2));
    let out = run(h.path(), &["--version"], &[], "");
    assert_eq!(out.status.code(), Some(0));
    assert!(s(&out.stdout).starts_with("ikigai "));
    let out = run(
        h.path(),
        &["--max-tool-turns", "0", "-p", "x"],
        &[("OPENAI_API_KEY", "k")],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(s(&out.stderr).contains("max_tool_turns"));
}

#[test]
fn an_empty_prompt_is_a_usage_error_and_binary_stdin_is_read_lossily() {
    let h = home();
    let out = run(h.path(), &["-p", "  "], &[("OPENAI_API_KEY", "k")], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(s(&out.stderr).contains("empty"), "{}", s(&out.stderr));

    let fake = FakeProvider::start();
    fake.push(Reply::text("got it"));
    let mut cmd = common::ikigai(h.path());
    cmd.args(["--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"caf\xe9 \x00 bytes\r\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(
        fake.requests()[0].messages()[1]["content"],
        "caf\u{fffd} \u{0} bytes"
    );
}

#[test]
fn a_closed_stdout_ends_quietly_and_the_session_is_still_stored() {
    let fake = FakeProvider::start();
    let long: String = (0..20_000).map(|i| format!("word{i} ")).collect();
    fake.push(Reply::text(&long));
    let h = home();
    let mut cmd = common::ikigai(h.path());
    cmd.args(["-p", "talk a lot", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    // Read a little, then close the pipe like `| head -c 10` would.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 10];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(s(&out.stderr), "");
    let listed = common::ikigai(h.path()).arg("sessions").output().unwrap();
    assert!(s(&listed.stdout).contains("talk a lot"), "{}", s(&listed.stdout));
}

/// Runs ikigai with stdout and stderr on one pipe, as on a terminal: the order in which
/// the two streams were written is kept.
fn run_merged(home: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let (mut reader, writer) = std::io::pipe().unwrap();
    let mut child = common::ikigai(home)
        .args(args)
        .current_dir(home)
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut reader, &mut text).unwrap();
    (child.wait().unwrap().code(), text)
}

/// `-v` prints the token counts on a line of their own, not glued to the answer's last
/// line (stdout and stderr share the terminal).
#[test]
fn verbose_token_counts_start_on_their_own_line() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("Line one.\nLine two."));
    let h = home();
    let (code, text) = run_merged(h.path(), &["--base-url", &fake.base_url, "-p", "hi", "-v"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("Line two.\ntokens: 10 in, 5 out\n"), "{text}");
}

/// A tool call's arguments are shown in the model's order, not sorted by name.
#[test]
fn tool_arguments_are_shown_in_the_models_order() {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "call_1",
        "file_read",
        r#"{"path":"main.rs","offset":1}"#,
    )]));
    fake.push(Reply::text("Read it."));
    let h = home();
    let (code, text) = run_merged(h.path(), &["--base-url", &fake.base_url, "-p", "read"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("● file_read(path=\"main.rs\", offset=1)"), "{text}");
}
