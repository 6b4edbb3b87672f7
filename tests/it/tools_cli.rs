//! `ikigai tool` end to end with the real binary: --list, --schema, running a tool with JSON
//! on stdin (its own result on stdout), failures as envelopes, usage errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::tools_util::*;
use serde_json::json;

const TOOLS: [&str; 8] = [
    "glob",
    "file_read",
    "grep",
    "file_write",
    "file_edit",
    "list_dir",
    "bash",
    "update_plan",
];

#[test]
fn list_shows_every_tool_with_its_first_line() {
    let d = tempfile::tempdir().unwrap();
    let out = ikigai(d.path(), &["tool", "--list"], "", None, &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), TOOLS.len(), "{text}");
    for (line, name) in lines.iter().zip(TOOLS) {
        assert!(line.starts_with(&format!("{name} ")), "{line}");
    }
    assert!(
        text.contains("glob         Find files whose path matches a glob pattern.\n"),
        "{text}"
    );
}

#[test]
fn schema_prints_the_protocol_form() {
    let d = tempfile::tempdir().unwrap();
    for name in TOOLS {
        let out = ikigai(d.path(), &["tool", name, "--schema"], "", None, &[]);
        assert_eq!(out.status.code(), Some(0));
        let v = stdout_json(&out);
        assert_eq!(v["name"], name);
        assert!(v["description"].as_str().unwrap().len() > 40);
        if name == "update_plan" {
            // Its steps are objects: it declares a full JSON Schema.
            assert_eq!(v["parameters"]["type"], "object");
            continue;
        }
        for (_, p) in v["parameters"].as_object().unwrap() {
            assert!(p["type"].is_string() && p["description"].is_string() && p["required"].is_boolean());
        }
    }
    let out = ikigai(d.path(), &["tool", "file_read", "--schema"], "", None, &[]);
    let v = stdout_json(&out);
    assert_eq!(
        v["parameters"]["path"],
        json!({"type": "string", "required": true,
               "description": "File to read, relative to the working directory or absolute."})
    );
    assert_eq!(v["parameters"]["offset"]["type"], "integer");
    assert_eq!(v["parameters"]["offset"]["required"], false);
}

#[test]
fn running_a_tool_prints_its_own_result() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "b.rs", "");
    write(d.path(), "a.rs", "");
    write(d.path(), "sub/c.rs", "");
    let out = ikigai(d.path(), &["tool", "glob"], r#"{"pattern":"*.rs"}"#, None, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout_json(&out), json!({"output": "a.rs\nb.rs", "count": 2}));
    assert!(out.stderr.is_empty());

    // An operation error is still the tool's own result: exit 0.
    let out = ikigai(d.path(), &["tool", "file_read"], r#"{"path":"nope"}"#, None, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout_json(&out), json!({"error": "File not found: nope"}));
}

#[test]
fn config_caps_and_timeouts_apply() {
    let d = tempfile::tempdir().unwrap();
    let cfg = config_file(d.path(), 2000, 1);
    let out = ikigai(
        d.path(),
        &["tool", "bash"],
        r#"{"command":"seq 1 10000"}"#,
        Some(&cfg),
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    assert_eq!(v["truncated"], true);
    assert!(v["output"].as_str().unwrap().len() <= 2000);

    let out = ikigai(
        d.path(),
        &["tool", "bash"],
        r#"{"command":"echo started; sleep 30"}"#,
        Some(&cfg),
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert_eq!(v["tool_success"], false);
    assert_eq!(v["error_code"], "TOOL_TIMEOUT");
    assert_eq!(v["partial_output"], "started\n");
}

#[test]
fn tool_failures_print_the_envelope_and_exit_1() {
    let d = tempfile::tempdir().unwrap();
    let out = ikigai(d.path(), &["tool", "glob"], "{not json", None, &[]);
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert_eq!(v["tool_success"], false);
    assert_eq!(v["error_code"], "INVALID_PARAMS");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .starts_with("arguments are not valid JSON")
    );

    let out = ikigai(d.path(), &["tool", "glob"], "[1, 2]", None, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout_json(&out)["error"]
            .as_str()
            .unwrap()
            .contains("must be a JSON object")
    );

    let out = ikigai(d.path(), &["tool", "grep"], r#"{"path":"."}"#, None, &[]);
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert_eq!(v["error_code"], "INVALID_PARAMS");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("missing required parameter `pattern`")
    );

    // Empty stdin means no arguments.
    let out = ikigai(d.path(), &["tool", "list_dir"], "", None, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout_json(&out)["count"], 0);
}

#[test]
fn usage_errors_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let out = ikigai(d.path(), &["tool", "frobnicate"], "{}", None, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "ikigai: unknown tool `frobnicate`; `ikigai tool --list` shows the tools\n",
        "said once, not `ikigai: ikigai tool: …`"
    );

    let out = ikigai(d.path(), &["tool"], "", None, &[]);
    assert_eq!(out.status.code(), Some(2));
    let out = ikigai(d.path(), &["tool", "--list", "glob"], "", None, &[]);
    assert_eq!(out.status.code(), Some(2));
}
