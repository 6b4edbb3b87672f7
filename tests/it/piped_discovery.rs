//! Piped `/tools` and `/tool NAME` wait for tool discovery: a tool that takes 0.3 s to
//! answer `--schema` is listed and described, never "no tool named …".
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

use crate::common;

#[test]
fn piped_tools_and_tool_wait_for_a_slow_schema() {
    let home = tempfile::tempdir().unwrap();
    let tools = home.path().join(".ikigai/tools");
    std::fs::create_dir_all(&tools).unwrap();
    let tool = tools.join("slowish");
    std::fs::write(
        &tool,
        "#!/bin/sh\nif [ \"$1\" = --schema ]; then sleep 0.3; \
         echo '{\"name\":\"slowish\",\"description\":\"Answers slowly.\",\"parameters\":{}}'; exit 0; fi\n\
         echo '{\"output\":\"ok\"}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut child = common::ikigai(home.path())
        .env("OPENAI_API_KEY", "k")
        .args(["--base-url", "http://127.0.0.1:1/v1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"/tools\n/tool slowish\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("slowish") && l.ends_with("Answers slowly.")),
        "{stdout}"
    );
    assert!(stdout.contains("\"name\": \"slowish\""), "{stdout}");
    assert!(!stderr.contains("no tool named"), "{stderr}");
}
