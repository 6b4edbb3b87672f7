//! `/undo` in the real TUI (tmux, the fake vendor): after a turn edited a file that the
//! user then changed, `/undo` asks before overwriting it (the confirming command waits in
//! the input); Enter undoes and shows what was restored; `/checkpoints` lists the turn.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use crate::common::fake_provider::{FakeProvider, Reply};
use crate::common::tmux::Tmux;

/// The pane with wrapped lines joined, so a sentence is found wherever it wrapped.
fn flat(pane: &str) -> String {
    pane.lines().map(str::trim).collect::<Vec<_>>().join(" ")
}

#[test]
fn undo_asks_before_overwriting_a_file_the_user_changed_and_enter_confirms() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("a.txt"), "one\n").unwrap();
    let fake = FakeProvider::start();
    let edit = json!({"path": "a.txt", "old_string": "one", "new_string": "two"}).to_string();
    fake.push(Reply::tool_calls(&[("c1", "file_edit", &edit)]));
    fake.push(Reply::text("Edited the file."));
    let t = Tmux::start_in(home.path(), &project, &fake.base_url, "--approval auto");
    t.wait_text("Ask anything");
    t.type_text("edit a.txt");
    t.keys(&["Enter"]);
    t.wait_text("Edited the file.");
    assert_eq!(std::fs::read_to_string(project.join("a.txt")).unwrap(), "two\n");
    t.type_text("/checkpoints");
    t.keys(&["Enter"]);
    t.wait_for("the checkpoint list", |s| {
        flat(s).contains("turn 1") && s.contains("a.txt")
    });
    // The user changes the file; /undo asks first.
    std::fs::write(project.join("a.txt"), "mine\n").unwrap();
    t.type_text("/undo");
    t.keys(&["Enter"]);
    let pane = t.wait_for("the question", |s| flat(s).contains("Overwrite your changes?"));
    assert!(
        flat(&pane).contains("a.txt changed since ikigai's turn"),
        "{pane}"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("a.txt")).unwrap(),
        "mine\n",
        "nothing overwritten before the answer"
    );
    // The confirming command is in the input: Enter undoes.
    t.wait_text("› /undo --force");
    t.keys(&["Enter"]);
    t.wait_for("the summary", |s| flat(s).contains("restored a.txt (+1 −1)"));
    assert_eq!(std::fs::read_to_string(project.join("a.txt")).unwrap(), "one\n");
}
