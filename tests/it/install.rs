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
    // The tool launcher, outside the tool folder (it is not a tool).
    assert_eq!(mode(&root.join("libexec/ikigai-launch")), 0o755);
    assert!(root.join("libexec/ikigai").is_dir());
    let example = root.join("share/doc/ikigai/config.example.toml");
    assert_eq!(
        std::fs::read(&example).unwrap(),
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml")).unwrap()
    );
    assert_eq!(mode(&root.join("share/doc/ikigai/examples/tools/now")), 0o755);

    // The manual page and the completion scripts land where man and the shells look.
    let man = std::fs::read_to_string(root.join("share/man/man1/ikigai.1")).unwrap();
    assert!(man.contains(".TH ikigai 1"), "{man}");
    assert!(man.contains("prompt"), "the page documents -p: {man}");
    let bash = root.join("share/bash-completion/completions/ikigai");
    let words = complete_in_bash(&bash, &["ikigai", "sess"]);
    assert_eq!(words, vec!["sessions".to_string()]);
    let zsh = std::fs::read_to_string(root.join("share/zsh/site-functions/_ikigai")).unwrap();
    assert!(zsh.starts_with("#compdef ikigai"), "{zsh}");
    let fish = std::fs::read_to_string(root.join("share/fish/vendor_completions.d/ikigai.fish")).unwrap();
    assert!(fish.contains("complete -c ikigai"), "{fish}");

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
    assert!(!root.join("libexec/ikigai-launch").exists());
    assert!(!root.join("share/doc/ikigai").exists());
    assert!(!root.join("share/man/man1/ikigai.1").exists());
    assert!(!root.join("share/bash-completion/completions/ikigai").exists());
    assert!(!root.join("share/zsh/site-functions/_ikigai").exists());
    assert!(!root.join("share/fish/vendor_completions.d/ikigai.fish").exists());
    assert!(tool.exists());

    // Without added tools, uninstall leaves nothing of ikigai behind.
    std::fs::remove_file(&tool).unwrap();
    assert!(make("install-files", dest.path()).status.success());
    assert!(make("uninstall", dest.path()).status.success());
    assert!(!root.join("libexec/ikigai").exists());
    assert!(!bin.exists());
    assert!(!root.join("libexec/ikigai-launch").exists());
}

/// What bash completes for the command line `words` (the last one being typed), with the
/// completion script at `script` loaded as bash-completion would load it.
fn complete_in_bash(script: &Path, words: &[&str]) -> Vec<String> {
    let line = words.join(" ");
    let program = format!(
        "source {script}; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE='{line}'; \
         COMP_POINT={point}; _ikigai ikigai '{cur}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script = script.display(),
        words = words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" "),
        cword = words.len() - 1,
        point = line.len(),
        cur = words[words.len() - 1],
        prev = words[words.len() - 2],
    );
    let out = Command::new("bash")
        .args(["--norc", "-c", &program])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn completions_cover_every_shell_and_complete_subcommands_and_values() {
    let home = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = Command::new(env!("CARGO_BIN_EXE_ikigai"))
            .args(["completions", shell])
            .env("HOME", home.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{shell}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("sessions"), "{shell} completes subcommands: {text}");
    }
    let script = home.path().join("ikigai.bash");
    let out = Command::new(env!("CARGO_BIN_EXE_ikigai"))
        .args(["completions", "bash"])
        .output()
        .unwrap();
    std::fs::write(&script, &out.stdout).unwrap();
    let mut shells = complete_in_bash(&script, &["ikigai", "completions", ""]);
    shells.retain(|w| !w.starts_with('-'));
    shells.sort();
    assert_eq!(shells, ["bash", "elvish", "fish", "powershell", "zsh"]);
    let flags = complete_in_bash(&script, &["ikigai", "--conti"]);
    assert_eq!(flags, ["--continue"]);
    // An unknown shell is a usage error that lists the valid ones.
    let out = Command::new(env!("CARGO_BIN_EXE_ikigai"))
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("powershell"));
}

#[test]
fn completions_and_the_manual_need_no_configuration() {
    // A broken config file must not stop completions or the manual page.
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("bad.toml");
    std::fs::write(&config, "this is = = not toml").unwrap();
    for args in [&["completions", "fish"][..], &["man"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_ikigai"))
            .args(args)
            .env("IKIGAI_CONFIG", &config)
            .env("HOME", home.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stdout.is_empty());
    }
}
