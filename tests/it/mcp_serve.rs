//! `ikigai mcp serve` driven by clients nobody here wrote: the MCP reference client (the
//! official TypeScript SDK that the reference server installs, through
//! tests/fixtures/mcp/client.mjs; the Python SDK in `python.rs`; approvals through its
//! elicitation in `elicit.rs`) and ikigai's own MCP client (ikigai calling ikigai). The
//! turns run against the loopback fake vendor.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod elicit;
mod python;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};

/// The SDK the reference server brought with it.
fn sdk() -> PathBuf {
    let server = crate::mcp::everything();
    // …/node_modules/@modelcontextprotocol/server-everything/dist/index.js
    let modules = server.ancestors().nth(3).unwrap();
    let sdk = modules.join("sdk");
    assert!(sdk.join("package.json").exists(), "{} is missing", sdk.display());
    sdk
}

/// Runs the reference client with `calls` against `ikigai [server_args] mcp serve [serve_args]`.
fn client(home: &Path, server_args: &[&str], calls: Value) -> Value {
    let mut args: Vec<String> = server_args.iter().map(|s| s.to_string()).collect();
    args.extend(["mcp".into(), "serve".into()]);
    client_with(home, args, calls)
}

fn client_with(home: &Path, args: Vec<String>, calls: Value) -> Value {
    client_with_plan(home, args, calls, json!({}))
}

/// `client_with`, with more of the client's plan (`elicit`: its answers to elicitations).
fn client_with_plan(home: &Path, args: Vec<String>, calls: Value, more: Value) -> Value {
    let mut plan = json!({
        "command": common::binary(),
        "args": args,
        "cwd": home,
        "env": {
            "PATH": std::env::var("PATH").unwrap(),
            "HOME": home,
            "XDG_CONFIG_HOME": home.join(".config"),
            "XDG_DATA_HOME": home.join(".local/share"),
            "XDG_STATE_HOME": home.join(".local/state"),
            "OPENAI_API_KEY": "test-key",
        },
        "calls": calls,
    });
    for (k, v) in more.as_object().unwrap() {
        plan[k] = v.clone();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/client.mjs");
    let out = Command::new("node")
        .arg(script)
        .arg(sdk())
        .arg(plan.to_string())
        .current_dir(home)
        .output()
        .unwrap();
    let stdout = common::text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", common::text(&out.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn text_of(result: &Value) -> String {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn project(home: &Path) -> PathBuf {
    let p = home.join("project");
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(p.join("notes.txt"), "hello\n").unwrap();
    p
}

#[test]
fn the_reference_client_runs_a_prompt_and_continues_its_session() {
    let home = tempfile::tempdir().unwrap();
    let p = project(home.path());
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "file_read",
        r#"{"path":"notes.txt"}"#,
    )]));
    fake.push(Reply::text("It says hello."));
    fake.push(Reply::text("Still hello."));
    let out = client(
        home.path(),
        &["--base-url", &fake.base_url],
        json!([
            {"name": "ikigai", "arguments": {"prompt": "what does notes.txt say?", "cwd": p}},
            {"name": "ikigai_reply", "arguments": {"session_id": "$session", "prompt": "and now?"}},
        ]),
    );
    assert_eq!(out["tools"], json!(["ikigai", "ikigai_reply"]), "{out}");
    let first = &out["results"][0];
    assert_eq!(first["result"]["isError"], json!(false), "{first}");
    assert!(text_of(first).starts_with("It says hello."), "{first}");
    let id = first["result"]["structuredContent"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(first["result"]["structuredContent"]["tool_calls"], json!(1));
    // Progress as the turn went: the session, then the call.
    let progress: Vec<&str> = first["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(progress.iter().any(|m| m.contains(&id)), "{progress:?}");
    assert!(
        progress.iter().any(|m| m.starts_with("file_read(")),
        "{progress:?}"
    );
    // The reply continued the same session, in the same folder, with its history.
    let second = &out["results"][1];
    assert!(text_of(second).starts_with("Still hello."), "{second}");
    assert_eq!(second["result"]["structuredContent"]["session_id"], json!(id));
    let requests = fake.requests();
    let last = requests.last().unwrap().body.to_string();
    assert!(
        last.contains("what does notes.txt say?") && last.contains("and now?"),
        "{last}"
    );
    assert!(
        last.contains(&p.display().to_string()),
        "the reply ran in the project: {last}"
    );
    // Stored as any session is: the folder it ran in, listed by `ikigai sessions`.
    let listed = common::run_in(home.path(), &p, &["sessions", "--json"]);
    let listed = common::text(&listed.stdout);
    assert!(listed.contains(&id[..8]), "{listed}");
}

#[test]
fn a_server_nobody_watches_writes_nothing_unless_started_to() {
    for (mode, written) in [
        (None, false),
        (Some("ask"), true),
        (Some("read-only"), false),
        (Some("auto"), true),
    ] {
        let home = tempfile::tempdir().unwrap();
        let p = project(home.path());
        let fake = FakeProvider::start();
        fake.push(Reply::tool_calls(&[(
            "c1",
            "file_write",
            r#"{"path":"out.txt","content":"x"}"#,
        )]));
        fake.push(Reply::text("Tried."));
        let mut args: Vec<String> = ["--base-url", &fake.base_url, "mcp", "serve"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if let Some(m) = mode {
            args.extend(["--mode".to_string(), m.to_string()]);
        }
        let out = client_with(
            home.path(),
            args,
            json!([{"name": "ikigai", "arguments": {"prompt": "write out.txt", "cwd": p}}]),
        );
        assert_eq!(p.join("out.txt").exists(), written, "mode {mode:?}: {out}");
        assert!(text_of(&out["results"][0]).starts_with("Tried."), "{out}");
    }
}

#[test]
fn bad_calls_get_clear_errors_and_the_server_stays_up() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::text("Fine."));
    let out = client(
        home.path(),
        &["--base-url", &fake.base_url],
        json!([
            {"name": "ikigai", "arguments": {}},
            {"name": "ikigai", "arguments": {"prompt": "hi", "cwd": "relative/dir"}},
            {"name": "ikigai", "arguments": {"prompt": "hi", "cwd": "/no/such/folder"}},
            {"name": "ikigai_reply", "arguments": {"session_id": "nosuchid", "prompt": "hi"}},
            {"name": "nope", "arguments": {}},
            {"name": "ikigai", "arguments": {"prompt": "hi", "cwd": home.path()}},
            {"name": "ikigai", "arguments": {"prompt": "the vendor has no answer left", "cwd": home.path()}},
        ]),
    );
    let r = out["results"].as_array().unwrap();
    let said = |i: usize| r[i].to_string();
    assert!(said(0).contains("`prompt` is required"), "{}", said(0));
    assert!(said(1).contains("absolute"), "{}", said(1));
    assert!(
        said(2).contains("/no/such/folder") && r[2]["result"]["isError"] == json!(true),
        "{}",
        said(2)
    );
    assert!(
        said(3).contains("no stored session") && r[3]["result"]["isError"] == json!(true),
        "{}",
        said(3)
    );
    assert!(said(4).contains("no tool named"), "{}", said(4));
    assert!(text_of(&r[5]).starts_with("Fine."), "{}", said(5));
    // A turn the vendor fails ends as an error result that says why, not a dead server.
    assert_eq!(r[6]["result"]["isError"], json!(true), "{}", said(6));
    assert!(
        text_of(&r[6]).len() > "ikigai ended with exit code 1: ".len(),
        "{}",
        said(6)
    );
}

#[test]
fn a_cancelled_call_interrupts_its_turn() {
    let home = tempfile::tempdir().unwrap();
    let p = project(home.path());
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("c1", "bash", r#"{"command":"sleep 60"}"#)]));
    fake.push(Reply::text("Resumed."));
    // `auto`: the command runs (read-only mode would refuse it at once).
    let out = client_with(
        home.path(),
        ["--base-url", &fake.base_url, "mcp", "serve", "--mode", "auto"]
            .map(String::from)
            .to_vec(),
        json!([
            {"name": "ikigai", "arguments": {"prompt": "wait", "cwd": p}, "cancelOnProgress": "bash("},
        ]),
    );
    // The reference client's abort is its error; the session id came with the progress.
    assert!(out["results"][0]["error"].as_str().is_some(), "{out}");
    let progress = out["results"][0]["progress"].to_string();
    let id = progress
        .split("session ")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    // The turn ended as Ctrl-C ends one, before the server went: the interrupted call's
    // result is stored by the turn itself (a killed turn stores none).
    let export = common::run_in(home.path(), &p, &["export", &id, "--format", "jsonl"]);
    let export = common::text(&export.stdout);
    let stored = export
        .lines()
        .any(|l| l.contains("tool_result") && l.contains("c1"));
    assert!(stored, "{export}");
    let out = client(
        home.path(),
        &["--base-url", &fake.base_url],
        json!([{"name": "ikigai_reply", "arguments": {"session_id": id, "prompt": "go on"}}]),
    );
    assert!(text_of(&out["results"][0]).starts_with("Resumed."), "{out}");
    // The model heard that its call was interrupted, not a result from a finished sleep.
    let last = fake.requests().last().unwrap().body.to_string();
    assert!(last.contains("interrupted"), "{last}");
    assert_eq!(
        fake.requests().len(),
        2,
        "the cancelled turn made no further request"
    );
}

#[test]
fn ikigai_calls_ikigai_as_an_mcp_server() {
    let home = tempfile::tempdir().unwrap();
    let p = project(home.path());
    let fake = FakeProvider::start();
    let config = home.path().join(".config/ikigai");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[mcp_servers.inner]\ncommand = {:?}\nargs = [\"--base-url\", {:?}, \"mcp\", \"serve\"]\nenv = {{ OPENAI_API_KEY = \"k\" }}\n",
            common::binary().display().to_string(),
            fake.base_url
        ),
    )
    .unwrap();
    let call = json!({"prompt": "what does notes.txt say?", "cwd": p}).to_string();
    fake.push(Reply::tool_calls(&[("c1", "inner__ikigai", &call)]));
    fake.push(Reply::text("hello, from inside"));
    fake.push(Reply::text("The inner agent says hello."));
    let out = common::run_in(
        home.path(),
        &p,
        &["--base-url", &fake.base_url, "-p", "ask the inner agent"],
    );
    let stdout = common::text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", common::text(&out.stderr));
    assert!(stdout.contains("The inner agent says hello."), "{stdout}");
    let requests = fake.requests();
    let outer_tools = requests[0].body["tools"].to_string();
    assert!(outer_tools.contains("inner__ikigai_reply"), "{outer_tools}");
    let last = requests.last().unwrap().body.to_string();
    assert!(last.contains("hello, from inside"), "{last}");
}

/// The text of call `i`'s result.
fn said_by(out: &Value, i: usize) -> String {
    text_of(&out["results"][i])
}

#[test]
fn the_built_in_tools_are_offered_behind_a_flag_and_the_permission_engine_and_sandbox_apply() {
    let home = tempfile::tempdir().unwrap();
    let p = project(home.path());
    std::fs::write(p.join("secret.txt"), "s3cr3t\n").unwrap();
    let config = home.path().join(".config/ikigai");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[permissions]\ndeny = [\"file_read(project/secret.txt)\"]\n",
    )
    .unwrap();
    let serve_with = |global: &[&str], extra: &[&str], calls: Value| {
        let mut args: Vec<String> = global.iter().map(|s| s.to_string()).collect();
        args.extend(["mcp".into(), "serve".into()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        client_with(home.path(), args, calls)
    };
    let serve = |extra: &[&str], calls: Value| serve_with(&[], extra, calls);
    let failed = |out: &Value, i: usize| out["results"][i]["result"]["isError"] == json!(true);
    // Without the flag: only the agent's own tools.
    let out = serve(&[], json!([{"name": "glob", "arguments": {"pattern": "*"}}]));
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(tools, ["ikigai", "ikigai_reply"], "{out}");
    assert!(
        out["results"][0].get("error").is_some() || failed(&out, 0),
        "{out}"
    );
    // Read-only (the default): reads run, writes and commands that write are refused.
    let out = serve(
        &["--tools"],
        json!([
            {"name": "glob", "arguments": {"pattern": "**/*.txt"}},
            {"name": "file_read", "arguments": {"path": "project/notes.txt"}},
            {"name": "file_write", "arguments": {"path": "made.txt", "content": "x"}},
            {"name": "bash", "arguments": {"command": "touch by_bash"}},
            {"name": "file_edit", "arguments": {"path": "project/notes.txt", "old_string": "hello", "new_string": "bye"}},
            {"name": "file_read", "arguments": {"path": "project/secret.txt"}},
            {"name": "web_fetch", "arguments": {"url": "https://example.com/"}},
        ]),
    );
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for want in [
        "ikigai",
        "glob",
        "grep",
        "file_read",
        "list_dir",
        "file_write",
        "file_edit",
        "bash",
    ] {
        assert!(tools.contains(&want), "{want}: {tools:?}");
    }
    assert!(!tools.contains(&"update_plan"), "{tools:?}");
    assert!(
        !failed(&out, 0) && said_by(&out, 0).contains("notes.txt"),
        "{out}"
    );
    assert!(!failed(&out, 1) && said_by(&out, 1).contains("hello"), "{out}");
    for i in [2, 3, 4, 6] {
        assert!(failed(&out, i), "{i}: {out}");
        assert!(
            said_by(&out, i).contains("read-only"),
            "{i}: {}",
            said_by(&out, i)
        );
    }
    assert!(!home.path().join("made.txt").exists() && !home.path().join("by_bash").exists());
    assert_eq!(std::fs::read_to_string(p.join("notes.txt")).unwrap(), "hello\n");
    // The deny rule holds in every mode.
    assert!(failed(&out, 5) && said_by(&out, 5).contains("deny rule"), "{out}");
    assert!(!out.to_string().contains("s3cr3t"));
    // Auto: writes inside the folder run; the deny rule and the sandbox still hold
    // (outside the folder and the temporary directory, which the sandbox lets tools use).
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let escaped = outside.path().join("escaped.txt");
    let out = serve_with(
        &["--sandbox", "workspace-write"],
        &["--mode", "auto", "--tools"],
        json!([
            {"name": "file_write", "arguments": {"path": "made.txt", "content": "x"}},
            {"name": "bash", "arguments": {"command": "touch by_bash"}},
            {"name": "file_read", "arguments": {"path": "project/secret.txt"}},
            {"name": "file_write", "arguments": {"path": escaped, "content": "x"}},
            {"name": "bash", "arguments": {"command": format!("touch {}", escaped.display())}},
        ]),
    );
    assert!(!failed(&out, 0) && !failed(&out, 1), "{out}");
    assert!(home.path().join("made.txt").exists() && home.path().join("by_bash").exists());
    assert!(failed(&out, 2) && said_by(&out, 2).contains("deny rule"), "{out}");
    assert!(failed(&out, 3), "{out}");
    // A command's denied write is its own failure (exit code 1), said with the sandbox's why.
    assert!(
        said_by(&out, 4).contains("sandbox: write outside the workspace denied"),
        "{out}"
    );
    assert!(
        !escaped.exists(),
        "the sandbox kept the write inside the folder: {out}"
    );
}

/// The status line's code of one raw HTTP request to `addr`.
fn status_of(addr: &str, request: &str) -> u16 {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.write_all(request.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    conn.read_exact(&mut head).unwrap();
    common::text(&head[9..12]).parse().unwrap()
}

#[test]
fn streamable_http_on_loopback_needs_the_token_and_serves_the_reference_client() {
    use std::io::BufRead;
    let home = tempfile::tempdir().unwrap();
    let p = project(home.path());
    let fake = FakeProvider::start();
    fake.push(Reply::text("over http"));
    // Only loopback: anything else is refused before anything listens.
    let wide = common::run_in(home.path(), &p, &["mcp", "serve", "--http", "0.0.0.0:0"]);
    assert_eq!(wide.status.code(), Some(2), "{}", common::text(&wide.stderr));
    assert!(common::text(&wide.stderr).contains("loopback"));
    let mut server = common::ikigai(home.path())
        .args([
            "--base-url",
            &fake.base_url,
            "mcp",
            "serve",
            "--tools",
            "--http",
            "127.0.0.1:0",
        ])
        .env("OPENAI_API_KEY", "test-key")
        .current_dir(&p)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(server.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_string();
    let token = first
        .split("token ")
        .nth(1)
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert!(token.len() >= 32, "{first}");
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    // Without the token, or with another: 401, whatever is asked.
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let post = |auth: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{init}",
            init.len()
        )
    };
    for auth in [
        "",
        "Authorization: Bearer wrong\r\n",
        "Authorization: Basic x\r\n",
    ] {
        assert_eq!(status_of(&addr, &post(auth)), 401, "{auth:?}");
    }
    let get = format!("GET /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    assert_eq!(status_of(&addr, &get), 401);
    // With it, the reference client lists and calls tools, a turn included.
    let plan = json!({
        "url": url,
        "token": token,
        "calls": [{"name": "glob", "arguments": {"pattern": "*.txt"}},
                  {"name": "ikigai", "arguments": {"prompt": "say it"}}],
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/client.mjs");
    let out = Command::new("node")
        .arg(script)
        .arg(sdk())
        .arg(plan.to_string())
        .output()
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = server.wait().unwrap();
    let stdout = common::text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", common::text(&out.stderr));
    let v: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert!(v["tools"].as_array().unwrap().iter().any(|t| t == "glob"), "{v}");
    assert!(text_of(&v["results"][0]).contains("notes.txt"), "{v}");
    assert!(text_of(&v["results"][1]).contains("over http"), "{v}");
    assert!(status.success(), "SIGTERM ends the server cleanly: {status:?}");
}
