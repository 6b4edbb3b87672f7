//! A repository that came as an archive (not from `git clone`) carries its own
//! `.git/config` and hooks. The model, talked into it by the repository's text, runs a
//! "read-only" `git status` in `read-only` or `ask` mode: git would run the command the
//! config names (`core.fsmonitor`) or a hook. Such a repository's git commands are asked
//! about, not run; a plain one's still run unasked.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use serde_json::{Value, json};

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

/// `git status` asked for by the model in `mode`; the first tool result.
fn git_status(home: &Path, mode: &str) -> Value {
    let fake = FakeProvider::start();
    let args = json!({"command": "git status --porcelain"}).to_string();
    fake.push(Reply::tool_calls(&[("c1", "bash", &args)]));
    fake.push(Reply::text("ok"));
    let out = common::ikigai(home)
        .args(["--base-url", &fake.base_url, "-p", "go", "--approval", mode])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::text(&out.stderr));
    let reqs = fake.requests();
    let msgs = reqs.last().unwrap().body["messages"].as_array().unwrap().clone();
    let tool = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    serde_json::from_str(tool["content"].as_str().unwrap()).unwrap()
}

#[test]
fn a_repositorys_own_git_config_or_hook_makes_git_status_ask() {
    for mode in ["read-only", "ask"] {
        let h = tempfile::tempdir().unwrap();
        git(h.path(), &["init", "-q"]);
        std::fs::write(h.path().join("a.txt"), "a\n").unwrap();
        // A plain repository: git status runs unasked, as the README lists.
        let r = git_status(h.path(), mode);
        assert_eq!(r["tool_success"], true, "{mode}: {r}");

        git(
            h.path(),
            &["config", "core.fsmonitor", "touch pwned-fsmonitor; false"],
        );
        let r = git_status(h.path(), mode);
        assert!(
            !h.path().join("pwned-fsmonitor").exists(),
            "{mode}: the repository's fsmonitor ran"
        );
        assert_eq!(r["error_code"], "NOT_APPROVED", "{mode}: {r}");

        git(h.path(), &["config", "--unset", "core.fsmonitor"]);
        let hook = h.path().join(".git/hooks/post-index-change");
        std::fs::write(&hook, "#!/bin/sh\ntouch pwned-hook\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let r = git_status(h.path(), mode);
        assert!(
            !h.path().join("pwned-hook").exists(),
            "{mode}: the repository's hook ran"
        );
        assert_eq!(r["error_code"], "NOT_APPROVED", "{mode}: {r}");
    }
}

/// Seen: `git status` ran `core.fsmonitor` from `.git/config.worktree` (with
/// `extensions.worktreeConfig`), from a submodule's config in `.git/modules/`, and from an
/// embedded repository's config: git reads them all, so ikigai must have read them all
/// before it counts `git status` as read-only.
#[test]
fn every_configuration_git_reads_is_checked_before_git_status_runs_unasked() {
    use std::os::unix::fs::PermissionsExt;
    let fsmonitor = |config: &Path| {
        let mut text = std::fs::read_to_string(config).unwrap_or_default();
        text.push_str("[core]\n\tfsmonitor = \"touch pwned-fsmonitor; false\"\n");
        std::fs::write(config, text).unwrap();
    };
    let committed = |dir: &Path| {
        git(dir, &["init", "-q"]);
        std::fs::write(dir.join("a.txt"), "a\n").unwrap();
        git(dir, &["add", "a.txt"]);
        git(
            dir,
            &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
        );
    };
    for mode in ["read-only", "ask"] {
        // config.worktree.
        let h = tempfile::tempdir().unwrap();
        committed(h.path());
        git(h.path(), &["config", "extensions.worktreeConfig", "true"]);
        fsmonitor(&h.path().join(".git/config.worktree"));
        let r = git_status(h.path(), mode);
        assert!(
            !h.path().join("pwned-fsmonitor").exists(),
            "{mode}: config.worktree's fsmonitor ran"
        );
        assert_eq!(r["error_code"], "NOT_APPROVED", "{mode}: {r}");

        // A submodule's config in .git/modules/.
        let h = tempfile::tempdir().unwrap();
        let lib = tempfile::tempdir().unwrap();
        committed(lib.path());
        committed(h.path());
        git(
            h.path(),
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                lib.path().to_str().unwrap(),
                "lib",
            ],
        );
        let r = git_status(h.path(), mode);
        assert_eq!(r["tool_success"], true, "{mode}: a plain submodule: {r}");
        fsmonitor(&h.path().join(".git/modules/lib/config"));
        let r = git_status(h.path(), mode);
        assert!(
            !h.path().join("lib/pwned-fsmonitor").exists(),
            "{mode}: the submodule's fsmonitor ran"
        );
        assert_eq!(r["error_code"], "NOT_APPROVED", "{mode}: {r}");

        // An embedded repository (a gitlink without .gitmodules).
        let h = tempfile::tempdir().unwrap();
        committed(h.path());
        let inner = h.path().join("inner");
        std::fs::create_dir(&inner).unwrap();
        committed(&inner);
        git(h.path(), &["add", "inner"]);
        fsmonitor(&inner.join(".git/config"));
        let r = git_status(h.path(), mode);
        assert!(
            !inner.join("pwned-fsmonitor").exists(),
            "{mode}: the embedded repository's fsmonitor ran"
        );
        assert_eq!(r["error_code"], "NOT_APPROVED", "{mode}: {r}");

        // A hook in a `.git` file's `gitdir:` (our own form).
        let h = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        committed(store.path());
        std::fs::write(
            h.path().join(".git"),
            format!("gitdir: {}\n", store.path().join(".git").display()),
        )
        .unwrap();
        let hook = store.path().join(".git/hooks/post-index-change");
        std::fs::write(&hook, "#!/bin/sh\ntouch pwned-hook\n").unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let r = git_status(h.path(), mode);
        assert_eq!(r["error_code"], "NOT_APPROVED", "{mode}: {r}");
    }
}
