//! file_write and file_edit on real files: shapes, parent creation, kept permissions,
//! failures that leave the original untouched, and the place a call acts on: the one its
//! decision judged, whatever a folder on the way became since (every kind of link), a
//! hard link's name and never the file it shares, never a FIFO.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::tools_util::*;
use ikigai::tools::Pinned;
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

/// A project `ws` and a folder `out` beside it (canonical): `ws/d/x.txt` holds "old\n",
/// `out/x.txt` and `ws/.git/hooks/x.txt` files of the same name.
fn judged_place() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let (ws, out) = (base.join("ws"), base.join("out"));
    write(&ws, "d/x.txt", "old\n");
    write(&ws, ".git/hooks/x.txt", "old hook\n");
    write(&out, "x.txt", "old outside\n");
    (t, ws, out)
}

/// Every entry under `dir` with its content, never through a link.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let m = fs::symlink_metadata(&p).unwrap();
        if m.is_dir() {
            out.push((p.clone(), Vec::new()));
            out.extend(snapshot(&p));
        } else if m.is_file() {
            out.push((p.clone(), fs::read(&p).unwrap()));
        } else {
            out.push((
                p.clone(),
                fs::read_link(&p).unwrap().into_os_string().into_encoded_bytes(),
            ));
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn a_call_acts_on_the_place_its_decision_judged_whatever_a_folder_became_since() {
    // Each way `d` can lead elsewhere by the time the call runs, after the decision saw
    // it a plain folder.
    type Target = fn(&Path, &Path) -> PathBuf;
    let forms: [(&str, Target); 8] = [
        ("an absolute link out", |_, out| out.to_path_buf()),
        ("a relative link out", |_, _| PathBuf::from("../out")),
        ("a link to .git/hooks", |ws, _| ws.join(".git/hooks")),
        ("a relative link inside", |_, _| PathBuf::from(".git/hooks")),
        ("a magic link of /proc", |_, out| {
            PathBuf::from(format!("/proc/self/root{}", out.display()))
        }),
        ("a link to a link", |ws, out| {
            std::os::unix::fs::symlink(out, ws.join("hop")).unwrap();
            ws.join("hop")
        }),
        ("a dangling link", |_, out| out.join("missing")),
        ("a link to itself", |ws, _| ws.join("d")),
    ];
    for (form, target) in forms {
        let (_t, ws, out) = judged_place();
        let mut c = ctx(&ws);
        c.pinned = Some(Pinned {
            given: "d/x.txt".into(),
            real: Some(ws.join("d/x.txt")),
        });
        fs::rename(ws.join("d"), ws.join("d.was")).unwrap();
        let to = target(&ws, &out);
        std::os::unix::fs::symlink(&to, ws.join("d")).unwrap();
        let (outside, hooks) = (snapshot(&out), snapshot(&ws.join(".git")));
        let calls = [
            ("file_write", json!({"path": "d/x.txt", "content": "model\n"})),
            (
                "file_edit",
                json!({"path": "d/x.txt", "old_string": "old", "new_string": "new"}),
            ),
            ("file_read", json!({"path": "d/x.txt"})),
            ("list_dir", json!({"path": "d/x.txt"})),
        ];
        for (tool, args) in calls {
            let e = run(tool, args, &c).await;
            let error = op_error(&e);
            assert!(
                error.contains("changed while it was being reached")
                    && error.contains("is a symbolic link now"),
                "{form}, {tool}: {error}"
            );
        }
        assert_eq!(snapshot(&out), outside, "{form}");
        assert_eq!(snapshot(&ws.join(".git")), hooks, "{form}");
        assert_eq!(fs::read_to_string(ws.join("d.was/x.txt")).unwrap(), "old\n");
        no_temp_files(&ws);
        no_temp_files(&ws.join("d.was"));
    }
}

#[tokio::test]
async fn writing_through_a_hard_link_replaces_the_name_never_the_file_it_shares() {
    let (_t, ws, out) = judged_place();
    for name in ["a.sh", "b.sh"] {
        write(&out, name, "#!/bin/sh\nold\n");
        fs::set_permissions(out.join(name), fs::Permissions::from_mode(0o6755)).unwrap();
        fs::hard_link(out.join(name), ws.join(name)).unwrap();
    }
    let c = ctx(&ws);
    let e = run(
        "file_edit",
        json!({"path": "a.sh", "old_string": "old", "new_string": "new"}),
        &c,
    )
    .await;
    assert!(e.success, "{}", e.envelope);
    let e = run(
        "file_write",
        json!({"path": "b.sh", "content": "#!/bin/sh\nnew\n"}),
        &c,
    )
    .await;
    assert!(e.success, "{}", e.envelope);
    for name in ["a.sh", "b.sh"] {
        assert_eq!(fs::read_to_string(ws.join(name)).unwrap(), "#!/bin/sh\nnew\n");
        assert_eq!(fs::read_to_string(out.join(name)).unwrap(), "#!/bin/sh\nold\n");
        assert_eq!(fs::metadata(out.join(name)).unwrap().nlink(), 1, "{name}");
        // The mode is kept, less the set-user-ID and set-group-ID bits: rewritten with
        // new content, the file is not the program that was given them.
        assert_eq!(mode(&ws.join(name)), 0o755, "{name}");
    }
}

#[tokio::test]
async fn a_fifo_or_device_is_not_replaced_by_a_write() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let c = ctx(d.path());
    let e = run("file_write", json!({"path": "pipe", "content": "x"}), &c).await;
    assert_eq!(op_error(&e), "Not a regular file: pipe");
    let e = run(
        "file_edit",
        json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        &c,
    )
    .await;
    assert_eq!(op_error(&e), "Not a regular file: pipe");
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    no_temp_files(d.path());
}
