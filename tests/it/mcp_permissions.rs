//! MCP calls pass the permission gate like every call: a rule matches `SERVER__TOOL`, a
//! `deny` holds in `auto`, and in `ask` mode an MCP call is asked (in a scripted run:
//! refused with `NOT_APPROVED`) unless a rule allows it. Real binary, real MCP server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Stdio;

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use crate::mcp::fixture_section;

/// One `-p` turn in which the model calls `srv__hello` (the fixture answers `hello ran`);
/// the tool result the model got back, as the second request carries it.
fn call_hello(extra_config: &str, args: &[&str]) -> String {
    let h = tempfile::tempdir().unwrap();
    let cfg = h.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!("{extra_config}\n{}", fixture_section("srv", "plain", "")),
    )
    .unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("c1", "srv__hello", "{}")]));
    fake.push(Reply::text("done"));
    let out = run(h.path(), &cfg, &fake, args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let requests = fake.requests();
    assert_eq!(requests.len(), 2, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        requests[0].body.to_string().contains("srv__hello"),
        "the MCP tool was offered"
    );
    requests[1].body.to_string()
}

fn run(home: &Path, cfg: &Path, fake: &FakeProvider, args: &[&str]) -> std::process::Output {
    common::ikigai(home)
        .arg("--config")
        .arg(cfg)
        .args(["-p", "say hello", "--base-url", &fake.base_url])
        .args(args)
        .env("OPENAI_API_KEY", "sk-test")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn ask_mode_refuses_an_mcp_call_in_a_scripted_run_unless_a_rule_allows_it() {
    let refused = call_hello("", &["--approval", "ask"]);
    assert!(refused.contains("NOT_APPROVED"), "{refused}");
    assert!(!refused.contains("hello ran"), "{refused}");

    let allowed = call_hello("[permissions]\nallow = [\"srv__hello\"]", &["--approval", "ask"]);
    assert!(allowed.contains("hello ran"), "{allowed}");
    assert!(!allowed.contains("NOT_APPROVED"), "{allowed}");
}

#[test]
fn a_deny_rule_for_an_mcp_tool_holds_in_auto_mode() {
    let ran = call_hello("", &["--approval", "auto"]);
    assert!(ran.contains("hello ran"), "{ran}");
    let denied = call_hello("[permissions]\ndeny = [\"srv__*\"]", &["--approval", "auto"]);
    assert!(denied.contains("NOT_APPROVED"), "{denied}");
    assert!(!denied.contains("hello ran"), "{denied}");
}
