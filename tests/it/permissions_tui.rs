//! The approval question in the real TUI (tmux, the fake vendor): the default ask mode
//! shows a command whole and an edit as its diff; `y` runs, `n` with a reason tells the
//! model, `a` remembers (across runs, listed and removed by `/permissions`, kept 0600),
//! several calls are asked one at a time in order, Ctrl+C cancels while asking, and
//! Shift+Tab cycles the mode shown in the status line; a call the sandbox stopped is asked
//! again, to run outside it (a command, and a built-in file write).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::tmux::Tmux;

fn bash(cmd: &str) -> String {
    json!({ "command": cmd }).to_string()
}

/// The tool results of the last request the model got.
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

fn send(t: &Tmux, text: &str) {
    t.wait_text("Ask anything");
    t.type_text(text);
    t.keys(&["Enter"]);
}

#[test]
fn ask_mode_shows_the_command_whole_and_yes_runs_it_no_with_a_reason_does_not() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    let long = format!("touch made-by-yes && echo {}", "x".repeat(150));
    fake.push(Reply::tool_calls(&[
        ("c1", "bash", &bash(&long)),
        ("c2", "bash", &bash("touch made-by-no")),
    ]));
    fake.push(Reply::text("Turn over."));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("ask mode");
    send(&t, "go");
    let pane = t.wait_text("y yes · n no");
    let joined: String = pane.lines().map(str::trim).collect::<Vec<_>>().join("");
    assert!(
        joined.contains(&format!("echo {}", "x".repeat(150))),
        "the whole command:\n{pane}"
    );
    assert!(pane.contains("a always in this project: bash(touch *)"), "{pane}");
    assert!(
        !home.path().join("made-by-yes").exists(),
        "the turn waits for the answer"
    );
    t.keys(&["y"]);
    t.wait_for("the second question", |s| s.contains("$ touch made-by-no"));
    assert!(home.path().join("made-by-yes").exists());
    t.keys(&["n"]);
    t.wait_text("Reason for the model");
    t.type_text("use the build folder instead");
    t.keys(&["Enter"]);
    t.wait_text("Turn over.");
    assert!(!home.path().join("made-by-no").exists());
    let results = tool_results(&fake);
    assert_eq!(results[0]["tool_success"], true);
    assert_eq!(results[1]["error_code"], "NOT_APPROVED");
    assert!(
        results[1]["error"]
            .as_str()
            .unwrap()
            .contains("use the build folder instead"),
        "{results:?}"
    );
}

#[test]
fn always_is_remembered_across_runs_and_permissions_lists_and_forgets_it() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("c1", "bash", &bash("touch first"))]));
    fake.push(Reply::text("First done."));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    send(&t, "one");
    t.wait_text("a always in this project: bash(touch *)");
    t.keys(&["a"]);
    t.wait_text("First done.");
    assert!(home.path().join("first").exists());
    let store = home.path().join(".local/share/ikigai/permissions.json");
    let mode = std::fs::metadata(&store).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    drop(t);

    // A new run: the same prefix runs without a question.
    fake.push(Reply::tool_calls(&[("c2", "bash", &bash("touch second"))]));
    fake.push(Reply::text("Second done."));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    send(&t, "two");
    let pane = t.wait_text("Second done.");
    assert!(!pane.contains("y yes · n no"), "{pane}");
    assert!(home.path().join("second").exists());
    send(&t, "/permissions");
    let pane = t.wait_text("1. allow bash(touch *)");
    assert!(pane.contains("Approval mode: ask"), "{pane}");
    send(&t, "/permissions rm 1");
    t.wait_text("forgot: allow bash(touch *)");
    fake.push(Reply::tool_calls(&[("c3", "bash", &bash("touch third"))]));
    fake.push(Reply::text("Third done."));
    send(&t, "three");
    t.wait_text("y yes · n no");
    assert!(!home.path().join("third").exists(), "forgotten: it asks again");
    t.keys(&["Escape"]);
    t.wait_text("Third done.");
    assert!(!home.path().join("third").exists(), "Esc is no");
}

#[test]
fn an_edit_outside_the_project_is_asked_as_a_diff_and_calls_are_asked_in_order() {
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let file = outside.path().join("notes.txt");
    std::fs::write(&file, "alpha\nbeta\ngamma\n").unwrap();
    let fake = FakeProvider::start();
    let edit = json!({"path": file, "old_string": "beta", "new_string": "BETA"}).to_string();
    fake.push(Reply::tool_calls(&[
        ("c1", "file_edit", &edit),
        ("c2", "bash", &bash("touch after-the-edit")),
    ]));
    fake.push(Reply::text("Edited."));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    send(&t, "edit it");
    let pane = t.wait_text("y yes · n no");
    assert!(
        pane.contains("-beta") && pane.contains("+BETA"),
        "the diff:\n{pane}"
    );
    assert!(!pane.contains("$ touch after-the-edit"), "one at a time:\n{pane}");
    t.keys(&["y"]);
    t.wait_for("the second question", |s| s.contains("$ touch after-the-edit"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "alpha\nBETA\ngamma\n");
    t.keys(&["s"]);
    t.wait_text("Edited.");
    assert!(home.path().join("after-the-edit").exists());
}

#[test]
fn ctrl_c_cancels_a_turn_waiting_for_an_answer() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("c1", "bash", &bash("touch never"))]));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    send(&t, "go");
    t.wait_text("y yes · n no");
    t.keys(&["C-c"]);
    t.wait_for("the turn to end", |s| {
        s.contains("interrupted") && !s.contains("y yes · n no")
    });
    t.keys(&["y"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!home.path().join("never").exists());
}

#[test]
fn shift_tab_cycles_the_mode_shown_in_the_status_line() {
    let home = tempfile::tempdir().unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[("c1", "bash", &bash("touch in-auto"))]));
    fake.push(Reply::text("Ran it."));
    let t = Tmux::start(home.path(), &fake.base_url, "");
    t.wait_text("ask mode");
    t.keys(&["BTab"]);
    t.wait_text("auto mode");
    send(&t, "go");
    let pane = t.wait_text("Ran it.");
    assert!(!pane.contains("y yes · n no"), "auto does not ask:\n{pane}");
    assert!(home.path().join("in-auto").exists());
    t.keys(&["BTab"]);
    t.wait_text("read-only mode");
    t.keys(&["BTab"]);
    t.wait_text("ask mode");
}

/// A folder outside the home (the working directory) and outside /tmp (which the sandbox
/// lets tools write: the checkout, and so the build's own temporary folder, may be under
/// /tmp too), for writes the sandbox must stop.
fn outside_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    assert!(!dir.path().starts_with("/tmp"), "{}", dir.path().display());
    dir
}

#[test]
fn a_call_the_sandbox_stopped_is_asked_again_to_run_outside_it() {
    let home = tempfile::tempdir().unwrap();
    let out = outside_folder();
    let first = out.path().join("first.txt");
    let second = out.path().join("second.txt");
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[(
        "c1",
        "bash",
        &bash(&format!("echo out > {}", first.display())),
    )]));
    fake.push(Reply::text("Done one."));
    // Auto mode: the only question is the sandbox's.
    let t = Tmux::start(
        home.path(),
        &fake.base_url,
        "--approval auto --sandbox workspace-write",
    );
    send(&t, "go");
    let pane = t.wait_text("OUTSIDE the sandbox");
    let joined: String = pane.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    assert!(
        joined.contains("write outside the workspace denied"),
        "the question says what the sandbox denied:\n{pane}"
    );
    assert!(!pane.contains("a always"), "only yes and no:\n{pane}");
    assert!(!first.exists(), "the sandbox stopped the first run");
    t.keys(&["y"]);
    t.wait_text("Done one.");
    assert_eq!(std::fs::read_to_string(&first).unwrap(), "out\n");
    let results = tool_results(&fake);
    assert_eq!(results[0]["tool_success"], true, "{results:?}");
    assert_eq!(results[0]["result"]["exit_code"], 0, "{results:?}");
    assert!(results[0]["result"].get("sandbox").is_none(), "{results:?}");

    // No: the model hears it, with what the command printed in the sandbox.
    fake.push(Reply::tool_calls(&[(
        "c2",
        "bash",
        &bash(&format!("echo out > {}", second.display())),
    )]));
    fake.push(Reply::text("Done two."));
    send(&t, "again");
    t.wait_text("OUTSIDE the sandbox");
    t.keys(&["n"]);
    t.wait_text("Reason for the model");
    t.type_text("keep it in the project");
    t.keys(&["Enter"]);
    t.wait_text("Done two.");
    assert!(!second.exists());
    let results = tool_results(&fake);
    let r = results.last().unwrap();
    assert_eq!(r["error_code"], "NOT_APPROVED", "{r}");
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("keep it in the project") && error.contains("sandbox"),
        "{r}"
    );
    // The private mount table makes what lies outside read-only (EROFS), beneath
    // Landlock's EACCES: either is what the command printed.
    let output = r["result"]["output"].as_str().unwrap();
    assert!(
        output.contains("Permission denied") || output.contains("Read-only file system"),
        "{r}"
    );
    assert!(
        r["result"]["sandbox"]
            .as_str()
            .unwrap()
            .contains(&second.display().to_string()),
        "the denial names the file, not the shell: {r}"
    );
}

#[test]
fn a_file_write_the_sandbox_stopped_writes_outside_once_approved() {
    let home = tempfile::tempdir().unwrap();
    let out = outside_folder();
    let target = out.path().join("server.ini");
    let fake = FakeProvider::start();
    let args = json!({ "path": target, "content": "port = 8080\n" }).to_string();
    fake.push(Reply::tool_calls(&[("c1", "file_write", &args)]));
    fake.push(Reply::text("Written."));
    let t = Tmux::start(
        home.path(),
        &fake.base_url,
        "--approval auto --sandbox workspace-write",
    );
    send(&t, "go");
    let pane = t.wait_text("OUTSIDE the sandbox");
    let joined: String = pane.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    assert!(
        joined.contains("Run file_write again OUTSIDE the sandbox")
            && joined.contains("write outside the workspace denied"),
        "{pane}"
    );
    assert!(!target.exists(), "the sandbox stopped the write");
    t.keys(&["y"]);
    t.wait_text("Written.");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "port = 8080\n");
    let results = tool_results(&fake);
    assert_eq!(results[0]["tool_success"], true, "{results:?}");
    assert!(results[0]["result"].get("sandbox").is_none(), "{results:?}");
    assert!(
        results[0]["result"]["output"]
            .as_str()
            .unwrap()
            .starts_with("Wrote 12 bytes"),
        "{results:?}"
    );
}

/// With a deny rule in force, a line whose commands cannot all be seen is refused in a
/// scripted run and *asked* in the TUI — even in `auto` mode, where nothing else asks.
#[test]
fn a_line_that_cannot_all_be_seen_is_asked_in_auto_mode_when_a_deny_rule_is_in_force() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".config/ikigai");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[permissions]\ndeny = [\"bash(rm *)\"]\n",
    )
    .unwrap();
    std::fs::write(home.path().join("victim"), "x").unwrap();
    let fake = FakeProvider::start();
    fake.push(Reply::tool_calls(&[
        ("c1", "bash", &bash("touch ran-in-auto")),
        ("c2", "bash", &bash("printf 'rm -rf victim' | sh")),
    ]));
    fake.push(Reply::text("Turn over."));
    let t = Tmux::start(home.path(), &fake.base_url, "--approval auto");
    t.wait_text("auto mode");
    send(&t, "go");
    let pane = t.wait_text("y yes · n no");
    assert!(pane.contains("printf 'rm -rf victim' | sh"), "{pane}");
    assert!(
        home.path().join("ran-in-auto").exists(),
        "auto ran the plain call unasked"
    );
    t.keys(&["n"]);
    t.wait_text("Reason for the model");
    t.keys(&["Escape"]);
    t.wait_text("Turn over.");
    assert!(home.path().join("victim").exists());
    assert_eq!(tool_results(&fake)[1]["error_code"], "NOT_APPROVED");
}
