//! file_read and list_dir on real files: shapes, line windows, the output cap on a 10 MB
//! file, binary and non-UTF-8 content, symlink loops, permissions and every error.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};

use crate::tools_util::*;
use serde_json::json;

#[tokio::test]
async fn file_read_returns_contents_and_line_windows() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "a.txt", "one\ntwo\nthree\nfour\n");
    let c = ctx(d.path());
    let e = run("file_read", json!({"path": "a.txt"}), &c).await;
    assert_eq!(result(&e), &json!({"output": "one\ntwo\nthree\nfour\n"}));
    assert_eq!(e.summary, "4 lines");
    let e = run("file_read", json!({"path": "a.txt", "offset": 2, "limit": 2}), &c).await;
    assert_eq!(output(&e), "two\nthree\n");
    let e = run("file_read", json!({"path": "a.txt", "offset": 4}), &c).await;
    assert_eq!(output(&e), "four\n");
    let e = run("file_read", json!({"path": "a.txt", "limit": 1}), &c).await;
    assert_eq!(output(&e), "one\n");
    let abs = d.path().join("a.txt");
    let e = run("file_read", json!({"path": abs}), &c).await;
    assert_eq!(output(&e), "one\ntwo\nthree\nfour\n");

    // Models often count from 0: offset 0 is the first line.
    let e = run("file_read", json!({"path": "a.txt", "offset": 0, "limit": 2}), &c).await;
    assert_eq!(output(&e), "one\ntwo\n");

    write(d.path(), "nonl.txt", "x\ny");
    let e = run("file_read", json!({"path": "nonl.txt", "offset": 2}), &c).await;
    assert_eq!(output(&e), "y");
    write(d.path(), "empty.txt", "");
    let e = run("file_read", json!({"path": "empty.txt"}), &c).await;
    assert_eq!(output(&e), "");
}

#[tokio::test]
async fn file_read_errors() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "a.txt", "one\ntwo\n");
    std::fs::create_dir(d.path().join("dir")).unwrap();
    let c = ctx(d.path());
    let e = run("file_read", json!({"path": "missing.txt"}), &c).await;
    assert_eq!(op_error(&e), "File not found: missing.txt");
    let e = run("file_read", json!({"path": "dir"}), &c).await;
    assert_eq!(op_error(&e), "Is a directory: dir (use list_dir)");
    let e = run("file_read", json!({"path": "a.txt", "offset": 5}), &c).await;
    assert_eq!(op_error(&e), "offset 5 is past the end of a.txt (2 lines)");
    let e = run("file_read", json!({"path": "a.txt/x"}), &c).await;
    assert!(op_error(&e).starts_with("Not a directory"), "{}", op_error(&e));
    let e = run("file_read", json!({"path": "/dev/null"}), &c).await;
    assert_eq!(op_error(&e), "Not a regular file: /dev/null");

    let e = run("file_read", json!({"path": "a.txt", "offset": -1}), &c).await;
    assert!(
        tool_failure(&e, "INVALID_PARAMS").contains("`offset` must be a non-negative integer, got: -1"),
        "{}",
        e.envelope
    );
    let e = run("file_read", json!({"path": "a.txt", "limit": "ten"}), &c).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("`limit`"));
    // A well-known alias is read as the real name, and the result says so (issue 22).
    let e = run("file_read", json!({"file_path": "a.txt"}), &c).await;
    assert!(e.success, "{}", e.envelope);
    assert_eq!(
        e.envelope.note.as_deref(),
        Some("read parameter \"file_path\" as \"path\"")
    );
    let e = run("file_read", json!({}), &c).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("missing required parameter `path`"));
}

#[tokio::test]
async fn file_read_refuses_binary_files_with_their_size() {
    let d = tempfile::tempdir().unwrap();
    let mut bytes = vec![b'a'; 5000];
    bytes.push(0);
    bytes.extend(vec![b'b'; 5000]);
    write(d.path(), "img.bin", &bytes);
    let e = run("file_read", json!({"path": "img.bin"}), &ctx(d.path())).await;
    assert_eq!(
        op_error(&e),
        "Binary file: img.bin (10001 bytes); file_read shows text files only"
    );
}

#[tokio::test]
async fn file_read_reads_invalid_utf8_lossily_and_says_so() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "latin1.txt", b"caf\xe9\n");
    let e = run("file_read", json!({"path": "latin1.txt"}), &ctx(d.path())).await;
    let r = result(&e);
    assert_eq!(r["output"], "caf\u{FFFD}\n");
    assert!(r["note"].as_str().unwrap().contains("not valid UTF-8"));
    assert_eq!(e.summary, "1 line (not UTF-8)");
}

#[tokio::test]
async fn file_read_caps_a_10mb_file_while_reading() {
    let d = tempfile::tempdir().unwrap();
    let line = format!("{}\n", &"0123456789".repeat(10)[..99]);
    assert_eq!(line.len(), 100);
    write(d.path(), "big.txt", line.repeat(100_000));
    let c = ctx(d.path());
    let e = run("file_read", json!({"path": "big.txt"}), &c).await;
    let r = result(&e);
    let out = r["output"].as_str().unwrap();
    assert_eq!(r["truncated"], true);
    assert!(out.len() <= c.max_output_size, "{}", out.len());
    let last = out.lines().last().unwrap();
    assert!(
        last.starts_with("[output truncated: ") && last.ends_with(" of 10000000 bytes shown]"),
        "{last}"
    );
    let next = r["next_offset"].as_u64().unwrap();
    assert!(next > 10_000 && next < 10_500, "{next}");
    // Reading on from next_offset continues exactly where the complete lines ended.
    let e = run(
        "file_read",
        json!({"path": "big.txt", "offset": next, "limit": 1}),
        &c,
    )
    .await;
    assert_eq!(output(&e), line);
    assert_eq!(e.summary, "1 line");

    // A window stops reading at the cap, so only a lower bound of its size is known.
    let e = run("file_read", json!({"path": "big.txt", "offset": 2}), &c).await;
    let out = result(&e)["output"].as_str().unwrap().to_string();
    assert!(out.len() <= c.max_output_size);
    assert!(out.contains(" of at least "), "{}", out.lines().last().unwrap());
}

#[tokio::test]
async fn file_read_always_progresses_past_a_line_longer_than_the_cap() {
    let d = tempfile::tempdir().unwrap();
    // A 3 MB first line, then two short lines; the cap is 1 MiB.
    let mut text = "x".repeat(3_000_000);
    text.push_str("\nsecond\nthird\n");
    write(d.path(), "long.txt", &text);
    let c = ctx(d.path());
    let mut offset = 1;
    let mut seen = Vec::new();
    for _ in 0..5 {
        let e = run("file_read", json!({"path": "long.txt", "offset": offset}), &c).await;
        let r = result(&e).clone();
        let out = r["output"].as_str().unwrap();
        assert!(out.len() <= c.max_output_size, "{}", out.len());
        seen.push(out.to_string());
        match r.get("next_offset") {
            None => break,
            Some(n) => {
                let n = n.as_u64().unwrap();
                assert!(n > offset, "next_offset {n} does not progress from {offset}");
                assert!(
                    r["note"]
                        .as_str()
                        .unwrap()
                        .contains("Line 1 alone is longer than the output limit"),
                    "{r}"
                );
                assert!(e.summary.contains("line longer than the cap"), "{}", e.summary);
                offset = n;
            }
        }
    }
    assert_eq!(seen.len(), 2, "the long line, then the rest");
    assert!(seen[0].starts_with("xxxx") && seen[0].contains("[output truncated: "));
    assert_eq!(seen[1], "second\nthird\n");
}

#[tokio::test]
async fn file_read_of_a_symlink_loop_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    symlink("loop", d.path().join("loop")).unwrap();
    let e = run("file_read", json!({"path": "loop"}), &ctx(d.path())).await;
    assert_eq!(
        op_error(&e),
        "Too many levels of symbolic links (a symlink loop?): loop"
    );
}

#[tokio::test]
async fn file_read_permission_denied() {
    // Root reads every file whatever its mode, so run the real binary as `nobody`.
    let d = shared_tempdir();
    let secret = write(d.path(), "secret.txt", "hidden\n");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = if is_root() {
        ikigai(
            d.path(),
            &["tool", "file_read"],
            r#"{"path":"secret.txt"}"#,
            None,
            &["runuser", "-u", "nobody", "--"],
        )
    } else {
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
        ikigai(
            d.path(),
            &["tool", "file_read"],
            r#"{"path":"secret.txt"}"#,
            None,
            &[],
        )
    };
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout_json(&out),
        json!({"error": "Permission denied: secret.txt"})
    );
}

#[tokio::test]
async fn list_dir_shows_types_and_sizes_directories_first() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(p, "b.txt", "12345");
    write(p, "a.txt", "");
    write(p, "zdir/x", "x");
    std::fs::create_dir(p.join("adir")).unwrap();
    write(p, ".hidden", "h");
    symlink("b.txt", p.join("link")).unwrap();
    symlink("self", p.join("self")).unwrap();
    std::fs::write(p.join(OsStr::from_bytes(b"n\xffme")), "").unwrap();
    let c = ctx(p);
    let e = run("list_dir", json!({}), &c).await;
    let r = result(&e);
    assert_eq!(r["count"], 8);
    assert_eq!(e.summary, "8 entries");
    let lines: Vec<&str> = r["output"].as_str().unwrap().lines().collect();
    assert_eq!(
        lines,
        vec![
            "dir               adir/",
            "dir               zdir/",
            "file           1  .hidden",
            "file           0  a.txt",
            "file           5  b.txt",
            "link              link -> b.txt",
            "file           0  n\u{FFFD}me",
            "link              self -> self",
        ]
    );
}

#[tokio::test]
async fn list_dir_errors() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "f.txt", "x");
    let c = ctx(d.path());
    let e = run("list_dir", json!({"path": "nope"}), &c).await;
    assert_eq!(op_error(&e), "Directory not found: nope");
    let e = run("list_dir", json!({"path": "f.txt"}), &c).await;
    assert_eq!(op_error(&e), "Not a directory: f.txt");
    let e = run("list_dir", json!({"path": 7}), &c).await;
    assert!(tool_failure(&e, "INVALID_PARAMS").contains("`path` must be a string"));
}
