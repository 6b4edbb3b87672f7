//! The tracked tree against the full snapshot it replaces: for every kind of change a
//! command can make (and changes made between turns), a tracked session's checkpoint is
//! the one two full snapshots give, byte for byte; and a mark does not take a snapshot of
//! the whole tree (the shadow index is left alone).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::super::*;

fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        fs::create_dir_all(d).unwrap();
    }
    fs::write(p, text).unwrap();
}

/// A small project with every kind of entry a snapshot meets.
fn project(p: &Path) {
    write(&p.join(".gitignore"), "target/\n*.log\n");
    write(&p.join("src/main.rs"), "fn main() {}\n");
    write(&p.join("src/deep/er/lib.rs"), "pub fn f() {}\n");
    write(&p.join("src/deep/other.rs"), "// other\n");
    write(&p.join("run.sh"), "#!/bin/sh\necho hi\n");
    fs::set_permissions(p.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("src/main.rs", p.join("link")).unwrap();
    write(&p.join("empty"), "");
    write(&p.join("old.log"), "ignored\n");
    write(&p.join("target/out"), "ignored\n");
    fs::create_dir_all(p.join("docs")).unwrap();
    write(&p.join("vendor/lib/code.c"), "int x;\n");
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(p.join("vendor/lib"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .unwrap();
    assert!(init.success());
}

type Change = fn(&Path);

/// What a command may do to the tree.
const CHANGES: &[(&str, Change)] = &[
    ("modify", |p| {
        write(&p.join("src/main.rs"), "fn main() { changed() }\n")
    }),
    ("create", |p| write(&p.join("new.txt"), "new\n")),
    ("create in an empty folder", |p| {
        write(&p.join("docs/a.md"), "# A\n")
    }),
    ("delete", |p| {
        fs::remove_file(p.join("src/deep/other.rs")).unwrap()
    }),
    ("make executable", |p| {
        fs::set_permissions(p.join("src/main.rs"), fs::Permissions::from_mode(0o755)).unwrap()
    }),
    ("retarget a link", |p| {
        fs::remove_file(p.join("link")).unwrap();
        std::os::unix::fs::symlink("run.sh", p.join("link")).unwrap();
    }),
    ("a link becomes a file", |p| {
        fs::remove_file(p.join("link")).unwrap();
        write(&p.join("link"), "src/main.rs");
    }),
    ("rename a file", |p| {
        fs::rename(p.join("run.sh"), p.join("go.sh")).unwrap()
    }),
    ("move a folder", |p| {
        fs::rename(p.join("src/deep"), p.join("moved")).unwrap()
    }),
    ("move a folder out of the tree", |p| {
        let away = p.parent().unwrap().join("away");
        fs::rename(p.join("src/deep"), away).unwrap();
    }),
    ("remove a folder", |p| fs::remove_dir_all(p.join("src")).unwrap()),
    ("a file becomes a folder", |p| {
        fs::remove_file(p.join("empty")).unwrap();
        write(&p.join("empty/inside.txt"), "in\n");
    }),
    ("a new folder tree", |p| {
        write(&p.join("pkg/a/b/c.rs"), "c\n");
        write(&p.join("pkg/a/d.rs"), "d\n");
    }),
    ("ignored files only", |p| {
        write(&p.join("new.log"), "x\n");
        write(&p.join("target/more"), "x\n");
    }),
    ("inside a nested repository", |p| {
        write(&p.join("vendor/lib/code.c"), "int y;\n")
    }),
    ("edited and put back", |p| {
        write(&p.join("src/main.rs"), "tmp\n");
        write(&p.join("src/main.rs"), "fn main() {}\n");
    }),
    ("un-ignore and write", |p| {
        write(&p.join(".gitignore"), "target/\n");
        write(&p.join("old.log"), "now covered\n");
    }),
    ("truncate", |p| write(&p.join("src/deep/er/lib.rs"), "")),
];

/// (path relative to the project, content before, mode before, content after) of each
/// file a checkpoint names.
type Seen = Vec<(PathBuf, Option<Vec<u8>>, u32, Option<String>)>;

/// One turn: a command doing `change` (after `between`, done before the turn started).
fn turn(cp: &mut Checkpoints, root: &Path, change: Change) -> Seen {
    let snap = cp
        .before_call("bash", "{}", |g| root.join(g), || (1, "t".into()))
        .expect("a snapshot is due");
    assert!(cp.snapshot_taken(snap.take()).is_none());
    change(root);
    let c = cp.finish().expect("a turn").run();
    assert!(!c.uncovered, "covered");
    let blobs = cp.blobs().unwrap();
    let mut seen: Seen = c
        .files
        .iter()
        .map(|f| {
            let before = f.before.as_ref().map(|h| blobs.get(h, f.mode).unwrap());
            let rel = Path::new(&f.path).strip_prefix(root).unwrap().to_path_buf();
            (rel, before, f.mode, f.after.clone())
        })
        .collect();
    seen.sort();
    seen
}

/// A fresh copy of the project and checkpoints for it, tracked or not.
fn session(tracked: bool) -> (tempfile::TempDir, tempfile::TempDir, PathBuf, Checkpoints) {
    let outer = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root = outer.path().join("p");
    project(&root);
    let mut cp = Checkpoints::new(root.clone(), Some(data.path()), DEFAULT_LIMIT);
    if tracked {
        cp.track();
    }
    (outer, data, root, cp)
}

#[test]
fn a_tracked_turn_keeps_what_two_full_snapshots_keep() {
    for (name, change) in CHANGES {
        let (_o1, _d1, r1, mut full) = session(false);
        let (_o2, _d2, r2, mut tracked) = session(true);
        let want = turn(&mut full, &r1, *change);
        let got = turn(&mut tracked, &r2, *change);
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn changes_between_turns_are_what_the_next_turn_started_from() {
    let seconds = [CHANGES[0], CHANGES[1], CHANGES[2], CHANGES[12]];
    for (i, (name, between)) in CHANGES.iter().enumerate() {
        let (second, change) = seconds[i % seconds.len()];
        let (_o1, _d1, r1, mut full) = session(false);
        let (_o2, _d2, r2, mut tracked) = session(true);
        let _ = turn(&mut full, &r1, |p| write(&p.join("first.txt"), "1\n"));
        let _ = turn(&mut tracked, &r2, |p| write(&p.join("first.txt"), "1\n"));
        // The user (or another program) changes the tree between the turns.
        between(&r1);
        between(&r2);
        let want = turn(&mut full, &r1, change);
        let got = turn(&mut tracked, &r2, change);
        assert_eq!(got, want, "{name}, then {second}");
    }
}

#[test]
fn a_mark_takes_no_snapshot_of_the_whole_tree() {
    let (_o, data, root, mut cp) = session(true);
    let index = super::super::project_dir(data.path(), &root).join("git/index");
    let stamp = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        let m = fs::metadata(p).unwrap();
        (m.ino(), m.mtime(), m.mtime_nsec())
    };
    let _ = turn(&mut cp, &root, |p| write(&p.join("a.txt"), "1\n"));
    let after_first = stamp(&index);
    for i in 0..3 {
        let seen = turn(&mut cp, &root, |p| write(&p.join("a.txt"), "2\n"));
        assert_eq!(seen.len(), usize::from(i == 0), "turn {i}: {seen:?}");
    }
    assert_eq!(
        stamp(&index),
        after_first,
        "the shadow index was not written again"
    );
}
