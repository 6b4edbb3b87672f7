//! `ikigai acp` from an editor's side: the real binary driven by the official TypeScript
//! SDK's client (`@agentclientprotocol/sdk`, installed by `make test` from the npm registry,
//! scripts/fetch-mcp-servers.sh; the script is tests/acp/client.mjs) against the loopback
//! fake vendor. Malformed input is written by hand (no SDK sends it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod files;

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use serde_json::{Value, json};

/// The installed SDK's entry point.
fn sdk() -> PathBuf {
    let base = std::env::var_os("IKIGAI_MCP_SERVERS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|c| PathBuf::from(c).join("ikigai/mcp")))
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ikigai/mcp"));
    let p = base.join("node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js");
    assert!(
        p.exists(),
        "{} is missing: run scripts/fetch-mcp-servers.sh (make test does)",
        p.display()
    );
    p
}

/// Runs the client script with `plan`, ikigai started by it as `ikigai --base-url URL
/// [extra] acp` in `home`; returns what it printed.
pub(crate) fn client(home: &Path, fake: &FakeProvider, extra: &[&str], plan: Value) -> Value {
    client_with_key(home, fake, extra, plan, Some("k"))
}

/// `client`, with the provider key `key`; without one the vendor is the real one (its
/// URL is never reached: the request stops at the missing key).
fn client_with_key(
    home: &Path,
    fake: &FakeProvider,
    extra: &[&str],
    plan: Value,
    key: Option<&str>,
) -> Value {
    client_with_env(home, fake, extra, plan, key, &[])
}

/// `client_with_key`, with more variables in ikigai's environment.
fn client_with_env(
    home: &Path,
    fake: &FakeProvider,
    extra: &[&str],
    mut plan: Value,
    key: Option<&str>,
    envs: &[(&str, &str)],
) -> Value {
    let mut command = vec![common::binary().display().to_string()];
    if key.is_some() {
        command.extend(["--base-url".to_string(), fake.base_url.clone()]);
    }
    command.extend(extra.iter().map(|s| s.to_string()));
    command.push("acp".into());
    plan["command"] = json!(command);
    plan["cwd"] = json!(home);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp/client.mjs");
    let mut cmd = Command::new("node");
    common::env::isolate(&mut cmd, home);
    if let Some(k) = key {
        cmd.env("OPENAI_API_KEY", k);
    }
    cmd.envs(envs.iter().copied());
    let mut child = cmd
        .arg(script)
        .arg(plan.to_string())
        .env("ACP_SDK", sdk())
        .current_dir(home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the ACP client did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = common::text(&out.stdout);
    let stderr = common::text(&out.stderr);
    assert!(out.status.success(), "client failed: {stdout}\n{stderr}");
    let v: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    assert_eq!(
        v["exit"]["code"], 0,
        "ikigai acp exits cleanly when the editor closes it: {stderr}"
    );
    v
}

fn updates<'a>(out: &'a Value, kind: &str) -> Vec<&'a Value> {
    out["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

fn said(out: &Value, kind: &str) -> String {
    updates(out, kind)
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap_or(""))
        .collect()
}

fn step(out: &Value, i: usize) -> &Value {
    &out["steps"][i]
}

#[test]
fn a_prompt_with_tool_calls_asks_the_editor_reject_then_allow_and_ends_the_turn() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let bash = |c: &str| json!({ "command": c }).to_string();
    fake.push(Reply::tool_calls(&[("c1", "bash", &bash("touch one"))]));
    fake.push(Reply::tool_calls(&[("c2", "bash", &bash("touch two"))]));
    fake.push(Reply::text("all done"));
    let plan = json!({
        "answers": ["reject_once", "allow_once"],
        "steps": [{"do": "initialize"}, {"do": "new"}, {"do": "prompt", "text": "make files"}],
    });
    let out = client(h.path(), &fake, &[], plan);
    let init = &step(&out, 0)["result"];
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(init["agentCapabilities"]["promptCapabilities"]["image"], true);
    // Editors send their HTTP MCP servers only to an agent that says it takes them.
    assert_eq!(init["agentCapabilities"]["mcpCapabilities"]["http"], true);
    assert_eq!(init["agentCapabilities"]["mcpCapabilities"]["sse"], false);
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
        true
    );
    eprintln!(
        "initialize answered {:.1} ms after start",
        out["initialize_ms"].as_f64().unwrap()
    );
    let new = &step(&out, 1)["result"];
    assert!(new["sessionId"].as_str().is_some_and(|s| !s.is_empty()), "{new}");
    assert_eq!(
        new["modes"]["currentModeId"], "ask",
        "the editor answers: ask by default"
    );
    assert_eq!(step(&out, 2)["result"]["stopReason"], "end_turn", "{out}");
    // The rejected call did not run; the allowed one did.
    assert!(!h.path().join("one").exists());
    assert!(h.path().join("two").exists());
    let asked = out["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{out}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "c1");
    let kinds: Vec<&str> = asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"allow_once") && kinds.contains(&"reject_once"),
        "{kinds:?}"
    );
    let calls = updates(&out, "tool_call");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["kind"], "execute");
    assert_eq!(calls[0]["title"], "bash: touch one");
    let done = updates(&out, "tool_call_update");
    let status = |id: &str| -> Vec<String> {
        done.iter()
            .filter(|u| u["toolCallId"] == id)
            .filter_map(|u| u["status"].as_str().map(String::from))
            .collect()
    };
    assert_eq!(
        status("c1").last().map(String::as_str),
        Some("failed"),
        "{done:?}"
    );
    assert_eq!(
        status("c2").last().map(String::as_str),
        Some("completed"),
        "{done:?}"
    );
    assert!(status("c2").contains(&"in_progress".to_string()), "{done:?}");
    assert_eq!(said(&out, "agent_message_chunk"), "all done");
}

#[test]
fn allow_always_is_remembered_as_the_tuis_a_and_the_next_call_runs_without_asking() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let bash = |c: &str| json!({ "command": c }).to_string();
    fake.push(Reply::tool_calls(&[("c1", "bash", &bash("touch one"))]));
    fake.push(Reply::tool_calls(&[("c2", "bash", &bash("touch two"))]));
    fake.push(Reply::text("ok"));
    let plan = json!({
        "answers": ["allow_always"],
        "steps": [{"do": "initialize"}, {"do": "new"}, {"do": "prompt", "text": "go"}],
    });
    let out = client(h.path(), &fake, &[], plan);
    assert_eq!(step(&out, 2)["result"]["stopReason"], "end_turn", "{out}");
    assert_eq!(
        out["permissions"].as_array().unwrap().len(),
        1,
        "asked once: {out}"
    );
    assert!(h.path().join("one").exists() && h.path().join("two").exists());
    // Remembered where `/permissions` lists it: a later run sees the rule.
    let listed = common::run_in(h.path(), h.path(), &["permissions", "list"]);
    assert!(
        common::text(&listed.stdout).contains("bash(touch"),
        "{}",
        common::text(&listed.stdout)
    );
}

#[test]
fn an_edit_arrives_as_a_diff_with_old_and_new_text_and_modes_switch_from_the_editor() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    std::fs::write(h.path().join("a.txt"), "one\ntwo\n").unwrap();
    let edit = json!({"path": "a.txt", "old_string": "two", "new_string": "2"}).to_string();
    fake.push(Reply::tool_calls(&[("e1", "file_edit", &edit)]));
    fake.push(Reply::text("edited"));
    let plan = json!({
        "steps": [{"do": "initialize"}, {"do": "new"}, {"do": "set_mode", "mode": "auto"},
                  {"do": "prompt", "text": "edit it"}],
    });
    let out = client(h.path(), &fake, &[], plan);
    assert!(step(&out, 2).get("error").is_none(), "{out}");
    assert_eq!(step(&out, 3)["result"]["stopReason"], "end_turn", "{out}");
    assert!(
        out["permissions"].as_array().unwrap().is_empty(),
        "auto does not ask"
    );
    assert_eq!(
        std::fs::read_to_string(h.path().join("a.txt")).unwrap(),
        "one\n2\n"
    );
    let call = updates(&out, "tool_call")[0];
    assert_eq!(call["kind"], "edit");
    let path = h.path().join("a.txt").display().to_string();
    assert_eq!(call["locations"][0]["path"], path.as_str());
    // Announced as it runs: the replaced text and its replacement (by the time an editor
    // could read the file, the edit may have run).
    let diff = &call["content"][0];
    assert_eq!(diff["type"], "diff", "{call}");
    assert_eq!(diff["path"], path.as_str());
    assert_eq!(diff["oldText"], "two");
    assert_eq!(diff["newText"], "2");
}

#[test]
fn an_edit_the_editor_is_asked_about_shows_the_whole_file_before_and_after() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    // Outside the working folder: ask mode asks before the edit.
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("b.txt");
    std::fs::write(&file, "x\ny\n").unwrap();
    let edit = json!({"path": file, "old_string": "y", "new_string": "z"}).to_string();
    fake.push(Reply::tool_calls(&[("e1", "file_edit", &edit)]));
    fake.push(Reply::text("edited"));
    let plan = json!({
        "answers": ["allow_once"],
        "steps": [{"do": "initialize"}, {"do": "new"}, {"do": "prompt", "text": "edit it"}],
    });
    let out = client(h.path(), &fake, &[], plan);
    assert_eq!(step(&out, 2)["result"]["stopReason"], "end_turn", "{out}");
    let asked = out["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{out}");
    let diff = &asked[0]["toolCall"]["content"][0];
    assert_eq!(diff["type"], "diff", "{out}");
    assert_eq!(diff["oldText"], "x\ny\n");
    assert_eq!(diff["newText"], "x\nz\n");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x\nz\n");
}

#[test]
fn cancel_stops_the_turn_and_the_prompt_ends_cancelled() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    fake.push(Reply::text("first second third"));
    fake.hold_before("second");
    fake.push(Reply::text("after"));
    let plan = json!({
        "steps": [{"do": "initialize"}, {"do": "new"},
                  {"do": "prompt", "text": "talk", "cancel_after_chunk": true},
                  {"do": "prompt", "text": "again"}],
    });
    let out = client(h.path(), &fake, &[], plan);
    fake.release();
    assert_eq!(step(&out, 2)["result"]["stopReason"], "cancelled", "{out}");
    assert!(!said(&out, "agent_message_chunk").contains("second"));
    // The session goes on after a cancelled turn.
    assert_eq!(step(&out, 3)["result"]["stopReason"], "end_turn", "{out}");
}

#[test]
fn a_provider_error_answers_the_prompt_with_an_error_and_the_agent_stays_up() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    fake.push(Reply::status(400, r#"{"error":{"message":"model exploded"}}"#));
    fake.push(Reply::text("fine now"));
    let plan = json!({
        "steps": [{"do": "initialize"}, {"do": "new"},
                  {"do": "prompt", "text": "one"}, {"do": "prompt", "text": "two"}],
    });
    let out = client(h.path(), &fake, &[], plan);
    let err = &step(&out, 2)["error"];
    assert!(err.is_object(), "{out}");
    assert!(err.to_string().contains("model exploded"), "{err}");
    assert_eq!(step(&out, 3)["result"]["stopReason"], "end_turn", "{out}");
    assert!(said(&out, "agent_message_chunk").contains("fine now"));
}

#[test]
fn the_tool_turn_limit_ends_the_prompt_with_max_turn_requests() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let glob = json!({"pattern": "*"}).to_string();
    fake.push(Reply::tool_calls(&[("g1", "glob", &glob)]));
    fake.push(Reply::tool_calls(&[("g2", "glob", &glob)]));
    fake.push(Reply::text("never"));
    let plan = json!({"steps": [{"do": "initialize"}, {"do": "new"}, {"do": "prompt", "text": "look"}]});
    let out = client(h.path(), &fake, &["--max-tool-turns", "1"], plan);
    assert_eq!(
        step(&out, 2)["result"]["stopReason"],
        "max_turn_requests",
        "{out}"
    );
}

#[test]
fn a_session_made_by_p_loads_in_the_editor_and_continues_with_c_afterwards() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    fake.push(Reply::text("hello from p"));
    let mut p = common::ikigai(h.path());
    let made = p
        .args(["--base-url", &fake.base_url, "-p", "hi there", "--json"])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", common::text(&made.stderr));
    let first: Value = serde_json::from_str(common::text(&made.stdout).lines().next().unwrap()).unwrap();
    let id = first["id"].as_str().unwrap().to_string();
    fake.push(Reply::text("second answer"));
    let plan = json!({
        "steps": [{"do": "initialize"}, {"do": "list"}, {"do": "load", "id": id},
                  {"do": "prompt", "text": "and more"}],
    });
    let out = client(h.path(), &fake, &[], plan);
    let listed = step(&out, 1)["result"]["sessions"].as_array().unwrap().clone();
    assert!(listed.iter().any(|s| s["sessionId"] == id.as_str()), "{listed:?}");
    assert!(step(&out, 2).get("error").is_none(), "{out}");
    // The history replayed before the load answered.
    let before_load = step(&out, 2)["updates_so_far"].as_u64().unwrap() as usize;
    let replay = &out["updates"].as_array().unwrap()[..before_load];
    assert!(
        replay
            .iter()
            .any(|u| u["sessionUpdate"] == "user_message_chunk" && u["content"]["text"] == "hi there"),
        "{replay:?}"
    );
    assert!(
        replay
            .iter()
            .any(|u| u["sessionUpdate"] == "agent_message_chunk" && u["content"]["text"] == "hello from p"),
        "{replay:?}"
    );
    assert_eq!(step(&out, 3)["result"]["stopReason"], "end_turn", "{out}");
    // The editor's turn went to the model with the earlier conversation ...
    let sent = fake.requests().last().unwrap().body.to_string();
    assert!(
        sent.contains("hello from p") && sent.contains("and more"),
        "{sent}"
    );
    // ... and `ikigai -c` continues where the editor left it.
    fake.push(Reply::text("third"));
    let cont = common::ikigai(h.path())
        .args(["--base-url", &fake.base_url, "-c", "-p", "last"])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(cont.status.success(), "{}", common::text(&cont.stderr));
    let sent = fake.requests().last().unwrap().body.to_string();
    assert!(
        sent.contains("second answer") && sent.contains("and more"),
        "{sent}"
    );
}

/// Reads JSON lines from the agent until one has `id`; every line must be JSON-RPC.
fn answer_to(lines: &mut impl Iterator<Item = std::io::Result<String>>, id: Value) -> Value {
    for line in lines {
        let line = line.unwrap();
        let v: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        if v.get("id") == Some(&id) && v.get("method").is_none() {
            return v;
        }
    }
    panic!("no answer to {id}");
}

#[test]
fn malformed_messages_get_error_answers_and_the_agent_stays_up() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let mut child = common::ikigai(h.path())
        .args(["--base-url", &fake.base_url, "acp"])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let send = |stdin: &mut std::process::ChildStdin, text: &str| {
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    send(
        &mut stdin,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}"#,
    );
    assert!(answer_to(&mut lines, json!(1))["result"].is_object());
    send(&mut stdin, "this is not json {");
    let parse = answer_to(&mut lines, Value::Null);
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    for (id, bad, code) in [
        (
            2,
            r#"{"jsonrpc":"2.0","id":2,"method":"session/nothing","params":{}}"#,
            -32601,
        ),
        (
            3,
            r#"{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":5}}"#,
            -32602,
        ),
        (
            4,
            r#"{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#,
            -32602,
        ),
    ] {
        send(&mut stdin, bad);
        let v = answer_to(&mut lines, json!(id));
        assert_eq!(v["error"]["code"], code, "{bad}: {v}");
    }
    // A session elsewhere is refused with the reason; the folder it serves works.
    send(
        &mut stdin,
        r#"{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#,
    );
    let v = answer_to(&mut lines, json!(5));
    assert!(v["error"].to_string().contains("serves the folder"), "{v}");
    let new = json!({"jsonrpc":"2.0","id":6,"method":"session/new",
        "params":{"cwd": h.path(), "mcpServers":[]}});
    send(&mut stdin, &new.to_string());
    let v = answer_to(&mut lines, json!(6));
    assert!(v["result"]["sessionId"].is_string(), "{v}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn an_untrusted_folders_settings_are_not_used_and_the_editor_is_told_once_why() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    std::fs::create_dir(h.path().join(".ikigai")).unwrap();
    std::fs::write(
        h.path().join(".ikigai/config.toml"),
        "[permissions]\nallow = [\"bash(touch *)\"]\n",
    )
    .unwrap();
    let bash = json!({ "command": "touch x" }).to_string();
    fake.push(Reply::tool_calls(&[("c1", "bash", &bash)]));
    fake.push(Reply::text("one"));
    fake.push(Reply::text("two"));
    let plan = json!({
        "answers": ["reject_once"],
        "steps": [{"do": "initialize"}, {"do": "new"}, {"do": "prompt", "text": "a"},
                  {"do": "prompt", "text": "b"}],
    });
    let out = client(h.path(), &fake, &[], plan);
    assert_eq!(step(&out, 3)["result"]["stopReason"], "end_turn", "{out}");
    // The project's allow rule was not loaded: the call asked.
    assert_eq!(out["permissions"].as_array().unwrap().len(), 1, "{out}");
    assert!(!h.path().join("x").exists());
    let told = said(&out, "agent_message_chunk");
    assert_eq!(told.matches("not a trusted folder").count(), 1, "{told}");
    assert!(
        told.contains("bash(touch *)") && told.contains("ikigai trust"),
        "{told}"
    );
}

#[test]
fn the_models_plan_arrives_as_a_plan_update() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let steps = json!({"steps": [{"step": "read", "status": "done"},
        {"step": "write", "status": "in_progress"}, {"step": "test", "status": "pending"}]});
    fake.push(Reply::tool_calls(&[("p1", "update_plan", &steps.to_string())]));
    fake.push(Reply::text("planned"));
    let plan = json!({"steps": [{"do": "initialize"}, {"do": "new"}, {"do": "prompt", "text": "plan"}]});
    let out = client(h.path(), &fake, &[], plan);
    assert_eq!(step(&out, 2)["result"]["stopReason"], "end_turn", "{out}");
    let plans = updates(&out, "plan");
    assert_eq!(plans.len(), 1, "{out}");
    let entries: Vec<(String, String)> = plans[0]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["content"].as_str().unwrap().into(),
                e["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want = [
        ("read", "completed"),
        ("write", "in_progress"),
        ("test", "pending"),
    ];
    assert_eq!(entries, want.map(|(a, b)| (a.to_string(), b.to_string())));
    assert_eq!(updates(&out, "tool_call")[0]["kind"], "think");
}

#[test]
fn a_missing_key_is_told_naming_the_variable_and_the_prompt_fails_with_it_not_the_process() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let plan = json!({"steps": [{"do": "initialize"}, {"do": "new"}, {"do": "prompt", "text": "hi"}]});
    let out = client_with_key(h.path(), &fake, &[], plan, None);
    let told = said(&out, "agent_message_chunk");
    assert!(told.contains("OPENAI_API_KEY"), "{out}");
    let err = &step(&out, 2)["error"];
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{out}");
    assert!(fake.requests().is_empty(), "nothing was sent without a key");
}

/// The MCP fixture server (tests/fixtures/mcp/server.py) as the editor gives it: stdio,
/// offering the tools `MCP_FIXTURE_TOOLS` names (set through the editor's `env`).
fn fixture_server(name: &str, marker: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/server.py");
    json!({"name": name, "command": "/bin/sh",
        "args": ["-c", format!("touch {} && exec python3 {} named", marker.display(), script.display())],
        "env": [{"name": "MCP_FIXTURE_TOOLS", "value": "[[\"ping\", \"answers ping\"]]"}]})
}

#[test]
fn the_editors_mcp_servers_are_not_started_in_an_untrusted_folder_and_the_editor_is_told() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let marker = h.path().join("started");
    fake.push(Reply::text("ok"));
    let plan = json!({"steps": [{"do": "initialize"},
        {"do": "new", "mcp_servers": [fixture_server("editors", &marker)]},
        {"do": "prompt", "text": "hi"}]});
    let out = client(h.path(), &fake, &[], plan);
    assert_eq!(step(&out, 2)["result"]["stopReason"], "end_turn", "{out}");
    let told = said(&out, "agent_message_chunk");
    assert!(
        told.contains("MCP servers (1: editors) are not started") && told.contains("ikigai trust"),
        "{out}"
    );
    assert!(!marker.exists(), "the editor's server was not run");
    let sent = fake.requests()[0].body.to_string();
    assert!(!sent.contains("editors__ping"), "{sent}");
}

#[test]
fn the_editors_mcp_servers_join_the_session_in_a_trusted_folder_and_refused_ones_are_told() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let trusted = common::run_in(h.path(), h.path(), &["trust"]);
    assert!(trusted.status.success(), "{}", common::text(&trusted.stderr));
    let marker = h.path().join("started");
    fake.push(Reply::tool_calls(&[("m1", "ed__ping", "{}")]));
    fake.push(Reply::text("pinged"));
    // Refused as a settings file's entry would be: the name, the URL's scheme.
    let bad_name = json!({"name": "two__parts", "command": "/bin/true", "args": [], "env": []});
    let bad_url = json!({"type": "http", "name": "web", "url": "ftp://x/", "headers": []});
    let plan = json!({
        "answers": ["allow_once"],
        "steps": [{"do": "initialize"},
            {"do": "new", "mcp_servers": [fixture_server("ed", &marker), bad_name, bad_url]},
            {"do": "prompt", "text": "ping it"}]});
    let out = client(h.path(), &fake, &[], plan);
    assert_eq!(step(&out, 2)["result"]["stopReason"], "end_turn", "{out}");
    assert!(marker.exists(), "the editor's server ran");
    // Offered to the model beside the built-ins, and called through the permission engine.
    let sent = fake.requests()[0].body.to_string();
    assert!(sent.contains("ed__ping"), "{sent}");
    let done = updates(&out, "tool_call_update");
    let last = done.iter().rfind(|u| u["toolCallId"] == "m1").unwrap();
    assert_eq!(last["status"], "completed", "{out}");
    assert!(last.to_string().contains("ping ran"), "{last}");
    assert_eq!(
        out["permissions"].as_array().unwrap().len(),
        1,
        "ask mode asked: {out}"
    );
    let told = said(&out, "agent_message_chunk");
    assert!(told.contains("mcp_servers.two__parts"), "{told}");
    assert!(told.contains("mcp_servers.web.url"), "{told}");
}

#[test]
fn the_editor_is_offered_authentication_naming_the_missing_variable_and_never_a_key() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    // Another vendor's key is set: its value must never reach the editor.
    let secret = "sk-ant-api03-notreallyasecretbutlongenough0123456789";
    let plan = json!({"steps": [{"do": "initialize"}, {"do": "authenticate", "method": "api_key"},
        {"do": "authenticate", "method": "oauth"}, {"do": "new"}, {"do": "prompt", "text": "hi"},
        {"do": "prompt", "text": "/cost"}]});
    let out = client_with_env(h.path(), &fake, &[], plan, None, &[("ANTHROPIC_API_KEY", secret)]);
    let methods = step(&out, 0)["result"]["authMethods"].as_array().unwrap().clone();
    assert_eq!(methods.len(), 1, "{out}");
    assert_eq!(methods[0]["id"], "api_key");
    assert!(
        methods[0]["description"]
            .as_str()
            .unwrap()
            .contains("OPENAI_API_KEY"),
        "{methods:?}"
    );
    // Authenticating cannot set the key: the answer names the variable.
    let auth = &step(&out, 1)["error"];
    assert_eq!(auth["code"], -32000, "auth_required: {out}");
    assert!(auth.to_string().contains("OPENAI_API_KEY"), "{auth}");
    assert_eq!(step(&out, 2)["error"]["code"], -32602, "unknown method: {out}");
    // A session opens (stored history can be read); a prompt asks for the key again.
    assert!(step(&out, 3)["result"]["sessionId"].is_string(), "{out}");
    let err = &step(&out, 4)["error"];
    assert_eq!(err["code"], -32000, "{out}");
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");
    // A command that needs no model still runs.
    assert_eq!(step(&out, 5)["result"]["stopReason"], "end_turn", "{out}");
    assert!(
        !out.to_string().contains(secret),
        "a key reached the editor: {out}"
    );
    assert!(!out.to_string().contains("notreallyasecret"), "{out}");
    assert!(fake.requests().is_empty(), "nothing was sent without a key");
    // With the key set, nothing is offered and authenticating is a no-op.
    let plan = json!({"steps": [{"do": "initialize"}, {"do": "authenticate", "method": "api_key"}]});
    let out = client(h.path(), &fake, &[], plan);
    assert_eq!(step(&out, 0)["result"]["authMethods"], json!([]), "{out}");
    assert!(step(&out, 1).get("error").is_none(), "{out}");
}

#[test]
fn a_commands_output_reaches_the_editor_while_it_runs() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    // The command waits (at most 30 s) for the file the client creates when it has seen
    // "first" in the call's live content: "second" is printed only if the output
    // streamed to the editor while the command ran.
    let go = h.path().join("go");
    let script = format!(
        "echo first; for i in $(seq 600); do [ -e {go} ] && break; sleep 0.05; done; \
         [ -e {go} ] && echo second",
        go = go.display()
    );
    let bash = json!({ "command": script }).to_string();
    fake.push(Reply::tool_calls(&[("b1", "bash", &bash)]));
    fake.push(Reply::text("ran"));
    let plan = json!({
        "touch_on_output": {"text": "first", "path": go},
        "steps": [{"do": "initialize"}, {"do": "new"}, {"do": "set_mode", "mode": "auto"},
                  {"do": "prompt", "text": "run it"}],
    });
    let out = client(h.path(), &fake, &[], plan);
    assert_eq!(step(&out, 3)["result"]["stopReason"], "end_turn", "{out}");
    assert!(go.exists(), "no live output reached the editor: {out}");
    let live: Vec<&Value> = updates(&out, "tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == "b1" && u["status"] == "in_progress" && u["content"].is_array())
        .collect();
    assert!(!live.is_empty(), "{out}");
    let finished = updates(&out, "tool_call_update")
        .into_iter()
        .rfind(|u| u["toolCallId"] == "b1")
        .unwrap();
    assert_eq!(finished["status"], "completed", "{out}");
    assert!(finished.to_string().contains("second"), "{finished}");
}

#[test]
fn slash_and_custom_commands_are_offered_to_the_editor_and_run_from_it() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let commands = h.path().join(".config/ikigai/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::write(
        commands.join("review.md"),
        "---\ndescription: review one file\narguments: FILE\n---\nPlease review $1 now.\n",
    )
    .unwrap();
    fake.push(Reply::text("reviewed"));
    let plan = json!({"steps": [{"do": "initialize"}, {"do": "new"},
        {"do": "prompt", "text": "/cost"}, {"do": "prompt", "text": "/review a.txt"},
        {"do": "prompt", "text": "/memory"}, {"do": "prompt", "text": "/resume x"},
        {"do": "prompt", "text": "/cost"}]});
    let out = client(h.path(), &fake, &[], plan);
    for i in 2..=6 {
        assert_eq!(step(&out, i)["result"]["stopReason"], "end_turn", "{i}: {out}");
    }
    let offered = updates(&out, "available_commands_update");
    assert!(!offered.is_empty(), "{out}");
    let list = offered[0]["availableCommands"].as_array().unwrap();
    let find = |n: &str| list.iter().find(|c| c["name"] == n);
    let review = find("review").unwrap_or_else(|| panic!("{list:?}"));
    assert_eq!(review["description"], "review one file");
    assert_eq!(review["input"]["hint"], "FILE");
    assert!(find("compact").is_some_and(|c| !c["description"].as_str().unwrap().is_empty()));
    assert!(find("model").is_some() && find("undo").is_some(), "{list:?}");
    assert!(find("resume").is_none() && find("exit").is_none(), "{list:?}");
    // Text of each prompt: what came between its start and its end.
    let text_of = |i: usize| -> String {
        let from = step(&out, i - 1)["updates_so_far"].as_u64().unwrap() as usize;
        let to = step(&out, i)["updates_so_far"].as_u64().unwrap() as usize;
        out["updates"].as_array().unwrap()[from..to]
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .map(|u| u["content"]["text"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(text_of(2).contains("Nothing spent yet"), "{}", text_of(2));
    // The custom command went to the model as its message; the commands did not.
    assert_eq!(fake.requests().len(), 1);
    let sent = fake.requests()[0].body.to_string();
    assert!(sent.contains("Please review a.txt now."), "{sent}");
    assert!(!sent.contains("/cost") && !sent.contains("/memory"), "{sent}");
    assert!(text_of(3).contains("reviewed"));
    assert!(text_of(4).contains("No instruction files"), "{}", text_of(4));
    assert!(
        text_of(5).contains("not available in the editor"),
        "{}",
        text_of(5)
    );
    assert!(text_of(6).contains("Session cost by model"), "{}", text_of(6));
}

#[test]
fn the_editor_chooses_the_model_among_the_usable_providers_and_the_next_request_uses_it() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let config = h.path().join(".config/ikigai");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[providers.second]\nkind = \"openai-chat\"\nbase_url = \"{url}\"\nmodel = \"second-model\"\n\
             api_key_env = \"SECOND_TEST_KEY\"\n\n\
             [providers.nokey]\nkind = \"openai-chat\"\nbase_url = \"{url}\"\nmodel = \"c\"\n\
             api_key_env = \"UNSET_TEST_KEY\"\n",
            url = fake.base_url
        ),
    )
    .unwrap();
    fake.push(Reply::text("first"));
    fake.push(Reply::text("second"));
    let plan = json!({"steps": [{"do": "initialize"}, {"do": "new"},
        {"do": "prompt", "text": "one"},
        {"do": "set_option", "id": "model", "value": "second/second-model"},
        {"do": "prompt", "text": "two"},
        {"do": "set_option", "id": "model", "value": "nokey/c"},
        {"do": "set_option", "id": "mode", "value": "read-only"},
        {"do": "set_option", "id": "mode", "value": "yolo"}]});
    let out = client_with_env(
        h.path(),
        &fake,
        &[],
        plan,
        Some("k"),
        &[("SECOND_TEST_KEY", "second-secret-key-value")],
    );
    let options = step(&out, 1)["result"]["configOptions"]
        .as_array()
        .unwrap()
        .clone();
    let model = options
        .iter()
        .find(|o| o["id"] == "model")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(model["category"], "model");
    let first = model["currentValue"].as_str().unwrap().to_string();
    assert!(first.starts_with("openai/"), "{model}");
    let values: Vec<&str> = model["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert!(values.contains(&"second/second-model"), "{values:?}");
    // A provider whose key is not set is not offered, and cannot be chosen.
    assert!(!values.iter().any(|v| v.starts_with("nokey/")), "{values:?}");
    let chosen = &step(&out, 3)["result"]["configOptions"];
    assert!(
        chosen
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["id"] == "model" && o["currentValue"] == "second/second-model"),
        "{out}"
    );
    let models: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(models.len(), 2, "{models:?}");
    assert_eq!(models[1], "second-model", "{models:?}");
    assert_ne!(models[0], "second-model");
    assert_eq!(step(&out, 5)["error"]["code"], -32602, "{out}");
    let mode = &step(&out, 6)["result"]["configOptions"];
    assert!(
        mode.as_array()
            .unwrap()
            .iter()
            .any(|o| o["id"] == "mode" && o["currentValue"] == "read-only"),
        "{out}"
    );
    assert_eq!(step(&out, 7)["error"]["code"], -32602, "{out}");
    assert!(!out.to_string().contains("second-secret-key-value"));
}
