//! The OS sandbox (issue 20 §4) against the real binary and the kernel's real Landlock and
//! seccomp: a write outside the workspace denied while one inside succeeds, `read-only`,
//! a TCP connect to a listener on 127.0.0.1 denied while a Unix socket works, the refusal
//! when the kernel cannot enforce it, `ikigai sandbox -- …`, and the sandbox named in a
//! tool's result. Everything lives under the build's own temporary folder (not /tmp, which
//! the sandbox may write), with ikigai's TMPDIR pointed at a folder of the test's. The
//! tests run as root here: Landlock and seccomp hold for root too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::json;

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};

mod files;
mod metadata;
mod secrets;
mod terminal;

/// A test's folders: `ws` (ikigai's working directory and HOME), `tmp` (its TMPDIR) and
/// `out` (outside both).
struct Place {
    _root: tempfile::TempDir,
    ws: PathBuf,
    tmp: PathBuf,
    out: PathBuf,
}

fn place() -> Place {
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let base = root.path().canonicalize().unwrap();
    let (ws, tmp, out) = (base.join("ws"), base.join("tmp"), base.join("outside"));
    for d in [&ws, &tmp, &out] {
        std::fs::create_dir_all(d).unwrap();
    }
    Place {
        _root: root,
        ws,
        tmp,
        out,
    }
}

impl Place {
    fn config(&self, text: &str) {
        let dir = self.ws.join(".config/ikigai");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), text).unwrap();
    }

    fn ikigai(&self) -> Command {
        let mut cmd = common::ikigai(&self.ws);
        cmd.env("TMPDIR", &self.tmp).stdin(Stdio::null());
        cmd
    }

    /// `ikigai sandbox ARGS…`.
    fn sandbox(&self, args: &[&str]) -> Output {
        self.ikigai().arg("sandbox").args(args).output().unwrap()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Whether `s` holds the error of a write the sandbox refused: Landlock's "Permission
/// denied", or "Read-only file system" from the private mount table (where this system
/// allows one).
fn refused_write(s: &str) -> bool {
    s.contains("Permission denied") || s.contains("Read-only file system")
}

/// Gives `dir` and everything in it to `uid` (a test run as an ordinary user).
fn chown_tree(dir: &Path, uid: u32) {
    std::os::unix::fs::lchown(dir, Some(uid), Some(uid)).unwrap();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            chown_tree(&p, uid);
        } else {
            std::os::unix::fs::lchown(&p, Some(uid), Some(uid)).unwrap();
        }
    }
}

/// The tool results the model got in the request after the calls, in order.
fn tool_results(fake: &FakeProvider) -> Vec<String> {
    let reqs = fake.requests();
    let last = reqs.last().unwrap();
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn workspace_write_denies_a_write_outside_and_says_so_in_the_tool_result() {
    let p = place();
    p.config("sandbox = \"workspace-write\"\n");
    let outside = p.out.join("escaped.txt");
    let fake = FakeProvider::start();
    let write = format!(
        "echo inside > inside.txt && echo tmp > \"$TMPDIR/t.txt\" && echo out > {}",
        outside.display()
    );
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        &json!({ "command": write }).to_string(),
    )]));
    fake.push(Reply::text("done"));
    let out = p
        .ikigai()
        .args(["-p", "write", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(p.ws.join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert_eq!(std::fs::read_to_string(p.tmp.join("t.txt")).unwrap(), "tmp\n");
    assert!(!outside.exists(), "the write outside the workspace went through");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 1, "{results:?}");
    let r = &results[0];
    assert!(refused_write(r), "{r}");
    assert!(
        r.contains("sandbox: write outside the workspace denied") && r.contains("escaped.txt"),
        "{r}"
    );

    // The same call with the sandbox off writes outside: the denial above was the sandbox.
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        &json!({ "command": write }).to_string(),
    )]));
    fake.push(Reply::text("done"));
    let out = p
        .ikigai()
        .args(["-p", "write", "--sandbox", "off", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "out\n");
}

#[test]
fn in_a_scripted_run_a_call_the_sandbox_stopped_is_not_approved_to_run_outside() {
    let p = place();
    p.config("sandbox = \"workspace-write\"\n");
    let outside = p.out.join("escaped.txt");
    let fake = FakeProvider::start();
    let write = format!("echo out > {}", outside.display());
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        &json!({ "command": write }).to_string(),
    )]));
    fake.push(Reply::text("done"));
    let out = p
        .ikigai()
        .args(["--json", "-p", "write", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !outside.exists(),
        "nobody approved running it outside the sandbox"
    );
    let r: serde_json::Value = serde_json::from_str(&tool_results(&fake)[0]).unwrap();
    assert_eq!(r["error_code"], "NOT_APPROVED", "{r}");
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("sandbox: write outside the workspace denied")
            && error.contains("nobody is there")
            && error.contains("writable_roots"),
        "{r}"
    );
    assert!(
        refused_write(r["result"]["output"].as_str().unwrap()),
        "what the command printed stays: {r}"
    );
    let events: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let asked: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "approval_requested")
        .collect();
    assert_eq!(asked.len(), 1, "{events:?}");
    assert_eq!(asked[0]["outside_sandbox"], true);
    let perms: Vec<_> = events.iter().filter(|e| e["type"] == "permission").collect();
    assert_eq!(perms.len(), 2, "the call, then running it outside: {perms:?}");
    assert_eq!(perms[0]["decision"], "approved");
    assert_eq!(perms[1]["decision"], "refused");
    assert_eq!(perms[1]["by"], "unattended");
    assert_eq!(perms[1]["sandbox"], "workspace-write");
}

/// A listener on 127.0.0.1 that counts the connections it got.
fn tcp_listener() -> (std::net::TcpListener, u16) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

fn accepted(l: &std::net::TcpListener) -> usize {
    let mut n = 0;
    while let Ok((mut s, _)) = l.accept() {
        let _ = s.set_nonblocking(false);
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
        n += 1;
    }
    n
}

#[test]
fn the_network_off_blocks_a_tcp_connect_to_loopback_while_a_unix_socket_works() {
    let p = place();
    p.config("sandbox = \"workspace-write\"\n");
    let (tcp, port) = tcp_listener();
    let sock = p.ws.join("s.sock");
    let unix = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = unix.accept().unwrap();
        let mut buf = String::new();
        s.read_to_string(&mut buf).unwrap();
        buf
    });
    let script = format!(
        "import socket\n\
         u = socket.socket(socket.AF_UNIX); u.connect({sock:?}); u.sendall(b'over unix'); u.close(); print('unix ok')\n\
         try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5); print('tcp connected')\n\
         except OSError as e:\n    print('tcp refused:', e)\n",
        sock = sock.display().to_string()
    );
    let out = p.sandbox(&["--", "python3", "-c", &script]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("unix ok"), "{stdout}");
    assert!(
        stdout.contains("tcp refused: [Errno 1] Operation not permitted"),
        "{stdout}"
    );
    assert_eq!(server.join().unwrap(), "over unix");
    assert_eq!(accepted(&tcp), 0, "the listener got a connection");
    // bash's /dev/tcp too, and UDP: no IP socket at all.
    let out = p.sandbox(&[
        "--",
        "bash",
        "-c",
        &format!("echo x > /dev/tcp/127.0.0.1/{port}; echo x > /dev/udp/127.0.0.1/{port}; echo done"),
    ]);
    let err = text(&out.stderr);
    assert_eq!(err.matches("socket: Operation not permitted").count(), 2, "{err}");
    assert_eq!(accepted(&tcp), 0);

    // With sandbox_network = true the same connect reaches the listener.
    p.config("sandbox = \"workspace-write\"\nsandbox_network = true\n");
    let out = p.sandbox(&["--", "bash", "-c", &format!("echo x > /dev/tcp/127.0.0.1/{port}")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(accepted(&tcp), 1);
}

#[test]
fn a_denied_connection_is_named_in_the_tool_result() {
    let p = place();
    p.config("sandbox = \"workspace-write\"\n");
    let (tcp, port) = tcp_listener();
    let fake = FakeProvider::start();
    let command = format!("echo hi > /dev/tcp/127.0.0.1/{port}");
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        &json!({ "command": command }).to_string(),
    )]));
    fake.push(Reply::text("done"));
    let out = p
        .ikigai()
        .args(["-p", "connect", "--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let r = &tool_results(&fake)[0];
    assert!(r.contains("sandbox: network access denied"), "{r}");
    assert_eq!(accepted(&tcp), 0);
}

#[test]
fn read_only_allows_only_dev_null_and_a_private_temp_folder() {
    let p = place();
    let out = p.sandbox(&[
        "--mode",
        "read-only",
        "--",
        "sh",
        "-c",
        "echo x > in-workspace.txt; echo y > \"$TMPDIR/t\" && echo \"tmp $TMPDIR\"; echo z > /dev/null && echo null-ok",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        !p.ws.join("in-workspace.txt").exists(),
        "read-only wrote in the workspace"
    );
    assert!(refused_write(&stderr), "{stderr}");
    assert!(stdout.contains("null-ok"), "{stdout}");
    let private = stdout
        .lines()
        .find_map(|l| l.strip_prefix("tmp "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let private = Path::new(private);
    assert!(private.starts_with(&p.tmp) && private != p.tmp, "{stdout}");
    assert!(
        !private.exists(),
        "the private temporary folder is removed at exit"
    );
    // The shared temporary folder itself is not writable.
    let out = p.sandbox(&[
        "--mode",
        "read-only",
        "--",
        "sh",
        "-c",
        "echo x > \"$0\"",
        p.tmp.join("shared").to_str().unwrap(),
    ]);
    assert_ne!(out.status.code(), Some(0));
    assert!(!p.tmp.join("shared").exists());
}

#[test]
fn a_kernel_that_cannot_enforce_the_sandbox_is_refused_at_start() {
    let p = place();
    p.config("sandbox = \"workspace-write\"\n");
    let fake = FakeProvider::start();
    fake.push(Reply::text("should not be asked"));
    let marker = p.out.join("ran");
    for args in [
        vec![
            "-p".to_string(),
            "hi".into(),
            "--base-url".into(),
            fake.base_url.clone(),
        ],
        vec![
            "sandbox".into(),
            "--".into(),
            "touch".into(),
            marker.display().to_string(),
        ],
    ] {
        let out = p
            .ikigai()
            .args(&args)
            .env("OPENAI_API_KEY", "sk-test")
            .env("IKIGAI_SANDBOX_PRETEND_ABI", "2")
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("sandbox = \"workspace-write\" cannot be enforced here")
                && err.contains("Landlock ABI is 2")
                && err.contains("sandbox = \"off\""),
            "{err}"
        );
    }
    assert!(fake.requests().is_empty(), "ikigai started anyway");
    assert!(!marker.exists());
    // Off runs whatever the kernel; and the pretence can only lower the real ABI.
    let out = p
        .ikigai()
        .args(["sandbox", "--mode", "off", "--", "touch"])
        .arg(&marker)
        .env("IKIGAI_SANDBOX_PRETEND_ABI", "2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(marker.exists());
}

#[test]
fn the_sandbox_command_runs_one_command_and_ends_with_its_exit_code() {
    let p = place();
    // Default: off, and it says so.
    let escaped = p.out.join("default-off");
    let out = p.sandbox(&["--", "touch", escaped.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("the sandbox is off"),
        "{}",
        text(&out.stderr)
    );
    assert!(escaped.exists());
    // The configured mode, or --mode; the command's exit code comes back.
    p.config("sandbox = \"workspace-write\"\nwritable_roots = [\"~/../outside\"]\n");
    let root = p.out.join("via-root");
    let out = p.sandbox(&["--", "sh", "-c", &format!("touch {} && exit 7", root.display())]);
    assert_eq!(out.status.code(), Some(7), "{}", text(&out.stderr));
    assert!(root.exists(), "writable_roots are writable");
    let out = p.sandbox(&[
        "--mode",
        "read-only",
        "--",
        "touch",
        p.out.join("ro").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("ikigai: sandbox read-only"),
        "{}",
        text(&out.stderr)
    );
    assert!(!p.out.join("ro").exists());
    // Not even root may open ikigai's memory from inside (without the sandbox, root may).
    let peek = "exec 3< /proc/$PPID/mem && echo opened";
    let out = p.sandbox(&["--mode", "workspace-write", "--", "sh", "-c", peek]);
    assert!(
        text(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out.stderr)
    );
    assert!(!text(&out.stdout).contains("opened"));
    if nix::unistd::geteuid().is_root() {
        let out = p.sandbox(&["--mode", "off", "--", "sh", "-c", peek]);
        assert!(text(&out.stdout).contains("opened"), "{}", text(&out.stderr));
    }
    let out = p.sandbox(&["--", "no-such-command-xyz"]);
    assert_eq!(out.status.code(), Some(127));
    assert!(text(&out.stderr).contains("no-such-command-xyz"));
}

#[test]
fn bad_sandbox_settings_are_clear_errors() {
    let p = place();
    for (config, says) in [
        (
            "sandbox = \"workspace_write\"\n",
            vec![
                "workspace_write",
                "`off`, `workspace-write`, `read-only`",
                "config.toml:1:",
            ],
        ),
        (
            "sandbox_network = \"no\"\n",
            vec!["sandbox_network", "config.toml:1:"],
        ),
        (
            "sandbox = \"workspace-write\"\nwritable_roots = [\"relative\"]\n",
            vec!["writable_roots", "relative", "absolute"],
        ),
        (
            "sandbox = \"workspace-write\"\nwritable_roots = [\"/nonexistent/ikigai\"]\n",
            vec!["writable_roots", "/nonexistent/ikigai"],
        ),
    ] {
        p.config(config);
        let out = p.sandbox(&["--", "true"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{config}: {err}");
        for s in says {
            assert!(err.contains(s), "{config}: {s} not in {err}");
        }
    }
    let out = p
        .ikigai()
        .args(["--sandbox", "strict", "sandbox", "--", "true"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("workspace-write") && err.contains("read-only"),
        "{err}"
    );
}

#[test]
fn an_external_tool_runs_in_the_sandbox_too() {
    let p = place();
    p.config("sandbox = \"workspace-write\"\n");
    let tools = p.ws.join(".ikigai/tools");
    std::fs::create_dir_all(&tools).unwrap();
    let target = p.out.join("from-tool");
    let tool = tools.join("writer");
    std::fs::write(
        &tool,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --schema ]; then echo '{{\"name\":\"writer\",\"description\":\"writes\",\"parameters\":{{}}}}'; exit 0; fi\ncat >/dev/null\necho x > {} || exit 3\necho '{{\"output\":\"wrote\"}}'\n",
            target.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = p.ikigai();
    let mut child = cmd
        .args(["tool", "writer"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"{}").unwrap();
    let out = child.wait_with_output().unwrap();
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!target.exists(), "the external tool wrote outside: {all}");
    assert!(
        all.contains("sandbox: write outside the workspace denied"),
        "{all}"
    );
}

#[test]
fn a_launcher_too_old_for_the_sandbox_refuses_instead_of_running_unconfined() {
    let launcher = Path::new(env!("CARGO_BIN_EXE_ikigai-launch"));
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let marker = dir.path().join("ran");
    let policy = json!({ "sandbox": { "mode": "read-only", "writable": [] } }).to_string();
    // Earlier launchers' mode names (an older ikigai beside this launcher): refused, since
    // they would not start the tool in a session of its own.
    for old in ["__ikigai-launch-v1", "__ikigai-launch-v2"] {
        let out = Command::new(launcher)
            .args([old, &policy, "/usr/bin/touch", "touch"])
            .arg(&marker)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{old}: {}", text(&out.stderr));
        assert!(!marker.exists());
    }
    // A policy field this launcher does not know is refused as well, at either level.
    for unknown in [
        r#"{"sandbox_v9":{}}"#,
        r#"{"sandbox":{"mode":"read-only","writable":[],"newer_rule":true}}"#,
    ] {
        let out = Command::new(launcher)
            .args([ikigai::tools::launcher::MODE, unknown, "/usr/bin/touch", "touch"])
            .arg(&marker)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{unknown}: {}", text(&out.stderr));
        assert!(!marker.exists());
    }
    // The current mode with the policy: confined.
    let out = Command::new(launcher)
        .args([ikigai::tools::launcher::MODE, &policy, "/usr/bin/touch", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(!marker.exists());
}
