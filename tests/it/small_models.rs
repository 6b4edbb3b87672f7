//! What ikigai does for small models (issue 22), from the outside: the real binary against
//! the scripted Chat Completions vendor, with the exact requests it records checked —
//! lenient arguments (aliases, unknown names ignored and named), for native calls,
//! recovered text calls and text-protocol calls alike; a loop of refused repeats ending the
//! turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::path::Path;
use std::process::Stdio;

use crate::common::fake_provider::{FakeProvider, Recorded, Reply};
use serde_json::{Value, json};

use common::{run_in as run, text as s};

/// The content of the last `tool` message of a recorded request.
fn last_tool_content(req: &Recorded) -> String {
    req.messages()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .expect("a tool message")["content"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A project with `notes.txt`, and the home folder.
fn project() -> (tempfile::TempDir, tempfile::TempDir) {
    let (h, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(cwd.path().join("notes.txt"), "deploy code PLUM-4417\n").unwrap();
    (h, cwd)
}

/// What `file_read` returns for `notes.txt`, read with the real name and nothing else.
fn plain_read(h: &Path, cwd: &Path) -> Value {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "file_read",
        r#"{"path":"notes.txt"}"#,
    )]));
    fake.push(Reply::text("done"));
    let out = run(h, cwd, &["--base-url", &fake.base_url, "-p", "read"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let env: Value = serde_json::from_str(&last_tool_content(&fake.requests()[1])).unwrap();
    assert!(
        env["result"]["output"].as_str().unwrap().contains("PLUM-4417"),
        "{env}"
    );
    env["result"].clone()
}

#[test]
fn native_calls_with_an_alias_and_an_unknown_parameter_run_and_say_so() {
    let (h, cwd) = project();
    let result = plain_read(h.path(), cwd.path());
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "file_read",
        r#"{"file_path":"notes.txt","pattern":"**/*.md"}"#,
    )]));
    fake.push(Reply::tool_calls(&[(
        "c2",
        "bash",
        r#"{"cmd":"echo ran-$((6*7))"}"#,
    )]));
    fake.push(Reply::text("The code is PLUM-4417."));
    let out = run(
        h.path(),
        cwd.path(),
        &["--base-url", &fake.base_url, "-p", "code?"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 3);
    let env: Value = serde_json::from_str(&last_tool_content(&reqs[1])).unwrap();
    assert_eq!(
        env,
        json!({
            "note": "read parameter \"file_path\" as \"path\"; ignored unknown parameter \"pattern\"",
            "result": result,
            "tool_success": true
        })
    );
    let env: Value = serde_json::from_str(&last_tool_content(&reqs[2])).unwrap();
    assert_eq!(env["note"], "read parameter \"cmd\" as \"command\"");
    assert_eq!(env["tool_success"], true);
    assert!(
        env["result"]["output"].as_str().unwrap().contains("ran-42"),
        "{env}"
    );
    // The call as the model wrote it is what the history keeps and sends back.
    let call = &reqs[2]
        .messages()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap()["tool_calls"][0]["function"]["arguments"];
    assert_eq!(call, r#"{"file_path":"notes.txt","pattern":"**/*.md"}"#);
}

#[test]
fn a_missing_required_parameter_still_fails_with_its_name_and_type() {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "file_read",
        r#"{"pattern":"*.txt"}"#,
    )]));
    fake.push(Reply::text("sorry"));
    let out = run(
        h.path(),
        cwd.path(),
        &["--base-url", &fake.base_url, "-p", "read"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let env: Value = serde_json::from_str(&last_tool_content(&fake.requests()[1])).unwrap();
    assert_eq!(
        env,
        json!({
            "error": "file_read: missing required parameter `path` (string)",
            "error_code": "INVALID_PARAMS",
            "note": "ignored unknown parameter \"pattern\"",
            "tool_success": false
        })
    );
}

#[test]
fn a_recovered_text_call_with_an_unknown_parameter_runs_and_says_so() {
    // The issue's example: the 0.5B model wrote this as text; recovery used to refuse it.
    let (h, cwd) = project();
    let result = plain_read(h.path(), cwd.path());
    let fake = FakeProvider::start();
    fake.push(Reply::text(
        "{\"name\": \"file_read\", \"arguments\": {\"path\": \"notes.txt\", \"pattern\": \"**/*.md\"}}",
    ));
    fake.push(Reply::text("The code is PLUM-4417."));
    let out = run(
        h.path(),
        cwd.path(),
        &[
            "--provider",
            "llamacpp",
            "--base-url",
            &fake.base_url,
            "-p",
            "code?",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let env: Value = serde_json::from_str(&last_tool_content(&reqs[1])).unwrap();
    assert_eq!(
        env,
        json!({"note": "ignored unknown parameter \"pattern\"", "result": result, "tool_success": true})
    );
}

#[test]
fn a_text_protocol_call_with_an_alias_and_an_unknown_parameter_runs_and_says_so() {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    fake.push(Reply::text(
        "<||SYSTEM.EXEC>file_read(filename=\"notes.txt\", depth=2)<SYSTEM.EXEC||>",
    ));
    fake.push(Reply::text("The code is PLUM-4417."));
    let out = run(
        h.path(),
        cwd.path(),
        &[
            "--provider",
            "llamacpp",
            "--base-url",
            &fake.base_url,
            "--tool-protocol",
            "text",
            "-p",
            "code?",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    let last = reqs[1].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    let block = &last[last.find("<||SYSTEM.OUTPUT>").expect("an output block")..];
    assert!(
        block.starts_with(
            "<||SYSTEM.OUTPUT>\nnote: read parameter \"filename\" as \"path\"; ignored unknown parameter \"depth\"\n"
        ),
        "{block}"
    );
    assert!(block.contains("PLUM-4417"), "{block}");
}

#[test]
fn a_call_repeated_after_the_guard_refused_it_ends_the_turn_with_one_notice() {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    let args = r#"{"command":"echo run >> calls.log"}"#;
    for id in ["c1", "c2", "c3", "c4"] {
        fake.push(Reply::tool_calls(&[(id, "bash", args)]));
    }
    fake.push(Reply::text("never asked for"));
    let out = run(
        h.path(),
        cwd.path(),
        &["--base-url", &fake.base_url, "-p", "log it"],
    );
    let (stdout, stderr) = (s(&out.stdout), s(&out.stderr));
    // Two runs, one refusal answered, the repeat of the refusal ends the turn: 4 requests.
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 4, "{stdout}\n{stderr}");
    let log = std::fs::read_to_string(cwd.path().join("calls.log")).unwrap();
    assert_eq!(log.lines().count(), 2);
    let env: Value = serde_json::from_str(&last_tool_content(&reqs[3])).unwrap();
    assert_eq!(env["error_code"], "REPEATED_CALL");
    assert_eq!(stderr.matches("not run again").count(), 1, "{stderr}");
    assert_eq!(
        stderr
            .matches("The model repeated a call that was already refused as identical; the turn ends here.")
            .count(),
        1,
        "{stderr}"
    );
    assert!(!stdout.contains("never asked for"));
    // Like the `max_tool_turns` limit: the turn ended without an answer.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The stored history stays valid: the next turn goes on from it.
    let out = run(
        h.path(),
        cwd.path(),
        &["--base-url", &fake.base_url, "-c", "-p", "and?"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert!(s(&out.stdout).contains("never asked for"));
    let last = fake.requests().pop().unwrap();
    let roles: Vec<&str> = last
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles.iter().filter(|r| **r == "tool").count(), 4, "{roles:?}");
    assert_eq!(roles.last(), Some(&"user"));
}

/// The output cap each wire format carries in the first request of a one-turn run with
/// this config (`[providers.*]` sections), for preset `provider`.
fn first_request_cap(config: &str, provider: &str) -> Value {
    use crate::common::fake_vendor::{FakeVendor, Wire, anthropic_reply, gemini_reply};
    let (h, cwd) = project();
    let cfg = h.path().join("config.toml");
    std::fs::write(&cfg, config).unwrap();
    let cfg = cfg.display().to_string();
    let go = |base_url: &str, extra: &[&str]| {
        let mut args = vec!["--config", &cfg, "--provider", provider, "--base-url", base_url];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-p", "hi"]);
        let mut cmd = common::ikigai(h.path());
        cmd.current_dir(cwd.path())
            .args(&args)
            .env("ANTHROPIC_API_KEY", "k")
            .env("GEMINI_API_KEY", "k")
            .stdin(Stdio::null());
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{provider}: {}", s(&out.stderr));
    };
    match provider {
        "anthropic" | "google" => {
            let wire = if provider == "anthropic" {
                Wire::Anthropic
            } else {
                Wire::Gemini
            };
            let fake = FakeVendor::start(wire);
            fake.push(if provider == "anthropic" {
                anthropic_reply(None, "hello", &[])
            } else {
                gemini_reply("", "", "hello", &[])
            });
            go(&fake.base_url, &[]);
            let body = fake.requests()[0].body.clone();
            if provider == "anthropic" {
                body["max_tokens"].clone()
            } else {
                body["generationConfig"]["maxOutputTokens"].clone()
            }
        }
        "openai-responses" => {
            let fake = FakeProvider::start();
            fake.push(Reply::fixture("responses-02-text-only.sse"));
            go(&fake.base_url, &[]);
            fake.requests()[0].body["max_output_tokens"].clone()
        }
        "llamacpp-text" => {
            let fake = FakeProvider::start();
            fake.push(Reply::text("hello"));
            let mut args = vec![
                "--config",
                &cfg,
                "--provider",
                "llamacpp",
                "--base-url",
                &fake.base_url,
            ];
            args.extend_from_slice(&["--tool-protocol", "text", "-p", "hi"]);
            let out = run(h.path(), cwd.path(), &args);
            assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
            fake.requests().last().unwrap().body["max_completion_tokens"].clone()
        }
        _ => {
            let fake = FakeProvider::start();
            fake.push(Reply::text("hello"));
            go(&fake.base_url, &[]);
            fake.requests().last().unwrap().body["max_completion_tokens"].clone()
        }
    }
}

#[test]
fn every_wire_format_sends_the_answer_reserve_as_its_output_cap_unless_configured() {
    // An eighth of the window (40,000 → 5,000), at most 16k.
    let sections = |extra: &str| {
        ["openai", "openai-responses", "anthropic", "google", "llamacpp"]
            .iter()
            .map(|p| format!("[providers.{p}]\ncontext_window = 40000\n{extra}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for provider in [
        "openai",
        "openai-responses",
        "anthropic",
        "google",
        "llamacpp",
        "llamacpp-text",
    ] {
        assert_eq!(
            first_request_cap(&sections(""), provider),
            json!(5000),
            "{provider}"
        );
        assert_eq!(
            first_request_cap(&sections("max_output_tokens = 321\n"), provider),
            json!(321),
            "{provider}: a configured cap wins"
        );
    }
    // A vendor's window: 200k (Anthropic's preset) reserves the 16k ceiling.
    assert_eq!(first_request_cap("", "anthropic"), json!(16384));
}

/// The in-process engine stops at the cap the agent asks for, unless one is configured.
#[cfg(feature = "local")]
#[tokio::test]
async fn the_engine_stops_at_the_requested_output_cap_unless_one_is_configured() {
    use futures_util::StreamExt;
    use ikigai::message::Message;
    use ikigai::provider::local::LocalProvider;
    use ikigai::provider::{FinishReason, Provider, Request, Spec, StreamEvent};
    let _g = crate::local::serial_async().await;
    let generated = |configured: Option<u64>, asked: Option<u64>| async move {
        let mut spec = Spec::local(&crate::local::model_path(), 1024);
        spec.temperature = Some(0.0);
        spec.engine.threads = Some(2);
        spec.engine.ctx = Some(1024);
        spec.max_output_tokens = configured;
        let provider = LocalProvider::from_spec(spec).unwrap();
        let messages = vec![Message::user("Count from 1 to 200, one number per line.")];
        let req = Request {
            model: "local",
            system: "You are a terse assistant.",
            messages: &messages,
            tools: &[],
            stop: &[],
            environment: "",
            max_output_tokens: asked,
        };
        let events: Vec<_> = provider.stream(req).await.unwrap().collect().await;
        let output = events.iter().find_map(|e| match e {
            Ok(StreamEvent::Usage { output, .. }) => Some(*output),
            _ => None,
        });
        let length = events.iter().any(|e| {
            matches!(
                e,
                Ok(StreamEvent::Finished {
                    reason: Some(FinishReason::Length)
                })
            )
        });
        (output.expect("a usage report"), length)
    };
    assert_eq!(generated(None, Some(7)).await, (7, true));
    assert_eq!(generated(Some(4), Some(7)).await, (4, true));
}

/// A text-protocol run against llamacpp where the model's first answer is `first`; the
/// requests the fake recorded.
fn text_protocol_run(first: &str) -> (Vec<Recorded>, String) {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    fake.push(Reply::text(first));
    fake.push(Reply::text("The code is PLUM-4417."));
    let out = run(
        h.path(),
        cwd.path(),
        &[
            "--provider",
            "llamacpp",
            "--base-url",
            &fake.base_url,
            "--tool-protocol",
            "text",
            "--json",
            "-p",
            "code?",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    (fake.requests(), s(&out.stdout))
}

#[test]
fn a_lower_case_exec_tag_runs_its_command() {
    let (reqs, stdout) = text_protocol_run("<||system.exec>cat notes.txt<system.exec||>");
    assert_eq!(reqs.len(), 2);
    // Prefill: the call, re-rendered in the canonical form, and its output continue the
    // assistant message.
    let last = reqs[1].messages().last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(
        last["content"],
        "<||SYSTEM.EXEC>cat notes.txt<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\ndeploy code PLUM-4417\n<SYSTEM.OUTPUT||>\n"
    );
    assert!(!stdout.contains("system.exec"), "{stdout}");
}

#[test]
fn a_tag_naming_a_known_tool_is_that_tools_call() {
    let (reqs, stdout) = text_protocol_run("Let me read it. <||file_read(path=\"notes.txt\")||>");
    assert_eq!(reqs.len(), 2);
    let started: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "tool_call_started")
        .collect();
    assert_eq!(started.len(), 1, "{stdout}");
    assert_eq!(started[0]["name"], "file_read");
    assert_eq!(started[0]["arguments"], json!({"path": "notes.txt"}));
    let last = reqs[1].messages().last().unwrap();
    assert_eq!(
        last["content"],
        "Let me read it. \n<||SYSTEM.EXEC>file_read(path=\"notes.txt\")<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\ndeploy code PLUM-4417\n<SYSTEM.OUTPUT||>\n"
    );
    // An unknown name in the same form stays text and runs nothing.
    let (reqs, stdout) = text_protocol_run("<||count_lines(\"notes.txt\")||>");
    assert_eq!(reqs.len(), 1);
    assert!(!stdout.contains("tool_call_started"), "{stdout}");
}

/// The text protocol's example exchange where a tool writes files, as the prefill
/// continuation renders it: a file read, written whole in the form the prompt names,
/// tested, and one line saying what changed.
/// The question-and-fact example, for a session that starts with a question.
const QUESTION_PRIMER_PREFILL: &str = "<||SYSTEM.EXEC>grep -rn \"def load_config\" .<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\n./app/settings.py:12:def load_config(path):\n<SYSTEM.OUTPUT||>\napp/settings.py defines load_config, on line 12.";

pub(crate) const CODING_PRIMER_PREFILL: &str = "<||SYSTEM.EXEC>cat calc.py<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\ndef add(a, b):\n    return a - b\n<SYSTEM.OUTPUT||>\n<||SYSTEM.EXEC>write calc.py\ndef add(a, b):\n    return a + b<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\nWrote 32 bytes to calc.py\n<SYSTEM.OUTPUT||>\n<||SYSTEM.EXEC>python3 -m unittest test_calc<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\nOK\n<SYSTEM.OUTPUT||>\nFixed: add returns a + b.";

#[test]
fn the_text_protocol_primer_comes_first_in_the_continuation_mode_and_can_be_turned_off() {
    let (h, cwd) = project();
    for (config, want) in [
        ("", Some("prefill")),
        (
            "[providers.llamacpp]\ntext_protocol_continue = \"user\"\n",
            Some("user"),
        ),
        ("[providers.llamacpp]\nprimer = false\n", None),
    ] {
        let cfg = h.path().join("c.toml");
        std::fs::write(&cfg, config).unwrap();
        let fake = FakeProvider::start();
        fake.push(Reply::text("hello"));
        let out = run(
            h.path(),
            cwd.path(),
            &[
                "--config",
                cfg.to_str().unwrap(),
                "--provider",
                "llamacpp",
                "--base-url",
                &fake.base_url,
                "--tool-protocol",
                "text",
                "-p",
                "fix it",
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
        let reqs = fake.requests();
        let msgs = reqs[0].messages();
        // The session's folder and date open the conversation's first message, after the
        // example exchange (the prefix before it is the same for every session).
        let opening = msgs.last().unwrap()["content"].as_str().unwrap();
        let (environment, typed) = opening.split_once("\n\n").unwrap();
        assert_eq!(typed, "fix it");
        assert!(
            environment.starts_with(&format!("Working directory: {}\n", cwd.path().display())),
            "{opening}"
        );
        let pairs: Vec<(String, String)> = msgs[1..]
            .iter()
            .map(|m| {
                let content = m["content"].as_str().unwrap();
                (
                    m["role"].as_str().unwrap().to_string(),
                    content
                        .strip_prefix(&format!("{environment}\n\n"))
                        .unwrap_or(content)
                        .to_string(),
                )
            })
            .collect();
        let p = |r: &str, c: &str| (r.to_string(), c.to_string());
        let exec = |c: &str| format!("<||SYSTEM.EXEC>{c}<SYSTEM.EXEC||>");
        let output = |o: &str| format!("<||SYSTEM.OUTPUT>\n{o}\n<SYSTEM.OUTPUT||>");
        let expected = match want {
            Some("prefill") => vec![
                p("user", "Fix calc.py; test with python3 -m unittest test_calc"),
                p("assistant", CODING_PRIMER_PREFILL),
                p("user", "fix it"),
            ],
            Some(_) => vec![
                p("user", "Fix calc.py; test with python3 -m unittest test_calc"),
                p("assistant", &exec("cat calc.py")),
                p("user", &output("def add(a, b):\n    return a - b")),
                p(
                    "assistant",
                    &exec("write calc.py\ndef add(a, b):\n    return a + b"),
                ),
                p("user", &output("Wrote 32 bytes to calc.py")),
                p("assistant", &exec("python3 -m unittest test_calc")),
                p("user", &output("OK")),
                p("assistant", "Fixed: add returns a + b."),
                p("user", "fix it"),
            ],
            None => vec![p("user", "fix it")],
        };
        assert_eq!(pairs, expected, "{config}");
    }
}

#[test]
fn a_local_preset_gets_the_primer_as_one_native_call_never_stored_and_can_turn_it_off() {
    let (h, cwd) = project();
    let cfg = h.path().join("c.toml");
    let fake = FakeProvider::start();
    let ask = |provider: &str, config: &str, extra: &[&str], prompt: &str| {
        std::fs::write(&cfg, config).unwrap();
        fake.push(Reply::text("hello"));
        let mut args = vec![
            "--config",
            cfg.to_str().unwrap(),
            "--provider",
            provider,
            "--base-url",
            &fake.base_url,
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["-p", prompt]);
        let out = run(h.path(), cwd.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
        fake.requests().last().unwrap().messages().clone()
    };
    let msgs = ask("llamacpp", "", &[], "code?");
    let primer = json!([
        {"role": "user", "content": "Which file defines load_config?"},
        {"role": "assistant", "content": null, "tool_calls": [{
            "id": "primer-1", "type": "function",
            "function": {"name": "bash", "arguments": "{\"command\":\"grep -rn \\\"def load_config\\\" .\"}"}
        }]},
        {"role": "tool", "tool_call_id": "primer-1",
         "content": "{\"result\":{\"exit_code\":0,\"output\":\"./app/settings.py:12:def load_config(path):\\n\"},\"tool_success\":true}"},
        {"role": "assistant", "content": "app/settings.py defines load_config, on line 12."},
    ]);
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(Value::Array(msgs[1..5].to_vec()), primer, "{msgs:#?}");
    // The session's folder and date open its first message (after the example exchange).
    assert_eq!(msgs[5]["role"], "user");
    let opening = msgs[5]["content"].as_str().unwrap();
    assert!(
        opening.starts_with(&format!("Working directory: {}\n", cwd.path().display()))
            && opening.ends_with("\n\ncode?"),
        "{opening}"
    );
    assert_eq!(msgs.len(), 6);
    // Never stored: the next turn of the session sends it once, before the stored turn.
    let msgs = ask("llamacpp", "", &["-c"], "again?");
    assert_eq!(Value::Array(msgs[1..5].to_vec()), primer);
    let users: Vec<&Value> = msgs.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 3, "{msgs:#?}");
    assert_eq!(msgs.last().unwrap()["content"], "again?");
    // Off in the provider's section; none for a vendor's preset.
    let msgs = ask("llamacpp", "[providers.llamacpp]\nprimer = false\n", &[], "code?");
    assert_eq!(msgs.len(), 2, "{msgs:#?}");
    let msgs = ask("openai", "", &[], "code?");
    assert_eq!(msgs.len(), 2, "{msgs:#?}");
    // Another server on 127.0.0.1 (the fake is one) gets it only when its section asks.
    let own = "[providers.mine]\nkind = \"openai-chat\"\nmodel = \"m\"\n";
    let msgs = ask("mine", own, &[], "code?");
    assert_eq!(msgs.len(), 2, "{msgs:#?}");
    let msgs = ask("mine", &format!("{own}primer = true\n"), &[], "code?");
    assert_eq!(Value::Array(msgs[1..5].to_vec()), primer, "{msgs:#?}");
}

/// Where files can be written and the session's first prompt is not a question, the
/// text protocol's example exchange is a small coding task (read, write whole, test),
/// and the prompt names the whole-file form without a second example and without the
/// list of useful commands (the first request stays within 80 tokens of its size before
/// the form). A session that starts with a question gets the question and its one-line
/// answer, with the list of useful commands: with the coding task, the 1.5B model
/// rewrote the file it was asked about and answered "Done.".
#[test]
fn the_example_is_a_coding_task_for_a_task_and_the_question_for_a_question() {
    let (h, cwd) = project();
    let fake = FakeProvider::start();
    for (prompt, first, example) in [
        (
            "Fix the bug in calc.py.",
            "Fix calc.py; test with python3 -m unittest test_calc",
            CODING_PRIMER_PREFILL,
        ),
        (
            "How many lines does data.csv have?",
            "Which file defines load_config?",
            QUESTION_PRIMER_PREFILL,
        ),
    ] {
        fake.push(Reply::text("hello"));
        let out = run(
            h.path(),
            cwd.path(),
            &[
                "--provider",
                "llamacpp",
                "--base-url",
                &fake.base_url,
                "--tool-protocol",
                "text",
                "-p",
                prompt,
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
        let msgs = fake.requests().last().unwrap().messages().clone();
        assert_eq!(msgs[1]["content"], first, "{prompt}");
        assert_eq!(msgs[2]["content"], example, "{prompt}");
        let system = msgs[0]["content"].as_str().unwrap();
        let named = system.contains("write its path after `write`, then the whole file");
        if example == CODING_PRIMER_PREFILL {
            assert!(
                named && !system.contains("greet.py") && !system.contains("Useful commands"),
                "{system}"
            );
        } else {
            assert!(
                named && system.contains("greet.py") && system.contains("Useful commands"),
                "{system}"
            );
        }
    }
}
