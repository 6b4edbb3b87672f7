//! Checkpoints of a tracked session (issue 39 §2) from the outside: once the session's
//! first snapshot is taken, its turns take no snapshot of the whole tree (the shadow
//! index is last written before the first command runs), and `/undo` still puts back
//! exactly what each turn's `bash` changed, ignored files left alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common;
use crate::common::fake_provider::{FakeProvider, Reply};
use serde_json::json;

fn bash(cmd: &str) -> String {
    json!({ "command": cmd }).to_string()
}

/// Modification time of `p`, in nanoseconds.
fn mtime(p: &Path) -> i128 {
    let m = std::fs::metadata(p).unwrap();
    i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())
}

/// The shadow repository's index (there is one project).
fn shadow_index(home: &Path) -> PathBuf {
    let dir = home.join(".local/share/ikigai/checkpoints");
    let project = std::fs::read_dir(&dir).unwrap().flatten().next().unwrap();
    project.path().join("git/index")
}

#[test]
fn turns_after_the_first_snapshot_scan_no_tree_and_undo_stays_exact() {
    let home = tempfile::tempdir().unwrap();
    let p = home.path().join("project");
    std::fs::create_dir_all(p.join("dir")).unwrap();
    std::fs::write(p.join("a.txt"), "one\n").unwrap();
    std::fs::write(p.join("dir/b.txt"), "bee\n").unwrap();
    std::fs::write(p.join(".gitignore"), "*.log\n").unwrap();
    let fake = FakeProvider::start();
    for cmd in [
        "echo started > stamp && echo two >> a.txt",
        "rm dir/b.txt && mkdir -p new/deep && echo sea > new/deep/c.txt && echo log > x.log",
        "echo three >> a.txt && mv dir moved && date +%s%N > third.log",
    ] {
        fake.push(Reply::tool_calls(&[("c1", "bash", &bash(cmd))]));
        fake.push(Reply::text("Done."));
    }
    let mut child = common::ikigai(home.path())
        .current_dir(&p)
        .args(["--base-url", &fake.base_url])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"one\ntwo\nthree\n/undo 3\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = common::text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("Undid turns"), "{stderr}");
    // Everything the turns changed is back; the ignored file stays.
    let read = |f: &str| std::fs::read_to_string(p.join(f)).ok();
    assert_eq!(read("a.txt").as_deref(), Some("one\n"), "{stderr}");
    assert_eq!(read("dir/b.txt").as_deref(), Some("bee\n"), "{stderr}");
    for gone in ["stamp", "new/deep/c.txt", "moved/b.txt"] {
        assert!(!p.join(gone).exists(), "{gone}: {stderr}");
    }
    assert_eq!(
        read("x.log").as_deref(),
        Some("log\n"),
        "ignored files are not covered"
    );
    // The whole tree was scanned by the first turn and, in the background, as it ended:
    // never again (the last command wrote the time it ran, in nanoseconds, into an
    // ignored file).
    let third: i128 = read("third.log").unwrap().trim().parse().unwrap();
    let index = shadow_index(home.path());
    assert!(
        mtime(&index) < third,
        "the shadow index was written after the turns' commands ran"
    );
}
