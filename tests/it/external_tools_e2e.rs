//! External tools end to end through the fake vendor: the real binary offers a project
//! tool (its JSON Schema intact), runs it when the model calls it, and sends the wrapped
//! result in the next request; the tool's environment holds no provider key. `/refresh`
//! (Op::RefreshTools) makes a tool added mid-session appear in the next request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use crate::common::agent::{TestAgent, config_for, notices};
use crate::common::fake_provider::{FakeProvider, Recorded, Reply};
use ikigai::protocol::{Event, Op};
use ikigai::provider::openai::OpenAiChat;
use ikigai::tools::Registry;
use ikigai::tools::discovery::DiscoverySpec;
use serde_json::{Value, json};
use tokio::sync::mpsc::unbounded_channel;

const KEY: &str = "sk-e2e-PROVIDERKEY12345678";

/// Trusts `project` (its project tools run only then), as a user would.
fn trust(home: &Path, project: &Path) {
    let out = common::ikigai(home)
        .current_dir(project)
        .arg("trust")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn tool(dir: &Path, file: &str, schema: &Value, run: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(file);
    std::fs::write(
        &p,
        format!("#!/bin/sh\nif [ \"$1\" = --schema ]; then cat <<'EOF'\n{schema}\nEOF\nexit 0; fi\n{run}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn tool_names(req: &Recorded) -> Vec<String> {
    req.body["tools"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn nested_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "options": {"type": "object", "properties": {
                "units": {"type": "string", "enum": ["metric", "imperial"]},
                "days": {"type": "array", "items": {"type": "integer"}}
            }}
        },
        "required": ["city"]
    })
}

#[test]
fn the_model_calls_an_external_tool_and_gets_its_wrapped_result() {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "call_1",
        "weather",
        r#"{"city":"Oslo","options":{"units":"metric","days":[1,2]}}"#,
    )]));
    fake.push(Reply::text("It is mild."));
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    let schema =
        json!({"name": "weather", "description": "Weather for a city.", "parameters": nested_schema()});
    // Echoes its arguments and whether any provider key reached it; chatters on stderr.
    tool(
        &project.join(".ikigai/tools"),
        "weather",
        &schema,
        "args=$(cat); echo 'debug noise' >&2; \
         printf '{\"forecast\":\"mild\",\"args\":%s,\"key\":\"%s%s\"}' \"$args\" \"$OPENAI_API_KEY\" \"$ANTHROPIC_API_KEY\"",
    );
    trust(home.path(), &project);
    let mut cmd = common::ikigai(home.path());
    cmd.current_dir(&project)
        .args(["-p", "weather in Oslo?", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", KEY)
        .env("ANTHROPIC_API_KEY", KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2);
    // The first request offers the tool with its JSON Schema exactly as declared.
    let offered = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "weather")
        .cloned()
        .expect("weather offered");
    assert_eq!(offered["function"]["parameters"], nested_schema());
    assert_eq!(offered["function"]["description"], "Weather for a city.");
    // The second carries the wrapped result.
    let tool_msg = reqs[1]
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    let envelope: Value = serde_json::from_str(tool_msg["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        envelope,
        json!({"tool_success": true, "result": {
            "forecast": "mild",
            "args": {"city": "Oslo", "options": {"units": "metric", "days": [1, 2]}},
            "key": ""
        }})
    );
    assert!(
        !tool_msg.to_string().contains("debug noise"),
        "stderr is never sent"
    );
    assert!(stdout.contains("It is mild."), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("debug noise"), "{stderr}");

    // --verbose shows the tool's stderr (on ikigai's stderr, still not to the model).
    fake.push(Reply::tool_calls(&[("call_1", "weather", r#"{"city":"Oslo"}"#)]));
    fake.push(Reply::text("Still mild."));
    let mut cmd = common::ikigai(home.path());
    cmd.current_dir(&project)
        .args(["-p", "again", "--verbose", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", KEY)
        .stdin(Stdio::null());
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(stderr.contains("stderr: debug noise"), "{stderr}");
    let last = fake.requests().pop().unwrap();
    assert!(!serde_json::to_string(&last.body).unwrap().contains("debug noise"));
}

#[tokio::test]
async fn refresh_makes_a_new_tool_appear_in_the_next_request() {
    let fake = FakeProvider::start();
    fake.push(Reply::text("one"));
    fake.push(Reply::text("two"));
    let dir = tempfile::tempdir().unwrap();
    let tools_dir = dir.path().join(".ikigai/tools");
    tool(
        &tools_dir,
        "first",
        &json!({"description": "The first tool.", "parameters": {}}),
        "echo '{}'",
    );
    let mut config = config_for(&fake);
    // Only the project folder: nothing of the machine's own tool folders.
    config.tool_dirs.system = Some(dir.path().join("no-system"));
    config.tool_dirs.user = Some(dir.path().join("no-user"));
    let registry = Registry::builtin();
    let keys = ikigai::provider::key_vars(&config);
    let mut spec = DiscoverySpec::from_config(&config, dir.path(), keys);
    // As if the folder were trusted (the store is the user's; see `trust_folders`).
    spec.project_trust = ikigai::tools::discovery::ProjectTrust::Trusted;
    registry.start_discovery(spec);
    let (tx, events) = unbounded_channel();
    let setup = ikigai::agent::AgentSetup {
        provider: Arc::new(OpenAiChat::new(&config).unwrap()),
        config,
        registry,
        sessions: None,
        cwd: dir.path().to_path_buf(),
        system_prompt: "You are a test.".into(),
        environment: String::new(),
        instructions: Vec::new(),
        skills: Default::default(),
        mode: None,
        resumed: None,
        follow_tree: true,
    };
    let mut agent = TestAgent {
        handle: ikigai::agent::spawn(setup, tx),
        events,
    };
    agent.turn("hello").await;
    let names = tool_names(&fake.requests()[0]);
    assert!(names.contains(&"first".to_string()), "{names:?}");
    assert!(!names.contains(&"second".to_string()));

    tool(
        &tools_dir,
        "second",
        &json!({"description": "Added later.", "parameters": {}}),
        "echo '{}'",
    );
    agent.send(Op::RefreshTools);
    let seen = agent
        .until(|e| matches!(e, Event::Notice { text, .. } if text.starts_with("Tools refreshed.")))
        .await;
    let n = Registry::builtin().tools().len() + 2;
    assert_eq!(
        notices(&seen).last().unwrap(),
        &format!("Tools refreshed. {n} tools available.")
    );
    agent.turn("again").await;
    let names = tool_names(&fake.requests()[1]);
    assert!(names.contains(&"second".to_string()), "{names:?}");
}

#[test]
fn ikigai_tool_lists_describes_and_runs_external_tools() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    let schema =
        json!({"name": "weather", "description": "Weather for a city.", "parameters": nested_schema()});
    let path = tool(
        &project.join(".ikigai/tools"),
        "weather",
        &schema,
        "printf '{\"got\":%s}' \"$(cat)\"",
    );
    tool(&project.join(".ikigai/tools"), "broken", &json!({}), "true");
    trust(home.path(), &project);
    let run = |args: &[&str], stdin: &str| {
        let mut cmd = common::ikigai(home.path());
        cmd.current_dir(&project)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run(&["tool", "--list"], "");
    let list = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0));
    let line = list
        .lines()
        .find(|l| l.starts_with("weather"))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(
        line.contains("Weather for a city.") && line.contains(&path.display().to_string()),
        "{line}"
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        err.contains("tool 'broken' skipped: --schema lacks `description`"),
        "{err}"
    );

    let out = run(&["tool", "weather", "--schema"], "");
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, schema);

    let out = run(&["tool", "weather"], r#"{"city":"Oslo"}"#);
    assert_eq!(out.status.code(), Some(0));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed, json!({"got": {"city": "Oslo"}}));
}

/// Runs `ikigai ARGS` in `project` with `stdin`.
fn run_in(home: &Path, project: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut child = common::ikigai(home)
        .current_dir(project)
        .env("OPENAI_API_KEY", "k")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// An external tool's arguments are checked against its schema before it runs, as the
/// built-ins' are: a missing required parameter is INVALID_PARAMS and the tool never
/// starts; a count sent as a string reaches the tool as the integer.
#[test]
fn an_external_tools_required_parameters_are_enforced() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    let ran = home.path().join("ran");
    let schema = json!({"name": "git_log", "description": "Recent commits.",
        "parameters": {"count": {"type": "integer", "description": "How many.", "required": true}}});
    tool(
        &project.join(".ikigai/tools"),
        "git_log",
        &schema,
        &format!("touch {}; printf '{{\"got\":%s}}' \"$(cat)\"", ran.display()),
    );
    trust(home.path(), &project);
    let out = run_in(home.path(), &project, &["tool", "git_log"], "{}");
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error_code"], "INVALID_PARAMS", "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("missing required parameter `count`"),
        "{v}"
    );
    assert!(!ran.exists(), "the tool did not run");
    let out = run_in(home.path(), &project, &["tool", "git_log"], r#"{"count":"3"}"#);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v, json!({"got": {"count": 3}}));
}

/// A tool file without the execute bit is listed as skipped by `ikigai tool --list`
/// (and `/tools`), saying why, instead of being ignored.
#[test]
fn a_tool_file_without_the_execute_bit_is_listed_as_skipped() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    let dir = project.join(".ikigai/tools");
    let schema = json!({"name": "weather", "description": "Weather.", "parameters": {}});
    let p = tool(&dir, "weather", &schema, "echo '{}'");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    trust(home.path(), &project);
    let out = run_in(home.path(), &project, &["tool", "--list"], "");
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tool 'weather' skipped: not executable"), "{err}");
    let out = run_in(home.path(), &project, &[], "/tools\n");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("skipped ") && l.contains("weather") && l.contains("not executable")),
        "{listed}"
    );
}
