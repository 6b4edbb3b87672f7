//! The recorder from the agent's side: file tools saved once per turn, a snapshot asked for
//! once per turn and only for tools that may change files, and a turn's checkpoint made
//! of both (a file saved before the snapshot keeps what the turn started from).

use std::fs;
use std::path::{Path, PathBuf};

use super::*;

fn resolve(cwd: &Path) -> impl Fn(&str) -> PathBuf + '_ {
    move |given| cwd.join(given)
}

fn turn() -> (usize, String) {
    (4, "do it".to_string())
}

#[test]
fn read_only_tools_cost_nothing_and_file_tools_are_saved_once_per_turn() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let cwd = project.path().to_path_buf();
    let mut cp = Checkpoints::new(cwd.clone(), Some(data.path()), DEFAULT_LIMIT);
    assert!(cp.before_call("grep", "{}", resolve(&cwd), turn).is_none());
    assert!(!cp.in_turn(), "a read-only tool starts nothing");
    assert!(cp.finish().is_none());
    fs::write(cwd.join("a.txt"), "one\n").unwrap();
    let args = r#"{"path":"a.txt","content":"x"}"#;
    assert!(cp.before_call("file_write", args, resolve(&cwd), turn).is_none());
    fs::write(cwd.join("a.txt"), "two\n").unwrap();
    // Saved once: the second call of the turn does not replace what the turn started from.
    cp.before_call("file_edit", args, resolve(&cwd), turn);
    fs::write(cwd.join("a.txt"), "three\n").unwrap();
    cp.before_call("file_write", r#"{"path":"new.txt"}"#, resolve(&cwd), turn);
    fs::write(cwd.join("new.txt"), "new\n").unwrap();
    // Written and put back within the turn: not a change.
    fs::write(cwd.join("same.txt"), "same\n").unwrap();
    cp.before_call("file_write", r#"{"path":"same.txt"}"#, resolve(&cwd), turn);
    let c = cp.finish().unwrap().run();
    assert_eq!((c.turn, c.prompt.as_str(), c.uncovered), (4, "do it", false));
    let files: Vec<(&str, bool, bool)> = c
        .files
        .iter()
        .map(|f| {
            (
                f.path.rsplit('/').next().unwrap(),
                f.before.is_some(),
                f.after.is_some(),
            )
        })
        .collect();
    assert_eq!(files, [("a.txt", true, true), ("new.txt", false, true)]);
    let blobs = cp.blobs().unwrap();
    let before = c.files[0].before.as_deref().unwrap();
    assert_eq!(blobs.get(before, c.files[0].mode).unwrap(), b"one\n");
    assert!(!cp.in_turn());
}

#[test]
fn one_snapshot_per_turn_and_a_file_saved_before_it_keeps_its_start() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let cwd = project.path().to_path_buf();
    fs::write(cwd.join("a.txt"), "one\n").unwrap();
    fs::write(cwd.join("b.txt"), "bee\n").unwrap();
    let mut cp = Checkpoints::new(cwd.clone(), Some(data.path()), DEFAULT_LIMIT);
    // file_edit first, then bash changes the same file and another.
    cp.before_call("file_edit", r#"{"path":"a.txt"}"#, resolve(&cwd), turn);
    fs::write(cwd.join("a.txt"), "two\n").unwrap();
    let snap = cp
        .before_call("bash", "{}", resolve(&cwd), turn)
        .expect("a snapshot");
    assert!(cp.snapshot_taken(snap.take()).is_none());
    assert!(
        cp.before_call("my_tool", "{}", resolve(&cwd), turn).is_none(),
        "one snapshot per turn"
    );
    fs::write(cwd.join("a.txt"), "three\n").unwrap();
    fs::remove_file(cwd.join("b.txt")).unwrap();
    let c = cp.finish().unwrap().run();
    let blobs = cp.blobs().unwrap();
    let mut back: Vec<(String, Option<Vec<u8>>)> = c
        .files
        .iter()
        .map(|f| {
            let name = f.path.rsplit('/').next().unwrap().to_string();
            (name, f.before.as_ref().map(|h| blobs.get(h, f.mode).unwrap()))
        })
        .collect();
    back.sort();
    assert_eq!(
        back,
        [
            ("a.txt".to_string(), Some(b"one\n".to_vec())),
            ("b.txt".to_string(), Some(b"bee\n".to_vec()))
        ]
    );
    // The next turn asks for a snapshot again; a failed one is told once.
    let snap = cp.before_call("bash", "{}", resolve(&cwd), turn);
    assert!(snap.is_some());
    let told = cp.snapshot_taken(Err(shadow::ShadowError::TooLarge { limit_mb: 1 }));
    assert!(told.unwrap().contains("more than 1 MB"));
    let c = cp.finish().unwrap().run();
    assert!(c.uncovered);
    // Too large once: not walked again in this session, and not told again.
    assert!(cp.before_call("bash", "{}", resolve(&cwd), turn).is_none());
    assert!(cp.finish().unwrap().run().uncovered);
    cp.told = false;
    cp.before_call("bash", "{}", resolve(&cwd), turn);
    assert!(
        cp.snapshot_taken(Err(shadow::ShadowError::Git("x".into())))
            .is_some(),
        "a new failure is told when nothing was told yet"
    );
}

#[test]
fn nothing_is_kept_without_a_data_folder() {
    let project = tempfile::tempdir().unwrap();
    let cwd = project.path().to_path_buf();
    let mut cp = Checkpoints::new(cwd.clone(), None, DEFAULT_LIMIT);
    assert!(!cp.watches("bash"));
    assert!(cp.before_call("bash", "{}", resolve(&cwd), turn).is_none());
    assert!(cp.finish().is_none());
}

#[test]
fn tools_that_write_no_file_take_no_snapshot() {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let cwd = project.path().to_path_buf();
    let mut cp = Checkpoints::new(cwd.clone(), Some(data.path()), DEFAULT_LIMIT);
    for name in [
        "file_read",
        "glob",
        "grep",
        "list_dir",
        "update_plan",
        "web_fetch",
    ] {
        assert!(!cp.watches(name), "{name}");
        assert!(
            cp.before_call(name, "{}", resolve(&cwd), turn).is_none(),
            "{name}"
        );
    }
    assert!(cp.watches("bash"));
}
