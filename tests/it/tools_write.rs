//! file_write and file_edit on real files: shapes, parent creation, kept permissions, and
//! failures that leave the original untouched.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use crate::tools_util::*;
use serde_json::json;

fn mode(p: &std::path::Path) -> u32 {
    fs::metadata(p).unwrap().mode() & 0o7777
}

/// No `.ikigai-*.tmp` file is left next to the target.
fn no_temp_files(dir: &std::path::Path) {
    for e in fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(!name.starts_with(".ikigai-"), "left behind: {name}");
    }
}

#[tokio::test]
async fn file_write_creates_parents_and_replaces() {
    let d = tempfile::tempdir().unwrap();
    let c = ctx(d.path());
    let e = run(
        "file_write",
        json!({"path": "a/b/c.txt", "content": "héllo\n"}),
        &c,
    )
    .await;
    assert_eq!(
        result(&e),
        &json!({"output": "Wrote 7 bytes to a/b/c.txt", "bytes": 7})
    );
    assert_eq!(e.summary, "wrote 7 bytes");
    assert_eq!(fs::read_to_string(d.path().join("a/b/c.txt")).unwrap(), "héllo\n");
    let e = run("file_write", json!({"path": "a/b/c.txt", "content": ""}), &c).await;
    assert_eq!(result(&e)["bytes"], 0);
    assert_eq!(fs::read_to_string(d.path().join("a/b/c.txt")).unwrap(), "");
    no_temp_files(&d.path().join("a/b"));
}

#[tokio::test]
async fn file_write_keeps_an_existing_files_mode() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "run.sh", "#!/bin/sh\n");
    fs::set_permissions(&p, fs::Permissions::from_mode(0o751)).unwrap();
    let e = run(
        "file_write",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
        &ctx(d.path()),
    )
    .await;
    assert!(e.success);
    assert_eq!(mode(&p), 0o751);
    // A new file gets the usual mode for new files, not the temp file's 0600.
    run(
        "file_write",
        json!({"path": "new.txt", "content": "x"}),
        &ctx(d.path()),
    )
    .await;
    assert_ne!(mode(&d.path().join("new.txt")), 0o600);
}

#[tokio::test]
async fn file_write_failures_leave_everything_intact() {
    let d = tempfile::tempdir().unwrap();
    let c = ctx(d.path());
    fs::create_dir(d.path().join("adir")).unwrap();
    write(d.path(), "adir/inside.txt", "keep");
    let e = run("file_write", json!({"path": "adir", "content": "x"}), &c).await;
    assert_eq!(op_error(&e), "Is a directory: adir");
    assert_eq!(
        fs::read_to_string(d.path().join("adir/inside.txt")).unwrap(),
        "keep"
    );

    // The parent cannot be created because a file is in the way.
    write(d.path(), "plain", "original");
    let e = run(
        "file_write",
        json!({"path": "plain/child.txt", "content": "x"}),
        &c,
    )
    .await;
    assert!(
        op_error(&e).starts_with("Cannot create directory "),
        "{}",
        op_error(&e)
    );
    assert_eq!(fs::read_to_string(d.path().join("plain")).unwrap(), "original");
    no_temp_files(d.path());

    let e = run("file_write", json!({"path": "x.txt"}), &c).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("missing required parameter `content`"));
    let e = run("file_write", json!({"path": "x.txt", "content": 5}), &c).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("`content` must be a string"));
    assert!(!d.path().join("x.txt").exists());
}

#[tokio::test]
async fn writes_into_a_read_only_directory_fail_cleanly() {
    // Root writes anywhere, so the real binary runs as `nobody` in a root-owned directory.
    let d = shared_tempdir();
    let target = write(d.path(), "locked/file.txt", "original");
    fs::set_permissions(d.path().join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o666)).unwrap();
    let as_user: &[&str] = if is_root() {
        &["runuser", "-u", "nobody", "--"]
    } else {
        &[]
    };
    if !is_root() {
        fs::set_permissions(d.path().join("locked"), fs::Permissions::from_mode(0o555)).unwrap();
    }
    let args = r#"{"path":"locked/file.txt","content":"new"}"#;
    let out = ikigai(d.path(), &["tool", "file_write"], args, None, as_user);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let msg = stdout_json(&out)["error"].as_str().unwrap().to_string();
    assert!(msg.starts_with("Cannot write locked/file.txt: "), "{msg}");
    assert!(msg.contains("Permission denied"), "{msg}");
    assert_eq!(fs::read_to_string(&target).unwrap(), "original");
    no_temp_files(&d.path().join("locked"));

    let args = r#"{"path":"locked/file.txt","old_string":"original","new_string":"changed"}"#;
    let out = ikigai(d.path(), &["tool", "file_edit"], args, None, as_user);
    let msg = stdout_json(&out)["error"].as_str().unwrap().to_string();
    assert!(msg.contains("Permission denied"), "{msg}");
    assert_eq!(fs::read_to_string(&target).unwrap(), "original");
}

#[tokio::test]
async fn file_edit_replaces_exactly_one_match() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "m.rs", "fn a() {}\nfn b() {}\n");
    fs::set_permissions(&p, fs::Permissions::from_mode(0o640)).unwrap();
    let c = ctx(d.path());
    let e = run(
        "file_edit",
        json!({"path": "m.rs", "old_string": "fn b()", "new_string": "fn bee()"}),
        &c,
    )
    .await;
    assert_eq!(
        result(&e),
        &json!({"output": "Replaced 1 occurrence in m.rs", "replacements": 1})
    );
    assert_eq!(e.summary, "1 occurrence replaced");
    assert_eq!(fs::read_to_string(&p).unwrap(), "fn a() {}\nfn bee() {}\n");
    assert_eq!(mode(&p), 0o640);
    no_temp_files(d.path());
}

#[tokio::test]
async fn file_edit_replace_all() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "t.txt", "x = 1; x = 2; x = 3");
    let e = run(
        "file_edit",
        json!({"path": "t.txt", "old_string": "x =", "new_string": "y =", "replace_all": true}),
        &ctx(d.path()),
    )
    .await;
    assert_eq!(
        result(&e),
        &json!({"output": "Replaced 3 occurrences in t.txt", "replacements": 3})
    );
    assert_eq!(fs::read_to_string(&p).unwrap(), "y = 1; y = 2; y = 3");
}

#[tokio::test]
async fn file_edit_failures_change_nothing() {
    let d = tempfile::tempdir().unwrap();
    let original = "a\nb\na\n";
    let p = write(d.path(), "f.txt", original);
    let before = fs::metadata(&p).unwrap().ino();
    let c = ctx(d.path());
    let edit = |old: &str, new: &str| json!({"path": "f.txt", "old_string": old, "new_string": new});
    let e = run("file_edit", edit("zzz", "y"), &c).await;
    assert!(op_error(&e).starts_with("old_string not found in f.txt (0 matches)"));
    let e = run("file_edit", edit("a\n", "y"), &c).await;
    assert!(
        op_error(&e).starts_with("old_string matches 2 times in f.txt;"),
        "{}",
        op_error(&e)
    );
    let e = run("file_edit", edit("b", "b"), &c).await;
    assert!(op_error(&e).contains("identical"));
    let e = run("file_edit", edit("", "y"), &c).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("`old_string` must not be empty"));
    let e = run("file_edit", json!({"path": "f.txt", "old_string": "b"}), &c).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("missing required parameter `new_string`"));
    let mut bad = edit("b", "c");
    bad["replace_all"] = json!(1);
    let e = run("file_edit", bad, &c).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("`replace_all` must be a boolean"));
    assert_eq!(fs::read_to_string(&p).unwrap(), original);
    assert_eq!(
        fs::metadata(&p).unwrap().ino(),
        before,
        "the file was not rewritten"
    );

    let e = run(
        "file_edit",
        json!({"path": "gone.txt", "old_string": "a", "new_string": "b"}),
        &c,
    )
    .await;
    assert_eq!(op_error(&e), "File not found: gone.txt");
    fs::create_dir(d.path().join("dir")).unwrap();
    let e = run(
        "file_edit",
        json!({"path": "dir", "old_string": "a", "new_string": "b"}),
        &c,
    )
    .await;
    assert_eq!(op_error(&e), "Is a directory: dir");
    no_temp_files(d.path());
}

#[tokio::test]
async fn file_edit_works_on_non_utf8_files() {
    let d = tempfile::tempdir().unwrap();
    let p = write(d.path(), "l1.txt", b"caf\xe9 = old\n");
    let e = run(
        "file_edit",
        json!({"path": "l1.txt", "old_string": "old", "new_string": "new"}),
        &ctx(d.path()),
    )
    .await;
    assert_eq!(result(&e)["replacements"], 1);
    assert_eq!(fs::read(&p).unwrap(), b"caf\xe9 = new\n");
}
