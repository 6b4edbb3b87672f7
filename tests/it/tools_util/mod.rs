//! Helpers shared by the tools_* integration tests: a tool context in a temp dir, running a
//! built-in tool through the registry, running the real `ikigai` binary, and process checks.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use crate::common::env;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ikigai::tools::{Executed, Registry, ToolContext};
use serde_json::Value;

pub const MIB: usize = 1024 * 1024;

pub fn ctx(dir: &Path) -> ToolContext {
    ToolContext::new(dir.to_path_buf(), MIB, Duration::from_secs(60))
}

/// Runs a built-in tool exactly as the agent does.
pub async fn run(name: &str, args: Value, ctx: &ToolContext) -> Executed {
    Registry::builtin().execute(name, &args.to_string(), ctx).await
}

/// The tool's own result from a successful envelope.
pub fn result(e: &Executed) -> &Value {
    assert!(e.envelope.tool_success, "tool failed: {}", e.envelope);
    e.envelope.result.as_ref().expect("a result")
}

/// The `output` string of a result.
pub fn output(e: &Executed) -> String {
    let r = result(e);
    assert!(r.get("error").is_none(), "operation failed: {r}");
    r["output"].as_str().expect("output is a string").to_string()
}

/// The `{"error": …}` message of an operation failure.
pub fn op_error(e: &Executed) -> String {
    assert!(!e.success, "expected an operation error: {}", e.envelope);
    result(e)["error"]
        .as_str()
        .expect("error is a string")
        .to_string()
}

/// The envelope of a tool failure, checking its code.
pub fn tool_failure(e: &Executed, code: &str) -> String {
    assert_eq!(
        e.envelope.to_value()["tool_success"],
        false,
        "expected a tool failure: {}",
        e.envelope
    );
    assert_eq!(e.envelope.to_value()["error_code"], code, "{}", e.envelope);
    e.envelope.to_value()["error"].as_str().unwrap().to_string()
}

pub fn write(dir: &Path, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, content).unwrap();
    p
}

/// A config file for the binary: small caps so tests stay fast.
pub fn config_file(dir: &Path, max_output_size: usize, timeout_secs: u64) -> PathBuf {
    let p = dir.join("ikigai-test-config.toml");
    std::fs::write(
        &p,
        format!("max_output_size = {max_output_size}\ntool_timeout_secs = {timeout_secs}\n"),
    )
    .unwrap();
    p
}

/// Runs `ikigai ARGS` in `cwd` with `stdin`, an isolated config, and optionally as another user
/// (a prefix such as `["runuser", "-u", "nobody", "--"]`).
pub fn ikigai(cwd: &Path, args: &[&str], stdin: &str, config: Option<&Path>, as_user: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_ikigai");
    let mut cmd = if as_user.is_empty() {
        Command::new(bin)
    } else {
        let mut c = Command::new(as_user[0]);
        c.args(&as_user[1..]).arg(bin);
        c
    };
    env::isolate(&mut cmd, cwd);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match config {
        Some(c) => cmd.env("IKIGAI_CONFIG", c),
        None => cmd.env_remove("IKIGAI_CONFIG"),
    };
    let mut child = cmd.spawn().expect("spawn ikigai");
    // The process may exit without reading its stdin (usage errors).
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    child.wait_with_output().unwrap()
}

pub fn stdout_json(out: &Output) -> Value {
    let s = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(s.trim()).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {s}"))
}

pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the effective user.
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// True when the process no longer runs: gone, or a zombie nobody has reaped yet.
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            // The state follows the parenthesised command name.
            let state = stat.rsplit(')').next().unwrap_or("").trim_start().chars().next();
            state == Some('Z') || state == Some('X')
        }
    }
}

/// Waits (generously) for a condition that should become true promptly.
pub fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

/// A temp dir other users can enter (tempdir makes 0700 dirs).
pub fn shared_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}
