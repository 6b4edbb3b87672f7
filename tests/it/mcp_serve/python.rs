//! `ikigai mcp serve` driven by the Python reference client (the `mcp` package from PyPI,
//! tests/fixtures/mcp/client.py, in the virtual environment scripts/fetch-mcp-servers.sh
//! makes in the test cache): a prompt with its progress, a reply in the same session, and
//! the turn's questions asked through the client's elicitation, answered accept and
//! decline.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use super::project;
use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};

/// The virtual environment's Python, with `mcp` installed.
fn python() -> PathBuf {
    let base = std::env::var_os("IKIGAI_MCP_SERVERS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|c| PathBuf::from(c).join("ikigai/mcp")))
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ikigai/mcp"));
    let p = base.join("py/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run scripts/fetch-mcp-servers.sh (make test does)",
        p.display()
    );
    p
}

/// Runs the Python client with `plan` (its command, environment and folder filled in)
/// against `ikigai ARGS`.
fn client(home: &Path, args: Vec<String>, mut plan: Value) -> Value {
    plan["command"] = json!(common::binary());
    plan["args"] = json!(args);
    plan["cwd"] = json!(home);
    plan["env"] = json!({
        "PATH": std::env::var("PATH").unwrap(),
        "HOME": home,
        "XDG_CONFIG_HOME": home.join(".config"),
        "XDG_DATA_HOME": home.join(".local/share"),
        "XDG_STATE_HOME": home.join(".local/state"),
        "OPENAI_API_KEY": "test-key",
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/client.py");
    let out = Command::new(python())
        .arg(script)
        .arg(plan.to_string())
        .current_dir(home)
        .output()
        .unwrap();
    let stdout = common::text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", common::text(&out.stderr));
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn the_python_reference_client_runs_a_prompt_is_asked_through_elicitation_and_replies() {
    let home = tempfile::tempdir().unwrap();
    let p = project(home.path());
    let fake = FakeProvider::start();
    let bash = |c: &str| json!({ "command": c }).to_string();
    fake.push(Reply::tool_calls(&[("c1", "bash", &bash("touch one"))]));
    fake.push(Reply::tool_calls(&[("c2", "bash", &bash("touch two"))]));
    fake.push(Reply::text("Made one."));
    fake.push(Reply::text("Still one."));
    let args = ["--base-url", &fake.base_url, "mcp", "serve", "--mode", "ask"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let plan = json!({
        "elicit": ["accept", "decline"],
        "calls": [
            {"name": "ikigai", "arguments": {"prompt": "make files", "cwd": p}},
            {"name": "ikigai_reply", "arguments": {"session_id": "$session", "prompt": "and now?"}},
        ],
    });
    let out = client(home.path(), args, plan);
    assert!(out["protocol"].as_str().is_some_and(|v| !v.is_empty()), "{out}");
    assert_eq!(out["tools"], json!(["ikigai", "ikigai_reply"]), "{out}");
    let first = &out["results"][0];
    assert_eq!(first["is_error"], false, "{first}");
    assert!(
        first["text"].as_str().unwrap().starts_with("Made one."),
        "{first}"
    );
    let id = first["structured"]["session_id"].as_str().unwrap().to_string();
    assert_eq!(first["structured"]["tool_calls"], 2, "{first}");
    let progress = first["progress"].to_string();
    assert!(
        progress.contains(&id) && progress.contains("touch one"),
        "{progress}"
    );
    // Asked twice, in the order the calls came; accepted ran, declined did not.
    let asked = out["elicitations"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{out}");
    assert!(asked[0].as_str().unwrap().contains("touch one"), "{out}");
    assert!(asked[1].as_str().unwrap().contains("touch two"), "{out}");
    assert!(p.join("one").exists() && !p.join("two").exists());
    let second = &out["results"][1];
    assert!(
        second["text"].as_str().unwrap().starts_with("Still one."),
        "{second}"
    );
    assert_eq!(second["structured"]["session_id"], json!(id));
    let last = fake.requests().last().unwrap().body.to_string();
    assert!(last.contains("make files") && last.contains("and now?"), "{last}");
}
