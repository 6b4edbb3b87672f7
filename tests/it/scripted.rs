//! The scripted front end from the outside (the real binary, the fake vendor): slash
//! commands on piped stdin, `-p` with piped context, exit codes, signals, interrupts,
//! escape sequences, `--json` completeness and flags that win on resume.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Output, Stdio};

use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::wait_for_file;
use serde_json::{Value, json};

fn run(home: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = spawn(home, args, &[]);
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn spawn(home: &Path, args: &[&str], envs: &[(&str, &str)]) -> Child {
    let mut cmd = common::ikigai(home);
    cmd.args(args)
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.spawn().expect("spawn ikigai")
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn piped_stdin_understands_slash_commands() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("one"));
    fake.push(Reply::text("two"));
    let h = tempfile::tempdir().unwrap();
    let input = "/model other-model\nhello\n/help\n/model\n//etc is a dir\n/frob\n/quit\nnever sent\n";
    let out = run(h.path(), &["--base-url", &fake.base_url], input);
    let (stdout, stderr) = (s(&out.stdout), s(&out.stderr));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2, "two messages, the rest were commands: {stderr}");
    assert_eq!(reqs[0].body["model"], "other-model");
    assert_eq!(user_texts(&reqs[0].body), ["hello"]);
    assert_eq!(user_texts(&reqs[1].body), ["hello", "/etc is a dir"]);
    assert!(
        stdout.contains("/resume ID") && stdout.contains("/sessions"),
        "{stdout}"
    );
    // `/model` alone lists the providers, the current one marked with the model in use.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("* openai ") && l.contains("other-model")),
        "{stdout}"
    );
    assert!(stderr.contains("model set to openai/other-model"), "{stderr}");
    assert!(stderr.contains("unknown command /frob"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "an unknown command fails the run");
}

/// A bad command stops piped input as a failed turn does: what follows is not sent.
#[test]
fn a_piped_unknown_command_stops_the_input() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("one"));
    fake.push(Reply::text("two"));
    let h = tempfile::tempdir().unwrap();
    let out = run(
        h.path(),
        &["--base-url", &fake.base_url],
        "hello\n/bogus\nnever sent\n",
    );
    let stderr = s(&out.stderr);
    assert!(stderr.contains("unknown command /bogus"), "{stderr}");
    let sent: Vec<Vec<String>> = fake.requests().iter().map(|r| user_texts(&r.body)).collect();
    assert_eq!(sent, [["hello"]], "{stderr}");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn piped_sessions_new_and_resume_are_typed_commands() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("first answer"));
    fake.push(Reply::text("second answer"));
    fake.push(Reply::text("third answer"));
    let h = tempfile::tempdir().unwrap();
    let out = run(
        h.path(),
        &["--base-url", &fake.base_url],
        "remember apples\n/sessions\n/new\nfresh start\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let stdout = s(&out.stdout);
    assert!(
        stdout.contains("ID") && stdout.contains("remember apples"),
        "{stdout}"
    );
    let reqs = fake.requests();
    assert_eq!(user_texts(&reqs[1].body), ["fresh start"], "/new started over");
    // The first session, found by its id, continues where it was.
    let listed = common::ikigai(h.path()).arg("sessions").output().unwrap();
    let line = s(&listed.stdout)
        .lines()
        .find(|l| l.contains("remember apples"))
        .unwrap()
        .to_string();
    let id = line.split_whitespace().next().unwrap().to_string();
    let out = run(
        h.path(),
        &["--base-url", &fake.base_url],
        &format!("/resume {id}\nand pears\n"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(
        user_texts(&fake.requests()[2].body),
        ["remember apples", "and pears"]
    );
}

#[test]
fn prompt_with_piped_stdin_attaches_it_as_context_capped() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("it fails because"));
    fake.push(Reply::text("cut"));
    let h = tempfile::tempdir().unwrap();
    let out = run(
        h.path(),
        &["-p", "why does this fail?", "--base-url", &fake.base_url],
        "error: line 1\nerror: line 2\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1, "one turn, not one per line");
    assert_eq!(
        user_texts(&reqs[0].body),
        ["why does this fail?\n\n<stdin>\nerror: line 1\nerror: line 2\n</stdin>"]
    );

    std::fs::create_dir_all(h.path().join(".config/ikigai")).unwrap();
    std::fs::write(
        h.path().join(".config/ikigai/config.toml"),
        "max_output_size = 1024\n",
    )
    .unwrap();
    let big = "x".repeat(5000);
    let out = run(h.path(), &["-p", "summarise", "--base-url", &fake.base_url], &big);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let sent = user_texts(&fake.requests()[1].body).pop().unwrap();
    assert_eq!(sent.matches('x').count(), 1024, "capped at max_output_size");
    let stderr = s(&out.stderr);
    assert_eq!(stderr.matches("only the first 1024 bytes").count(), 1, "{stderr}");
}

#[test]
fn a_turn_stopped_by_the_tool_limit_exits_1_naming_the_limit_once() {
    let fake = FakeProvider::start();
    for i in 0..3 {
        let id = format!("call_{i}");
        fake.push(Reply::tool_calls(&[
            (&id, "list_dir", "{}"),
            (&format!("{id}b"), "list_dir", "{}"),
        ]));
    }
    let h = tempfile::tempdir().unwrap();
    let out = run(
        h.path(),
        &[
            "-p",
            "loop",
            "--max-tool-turns",
            "2",
            "--base-url",
            &fake.base_url,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let all = format!("{}{}", s(&out.stdout), s(&out.stderr));
    assert_eq!(all.matches("limit reached (2)").count(), 1, "{all}");
}

#[test]
fn piped_input_stops_at_a_provider_failure_retries_cannot_fix() {
    let fake = FakeProvider::start();
    fake.push(Reply::status(401, r#"{"error":{"message":"bad key"}}"#));
    fake.push(Reply::text("never"));
    let h = tempfile::tempdir().unwrap();
    let out = run(h.path(), &["--base-url", &fake.base_url], "one\ntwo\nthree\n");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(fake.requests().len(), 1, "the other lines were not sent");
    assert!(
        s(&out.stderr).contains("authentication failed"),
        "{}",
        s(&out.stderr)
    );
}

/// Whether `pid` still runs (a zombie does not count).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn signal_during_a_tool(sig: nix::sys::signal::Signal, code: i32) {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls_after(
        "Working on it.",
        &[(
            "call_slow",
            "bash",
            r#"{"command":"echo started; echo $$ > tool.pid; sleep 30"}"#,
        )],
    ));
    let h = tempfile::tempdir().unwrap();
    let mut child = spawn(
        h.path(),
        &["-p", "run the slow thing", "--base-url", &fake.base_url],
        &[],
    );
    drop(child.stdin.take());
    let pid: u32 = wait_for_file(&h.path().join("tool.pid")).trim().parse().unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = s(&out.stdout);
    assert_eq!(out.status.code(), Some(code), "{stdout}\n{}", s(&out.stderr));
    assert!(stdout.contains("● bash("), "{stdout}");
    assert!(
        stdout.contains("⎿ ✗ interrupted before the tool finished"),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("[interrupted]"), "{stdout}");
    assert!(!alive(pid), "the tool's shell was killed");
    // The session was stored whole: the call and its interrupted result.
    let listed = common::ikigai(h.path()).arg("sessions").output().unwrap();
    assert!(
        s(&listed.stdout).contains("run the slow thing"),
        "{}",
        s(&listed.stdout)
    );
}

#[test]
fn sigterm_cancels_the_tool_and_exits_143() {
    signal_during_a_tool(nix::sys::signal::Signal::SIGTERM, 143);
}

#[test]
fn sighup_cancels_the_tool_and_exits_129() {
    signal_during_a_tool(nix::sys::signal::Signal::SIGHUP, 129);
}

#[test]
fn escape_sequences_are_shown_not_performed_but_json_keeps_them() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let script = || {
        fake.push(Reply::tool_calls_after(
            "plain \u{1b}[31mred\u{1b}[0m text\r\n",
            &[(
                "c1",
                "bash",
                r#"{"command":"printf '\\033]0;HACKED\\007title\\tok\\n'"}"#,
            )],
        ));
        fake.push(Reply::text("bye \u{1b}]0;HACKED\u{7}"));
    };
    script();
    let out = run(h.path(), &["-p", "go", "--base-url", &fake.base_url], "");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let stdout = s(&out.stdout);
    for bad in ['\u{1b}', '\u{7}', '\r'] {
        assert!(!stdout.contains(bad), "{bad:?} in {stdout:?}");
    }
    // Shown, not performed.
    assert!(stdout.contains("plain ␛[31mred␛[0m text\n"), "{stdout:?}");
    assert!(stdout.contains("␛]0;HACKED␇title\tok"), "{stdout:?}");

    script();
    let out = run(
        h.path(),
        &["--json", "-p", "go", "--base-url", &fake.base_url],
        "",
    );
    let events: Vec<Value> = s(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(text.contains("\u{1b}[31mred"), "--json is exact: {text:?}");
    let finished = events.iter().find(|e| e["type"] == "tool_call_finished").unwrap();
    assert!(
        finished["output"].to_string().contains("\\u001b]0;HACKED\\u0007"),
        "{finished}"
    );
}

#[test]
fn json_is_complete_user_message_and_parsed_arguments() {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        ("c1", "glob", r#"{"pattern":"*.rs"}"#),
        ("c2", "glob", r#"{"pattern": "*"#),
    ]));
    fake.push(Reply::text("done"));
    let h = tempfile::tempdir().unwrap();
    let out = run(
        h.path(),
        &["--json", "-p", "find", "--base-url", &fake.base_url],
        "",
    );
    let events: Vec<Value> = s(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let first_user = types.iter().position(|t| *t == "user_message").unwrap();
    assert!(first_user < types.iter().position(|t| *t == "turn_started").unwrap());
    assert_eq!(events[first_user]["text"], "find");
    let started: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_call_started")
        .collect();
    assert_eq!(started[0]["arguments"], json!({"pattern": "*.rs"}));
    assert_eq!(started[1]["arguments"], json!(r#"{"pattern": "*"#));
}

#[test]
fn invalid_params_text_is_shown_once() {
    let fake = FakeProvider::start();
    // Arguments that are not JSON, over two lines: the error quotes them.
    fake.push(Reply::tool_calls(&[(
        "c1",
        "grep",
        "{\"path\":\n\"unfinished-arg",
    )]));
    fake.push(Reply::text("ok"));
    let h = tempfile::tempdir().unwrap();
    let out = run(h.path(), &["-p", "search", "--base-url", &fake.base_url], "");
    let stdout = s(&out.stdout);
    assert_eq!(
        stdout.matches("unfinished-arg").count(),
        2,
        "the call line and the error once: {stdout}"
    );
    assert!(stdout.contains("⎿ ✗ INVALID_PARAMS"), "{stdout}");
}

#[test]
fn flags_win_on_resume_and_the_token_count_carries_over() {
    let fake = FakeProvider::start();
    for _ in 0..4 {
        fake.push(Reply::text("ok"));
    }
    let h = tempfile::tempdir().unwrap();
    let first = run(
        h.path(),
        &[
            "-p",
            "hi",
            "--model",
            "stored-model",
            "--base-url",
            &fake.base_url,
        ],
        "",
    );
    assert_eq!(first.status.code(), Some(0), "{}", s(&first.stderr));
    // Without a flag the stored model continues.
    let out = run(
        h.path(),
        &["-c", "--json", "-p", "again", "--base-url", &fake.base_url],
        "",
    );
    assert_eq!(fake.requests()[1].body["model"], "stored-model");
    let started: Value = serde_json::from_str(s(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(started["type"], "session_started");
    assert_eq!(started["tokens"], 15, "the resumed session's tokens so far");
    // A flag wins, says so, and is what the next resume continues with.
    let out = run(
        h.path(),
        &[
            "-c",
            "-p",
            "third",
            "--model",
            "flag-model",
            "--base-url",
            &fake.base_url,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(fake.requests()[2].body["model"], "flag-model");
    assert!(
        s(&out.stderr).contains("--model wins: flag-model"),
        "{}",
        s(&out.stderr)
    );
    let mut child = spawn(
        h.path(),
        &["-c", "-p", "fourth", "--base-url", &fake.base_url],
        &[("IKIGAI_MODEL", "env-model")],
    );
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        s(&out.stderr).contains("IKIGAI_MODEL wins: env-model"),
        "{}",
        s(&out.stderr)
    );
    assert_eq!(fake.requests()[3].body["model"], "env-model");
}

#[test]
fn xdg_config_home_is_honoured_and_documented() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("ok"));
    let h = tempfile::tempdir().unwrap();
    let xdg = h.path().join("elsewhere");
    std::fs::create_dir_all(xdg.join("ikigai")).unwrap();
    std::fs::write(xdg.join("ikigai/config.toml"), "model = \"xdg-model\"\n").unwrap();
    let xdg_s = xdg.to_str().unwrap();
    let mut child = spawn(
        h.path(),
        &["-p", "hi", "--base-url", &fake.base_url],
        &[("XDG_CONFIG_HOME", xdg_s)],
    );
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert_eq!(fake.requests()[0].body["model"], "xdg-model");

    let help = common::ikigai(h.path()).arg("--help").output().unwrap();
    assert!(
        s(&help.stdout).contains("$XDG_CONFIG_HOME/ikigai/config.toml"),
        "{}",
        s(&help.stdout)
    );
    let no_key = common::ikigai(h.path())
        .args(["-p", "hi"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(no_key.status.code(), Some(2));
    assert!(
        s(&no_key.stderr).contains("$XDG_CONFIG_HOME/ikigai/config.toml"),
        "{}",
        s(&no_key.stderr)
    );
}
