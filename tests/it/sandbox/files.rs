//! The sandbox's write rule for the built-in file tools, which run inside ikigai and not
//! in a confined tool process: under `workspace-write`, `file_write` and `file_edit` write
//! only beneath the working directory, the temporary directory and `writable_roots` (a
//! path resolved through `..`, symlinks and missing parents); `read-only` denies every
//! write; `off` changes nothing. A denial reads like a command's, and in a scripted run
//! the call is not run again outside the sandbox; `ikigai tool file_write` obeys it too.
//! Folders come from `super::place()`.

use std::path::Path;

use serde_json::{Value, json};

use super::{place, text, tool_results};
use crate::common::fake_provider::{FakeProvider, Reply};

fn write(path: &str, content: &str) -> String {
    json!({ "path": path, "content": content }).to_string()
}

fn edit(path: &str, old: &str, new: &str) -> String {
    json!({ "path": path, "old_string": old, "new_string": new }).to_string()
}

/// Runs `-p go --json` with `calls` answered by the fake vendor; returns the tool results
/// (parsed) and the events printed.
fn run(p: &super::Place, extra: &[&str], calls: &[(&str, &str, &str)]) -> (Vec<Value>, Vec<Value>) {
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(calls));
    fake.push(Reply::text("done"));
    let out = p
        .ikigai()
        .args([
            "--json",
            "-p",
            "go",
            "--approval",
            "auto",
            "--base-url",
            &fake.base_url,
        ])
        .args(extra)
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let results = tool_results(&fake)
        .iter()
        .map(|r| serde_json::from_str(r).unwrap())
        .collect::<Vec<Value>>();
    assert_eq!(results.len(), calls.len(), "{results:?}");
    let events = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (results, events)
}

/// A call the sandbox stopped, refused to run outside in a scripted run, naming `path`.
fn assert_denied(r: &Value, says: &str, path: &Path) {
    assert_eq!(r["error_code"], "NOT_APPROVED", "{r}");
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains(says) && error.contains("nobody is there") && error.contains("writable_roots"),
        "{r}"
    );
    let why = r["result"]["sandbox"].as_str().unwrap_or_else(|| panic!("{r}"));
    assert!(why.starts_with(says), "{r}");
    assert!(
        why.contains(path.to_str().unwrap()),
        "names {}: {r}",
        path.display()
    );
}

fn assert_wrote(r: &Value) {
    assert_eq!(r["tool_success"], true, "{r}");
    assert!(r["result"].get("error").is_none(), "{r}");
    assert!(r["result"].get("sandbox").is_none(), "{r}");
}

const OUTSIDE: &str = "sandbox: write outside the workspace denied";

#[test]
fn workspace_write_keeps_file_write_in_the_workspace_temp_and_writable_roots() {
    let p = place();
    let extra = p.out.parent().unwrap().join("extra");
    std::fs::create_dir(&extra).unwrap();
    p.config(&format!(
        "sandbox = \"workspace-write\"\nwritable_roots = [\"{}\"]\n",
        extra.display()
    ));
    // A link inside the project to the folder outside, and one to a file there.
    std::os::unix::fs::symlink(&p.out, p.ws.join("link")).unwrap();
    let victim = p.out.join("victim.txt");
    std::fs::write(&victim, "original\n").unwrap();
    std::os::unix::fs::symlink(&victim, p.ws.join("victim-link.txt")).unwrap();
    let abs = p.out.join("abs.txt");
    let (abs_s, extra_s, tmp_s) = (
        abs.to_str().unwrap().to_string(),
        extra.join("root.txt").to_str().unwrap().to_string(),
        p.tmp.join("t.txt").to_str().unwrap().to_string(),
    );
    let calls = [
        ("c1", "file_write", write(&abs_s, "x")),
        ("c2", "file_write", write("../outside/dotdot.txt", "x")),
        ("c3", "file_write", write("link/sym.txt", "x")),
        ("c4", "file_write", write("link/new/deeper.txt", "x")),
        ("c5", "file_write", write("victim-link.txt", "changed\n")),
        ("c6", "file_write", write("new/dir/inside.txt", "in\n")),
        ("c7", "file_write", write(&extra_s, "root\n")),
        ("c8", "file_write", write(&tmp_s, "tmp\n")),
    ];
    let calls: Vec<(&str, &str, &str)> = calls.iter().map(|(i, n, a)| (*i, *n, a.as_str())).collect();
    let (results, events) = run(&p, &[], &calls);

    assert_denied(&results[0], OUTSIDE, &abs);
    assert_denied(&results[1], OUTSIDE, &p.out.join("dotdot.txt"));
    assert_denied(&results[2], OUTSIDE, &p.out.join("sym.txt"));
    assert_denied(&results[3], OUTSIDE, &p.out.join("new/deeper.txt"));
    assert_denied(&results[4], OUTSIDE, &victim);
    for gone in ["abs.txt", "dotdot.txt", "sym.txt", "new"] {
        assert!(!p.out.join(gone).exists(), "{gone} was written outside");
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "original\n");

    for r in &results[5..] {
        assert_wrote(r);
    }
    assert_eq!(
        std::fs::read_to_string(p.ws.join("new/dir/inside.txt")).unwrap(),
        "in\n"
    );
    assert_eq!(std::fs::read_to_string(extra.join("root.txt")).unwrap(), "root\n");
    assert_eq!(std::fs::read_to_string(p.tmp.join("t.txt")).unwrap(), "tmp\n");

    // Each denied call was asked again to run outside, and nobody approved it.
    let asked: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "approval_requested")
        .collect();
    assert_eq!(asked.len(), 5, "{asked:?}");
    assert!(asked.iter().all(|e| e["outside_sandbox"] == true), "{asked:?}");
    let refused: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "permission" && e["decision"] == "refused")
        .collect();
    assert_eq!(refused.len(), 5, "{refused:?}");
    assert!(refused.iter().all(|e| e["by"] == "unattended"), "{refused:?}");
}

#[test]
fn workspace_write_keeps_file_edit_in_the_workspace() {
    let p = place();
    p.config("sandbox = \"workspace-write\"\n");
    let outside = p.out.join("config.ini");
    std::fs::write(&outside, "port = 1\n").unwrap();
    std::fs::write(p.ws.join("inside.ini"), "port = 1\n").unwrap();
    let out_s = outside.to_str().unwrap().to_string();
    let calls = [
        ("c1", "file_edit", edit(&out_s, "port = 1", "port = 2")),
        ("c2", "file_edit", edit("inside.ini", "port = 1", "port = 2")),
    ];
    let calls: Vec<(&str, &str, &str)> = calls.iter().map(|(i, n, a)| (*i, *n, a.as_str())).collect();
    let (results, _) = run(&p, &[], &calls);
    assert_denied(&results[0], OUTSIDE, &outside);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "port = 1\n");
    assert_wrote(&results[1]);
    assert_eq!(
        std::fs::read_to_string(p.ws.join("inside.ini")).unwrap(),
        "port = 2\n"
    );
}

#[test]
fn read_only_denies_file_write_and_file_edit_inside_the_workspace_too() {
    let p = place();
    std::fs::write(p.ws.join("kept.txt"), "a\n").unwrap();
    let calls = [
        ("c1", "file_write", write("new.txt", "x")),
        ("c2", "file_edit", edit("kept.txt", "a", "b")),
    ];
    let calls: Vec<(&str, &str, &str)> = calls.iter().map(|(i, n, a)| (*i, *n, a.as_str())).collect();
    let (results, _) = run(&p, &["--sandbox", "read-only"], &calls);
    let ro = "sandbox: write denied (read-only sandbox)";
    assert_denied(&results[0], ro, &p.ws.join("new.txt"));
    assert_denied(&results[1], ro, &p.ws.join("kept.txt"));
    assert!(!p.ws.join("new.txt").exists());
    assert_eq!(std::fs::read_to_string(p.ws.join("kept.txt")).unwrap(), "a\n");
}

#[test]
fn with_the_sandbox_off_the_file_tools_write_outside_as_before() {
    let p = place();
    p.config("sandbox = \"workspace-write\"\n");
    let abs = p.out.join("abs.txt");
    let edited = p.out.join("edited.txt");
    std::fs::write(&edited, "a\n").unwrap();
    let (abs_s, edited_s) = (
        abs.to_str().unwrap().to_string(),
        edited.to_str().unwrap().to_string(),
    );
    let calls = [
        ("c1", "file_write", write(&abs_s, "x")),
        ("c2", "file_edit", edit(&edited_s, "a", "b")),
    ];
    let calls: Vec<(&str, &str, &str)> = calls.iter().map(|(i, n, a)| (*i, *n, a.as_str())).collect();
    let (results, events) = run(&p, &["--sandbox", "off"], &calls);
    assert_wrote(&results[0]);
    assert_wrote(&results[1]);
    assert_eq!(std::fs::read_to_string(&abs).unwrap(), "x");
    assert_eq!(std::fs::read_to_string(&edited).unwrap(), "b\n");
    assert!(
        !events.iter().any(|e| e["type"] == "approval_requested"),
        "{events:?}"
    );
}

#[test]
fn ikigai_tool_file_write_obeys_the_sandbox_too() {
    use std::io::Write;
    let p = place();
    p.config("sandbox = \"workspace-write\"\n");
    let target = p.out.join("from-tool.txt");
    let mut child = p
        .ikigai()
        .args(["tool", "file_write"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let args = write(target.to_str().unwrap(), "x");
    child.stdin.take().unwrap().write_all(args.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert!(!target.exists(), "{stdout}{}", text(&out.stderr));
    let r: Value = serde_json::from_str(&stdout).unwrap();
    assert!(r["sandbox"].as_str().unwrap().starts_with(OUTSIDE), "{r}");
}
