//! `/model` from the outside: the real binary, piped input, loopback fake vendors.
//! `/model` alone lists every configured provider (current marked, key state by variable,
//! never a key) with the models each endpoint lists, one clear line for one that fails or
//! does not answer; `/model PROVIDER/MODEL` switches mid-session through openai-chat →
//! anthropic → google → openai-responses with tool calls and reasoning in the history,
//! each follow-up accepted by the strict fakes; a resume continues on the last provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use crate::common::fake_provider::{FakeProvider, Reply, pieces};
use crate::common::fake_vendor::{FakeVendor, Wire, anthropic_reply, gemini_reply};
use serde_json::{Value, json};

const OPENAI_KEY: &str = "sk-openai-secret-0001";
const CLAUDE_KEY: &str = "claude-secret-0002";
const GEM_KEY: &str = "gem-secret-0003";

fn run(home: &Path, args: &[&str], stdin: &str) -> Output {
    run_with(home, args, stdin, true)
}

/// `run`, with or without `OPENAI_API_KEY` in the environment.
fn run_with(home: &Path, args: &[&str], stdin: &str, openai_key: bool) -> Output {
    let mut cmd = common::ikigai(home);
    cmd.args(args)
        .current_dir(home)
        .env("CLAUDE_TEST_KEY", CLAUDE_KEY)
        .env("GEM_TEST_KEY", GEM_KEY)
        .env_remove("UNSET_TEST_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if openai_key {
        cmd.env("OPENAI_API_KEY", OPENAI_KEY);
    }
    let mut child = cmd.spawn().expect("spawn ikigai");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn write_config(home: &Path, text: &str) {
    let dir = home.join(".config/ikigai");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

/// The config sections of the fake vendors: `claude` (anthropic), `gem` (google) and
/// `resp` (openai-responses).
fn sections(claude: &FakeVendor, gem: &FakeVendor, resp: &FakeProvider) -> String {
    format!(
        "[providers.claude]\nkind = \"anthropic\"\nbase_url = \"{}\"\nmodel = \"claude-fake-1\"\napi_key_env = \"CLAUDE_TEST_KEY\"\n\n\
         [providers.gem]\nkind = \"google\"\nbase_url = \"{}\"\nmodel = \"gemini-fake-1\"\napi_key_env = \"GEM_TEST_KEY\"\n\n\
         [providers.resp]\nkind = \"openai-responses\"\nbase_url = \"{}\"\nmodel = \"gpt-fake-r\"\n\n",
        claude.base_url, gem.base_url, resp.base_url
    )
}

/// The line of the listing that starts with `mark name `.
fn row<'a>(stdout: &'a str, mark: char, name: &str) -> &'a str {
    let prefix = format!("{mark} {name} ");
    stdout
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no row for {name} in:\n{stdout}"))
}

/// The line right after `row`.
fn detail<'a>(stdout: &'a str, mark: char, name: &str) -> &'a str {
    let r = row(stdout, mark, name);
    let mut lines = stdout.lines().skip_while(|l| *l != r);
    lines.next();
    lines.next().unwrap_or("")
}

#[test]
fn model_alone_lists_the_providers_with_their_models_and_never_a_key() {
    let openai = FakeProvider::start();
    openai.answer_gets();
    openai.push(Reply::status(
        200,
        r#"{"object":"list","data":[{"id":"gpt-fake-2","object":"model"},{"id":"gpt-fake-1","object":"model"}]}"#,
    ));
    let resp = FakeProvider::start();
    resp.answer_gets();
    resp.push(Reply::status(200, r#"{"data":[{"id":"gpt-fake-r"}]}"#));
    let claude = FakeVendor::start(Wire::Anthropic);
    claude.with_models(&["claude-fake-1", "claude-fake-2"]);
    let gem = FakeVendor::start(Wire::Gemini);
    gem.with_models(&["gemini-fake-1"]);
    // A server that is gone, and one that accepts connections but never answers.
    // Bound but never listening (refused), so no other server can take the port meanwhile.
    let gone = tokio::net::TcpSocket::new_v4().unwrap();
    gone.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let gone_url = format!("http://{}/v1", gone.local_addr().unwrap());
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://{}/v1", silent.local_addr().unwrap());
    let h = tempfile::tempdir().unwrap();
    write_config(
        h.path(),
        &format!(
            "{}[providers.nokey]\nkind = \"anthropic\"\nbase_url = \"{}\"\nmodel = \"c\"\napi_key_env = \"UNSET_TEST_KEY\"\n\n\
             [providers.gone]\nkind = \"openai-chat\"\nbase_url = \"{gone_url}\"\nmodel = \"g\"\n\n\
             [providers.silent]\nkind = \"openai-chat\"\nbase_url = \"{silent_url}\"\nmodel = \"q\"\n",
            sections(&claude, &gem, &resp),
            claude.base_url
        ),
    );
    let out = run(
        h.path(),
        &["--base-url", &openai.base_url, "--model", "gpt-fake-1"],
        "/model\n",
    );
    let (stdout, stderr) = (s(&out.stdout), s(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("Providers (* current"), "{stdout}");
    // The current provider, with its model and its endpoint's list.
    let current = row(&stdout, '*', "openai");
    assert!(
        current.contains("openai-chat") && current.contains("gpt-fake-1"),
        "{current}"
    );
    assert!(current.ends_with("key $OPENAI_API_KEY"), "{current}");
    assert_eq!(
        detail(&stdout, '*', "openai"),
        "    models: gpt-fake-1, gpt-fake-2"
    );
    assert_eq!(
        stdout.matches("\n* ").count() + usize::from(stdout.starts_with("* ")),
        1
    );
    // Every wire kind's own list call.
    assert!(row(&stdout, ' ', "claude").contains("anthropic"));
    assert_eq!(
        detail(&stdout, ' ', "claude"),
        "    models: claude-fake-1, claude-fake-2"
    );
    assert_eq!(detail(&stdout, ' ', "gem"), "    models: gemini-fake-1");
    assert!(row(&stdout, ' ', "resp").contains("openai-responses"));
    assert_eq!(detail(&stdout, ' ', "resp"), "    models: gpt-fake-r");
    let seen: Vec<(String, Option<String>)> = claude
        .requests()
        .iter()
        .map(|r| (r.path.clone(), r.headers.get("x-api-key").cloned()))
        .collect();
    assert_eq!(
        seen,
        vec![("/v1/models".to_string(), Some(CLAUDE_KEY.to_string()))]
    );
    assert_eq!(gem.requests()[0].path, "/v1beta/models");
    // No key: said so by variable, and nothing is asked.
    assert!(row(&stdout, ' ', "nokey").ends_with("no key: set $UNSET_TEST_KEY"));
    assert!(!detail(&stdout, ' ', "nokey").starts_with("    "));
    // Presets are listed too; a remote one without its key asks nothing.
    assert!(
        row(&stdout, ' ', "xai").ends_with("no key: set $XAI_API_KEY"),
        "{stdout}"
    );
    assert!(row(&stdout, ' ', "ollama").contains("no key needed"));
    // The in-process engine is listed, with what it takes.
    #[cfg(feature = "local")]
    assert!(
        row(&stdout, ' ', "local").contains("(any .gguf file: /model PATH.gguf)"),
        "{stdout}"
    );
    // Failures are one line each, and a silent server does not hang the listing.
    let gone_line = detail(&stdout, ' ', "gone");
    assert!(
        gone_line.starts_with("    cannot list models: nothing listens at"),
        "{gone_line}"
    );
    let silent_line = detail(&stdout, ' ', "silent");
    assert!(
        silent_line.starts_with("    cannot list models: no model list from")
            && silent_line.contains("within 3 s"),
        "{silent_line}"
    );
    for key in [OPENAI_KEY, CLAUDE_KEY, GEM_KEY] {
        assert!(!stdout.contains(key) && !stderr.contains(key), "a key was shown");
    }
    drop(silent);
}

#[test]
fn model_alone_under_json_is_one_providers_event() {
    let openai = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    write_config(h.path(), "");
    let out = run(h.path(), &["--json", "--base-url", &openai.base_url], "/model\n");
    let stdout = s(&out.stdout);
    let event: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "providers")
        .unwrap_or_else(|| panic!("{stdout}"));
    let list = event["providers"].as_array().unwrap();
    let openai_row = list.iter().find(|p| p["name"] == "openai").unwrap();
    assert_eq!(openai_row["current"], true);
    assert_eq!(openai_row["key"], "set");
    assert_eq!(openai_row["key_env"], "OPENAI_API_KEY");
    // The fake does not list models: the failure is reported, not fatal.
    assert!(
        openai_row["error"].as_str().unwrap().contains("404"),
        "{openai_row}"
    );
    let anthropic = list.iter().find(|p| p["name"] == "anthropic").unwrap();
    assert_eq!(
        (anthropic["key"].as_str(), anthropic["current"].as_bool()),
        (Some("missing"), Some(false))
    );
    assert!(!stdout.contains(OPENAI_KEY));
}

/// A Responses stream: a reasoning item with encrypted content, then a function call
/// whose arguments arrive in pieces.
fn responses_call(call_id: &str, args: &str) -> Reply {
    let ev = |v: Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap());
    let mut out = vec![
        ev(json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}})),
        ev(json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "enc-r-1"}})),
        ev(
            json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Responses thinks."}),
        ),
        ev(json!({"type": "response.output_item.done", "output_index": 0,
            "item": {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "Responses thinks."}], "encrypted_content": "enc-r-1"}})),
        ev(json!({"type": "response.output_item.added", "output_index": 1,
            "item": {"id": "fc_1", "type": "function_call", "arguments": "", "call_id": call_id, "name": "glob"}})),
    ];
    for p in pieces(args, 3) {
        out.push(ev(json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": p})));
    }
    out.push(ev(json!({"type": "response.output_item.done", "output_index": 1,
        "item": {"id": "fc_1", "type": "function_call", "status": "completed", "arguments": args, "call_id": call_id, "name": "glob"}})));
    out.push(ev(
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
        "usage": {"input_tokens": 50, "output_tokens": 9}}}),
    ));
    Reply::events(out)
}

fn responses_text(text: &str) -> Reply {
    let ev = |v: Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap());
    Reply::events(vec![
        ev(json!({"type": "response.created", "response": {"id": "resp_2"}})),
        ev(
            json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}),
        ),
        ev(
            json!({"type": "response.completed", "response": {"id": "resp_2", "status": "completed",
            "usage": {"input_tokens": 80, "output_tokens": 3}}}),
        ),
    ])
}

/// An OpenAI-compatible stream with reasoning text, then a call in pieces.
fn chat_reasoning_call(id: &str, args: &str) -> Reply {
    let c = |delta: Value, finish: Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    let mut p = vec![c(
        json!({"role": "assistant", "reasoning_content": "Chat thinks."}),
        Value::Null,
    )];
    p.push(c(
        json!({"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": "glob", "arguments": ""}}]}),
        Value::Null,
    ));
    for piece in pieces(args, 3) {
        p.push(c(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
            Value::Null,
        ));
    }
    p.push(c(json!({}), json!("tool_calls")));
    p.push("[DONE]".into());
    Reply::payloads(&p)
}

#[test]
fn switching_provider_mid_session_keeps_the_history_valid_for_each_and_resume_continues_on_the_last() {
    let openai = FakeProvider::start();
    openai.push(chat_reasoning_call("call_chat_1", r#"{"pattern":"*.txt"}"#));
    openai.push(Reply::text("Chat done."));
    let claude = FakeVendor::start(Wire::Anthropic);
    claude.push(anthropic_reply(
        Some(("Claude thinks.", "sig-claude-1")),
        "",
        &[("toolu_claude_1", "glob", r#"{"pattern":"*.md"}"#)],
    ));
    claude.push(anthropic_reply(None, "Claude done.", &[]));
    let gem = FakeVendor::start(Wire::Gemini);
    gem.push(gemini_reply(
        "Gemini thinks.",
        "sig-gem-1",
        "",
        &[("glob", json!({"pattern": "*.rs"}))],
    ));
    gem.push(gemini_reply("", "", "Gemini done.", &[]));
    let resp = FakeProvider::start();
    resp.push(responses_call("call_resp_1", r#"{"pattern":"*.toml"}"#));
    resp.push(responses_text("Responses done."));
    resp.push(responses_text("Resumed here."));
    let h = tempfile::tempdir().unwrap();
    std::fs::write(h.path().join("notes.txt"), "x").unwrap();
    write_config(h.path(), &sections(&claude, &gem, &resp));
    let input = "first\n/model claude/claude-fake-1\nsecond\n/model gem/gemini-fake-1\nthird\n\
                 /model resp/gpt-fake-r\nfourth\n";
    let out = run(
        h.path(),
        &["--base-url", &openai.base_url, "--model", "gpt-fake-1"],
        input,
    );
    let (stdout, stderr) = (s(&out.stdout), s(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    for answer in ["Chat done.", "Claude done.", "Gemini done.", "Responses done."] {
        assert!(stdout.contains(answer), "{answer} in {stdout}\n{stderr}");
    }
    assert!(stderr.contains("model set to claude/claude-fake-1"), "{stderr}");
    assert!(stderr.contains("model set to resp/gpt-fake-r"), "{stderr}");
    // Reasoning is never mixed into the answer.
    assert!(!stdout.contains("thinks."), "{stdout}");
    // Every follow-up was accepted as the strict vendors check it.
    assert_eq!(claude.rejections(), Vec::<String>::new());
    assert_eq!(gem.rejections(), Vec::<String>::new());
    assert_eq!(openai.requests().len(), 2);
    assert_eq!(resp.pending(), 1, "both responses requests were answered");

    // Anthropic: the chat call and its result paired, its own thinking back with its
    // signature on the follow-up, the chat reasoning dropped.
    let a = claude.requests();
    assert_eq!(a.len(), 2);
    assert_eq!(a[0].body["model"], "claude-fake-1");
    let first = a[0].body.to_string();
    assert!(
        first.contains("call_chat_1") && !first.contains("Chat thinks."),
        "{first}"
    );
    let follow = a[1].body.to_string();
    assert!(
        follow.contains("sig-claude-1") && follow.contains("toolu_claude_1"),
        "{follow}"
    );

    // Gemini: its functionResponse follows its functionCall, signature sent back; the
    // Anthropic signature is not.
    let g = gem.requests();
    assert_eq!(g.len(), 2);
    assert!(g[0].path.contains("gemini-fake-1"), "{}", g[0].path);
    let gf = g[1].body.to_string();
    assert!(gf.contains("sig-gem-1") && !gf.contains("sig-claude-1"), "{gf}");
    let contents = g[1].body["contents"].as_array().unwrap();
    let call_at = contents
        .iter()
        .rposition(|c| {
            c["parts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p.get("functionCall").is_some())
        })
        .unwrap();
    assert!(
        contents[call_at + 1]["parts"][0]
            .get("functionResponse")
            .is_some()
    );

    // Responses: every earlier call as function_call + function_call_output, its own
    // encrypted reasoning back on the follow-up, no other provider's reasoning.
    let r = resp.requests();
    assert_eq!(r[0].body["model"], "gpt-fake-r");
    let items = r[0].body["input"].as_array().unwrap();
    let calls = items.iter().filter(|i| i["type"] == "function_call").count();
    let outputs = items
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .count();
    assert_eq!((calls, outputs), (3, 3), "{items:?}");
    let first = r[0].body.to_string();
    for foreign in [
        "sig-gem-1",
        "Gemini thinks.",
        "sig-claude-1",
        "Claude thinks.",
        "Chat thinks.",
    ] {
        assert!(!first.contains(foreign), "{foreign} sent to another provider");
    }
    assert!(r[1].body.to_string().contains("enc-r-1"));

    // The session row names the last provider and model.
    let out = run(h.path(), &["sessions", "--json"], "");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (listed[0]["provider"].as_str(), listed[0]["model"].as_str()),
        (Some("resp"), Some("gpt-fake-r")),
        "{listed}"
    );

    // A resume continues on the last provider and model.
    let out = run(
        h.path(),
        &["-c", "-p", "fifth", "--base-url", &openai.base_url],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert!(s(&out.stdout).contains("Resumed here."), "{}", s(&out.stdout));
    let r = resp.requests();
    assert_eq!(r.len(), 3);
    assert_eq!(r[2].body["model"], "gpt-fake-r");
    let texts = r[2].body.to_string();
    assert!(
        texts.contains("fifth") && texts.contains("first"),
        "the whole history"
    );
    assert_eq!(openai.requests().len(), 2, "nothing went to the first provider");
}

#[test]
fn a_failed_switch_says_why_and_the_current_provider_stays() {
    let openai = FakeProvider::start();
    openai.push(Reply::text("Still here."));
    let h = tempfile::tempdir().unwrap();
    write_config(
        h.path(),
        "[providers.nokey]\nkind = \"anthropic\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"c\"\napi_key_env = \"UNSET_TEST_KEY\"\n",
    );
    let out = run(
        h.path(),
        &["--base-url", &openai.base_url, "--model", "gpt-fake-1"],
        "/model nokey/c\n/model anthropic/claude-x\nhello\n",
    );
    let (stdout, stderr) = (s(&out.stdout), s(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("/model nokey/c:")
            && stderr.contains("UNSET_TEST_KEY")
            && stderr.contains("still using openai/gpt-fake-1"),
        "{stderr}"
    );
    assert!(
        stderr.contains("/model anthropic/claude-x:") && stderr.contains("ANTHROPIC_API_KEY"),
        "{stderr}"
    );
    assert!(stdout.contains("Still here."));
    assert_eq!(openai.requests()[0].body["model"], "gpt-fake-1");
    // An unknown NAME/ is a model name on the current provider, as before.
    let out = run(
        h.path(),
        &["-c", "--base-url", &openai.base_url],
        "/model meta-llama/llama-3\n",
    );
    assert!(
        s(&out.stderr).contains("model set to openai/meta-llama/llama-3"),
        "{}",
        s(&out.stderr)
    );
}

#[test]
fn an_explicit_provider_flag_wins_over_the_resumed_sessions_provider() {
    let openai = FakeProvider::start();
    openai.push(Reply::text("one"));
    openai.push(Reply::text("three"));
    let resp = FakeProvider::start();
    resp.push(responses_text("two"));
    let claude = FakeVendor::start(Wire::Anthropic);
    let gem = FakeVendor::start(Wire::Gemini);
    let h = tempfile::tempdir().unwrap();
    write_config(h.path(), &sections(&claude, &gem, &resp));
    let out = run(
        h.path(),
        &["--base-url", &openai.base_url, "--model", "gpt-fake-1"],
        "hi\n/model resp/\nthere\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let out = run(
        h.path(),
        &[
            "-c",
            "-p",
            "again",
            "--provider",
            "openai",
            "--base-url",
            &openai.base_url,
            "--model",
            "gpt-fake-1",
        ],
        "",
    );
    let stderr = s(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the session used resp/gpt-fake-r; --provider wins: openai/gpt-fake-1"),
        "{stderr}"
    );
    assert_eq!(openai.requests().len(), 2);
    assert_eq!(resp.requests().len(), 1);
    // A model whose name starts with another provider's name stays on the flag's provider,
    // now and on the next resume.
    resp.push(responses_text("four"));
    resp.push(responses_text("five"));
    let out = run(
        h.path(),
        &[
            "-c",
            "-p",
            "more",
            "--provider",
            "resp",
            "--model",
            "openai/gpt-oss",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let out = run(
        h.path(),
        &["-c", "-p", "last", "--base-url", &openai.base_url],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let r = resp.requests();
    assert_eq!(r.len(), 3);
    assert_eq!(
        (r[1].body["model"].as_str(), r[2].body["model"].as_str()),
        (Some("openai/gpt-oss"), Some("openai/gpt-oss"))
    );
    assert_eq!(openai.requests().len(), 2);
}

#[test]
fn a_resume_on_another_provider_needs_no_key_for_the_configured_one() {
    let resp = FakeProvider::start();
    let claude = FakeVendor::start(Wire::Anthropic);
    claude.push(anthropic_reply(None, "First.", &[]));
    claude.push(anthropic_reply(None, "Second.", &[]));
    let gem = FakeVendor::start(Wire::Gemini);
    let h = tempfile::tempdir().unwrap();
    write_config(h.path(), &sections(&claude, &gem, &resp));
    let out = run_with(h.path(), &["-p", "hi", "--provider", "claude"], "", false);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    // The configured provider (openai) has no key here; the session's provider has one.
    let out = run_with(h.path(), &["-c", "-p", "again"], "", false);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert!(s(&out.stdout).contains("Second."));
    let reqs = claude.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].body["model"], "claude-fake-1");
    assert_eq!(claude.rejections(), Vec::<String>::new());
}

#[test]
fn resume_mid_session_switches_to_the_sessions_provider() {
    let openai = FakeProvider::start();
    let resp = FakeProvider::start();
    let claude = FakeVendor::start(Wire::Anthropic);
    claude.push(anthropic_reply(None, "First.", &[]));
    claude.push(anthropic_reply(None, "Back on Claude.", &[]));
    let gem = FakeVendor::start(Wire::Gemini);
    let h = tempfile::tempdir().unwrap();
    write_config(h.path(), &sections(&claude, &gem, &resp));
    let out = run(h.path(), &["-p", "hi", "--provider", "claude"], "");
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    let listed: Value = serde_json::from_slice(&run(h.path(), &["sessions", "--json"], "").stdout).unwrap();
    let id = listed[0]["id"].as_str().unwrap().to_string();
    // A new run on openai; `/resume` brings the Claude session back, on Claude.
    let out = run(
        h.path(),
        &["--base-url", &openai.base_url],
        &format!("/resume {}\nmore\n", &id[..8]),
    );
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert!(s(&out.stdout).contains("Back on Claude."), "{}", s(&out.stderr));
    assert!(
        s(&out.stderr).contains("model set to claude/claude-fake-1"),
        "{}",
        s(&out.stderr)
    );
    assert!(openai.requests().is_empty());
    assert_eq!(claude.rejections(), Vec::<String>::new());
}
