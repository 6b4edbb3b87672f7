//! The real binary with MCP servers configured: `ikigai mcp list` / `mcp get`, `/mcp` in
//! piped mode, a server's environment (filtered like tools', secrets never reach the
//! model), and no server process (nor what it started) left after exit, SIGTERM, SIGHUP
//! or SIGKILL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::mcp::{everything_section, fixture_section};

fn write_config(home: &Path, toml_text: &str) -> std::path::PathBuf {
    let p = home.join("config.toml");
    std::fs::write(&p, toml_text).unwrap();
    p
}

fn ikigai(home: &Path, config: &Path) -> Command {
    let mut cmd = common::ikigai(home);
    cmd.arg("--config")
        .arg(config)
        .env("OPENAI_API_KEY", "sk-test-provider-key-123");
    cmd
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn mcp_list_and_get_show_status_tools_and_schemas() {
    let h = tempfile::tempdir().unwrap();
    let cfg = write_config(
        h.path(),
        &(everything_section("every")
            + &fixture_section("mute", "silent", "startup_timeout_secs = 4")
            + &fixture_section("off", "crash", "enabled = false")),
    );
    let out = ikigai(h.path(), &cfg).args(["mcp", "list"]).output().unwrap();
    let text = s(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "a server failed: {text}");
    let row = |name: &str| text.lines().find(|l| l.starts_with(name)).unwrap().to_string();
    let every = row("every ");
    assert!(
        every.contains("stdio") && every.contains("ready") && every.contains(" 13 "),
        "{text}"
    );
    assert!(row("mute ").contains("failed"), "{text}");
    assert!(text.contains("did not finish starting within 4 s"), "{text}");
    assert!(
        text.contains("stderr: fixture server starting in mode silent"),
        "{text}"
    );
    assert!(row("off ").contains("disabled"), "{text}");

    let out = ikigai(h.path(), &cfg)
        .args(["mcp", "get", "every"])
        .output()
        .unwrap();
    let text = s(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("\nevery__get-sum\n"), "{text}");
    assert!(text.contains("\"type\": \"number\""), "{text}");

    let out = ikigai(h.path(), &cfg)
        .args(["mcp", "get", "every", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "ready");
    assert!(
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "every__echo")
    );

    let out = ikigai(h.path(), &cfg)
        .args(["mcp", "get", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        s(&out.stderr).contains("no MCP server named `nope` (configured: every, mute, off)"),
        "{}",
        s(&out.stderr)
    );
}

#[test]
fn a_bad_section_names_the_file_and_the_key() {
    let h = tempfile::tempdir().unwrap();
    let cfg = write_config(h.path(), "[mcp_servers.x]\nurl = \"ftp://h\"\n");
    let out = ikigai(h.path(), &cfg).args(["mcp", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = s(&out.stderr);
    assert!(
        err.contains(cfg.to_str().unwrap()) && err.contains("`mcp_servers.x.url`"),
        "{err}"
    );
}

#[test]
fn a_servers_environment_is_filtered_and_its_secrets_never_reach_the_model() {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("c1", "envy__env", "{}")]));
    fake.push(Reply::text("done"));
    let h = tempfile::tempdir().unwrap();
    let cfg = write_config(
        h.path(),
        &fixture_section("envy", "env", "env = [\"PASSED_TOKEN\"]"),
    );
    let out = ikigai(h.path(), &cfg)
        .args(["-p", "show env", "--base-url", &fake.base_url])
        .env("PLAIN_VAR", "visible")
        .env("MY_SERVICE_TOKEN", "hidden-service-token")
        .env("PASSED_TOKEN", "passed-token-value")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", s(&out.stderr));
    let reqs = fake.requests();
    let sent = reqs[1].body.to_string();
    assert!(sent.contains("PLAIN_VAR=visible"), "{sent}");
    // Passed to the server (the name is there), but its value is scrubbed like any secret.
    assert!(sent.contains("PASSED_TOKEN="), "{sent}");
    assert!(!sent.contains("passed-token-value"), "{sent}");
    assert!(!sent.contains("MY_SERVICE_TOKEN"), "{sent}");
    assert!(
        !sent.contains("OPENAI_API_KEY") && !sent.contains("sk-test-provider-key-123"),
        "{sent}"
    );
}

#[test]
fn piped_mcp_commands_list_and_restart() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let cfg = write_config(h.path(), &fixture_section("crashy", "crash", ""));
    let mut child = ikigai(h.path(), &cfg)
        .args(["--base-url", &fake.base_url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"/mcp\n/mcp restart crashy\n/mcp restart nope\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let (text, err) = (s(&out.stdout), s(&out.stderr));
    // Answered at once, live: the server is still starting (the restart is the agent's).
    assert!(text.contains("crashy  stdio      starting"), "{text}");
    assert!(
        err.contains("MCP server `crashy` restarted: ready, 1 tools."),
        "{err}"
    );
    assert!(err.contains("no MCP server named `nope`"), "{err}");
}

/// Server pids (and the `sleep` each started in its group) from the fixture's pid file.
fn pids(file: &Path, want: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let pids: Vec<i32> = text.split_whitespace().filter_map(|p| p.parse().ok()).collect();
        if pids.len() >= want * 2 {
            return pids;
        }
        assert!(Instant::now() < deadline, "servers did not start: {text:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn assert_all_gone(pids: &[i32]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| alive(*p)) {
        assert!(
            Instant::now() < deadline,
            "still running: {:?}",
            pids.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn two_servers(h: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let pidfile = h.join("pids");
    let env = format!(
        "env = {{ MCP_FIXTURE_PIDFILE = {:?} }}",
        pidfile.display().to_string()
    );
    let cfg = write_config(
        h,
        &(fixture_section("one", "lists", &env) + &fixture_section("two", "slow", &env)),
    );
    (cfg, pidfile)
}

#[test]
fn no_server_process_survives_exit() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("hello"));
    let h = tempfile::tempdir().unwrap();
    let (cfg, pidfile) = two_servers(h.path());
    let out = ikigai(h.path(), &cfg)
        .args(["-p", "hi", "--base-url", &fake.base_url])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", s(&out.stderr));
    // The first request waited for both servers; the model saw their tools.
    let body = fake.requests()[0].body.to_string();
    assert!(
        body.contains("one__add_tool") && body.contains("two__wait"),
        "{body}"
    );
    assert_all_gone(&pids(&pidfile, 2));
}

/// ikigai with two servers, in the middle of a turn (a slow answer keeps it busy once
/// both servers are up): the process, its home, config and the servers' pids.
struct Busy {
    child: std::process::Child,
    home: tempfile::TempDir,
    cfg: std::path::PathBuf,
    pids: Vec<i32>,
    _fake: FakeProvider,
}

fn busy() -> Busy {
    let fake = FakeProvider::start();
    fake.push(Reply::text("a slow answer that takes a long time").paced(Duration::from_secs(5)));
    let home = tempfile::tempdir().unwrap();
    let (cfg, pidfile) = two_servers(home.path());
    let child = ikigai(home.path(), &cfg)
        .args(["-p", "hi", "--base-url", &fake.base_url])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pids = pids(&pidfile, 2);
    // Wait for the request, so both servers are up and the turn is in flight.
    let deadline = Instant::now() + Duration::from_secs(30);
    while fake.requests().is_empty() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    Busy {
        child,
        home,
        cfg,
        pids,
        _fake: fake,
    }
}

fn killed_by(signal: nix::sys::signal::Signal, code: i32) {
    // Bound whole: the home and the fake vendor must live until ikigai is gone.
    let mut b = busy();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(b.child.id() as i32), signal).unwrap();
    let status = b.child.wait().unwrap();
    assert_eq!(status.code(), Some(code));
    assert_all_gone(&b.pids);
}

#[test]
fn no_server_process_survives_sigterm() {
    killed_by(nix::sys::signal::Signal::SIGTERM, 143);
}

#[test]
fn no_server_process_survives_sighup() {
    killed_by(nix::sys::signal::Signal::SIGHUP, 129);
}

/// SIGKILL leaves ikigai no chance to close anything: each server's own process dies at
/// once (its death signal, armed by the launcher), and what it started in its group is
/// killed by the next ikigai to start, from the record of the running servers.
#[test]
fn no_server_process_survives_sigkill() {
    let Busy {
        mut child,
        home: h,
        cfg,
        pids,
        _fake,
    } = busy();
    let record = h
        .path()
        .join(format!(".local/share/ikigai/running/{}.json", child.id()));
    assert!(record.exists(), "the running servers are recorded");
    child.kill().unwrap();
    child.wait().unwrap();
    // Each line is "server sleep": the servers die with ikigai.
    let servers: Vec<i32> = pids.iter().step_by(2).copied().collect();
    let sleeps: Vec<i32> = pids.iter().skip(1).step_by(2).copied().collect();
    assert_all_gone(&servers);
    assert!(sleeps.iter().all(|p| alive(*p)), "left for the next start");
    // Any next start sweeps what the dead ikigai left.
    let out = ikigai(h.path(), &cfg).args(["sessions"]).output().unwrap();
    assert!(out.status.success(), "{}", s(&out.stderr));
    assert_all_gone(&sleeps);
    assert!(!record.exists(), "the dead owner's record is removed");
}

#[test]
fn mcp_calls_are_stored_and_resumed_like_any_call() {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "call_echo_1",
        "every__echo",
        r#"{"message": "remember me"}"#,
    )]));
    fake.push(Reply::text("echoed"));
    fake.push(Reply::text("still here"));
    let h = tempfile::tempdir().unwrap();
    let cfg = write_config(h.path(), &everything_section("every"));
    let run = |args: &[&str]| {
        ikigai(h.path(), &cfg)
            .args(args)
            .args(["--base-url", &fake.base_url])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&["-p", "echo something"]);
    assert!(out.status.success(), "{}", s(&out.stderr));
    let out = run(&["-c", "-p", "and now?"]);
    assert!(out.status.success(), "{}", s(&out.stderr));
    // The resumed session sends the MCP call and its result back, paired.
    let body = &fake.requests()[2].body;
    let msgs = body["messages"].as_array().unwrap();
    let call = msgs
        .iter()
        .find(|m| m["tool_calls"].is_array())
        .expect("the call");
    assert_eq!(call["tool_calls"][0]["function"]["name"], "every__echo");
    let result = msgs.iter().find(|m| m["role"] == "tool").expect("its result");
    assert_eq!(result["tool_call_id"], call["tool_calls"][0]["id"]);
    assert!(
        result["content"].as_str().unwrap().contains("Echo: remember me"),
        "{result}"
    );
}

#[test]
fn the_first_request_goes_without_a_server_that_does_not_start_and_says_so() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("answer"));
    let h = tempfile::tempdir().unwrap();
    let cfg = write_config(
        h.path(),
        &(fixture_section("mute", "silent", "startup_timeout_secs = 1")
            + &fixture_section("ok", "lists", "")),
    );
    let out = ikigai(h.path(), &cfg)
        .args(["-p", "hi", "--base-url", &fake.base_url])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", s(&out.stderr));
    assert_eq!(s(&out.stdout).trim(), "answer");
    let err = s(&out.stderr);
    assert!(
        err.contains("MCP server `mute` is unavailable: it did not finish starting within 1 s"),
        "{err}"
    );
    assert!(
        err.contains("fixture server starting in mode silent"),
        "stderr lines shown: {err}"
    );
    let body = fake.requests()[0].body.to_string();
    assert!(
        body.contains("ok__add_tool") && !body.contains("mute__"),
        "{body}"
    );
}

#[test]
fn an_http_server_gets_the_headers_and_the_bearer_token_and_a_missing_token_is_named() {
    // A loopback endpoint that records what arrives (and answers nothing MCP understands).
    let fake = FakeProvider::start();
    fake.push(Reply::status(503, "down"));
    let h = tempfile::tempdir().unwrap();
    let cfg = write_config(
        h.path(),
        &format!(
            "[mcp_servers.web]\nurl = \"{}/mcp\"\nheaders = {{ X-Team = \"platform\" }}\nbearer_token_env = \"WEB_MCP_TOKEN\"\nstartup_timeout_secs = 5\n",
            fake.base_url
        ),
    );
    let out = ikigai(h.path(), &cfg)
        .args(["mcp", "list"])
        .env("WEB_MCP_TOKEN", "tok-web-123456")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", s(&out.stdout));
    let seen = fake.requests();
    let init = seen
        .iter()
        .find(|r| r.body["method"] == "initialize")
        .expect("initialize sent");
    assert_eq!(init.path, "/v1/mcp");
    assert_eq!(init.headers["authorization"], "Bearer tok-web-123456");
    assert_eq!(init.headers["x-team"], "platform");
    assert_eq!(init.body["params"]["protocolVersion"], "2025-11-25");
    assert!(!s(&out.stdout).contains("tok-web-123456"), "{}", s(&out.stdout));

    let out = ikigai(h.path(), &cfg).args(["mcp", "list"]).output().unwrap();
    let text = s(&out.stdout);
    assert!(
        text.contains("bearer_token_env names $WEB_MCP_TOKEN, which is not set"),
        "{text}"
    );
}

/// A cloned repository's `.ikigai/config.toml` declares an MCP server: nothing of it runs
/// until the folder is trusted (`ikigai trust`); then its server is listed and started.
#[test]
fn a_project_server_starts_only_in_a_trusted_folder() {
    let h = tempfile::tempdir().unwrap();
    let project = h.path().join("repo");
    std::fs::create_dir_all(project.join(".ikigai")).unwrap();
    let ran = h.path().join("ran");
    std::fs::write(
        project.join(".ikigai/config.toml"),
        fixture_section(
            "proj",
            "lists",
            &format!(
                "env = {{ MCP_FIXTURE_PIDFILE = {:?} }}",
                ran.display().to_string()
            ),
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let mut cmd = common::ikigai(h.path());
        cmd.current_dir(&project).args(args);
        cmd.output().unwrap()
    };
    let out = run(&["mcp", "list"]);
    assert!(!s(&out.stdout).contains("proj"), "{}", s(&out.stdout));
    assert!(!ran.exists(), "an untrusted project's server was started");

    let out = run(&["trust"]);
    assert!(out.status.success(), "{}", s(&out.stderr));
    let out = run(&["mcp", "list"]);
    assert!(out.status.success(), "{}", s(&out.stderr));
    let listed = s(&out.stdout);
    assert!(listed.contains("proj") && listed.contains("ready"), "{listed}");
    assert!(ran.exists(), "the trusted project's server ran");
}
