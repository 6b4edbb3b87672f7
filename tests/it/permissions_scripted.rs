//! Approval modes and rules from the outside, in scripted mode (the real binary, the fake
//! vendor): the default `auto`, `ask` and `read-only` refusing with `NOT_APPROVED` and one
//! visible line, deny rules holding in `auto` (through compound commands), the decision
//! stored and exported and emitted under `--json`, project rules only in trusted folders,
//! `ikigai permissions check`, and bad settings.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Output, Stdio};

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use serde_json::{Value, json};

fn config(home: &Path, text: &str) {
    let dir = home.join(".config/ikigai");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

fn run(home: &Path, args: &[&str]) -> Output {
    common::ikigai(home)
        .args(args)
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::null())
        .output()
        .expect("run ikigai")
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn bash(cmd: &str) -> String {
    json!({ "command": cmd }).to_string()
}

/// The tool results the model got back, in order (from the last request).
fn tool_results(fake: &FakeProvider) -> Vec<Value> {
    let reqs = fake.requests();
    let last = reqs.last().expect("a request");
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect()
}

#[test]
fn scripted_runs_default_to_auto_and_a_deny_rule_holds_through_a_compound_command() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    std::fs::create_dir(h.path().join("victim")).unwrap();
    config(h.path(), "[permissions]\ndeny = [\"bash(rm -rf*)\"]\n");
    fake.push(Reply::tool_calls(&[
        ("c1", "bash", &bash("touch ran-one")),
        ("c2", "bash", &bash("touch made && rm -rf victim")),
    ]));
    fake.push(Reply::text("ok"));
    let out = run(h.path(), &["--base-url", &fake.base_url, "-p", "go"]);
    assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
    assert!(h.path().join("ran-one").exists(), "auto runs what no rule denies");
    assert!(h.path().join("victim").exists(), "the deny rule held");
    assert!(!h.path().join("made").exists(), "no part of a denied line ran");
    let results = tool_results(&fake);
    assert_eq!(results[0]["tool_success"], true);
    assert_eq!(results[1]["error_code"], "NOT_APPROVED");
    let error = results[1]["error"].as_str().unwrap();
    assert!(
        error.contains("bash(rm -rf*)") && error.contains("rm -rf victim"),
        "{error}"
    );
    let stdout = s(&out.stdout);
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains("NOT_APPROVED")).collect();
    assert_eq!(lines.len(), 1, "one visible line: {stdout}");
}

#[test]
fn scripted_ask_and_read_only_modes_refuse_what_needs_approval() {
    for (args, config_text) in [
        (vec!["--approval", "ask"], ""),
        (vec![], "approval = \"ask\"\n"),
        (vec!["--approval", "read-only"], ""),
    ] {
        let fake = FakeProvider::start();
        let h = tempfile::tempdir().unwrap();
        config(h.path(), config_text);
        std::fs::write(h.path().join("seen.txt"), "x").unwrap();
        fake.push(Reply::tool_calls(&[
            ("c1", "bash", &bash("touch should-not-exist")),
            ("c2", "bash", &bash("ls | wc -l")),
            ("c3", "file_read", &json!({"path": "seen.txt"}).to_string()),
        ]));
        fake.push(Reply::text("ok"));
        let mut all = vec!["--base-url", fake.base_url.as_str(), "-p", "go"];
        all.extend(args.iter().copied());
        let out = run(h.path(), &all);
        assert!(!h.path().join("should-not-exist").exists(), "{args:?}");
        let results = tool_results(&fake);
        assert_eq!(results[0]["error_code"], "NOT_APPROVED", "{args:?}");
        let error = results[0]["error"].as_str().unwrap();
        assert!(error.contains("touch should-not-exist"), "{error}");
        assert_eq!(
            results[1]["tool_success"], true,
            "read-only commands run: {args:?}"
        );
        assert_eq!(results[2]["tool_success"], true, "read-only tools run: {args:?}");
        let stdout = s(&out.stdout);
        assert_eq!(stdout.matches("NOT_APPROVED").count(), 1, "{stdout}");
        if args.contains(&"ask") || config_text.contains("ask") {
            assert!(
                error.contains("--approval auto") && error.contains("bash(touch *)"),
                "{error}"
            );
        } else {
            assert!(error.contains("read-only"), "{error}");
        }
    }
}

#[test]
fn ask_mode_runs_edits_inside_the_project_and_asks_for_writes_outside() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let far = outside.path().join("far.txt");
    fake.push(Reply::tool_calls(&[
        (
            "c1",
            "file_write",
            &json!({"path": "inside.txt", "content": "in"}).to_string(),
        ),
        (
            "c2",
            "file_write",
            &json!({"path": far, "content": "out"}).to_string(),
        ),
    ]));
    fake.push(Reply::text("ok"));
    run(
        h.path(),
        &["--base-url", &fake.base_url, "-p", "go", "--approval", "ask"],
    );
    assert_eq!(
        std::fs::read_to_string(h.path().join("inside.txt")).unwrap(),
        "in"
    );
    assert!(!far.exists());
    assert_eq!(tool_results(&fake)[1]["error_code"], "NOT_APPROVED");
}

#[test]
fn every_decision_is_stored_exported_and_emitted_as_json() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    config(
        h.path(),
        "[permissions]\nallow = [\"bash(echo *)\"]\ndeny = [\"bash(rm *)\"]\n",
    );
    fake.push(Reply::tool_calls(&[
        ("c1", "bash", &bash("echo hi")),
        ("c2", "bash", &bash("rm x")),
        ("c3", "bash", &bash("touch y")),
    ]));
    fake.push(Reply::text("ok"));
    let out = run(
        h.path(),
        &[
            "--base-url",
            &fake.base_url,
            "-p",
            "go",
            "--json",
            "--approval",
            "ask",
        ],
    );
    let events: Vec<Value> = s(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let perms: Vec<&Value> = events.iter().filter(|e| e["type"] == "permission").collect();
    assert_eq!(perms.len(), 3, "{events:?}");
    assert_eq!(perms[0]["decision"], "approved");
    assert_eq!(perms[0]["by"], "rule");
    assert_eq!(perms[0]["rule"], "allow bash(echo *)");
    assert_eq!(perms[0]["rule_source"], "user config");
    assert_eq!(perms[1]["decision"], "refused");
    assert_eq!(perms[1]["rule"], "deny bash(rm *)");
    assert_eq!(perms[2]["decision"], "refused");
    assert_eq!(perms[2]["by"], "unattended");
    for p in &perms {
        assert_eq!(p["mode"], "ask");
        assert_eq!(p["sandbox"], "off");
    }
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "approval_requested" && e["id"] == "c3")
    );
    let id = events[0]["id"].as_str().unwrap().to_string();
    let md = run(h.path(), &["export", &id]);
    let md = s(&md.stdout);
    assert!(
        md.contains("approved by rule allow bash(echo *) (user config); mode ask, sandbox off"),
        "{md}"
    );
    assert!(md.contains("refused by rule deny bash(rm *)"), "{md}");
    assert!(md.contains("refused by nobody (scripted run)"), "{md}");
    let raw = run(h.path(), &["export", &id, "--format", "jsonl"]);
    let stored = s(&raw.stdout)
        .lines()
        .filter(|l| l.contains("\"permission\""))
        .count();
    assert_eq!(stored, 3);
}

#[test]
fn project_rules_apply_only_in_trusted_folders() {
    let h = tempfile::tempdir().unwrap();
    let proj = h.path().join("proj");
    std::fs::create_dir_all(proj.join(".ikigai")).unwrap();
    std::fs::write(
        proj.join(".ikigai/config.toml"),
        "[permissions]\nallow = [\"bash(make *)\"]\n",
    )
    .unwrap();
    let check = || {
        let out = common::ikigai(h.path())
            .current_dir(&proj)
            .args(["permissions", "check", "bash(make all)"])
            .output()
            .unwrap();
        s(&out.stdout)
    };
    let before = check();
    assert!(before.starts_with("ask\n"), "{before}");
    let out = common::ikigai(h.path())
        .args(["trust", proj.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", s(&out.stderr));
    let after = check();
    assert!(
        after.starts_with("allow\n") && after.contains("project config"),
        "{after}"
    );
}

#[test]
fn permissions_check_prints_the_decision_and_the_rule() {
    let h = tempfile::tempdir().unwrap();
    config(
        h.path(),
        "[permissions]\nallow = [\"bash(cargo test*)\"]\nask = [\"bash(git push*)\"]\ndeny = [\"bash(rm -rf*)\", \"file_read(.env)\"]\n",
    );
    let check = |call: &str| s(&run(h.path(), &["permissions", "check", call]).stdout);
    let out = check("bash(rm -rf build)");
    assert!(
        out.starts_with("deny\n") && out.contains("rule deny bash(rm -rf*) (user config)"),
        "{out}"
    );
    let out = check("bash(cargo test && rm -rf /)");
    assert!(out.starts_with("deny\n"), "{out}");
    let out = check("bash(cargo test --release)");
    assert!(
        out.starts_with("allow\n") && out.contains("rule allow bash(cargo test*)"),
        "{out}"
    );
    let out = check("bash(cargo test; touch x)");
    assert!(out.starts_with("ask\n") && out.contains("mode ask"), "{out}");
    let out = check("bash(git push origin main)");
    assert!(
        out.starts_with("ask\n") && out.contains("rule ask bash(git push*)"),
        "{out}"
    );
    let out = check("bash(git status)");
    assert!(
        out.starts_with("allow\n") && out.contains("read-only list"),
        "{out}"
    );
    let out = check("file_read(config/.env)");
    assert!(out.starts_with("deny\n"), "{out}");
    let out = s(&run(
        h.path(),
        &["--approval", "auto", "permissions", "check", "bash(touch x)"],
    )
    .stdout);
    assert!(out.starts_with("allow\n") && out.contains("mode auto"), "{out}");
    let bad = run(h.path(), &["permissions", "check", "bash(ls"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(s(&bad.stderr).contains("TOOL(…)"), "{}", s(&bad.stderr));
}

#[test]
fn bad_permission_settings_are_clear_errors() {
    for (text, says) in [
        (
            "approval = \"yolo\"\n",
            "`approval`: `yolo` is not one of auto, ask, read-only",
        ),
        ("[permissions]\nallow = [\"bash(ls\"]\n", "invalid rule `bash(ls`"),
        ("[permissions]\ndeny = [\"file_read(!x)\"]\n", "negations"),
        ("[permissions]\nalow = []\n", "alow"),
    ] {
        let h = tempfile::tempdir().unwrap();
        config(h.path(), text);
        let out = run(h.path(), &["-p", "hi"]);
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = s(&out.stderr);
        assert!(err.contains(says) && err.contains("config.toml"), "{text}: {err}");
    }
    let h = tempfile::tempdir().unwrap();
    let out = run(h.path(), &["--approval", "sometimes", "-p", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        s(&out.stderr).contains("auto, ask, read-only"),
        "{}",
        s(&out.stderr)
    );
}

/// The attacker is the model: it writes the command or the path under an alias the tools
/// accept (`cmd`, `file_path`, `filename`, `file`, `filepath`). The gate must judge what
/// will run, so a deny rule, `read-only` and `ask` hold as with the real names.
#[test]
fn an_aliased_argument_name_does_not_get_past_the_gate() {
    let outside = tempfile::tempdir().unwrap();
    let far = outside.path().join("far.txt");
    let cases: Vec<(&str, Vec<&str>, &str, String)> = vec![
        (
            "[permissions]\ndeny = [\"bash(touch*)\"]\n",
            vec![],
            "bash",
            json!({"cmd": "touch pwned"}).to_string(),
        ),
        (
            "",
            vec!["--approval", "read-only"],
            "bash",
            json!({"cmd": "touch pwned"}).to_string(),
        ),
        (
            "",
            vec!["--approval", "ask"],
            "bash",
            json!({"cmd": "touch pwned"}).to_string(),
        ),
        (
            "",
            vec!["--approval", "ask"],
            "file_write",
            json!({"file_path": far, "content": "out"}).to_string(),
        ),
        (
            "[permissions]\ndeny = [\"file_write(pwned)\"]\n",
            vec![],
            "file_write",
            json!({"filename": "pwned", "content": "x"}).to_string(),
        ),
    ];
    for (cfg, flags, tool, args) in cases {
        let fake = FakeProvider::start();
        let h = tempfile::tempdir().unwrap();
        config(h.path(), cfg);
        fake.push(Reply::tool_calls(&[("c1", tool, &args)]));
        fake.push(Reply::text("ok"));
        let mut argv = vec!["--base-url", fake.base_url.as_str(), "-p", "go"];
        argv.extend(flags.iter().copied());
        let out = run(h.path(), &argv);
        assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
        assert!(
            !h.path().join("pwned").exists() && !far.exists(),
            "{tool} {args} with {cfg:?} {flags:?} ran past the gate"
        );
        assert_eq!(
            tool_results(&fake)[0]["error_code"],
            "NOT_APPROVED",
            "{tool} {args} with {cfg:?} {flags:?}"
        );
    }
}

/// The model names a file outside the project in a way the gate must see through: `~/`
/// (the tools write under your home) and `link/../x`, where `link` is a folder link the
/// repository shipped (the kernel takes `..` from the link's target, not lexically). In
/// `ask` such a write is outside the working directory: asked, so refused when scripted.
#[test]
fn ask_mode_sees_home_and_links_dot_dot_as_outside_the_project() {
    let h = tempfile::tempdir().unwrap();
    let proj = h.path().join("a/proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(h.path().join("a/b")).unwrap();
    std::os::unix::fs::symlink("../b", proj.join("up")).unwrap();
    for (path, lands) in [
        ("~/pwned-home.txt", h.path().join("pwned-home.txt")),
        ("up/../pwned-up.txt", h.path().join("a/pwned-up.txt")),
    ] {
        let fake = FakeProvider::start();
        let args = json!({"path": path, "content": "x"}).to_string();
        fake.push(Reply::tool_calls(&[("c1", "file_write", &args)]));
        fake.push(Reply::text("ok"));
        let out = common::ikigai(h.path())
            .current_dir(&proj)
            .args(["--base-url", &fake.base_url, "-p", "go", "--approval", "ask"])
            .env("OPENAI_API_KEY", "k")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
        assert!(
            !lands.exists(),
            "{path} was written without asking, to {}",
            lands.display()
        );
        assert_eq!(tool_results(&fake)[0]["error_code"], "NOT_APPROVED", "{path}");
    }
}

/// The model, in `ask`, edits inside the project the files that configure ikigai or run
/// commands later: `.ikigai/config.toml` (allow rules for itself, MCP servers that run
/// outside the sandbox at the next start), `.ikigai/tools/`, `.git/hooks/`, `.git/config`.
/// Those are not ordinary edits: they are asked about, so refused when scripted.
#[test]
fn ask_mode_asks_before_the_model_edits_ikigai_or_git_settings() {
    let h = tempfile::tempdir().unwrap();
    let planted = "[permissions]\nallow = [\"bash\"]\n";
    // Run in the home folder (as here), ikigai's own files are inside it too.
    for path in [
        ".config/ikigai/config.toml",
        ".local/share/ikigai/trusted.json",
        ".ikigai/config.toml",
        ".ikigai/tools/helper",
        ".git/hooks/pre-commit",
        ".git/config",
    ] {
        let fake = FakeProvider::start();
        let args = json!({"path": path, "content": planted}).to_string();
        fake.push(Reply::tool_calls(&[("c1", "file_write", &args)]));
        fake.push(Reply::text("ok"));
        let out = run(
            h.path(),
            &["--base-url", &fake.base_url, "-p", "go", "--approval", "ask"],
        );
        assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
        assert!(!h.path().join(path).exists(), "{path} was written without asking");
        let r = &tool_results(&fake)[0];
        assert_eq!(r["error_code"], "NOT_APPROVED", "{path}: {r}");
    }
}

/// The attacker is a repository (it ships `.evil/ls`, executable) and the model it talked
/// into running "read-only" commands. In `read-only` (and `ask`) none of these may run
/// unasked: they run the repository's program, a command hidden in an array subscript,
/// write a file or open a network connection.
#[test]
fn read_only_commands_cannot_smuggle_a_program_a_write_or_a_connection() {
    use std::os::unix::fs::PermissionsExt;
    let lines = [
        "PATH=.evil:$PATH; ls",
        "printf -v PATH %s .evil; ls",
        "HOME=.evil; ls",
        "printf -v 'a[$(touch pwned)]' x",
        "test -v 'a[$(touch pwned)]'",
        "tree -xo pwned",
        "sort -uo pwned /dev/null",
        "cat < /dev/tcp/127.0.0.1/9",
    ];
    for mode in ["read-only", "ask"] {
        for line in lines {
            let h = tempfile::tempdir().unwrap();
            let evil = h.path().join(".evil/ls");
            std::fs::create_dir_all(evil.parent().unwrap()).unwrap();
            std::fs::write(&evil, "#!/bin/sh\ntouch pwned\n").unwrap();
            std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).unwrap();
            let fake = FakeProvider::start();
            fake.push(Reply::tool_calls(&[("c1", "bash", &bash(line))]));
            fake.push(Reply::text("ok"));
            let out = run(
                h.path(),
                &["--base-url", &fake.base_url, "-p", "go", "--approval", mode],
            );
            assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
            assert!(!h.path().join("pwned").exists(), "{mode}: `{line}` ran");
            let r = &tool_results(&fake)[0];
            assert_eq!(r["error_code"], "NOT_APPROVED", "{mode}: `{line}`: {r}");
        }
    }
}

/// The model wants past `deny = ["bash(rm -rf*)"]` in `auto`: the program by its path,
/// behind a wrapper that runs its arguments as a command, inside `find -exec`, in a `trap`
/// string run at exit, in the script of `su -c` / `script -c`, or in a git shell alias.
/// Each says `rm -rf`.
#[test]
fn a_deny_rule_holds_through_a_program_path_wrappers_find_exec_and_trap() {
    let lines = [
        "/bin/rm -rf victim",
        "/usr/bin/env rm -rf victim",
        "setsid rm -rf victim",
        "ionice -c 3 rm -rf victim",
        "taskset 0x1 rm -rf victim",
        "busybox rm -rf victim",
        "find . -maxdepth 1 -name victim -exec rm -rf {} +",
        "trap 'rm -rf victim' EXIT",
        "su -c 'rm -rf victim'",
        "script -qc 'rm -rf victim' /dev/null",
        "flock /tmp/lock rm -rf victim",
        "flock /tmp/lock -c 'rm -rf victim'",
        "parallel rm -rf ::: victim",
        "bash -c 'sh -c \"rm -rf victim\"'",
        "git -c alias.x='!rm -rf victim' x",
        "git -c alias.x='!sh -c \"rm -rf victim\"' x",
    ];
    for line in lines {
        let h = tempfile::tempdir().unwrap();
        std::fs::create_dir(h.path().join("victim")).unwrap();
        config(h.path(), "[permissions]\ndeny = [\"bash(rm -rf*)\"]\n");
        let fake = FakeProvider::start();
        fake.push(Reply::tool_calls(&[("c1", "bash", &bash(line))]));
        fake.push(Reply::text("ok"));
        let out = run(h.path(), &["--base-url", &fake.base_url, "-p", "go"]);
        assert_eq!(out.status.code(), Some(0), "{}", s(&out.stderr));
        assert!(
            h.path().join("victim").exists(),
            "`{line}` got past the deny rule"
        );
        let r = &tool_results(&fake)[0];
        assert_eq!(r["error_code"], "NOT_APPROVED", "`{line}`: {r}");
    }
}
