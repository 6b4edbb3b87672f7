//! `make install` / `make uninstall` through the real Makefile, into a DESTDIR, with the
//! test build of the binary: what lands where, that the installed binary finds a system
//! tool in its relocated `libexec/ikigai/`, and that uninstall removes what install put
//! there but keeps tools a user added.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

fn make(target: &str, destdir: &Path) -> std::process::Output {
    Command::new("make")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["-s", target, "PREFIX=/opt/ik"])
        .arg(format!("DESTDIR={}", destdir.display()))
        .arg(format!("BIN={}", env!("CARGO_BIN_EXE_ikigai")))
        .output()
        .unwrap()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// A system tool written as the README's guide says.
const HELLO: &str = r#"#!/bin/sh
if [ "$1" = --schema ]; then
  echo '{"name":"hello","description":"Says hello.","parameters":{}}'
  exit 0
fi
cat >/dev/null
echo '{"greeting":"hello from libexec"}'
"#;

#[test]
fn install_puts_everything_in_place_and_uninstall_removes_it() {
    let dest = tempfile::tempdir().unwrap();
    let out = make("install-files", dest.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let root = dest.path().join("opt/ik");
    let bin = root.join("bin/ikigai");
    assert_eq!(mode(&bin), 0o755);
    assert!(root.join("libexec/ikigai").is_dir());
    let example = root.join("share/doc/ikigai/config.example.toml");
    assert_eq!(
        std::fs::read(&example).unwrap(),
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml")).unwrap()
    );
    assert_eq!(mode(&root.join("share/doc/ikigai/examples/tools/now")), 0o755);

    // The installed binary uses the libexec/ikigai beside its own folder, with no config.
    let tool = root.join("libexec/ikigai/hello");
    std::fs::write(&tool, HELLO).unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str], stdin: &str| {
        let mut child = Command::new(&bin)
            .args(args)
            .current_dir(home.path())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", home.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let list = run(&["tool", "--list"], "");
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success(), "{}", String::from_utf8_lossy(&list.stderr));
    let line = text.lines().find(|l| l.starts_with("hello ")).expect(&text);
    assert!(line.contains(&tool.display().to_string()), "{line}");
    let ran = run(&["tool", "hello"], "{}");
    let v: serde_json::Value = serde_json::from_slice(&ran.stdout).unwrap();
    assert!(ran.status.success());
    assert_eq!(v, serde_json::json!({"greeting": "hello from libexec"}));

    // Uninstall keeps the tool a user added (and so its folder).
    let out = make("uninstall", dest.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!bin.exists());
    assert!(!root.join("share/doc/ikigai").exists());
    assert!(tool.exists());

    // Without added tools, uninstall leaves nothing of ikigai behind.
    std::fs::remove_file(&tool).unwrap();
    assert!(make("install-files", dest.path()).status.success());
    assert!(make("uninstall", dest.path()).status.success());
    assert!(!root.join("libexec/ikigai").exists());
    assert!(!bin.exists());
}
