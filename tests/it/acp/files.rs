//! The editor's files (`fs/read_text_file`, `fs/write_text_file`) from the official
//! TypeScript SDK's client, which holds unsaved buffers: the model reads the buffer, an
//! edit lands in it and the disk is untouched; what the permission engine or the sandbox
//! refuses, or what lies outside the working folder, never reaches the editor.

use serde_json::{Value, json};

use super::{client, step};
use crate::common::fake_provider::{FakeProvider, Reply};

/// What the model was given as the results of its calls (the last request carries them
/// all).
fn results(fake: &FakeProvider) -> String {
    let last = fake.requests().pop().unwrap();
    last.messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn files(out: &Value) -> &Vec<Value> {
    out["files"].as_array().unwrap()
}

#[test]
fn the_model_reads_the_editors_unsaved_buffer_and_its_edits_land_there_not_on_disk() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let dir = h.path().canonicalize().unwrap();
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, "on disk\n").unwrap();
    let read = json!({"path": "notes.txt"}).to_string();
    let edit = json!({"path": "notes.txt", "old_string": "the buffer", "new_string": "the edit"}).to_string();
    let write = json!({"path": "sub/new.txt", "content": "fresh"}).to_string();
    fake.push(Reply::tool_calls(&[("r1", "file_read", &read)]));
    fake.push(Reply::tool_calls(&[("e1", "file_edit", &edit)]));
    fake.push(Reply::tool_calls(&[("w1", "file_write", &write)]));
    fake.push(Reply::tool_calls(&[("r2", "file_read", &read)]));
    fake.push(Reply::text("done"));
    let plan = json!({
        "fs": {"buffers": {notes.display().to_string(): "in the buffer\n"}},
        "steps": [{"do": "initialize"}, {"do": "new"}, {"do": "set_mode", "mode": "auto"},
                  {"do": "prompt", "text": "edit it"}],
    });
    let out = client(&dir, &fake, &[], plan);
    assert_eq!(step(&out, 3)["result"]["stopReason"], "end_turn", "{out}");
    let given = results(&fake);
    assert!(
        given.contains("in the buffer"),
        "the model read the buffer: {given}"
    );
    assert!(
        given.contains("in the edit"),
        "and read its edit back from it: {given}"
    );
    assert!(!given.contains("on disk"), "{given}");
    let new = dir.join("sub/new.txt");
    let expected = json!([
        {"op": "read", "path": notes},
        {"op": "read", "path": notes},
        {"op": "write", "path": notes, "content": "in the edit\n"},
        {"op": "write", "path": new, "content": "fresh"},
        {"op": "read", "path": notes},
    ]);
    assert_eq!(out["files"], expected, "{out}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "on disk\n");
    assert!(!new.exists() && !dir.join("sub").exists());
}

#[test]
fn what_is_refused_or_lies_outside_the_folder_never_reaches_the_editor() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let dir = h.path().canonicalize().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let away = elsewhere.path().canonicalize().unwrap();
    std::fs::write(away.join("far.txt"), "far on disk\n").unwrap();
    std::os::unix::fs::symlink(away.join("far.txt"), dir.join("link.txt")).unwrap();
    std::fs::create_dir_all(dir.join(".git/hooks")).unwrap();
    let args = |v: Value| v.to_string();
    // (call, the editor's answer: `None` when ask mode does not ask, as for a read)
    let calls = [
        // Protected files: asked in any folder, refused here.
        (
            "file_write",
            args(json!({"path": ".git/hooks/pre-commit", "content": "rm -rf ~"})),
            Some("reject_once"),
        ),
        (
            "file_write",
            args(json!({"path": ".ikigai/config.toml", "content": "[permissions]"})),
            Some("reject_once"),
        ),
        // Outside the folder: refused when asked, and what runs is ikigai's own.
        (
            "file_edit",
            args(json!({"path": away.join("far.txt"), "old_string": "far", "new_string": "near"})),
            Some("reject_once"),
        ),
        ("file_read", args(json!({"path": away.join("far.txt")})), None),
        // A link in the folder that leads out of it is judged where it leads.
        ("file_read", args(json!({"path": "link.txt"})), None),
    ];
    for (i, (name, a, _)) in calls.iter().enumerate() {
        fake.push(Reply::tool_calls(&[(&format!("c{i}"), name, a)]));
    }
    fake.push(Reply::text("done"));
    let far = away.join("far.txt").display().to_string();
    let link = dir.join("link.txt").display().to_string();
    let plan = json!({
        "fs": {"buffers": {far: "far in a buffer\n", link: "link in a buffer\n"}},
        "answers": calls.iter().filter_map(|(_, _, answer)| *answer).collect::<Vec<_>>(),
        "steps": [{"do": "initialize"}, {"do": "new"}, {"do": "prompt", "text": "go"}],
    });
    let out = client(&dir, &fake, &[], plan);
    assert_eq!(step(&out, 2)["result"]["stopReason"], "end_turn", "{out}");
    let asked = calls.iter().filter(|c| c.2.is_some()).count();
    assert_eq!(out["permissions"].as_array().unwrap().len(), asked, "{out}");
    assert!(files(&out).is_empty(), "the editor was asked: {out}");
    let given = results(&fake);
    assert_eq!(given.matches("far on disk").count(), 2, "{given}");
    assert!(!given.contains("in a buffer"), "{given}");
    assert!(!dir.join(".git/hooks/pre-commit").exists() && !dir.join(".ikigai").exists());
    assert_eq!(
        std::fs::read_to_string(away.join("far.txt")).unwrap(),
        "far on disk\n"
    );
}

#[test]
fn without_the_editors_files_the_tools_use_the_disk() {
    let fake = FakeProvider::start();
    let h = tempfile::tempdir().unwrap();
    let dir = h.path().canonicalize().unwrap();
    std::fs::write(dir.join("notes.txt"), "on disk\n").unwrap();
    let edit = json!({"path": "notes.txt", "old_string": "disk", "new_string": "disc"}).to_string();
    fake.push(Reply::tool_calls(&[("e1", "file_edit", &edit)]));
    fake.push(Reply::text("done"));
    let plan = json!({
        "steps": [{"do": "initialize"}, {"do": "new"}, {"do": "set_mode", "mode": "auto"},
                  {"do": "prompt", "text": "edit it"}],
    });
    let out = client(&dir, &fake, &[], plan);
    assert_eq!(step(&out, 3)["result"]["stopReason"], "end_turn", "{out}");
    assert!(files(&out).is_empty(), "{out}");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "on disc\n"
    );
}
