//! The MCP client against real servers: the reference server
//! `@modelcontextprotocol/server-everything` (installed by `make test` from the npm
//! registry, scripts/fetch-mcp-servers.sh) over stdio and over Streamable HTTP, and the
//! fixture server tests/fixtures/mcp/server.py for list changes and cancellation. Calls go
//! through the registry exactly as the agent makes them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ikigai::tools::mcp::{Mcp, ServerSpec, Status, config};
use ikigai::tools::progress::Sink;
use ikigai::tools::{EnvPolicy, Executed, Registry, ToolContext};
use serde_json::Value;

/// The installed reference server's entry point.
pub fn everything() -> PathBuf {
    let base = std::env::var_os("IKIGAI_MCP_SERVERS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|c| PathBuf::from(c).join("ikigai/mcp")))
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ikigai/mcp"));
    let p = base.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        p.exists(),
        "{} is missing: run scripts/fetch-mcp-servers.sh (make test does)",
        p.display()
    );
    p
}

/// The fixture server script.
pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/server.py")
}

/// Validated specs from `[mcp_servers.…]` TOML.
pub fn specs(toml_text: &str) -> Vec<ServerSpec> {
    #[derive(serde::Deserialize)]
    struct F {
        mcp_servers: std::collections::BTreeMap<String, config::ServerSection>,
    }
    let f: F = toml::from_str(toml_text).unwrap();
    config::validate(&f.mcp_servers, Path::new("test.toml")).unwrap()
}

/// `[mcp_servers.NAME]` for the reference server over stdio.
pub fn everything_section(name: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
        everything().display().to_string()
    )
}

/// `[mcp_servers.NAME]` for the fixture in `mode`, with extra lines.
pub fn fixture_section(name: &str, mode: &str, extra: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = \"python3\"\nargs = [{:?}, {mode:?}]\n{extra}\n",
        fixture().display().to_string()
    )
}

/// A registry with the built-ins and these servers, started and settled.
pub async fn registry(toml_text: &str, cwd: &Path) -> (Registry, Mcp) {
    let (mcp, mut notices) = Mcp::new(
        specs(toml_text),
        cwd.to_path_buf(),
        Arc::new(EnvPolicy::default()),
    );
    // Notices are checked through the status; keep the channel drained.
    tokio::spawn(async move { while notices.recv().await.is_some() {} });
    let r = Registry::builtin();
    r.attach_mcp(mcp.clone());
    mcp.start_and_wait().await;
    (r, mcp)
}

pub fn ctx(cwd: &Path) -> ToolContext {
    ToolContext::new(cwd.to_path_buf(), 1 << 20, Duration::from_secs(30))
}

/// Waits (10 s at most, without blocking the runtime) until `p` holds a whole line.
pub async fn wait_for_line(p: &Path) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(t) = std::fs::read_to_string(p)
            && t.ends_with('\n')
        {
            return t;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} never appeared",
            p.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn result(e: &Executed) -> &Value {
    e.envelope.result.as_ref().unwrap_or(&Value::Null)
}

#[tokio::test]
async fn stdio_reference_server_tools_answer_through_the_registry() {
    let dir = tempfile::tempdir().unwrap();
    let (r, mcp) = registry(&everything_section("every"), dir.path()).await;
    let names: Vec<String> = r.schemas().into_iter().map(|s| s.name).collect();
    for want in [
        "glob",
        "every__echo",
        "every__get-sum",
        "every__get-structured-content",
        "every__get-tiny-image",
        "every__trigger-long-running-operation",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
    }
    // The schema is the server's, intact.
    let sum = r.get("every__get-sum").unwrap().schema();
    let js = sum.to_json_schema();
    assert_eq!(js["properties"]["a"]["type"], "number", "{js}");
    assert!(!sum.description.is_empty());

    let c = ctx(dir.path());
    let e = r.execute("every__echo", r#"{"message": "hello mcp"}"#, &c).await;
    assert!(e.success, "{e:?}");
    assert_eq!(result(&e)["output"], "Echo: hello mcp");

    let e = r.execute("every__get-sum", r#"{"a": 2, "b": 3}"#, &c).await;
    assert!(e.success, "{e:?}");
    assert!(result(&e)["output"].as_str().unwrap().contains('5'), "{e:?}");

    let e = r
        .execute("every__get-structured-content", r#"{"location": "Chicago"}"#, &c)
        .await;
    assert!(e.success, "{e:?}");
    assert_eq!(result(&e)["structured_content"]["temperature"], 36, "{e:?}");
    assert!(e.summary.contains("structured content"), "{}", e.summary);

    let e = r.execute("every__get-tiny-image", "{}", &c).await;
    assert!(e.success, "{e:?}");
    let out = result(&e)["output"].as_str().unwrap();
    assert!(out.contains("[image omitted: image/png, "), "{out}");
    assert!(!out.contains("iVBOR"), "no base64 reaches the model: {out}");

    // Arguments the server rejects are a failed call, with the server's reason.
    let e = r.execute("every__get-sum", r#"{"a": "two"}"#, &c).await;
    assert!(!e.success, "{e:?}");
    mcp.shutdown().await;
}

#[tokio::test]
async fn progress_reaches_the_calls_line_and_a_timeout_cancels_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancel.log");
    let toml_text = format!(
        "{}{}",
        everything_section("every"),
        fixture_section(
            "slow",
            "slow",
            &format!(
                "tool_timeout_secs = 1\nenv = {{ MCP_FIXTURE_CANCEL_LOG = {:?} }}",
                log.display().to_string()
            )
        )
    );
    let (r, mcp) = registry(&toml_text, dir.path()).await;
    let c = ctx(dir.path());
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let s = seen.clone();
    let sink = Sink::new(move |t| s.lock().unwrap().push(t));
    let e = sink
        .scope(r.execute(
            "every__trigger-long-running-operation",
            r#"{"duration": 1, "steps": 4}"#,
            &c,
        ))
        .await;
    assert!(e.success, "{e:?}");
    assert!(
        result(&e)["output"].as_str().unwrap().contains("completed"),
        "{e:?}"
    );
    // In order; the last may race the result (rmcp hands notifications to a task).
    let lines = seen.lock().unwrap().clone();
    let all = ["1/4 (25%)", "2/4 (50%)", "3/4 (75%)", "4/4 (100%)"];
    assert!(lines.len() >= 3 && lines[..] == all[..lines.len()], "{lines:?}");

    // tool_timeout_secs = 1: the call ends as TOOL_TIMEOUT and the server is told.
    let e = r.execute("slow__wait", "{}", &c).await;
    assert_eq!(e.envelope.to_value()["error_code"], "TOOL_TIMEOUT", "{e:?}");
    assert!(
        e.envelope.to_value()["error"]
            .as_str()
            .unwrap()
            .contains("tool_timeout_secs"),
        "{e:?}"
    );
    let text = wait_for_line(&log).await;
    assert_eq!(text, "cancelled request timeout\n");
    mcp.shutdown().await;
}

#[tokio::test]
async fn an_interrupted_call_is_cancelled_on_the_server_and_the_server_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancel.log");
    let toml_text = fixture_section(
        "slow",
        "slow",
        &format!(
            "env = {{ MCP_FIXTURE_CANCEL_LOG = {:?} }}",
            log.display().to_string()
        ),
    ) + &everything_section("every");
    let (r, mcp) = registry(&toml_text, dir.path()).await;
    let c = ctx(dir.path());
    // The user interrupts: the turn drops the call's future.
    let call = r.execute("slow__wait", "{}", &c);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), call)
            .await
            .is_err()
    );
    assert_eq!(wait_for_line(&log).await, "cancelled interrupted by the user\n");
    // A long operation interrupted mid-way leaves the reference server answering.
    let seen = Arc::new(Mutex::new(0usize));
    let s = seen.clone();
    let sink = Sink::new(move |_| *s.lock().unwrap() += 1);
    let long = sink.scope(r.execute(
        "every__trigger-long-running-operation",
        r#"{"duration": 20, "steps": 20}"#,
        &c,
    ));
    assert!(tokio::time::timeout(Duration::from_secs(5), long).await.is_err());
    assert!(
        *seen.lock().unwrap() >= 1,
        "progress arrived before the interrupt"
    );
    let e = r.execute("every__echo", r#"{"message": "still here"}"#, &c).await;
    assert_eq!(result(&e)["output"], "Echo: still here", "{e:?}");
    mcp.shutdown().await;
}

#[tokio::test]
async fn a_tools_list_change_is_offered_from_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let (r, mcp) = registry(
        &(fixture_section("lists", "lists", "") + &everything_section("every")),
        dir.path(),
    )
    .await;
    assert!(r.get("lists__extra").is_none());
    let names = |r: &Registry| r.schemas().into_iter().map(|s| s.name).collect::<Vec<_>>();
    // The reference server registers tools after `initialized` and says so.
    assert!(
        names(&r).iter().any(|n| n == "every__simulate-research-query"),
        "{:?}",
        names(&r)
    );
    let e = r.execute("lists__add_tool", "{}", &ctx(dir.path())).await;
    assert!(e.success, "{e:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !names(&r).iter().any(|n| n == "lists__extra") {
        assert!(
            std::time::Instant::now() < deadline,
            "never listed: {:?}",
            names(&r)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let e = r.execute("lists__extra", "{}", &ctx(dir.path())).await;
    assert_eq!(result(&e)["output"], "extra ran", "{e:?}");
    mcp.shutdown().await;
}

/// The reference server over Streamable HTTP on a free loopback port; killed on drop.
struct HttpServer {
    child: std::process::Child,
    port: u16,
}

impl HttpServer {
    fn start() -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("node")
            .arg(everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the HTTP server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        HttpServer { child, port }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn streamable_http_reference_server_tools_progress_and_cancellation() {
    let server = HttpServer::start();
    let dir = tempfile::tempdir().unwrap();
    let toml_text = format!(
        "[mcp_servers.web]\nurl = \"http://127.0.0.1:{}/mcp\"\nheaders = {{ X-Test = \"1\" }}\n",
        server.port
    );
    let (r, mcp) = registry(&toml_text, dir.path()).await;
    assert_eq!(mcp.list(&[])[0].status, Status::Ready, "{:?}", mcp.list(&[]));
    let c = ctx(dir.path());
    let e = r.execute("web__echo", r#"{"message": "over http"}"#, &c).await;
    assert_eq!(result(&e)["output"], "Echo: over http", "{e:?}");
    let e = r.execute("web__get-sum", r#"{"a": 40, "b": 2}"#, &c).await;
    assert!(result(&e)["output"].as_str().unwrap().contains("42"), "{e:?}");
    let e = r
        .execute("web__get-structured-content", r#"{"location": "New York"}"#, &c)
        .await;
    assert_eq!(result(&e)["structured_content"]["temperature"], 33, "{e:?}");
    let e = r.execute("web__get-tiny-image", "{}", &c).await;
    assert!(
        result(&e)["output"]
            .as_str()
            .unwrap()
            .contains("[image omitted: image/png"),
        "{e:?}"
    );
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let s = seen.clone();
    let sink = Sink::new(move |t| s.lock().unwrap().push(t));
    let e = sink
        .clone()
        .scope(r.execute(
            "web__trigger-long-running-operation",
            r#"{"duration": 1, "steps": 2}"#,
            &c,
        ))
        .await;
    assert!(e.success, "{e:?}");
    let lines = seen.lock().unwrap().clone();
    let all = ["1/2 (50%)", "2/2 (100%)"];
    assert!(!lines.is_empty() && lines[..] == all[..lines.len()], "{lines:?}");
    // Interrupted mid-way; the server keeps answering.
    let long = sink.scope(r.execute(
        "web__trigger-long-running-operation",
        r#"{"duration": 20, "steps": 20}"#,
        &c,
    ));
    assert!(
        tokio::time::timeout(Duration::from_millis(1500), long)
            .await
            .is_err()
    );
    let e = r.execute("web__echo", r#"{"message": "again"}"#, &c).await;
    assert_eq!(result(&e)["output"], "Echo: again", "{e:?}");
    mcp.shutdown().await;
}

#[tokio::test]
async fn an_http_server_that_goes_away_is_a_clear_error() {
    let server = HttpServer::start();
    let dir = tempfile::tempdir().unwrap();
    let toml_text = format!(
        "[mcp_servers.web]\nurl = \"http://127.0.0.1:{}/mcp\"\n",
        server.port
    );
    let (r, mcp) = registry(&toml_text, dir.path()).await;
    let c = ctx(dir.path());
    let e = r.execute("web__echo", r#"{"message": "up"}"#, &c).await;
    assert_eq!(result(&e)["output"], "Echo: up", "{e:?}");
    drop(server);
    let e = tokio::time::timeout(
        Duration::from_secs(30),
        r.execute("web__echo", r#"{"message": "down"}"#, &c),
    )
    .await
    .expect("no hang");
    assert!(!e.success, "{e:?}");
    let text = e.envelope.error.as_deref().unwrap();
    assert!(
        text.contains("MCP server `web`") && text.contains("/mcp restart web"),
        "{text}"
    );
    mcp.shutdown().await;
}
